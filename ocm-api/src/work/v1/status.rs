//! The status of a [`ManifestWork`](super::ManifestWork): its conditions, and the state and
//! feedback of each object it applied.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::meta::Condition;

/// The state of a ManifestWork, as the work agent reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkStatus {
    /// Conditions of the whole ManifestWork: `Applied`, `Available`, `Progressing`, `Degraded`,
    /// `Complete`, `Deleting`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// The state of each object of the ManifestWork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_status: Option<ManifestResourceStatus>,
}

/// The state of the objects of a ManifestWork.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestResourceStatus {
    /// One entry per object, telling which object it is by `resourceMeta.ordinal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifests: Option<Vec<ManifestCondition>>,
}

/// The state of one object of a ManifestWork.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestCondition {
    /// Conditions of the object: `Applied`, `Available`, and those of its condition rules.
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// Which object this is.
    pub resource_meta: ManifestResourceMeta,
    /// The status values the object's feedback rules asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_feedback: Option<StatusFeedbackResult>,
}

/// Which object of a ManifestWork a status entry is about.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestResourceMeta {
    /// The API group of the object; empty for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The kind of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The name of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The namespace of the object; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The index of the object in `spec.workload.manifests`.
    pub ordinal: i32,
    /// The resource (plural, lower case) of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The API version of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The status values reported for an object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusFeedbackResult {
    /// The values, one per name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub values: Option<Vec<FeedbackValue>>,
}

/// One reported status value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackValue {
    /// The value.
    pub field_value: FieldValue,
    /// The name of the value: a well-known name, or the name given in a JSONPath rule.
    pub name: String,
}

/// A status value, typed; the field named by `type` holds it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldValue {
    /// The value, for type `Boolean`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boolean: Option<bool>,
    /// The value, for type `Integer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integer: Option<i64>,
    /// The value as JSON text, for type `JsonRaw` (values that are not scalars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub json_raw: Option<String>,
    /// The value, for type `String`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    /// The type of the value, naming the field that holds it.
    #[serde(rename = "type")]
    pub type_: ValueType,
}

/// The types of status value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ValueType {
    /// A 64-bit integer, in `integer`.
    #[default]
    Integer,
    /// A string, in `string`.
    String,
    /// A boolean, in `boolean`.
    Boolean,
    /// JSON text of up to 1024 bytes, in `jsonRaw`. The agent reports these only with its
    /// `RawFeedbackJsonString` feature.
    JsonRaw,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_values_round_trip() {
        let json = serde_json::json!({"values": [
            {"name": "replicas", "fieldValue": {"type": "Integer", "integer": 3}},
            {"name": "isAvailable", "fieldValue": {"type": "String", "string": "True"}},
            {"name": "raw", "fieldValue": {"type": "JsonRaw", "jsonRaw": "{\"a\":1}"}},
        ]});
        let result: StatusFeedbackResult = serde_json::from_value(json.clone()).unwrap();
        let values = result.values.as_ref().unwrap();
        assert_eq!(values[0].field_value.integer, Some(3));
        assert_eq!(values[2].field_value.type_, ValueType::JsonRaw);
        assert_eq!(serde_json::to_value(&result).unwrap(), json);
    }
}
