//! Kubernetes types that OCM kinds embed, with the exact schemas the upstream CRDs give them.
//!
//! `k8s-openapi` has these types, but its schemas lack the validations (`maxLength`, `pattern`,
//! `x-kubernetes-list-type`, …) that `controller-gen` writes into the OCM CRDs, so the CRDs we
//! generate need their own copies. They serialize exactly like the `k8s-openapi` types, and
//! convert from and into them.
//!
//! The doc comments of these types become CRD descriptions, so they speak of the wire format;
//! for the Rust helpers, see [`crate::conditions`] (set and read conditions with Kubernetes'
//! `lastTransitionTime` rules) and [`crate::selector`] (evaluate a [`LabelSelector`]).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{api::resource::Quantity, apis::meta::v1 as metav1};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The pattern of a condition `type`: an optional DNS-subdomain prefix and a qualified name.
pub const CONDITION_TYPE_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// The pattern of a condition `reason`: a CamelCase identifier.
pub const CONDITION_REASON_PATTERN: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

/// One aspect of an object's current state (Kubernetes `metav1.Condition`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// When the condition last changed from one status to another.
    pub last_transition_time: metav1::Time,
    /// A human-readable message with details about the transition; may be empty.
    #[schemars(length(max = 32768))]
    pub message: String,
    /// The `metadata.generation` of the object that the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub observed_generation: Option<i64>,
    /// A machine-readable CamelCase reason for the last transition.
    #[schemars(length(min = 1, max = 1024), regex(pattern = CONDITION_REASON_PATTERN))]
    pub reason: String,
    /// `True`, `False` or `Unknown`.
    #[schemars(extend("enum" = ["True", "False", "Unknown"]))]
    pub status: String,
    /// The type of the condition, in CamelCase or `foo.example.com/CamelCase`.
    #[serde(rename = "type")]
    #[schemars(length(max = 316), regex(pattern = CONDITION_TYPE_PATTERN))]
    pub type_: String,
}

impl From<metav1::Condition> for Condition {
    fn from(c: metav1::Condition) -> Self {
        Self {
            last_transition_time: c.last_transition_time,
            message: c.message,
            observed_generation: c.observed_generation,
            reason: c.reason,
            status: c.status,
            type_: c.type_,
        }
    }
}

impl From<Condition> for metav1::Condition {
    fn from(c: Condition) -> Self {
        Self {
            last_transition_time: c.last_transition_time,
            message: c.message,
            observed_generation: c.observed_generation,
            reason: c.reason,
            status: c.status,
            type_: c.type_,
        }
    }
}

/// A label query over a set of objects (Kubernetes `metav1.LabelSelector`).
///
/// The requirements of `matchLabels` and `matchExpressions` are ANDed; an empty selector matches
/// everything.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct LabelSelector {
    /// Requirements on label values, all of which must hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
    /// Labels that must be present with exactly these values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
}

/// One requirement of a [`LabelSelector`]: a key, an operator and values.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label key the requirement applies to.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values for `In` and `NotIn`; empty for `Exists` and `DoesNotExist`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub values: Option<Vec<String>>,
}

impl From<metav1::LabelSelector> for LabelSelector {
    fn from(s: metav1::LabelSelector) -> Self {
        Self {
            match_expressions: s.match_expressions.map(|exprs| {
                exprs
                    .into_iter()
                    .map(|e| LabelSelectorRequirement {
                        key: e.key,
                        operator: e.operator,
                        values: e.values,
                    })
                    .collect()
            }),
            match_labels: s.match_labels,
        }
    }
}

impl From<LabelSelector> for metav1::LabelSelector {
    fn from(s: LabelSelector) -> Self {
        Self {
            match_expressions: s.match_expressions.map(|exprs| {
                exprs
                    .into_iter()
                    .map(|e| metav1::LabelSelectorRequirement {
                        key: e.key,
                        operator: e.operator,
                        values: e.values,
                    })
                    .collect()
            }),
            match_labels: s.match_labels,
        }
    }
}

/// A toleration of a Kubernetes node taint (Kubernetes `corev1.Toleration`), as used in
/// node placement of add-on and operator agents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    /// The taint effect to match (`NoSchedule`, `PreferNoSchedule`, `NoExecute`); empty matches all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// The taint key to match; empty with operator `Exists` matches every taint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `Exists` or `Equal` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// For `NoExecute`, how long the toleration lasts once the taint is added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
    /// The taint value to match with operator `Equal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// Compute resources of a container (Kubernetes `corev1.ResourceRequirements`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequirements {
    /// Dynamically allocated resources (DRA claims) the container uses, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub claims: Option<Vec<ResourceClaim>>,
    /// The most of each resource the container may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity_map_schema")]
    pub limits: Option<BTreeMap<String, Quantity>>,
    /// The least of each resource the container needs; defaults to `limits`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity_map_schema")]
    pub requests: Option<BTreeMap<String, Quantity>>,
}

/// A reference to one resource claim of the pod, used by a container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaim {
    /// The name of an entry in the pod's `resourceClaims`.
    pub name: String,
    /// The request within that claim to use; empty means the whole claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural_schema;

    #[test]
    fn condition_schema_matches_upstream_validations() {
        let schema = structural_schema::<Condition>();
        assert_eq!(
            schema["required"],
            serde_json::json!(["lastTransitionTime", "message", "reason", "status", "type"])
        );
        assert_eq!(schema["properties"]["lastTransitionTime"]["format"], "date-time");
        assert_eq!(
            schema["properties"]["status"]["enum"],
            serde_json::json!(["True", "False", "Unknown"])
        );
        assert_eq!(schema["properties"]["type"]["maxLength"], 316);
        assert_eq!(schema["properties"]["observedGeneration"]["minimum"], 0);
    }

    #[test]
    fn label_selector_converts_both_ways() {
        let json = serde_json::json!({
            "matchLabels": {"a": "b"},
            "matchExpressions": [{"key": "k", "operator": "In", "values": ["x"]}]
        });
        let ours: LabelSelector = serde_json::from_value(json.clone()).unwrap();
        let theirs: metav1::LabelSelector = ours.clone().into();
        assert_eq!(serde_json::to_value(&theirs).unwrap(), json);
        assert_eq!(LabelSelector::from(theirs), ours);
    }
}
