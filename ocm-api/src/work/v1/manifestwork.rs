//! The [`ManifestWork`] kind and its spec: what to apply on a managed cluster and how.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Manifest, ManifestWorkStatus};

/// The pattern of a Kubernetes DNS subdomain name (service account names and namespaces).
pub const DNS_SUBDOMAIN_PATTERN: &str =
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$";

/// The pattern a server-side apply field manager matches: it starts with `work-agent`.
pub const FIELD_MANAGER_PATTERN: &str = "^work-agent";

crate::resource::custom_resource! {
    /// A set of Kubernetes objects the hub wants on one managed cluster.
    ///
    /// A ManifestWork lives in the cluster's namespace on the hub. The work agent of that cluster
    /// applies its manifests there, records what it applied in an
    /// [`AppliedManifestWork`](super::AppliedManifestWork), and reports the state of each object
    /// back in `status`. By default deleting the ManifestWork deletes the objects too.
    pub struct ManifestWork {
        group: super::super::GROUP,
        version: "v1",
        plural: "manifestworks",
        scope: Namespaced,
        short_names: [],
        spec: ManifestWorkSpec,
        spec_required: false,
        status: ManifestWorkStatus,
        printer_columns: [],
        description: "A set of Kubernetes objects for the work agent of one managed cluster to apply. It lives \
            in the cluster's namespace on the hub; the agent reports the state of each object in status.",
    }
}

/// What a ManifestWork applies on its managed cluster, and how.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkSpec {
    /// What happens to the applied objects when the ManifestWork is deleted; all of them are
    /// deleted (in the foreground) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_option: Option<DeleteOption>,
    /// Who the work agent acts as when it applies the manifests; the agent checks that identity's
    /// permissions on the managed cluster first. When absent the agent uses its own identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<ManifestWorkExecutor>,
    /// Per-object settings: how to update an object, what status to report back from it and
    /// which conditions to compute for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_configs: Option<Vec<ManifestConfigOption>>,
    /// The objects to apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<ManifestsTemplate>,
}

/// The objects of a ManifestWork.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestsTemplate {
    /// Complete Kubernetes objects, applied in this order. Each must have `metadata.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifests: Option<Vec<Manifest>>,
}

/// What happens to the applied objects when their ManifestWork is deleted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOption {
    /// Whether the objects are deleted with the ManifestWork, left in place, or left in place
    /// only where `selectivelyOrphans` says so. `Foreground` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Foreground"))]
    pub propagation_policy: Option<DeletePropagationPolicy>,
    /// The objects to leave in place under the `SelectivelyOrphan` policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selectively_orphans: Option<SelectivelyOrphan>,
    /// Seconds after the ManifestWork turns `Complete` at which the hub deletes it. It is never
    /// deleted automatically when absent. Needs the hub's `CleanUpCompletedManifestWork` feature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i64>,
}

/// What deleting a ManifestWork does to the objects it applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum DeletePropagationPolicy {
    /// The objects are deleted, and the ManifestWork stays until they are gone.
    #[default]
    Foreground,
    /// Every object stays on the managed cluster.
    Orphan,
    /// The objects matched by `selectivelyOrphans` stay; the others are deleted. Meant for
    /// handing objects over to another ManifestWork or another owner.
    SelectivelyOrphan,
}

/// The objects to keep when a ManifestWork is deleted under the `SelectivelyOrphan` policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectivelyOrphan {
    /// The objects to keep, each named by group, resource, namespace and name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orphaning_rules: Option<Vec<OrphaningRule>>,
}

/// One object to keep on the managed cluster when its ManifestWork is deleted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrphaningRule {
    /// The API group of the object; empty for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The name of the object.
    pub name: String,
    /// The namespace of the object; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The resource (plural, lower case) of the object, e.g. `services`.
    pub resource: String,
}

/// The identity the work agent uses to apply a ManifestWork.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkExecutor {
    /// The identity: today a service account on the managed cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<ManifestWorkExecutorSubject>,
}

/// The identity of an executor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkExecutorSubject {
    /// The service account, for subjects of type `ServiceAccount`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ManifestWorkSubjectServiceAccount>,
    /// What kind of identity the subject is.
    #[serde(rename = "type")]
    pub type_: ManifestWorkExecutorSubjectType,
}

/// The kinds of executor identity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ManifestWorkExecutorSubjectType {
    /// A service account on the managed cluster, given in `serviceAccount`.
    #[default]
    ServiceAccount,
}

/// A service account on the managed cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkSubjectServiceAccount {
    /// The name of the service account.
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN_PATTERN))]
    pub name: String,
    /// The namespace of the service account.
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN_PATTERN))]
    pub namespace: String,
}

/// Settings for one object of a ManifestWork, chosen by `resourceIdentifier`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestConfigOption {
    /// Conditions the agent computes for the object and reports in its status, one per condition
    /// type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["condition"]))]
    pub condition_rules: Option<Vec<ConditionRule>>,
    /// Which status values of the object the agent reports back in `statusFeedback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback_rules: Option<Vec<FeedbackRule>>,
    /// How the agent notices changes of the object's status for feedback: by polling (`Poll`,
    /// the default) or by watching it (`Watch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Poll"))]
    pub feedback_scrape_type: Option<FeedbackScrapeType>,
    /// The object these settings apply to.
    pub resource_identifier: ResourceIdentifier,
    /// How the agent creates and updates the object; `Update` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
}

/// Names one object of a ManifestWork by group, resource, namespace and name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceIdentifier {
    /// The API group of the object; empty for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The name of the object.
    pub name: String,
    /// The namespace of the object; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The resource (plural, lower case) of the object, e.g. `deployments`.
    pub resource: String,
}

/// How the work agent notices status changes of an object for feedback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum FeedbackScrapeType {
    /// The agent reads the object's status periodically.
    #[default]
    Poll,
    /// The agent watches the object and reports changes as they happen.
    Watch,
}

/// How the work agent creates and updates an object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    /// Settings of server-side apply, for the `ServerSideApply` strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<ServerSideApplyConfig>,
    /// The strategy. The API server sets `Update` when it is absent.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = "Update"))]
    pub type_: Option<UpdateStrategyType>,
}

/// The ways the work agent creates and updates an object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum UpdateStrategyType {
    /// Create the object, or update it to match the manifest, owning every field.
    #[default]
    Update,
    /// Create the object if it is missing, and never change it afterwards.
    CreateOnly,
    /// Apply the manifest with server-side apply, owning only the fields it sets.
    ServerSideApply,
    /// Never write the object: only read it, for status feedback and conditions.
    ReadOnly,
}

/// Settings of server-side apply.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerSideApplyConfig {
    /// The field manager the agent applies as; it must start with `work-agent`, which is the
    /// default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = FIELD_MANAGER_PATTERN), extend("default" = "work-agent"))]
    pub field_manager: Option<String>,
    /// Whether to take over fields that another field manager owns, instead of failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Fields of the object the agent leaves alone, so that changes made on the managed cluster
    /// do not count as drift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["condition"]))]
    pub ignore_fields: Option<Vec<IgnoreField>>,
}

/// Fields the work agent ignores under server-side apply, and when.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IgnoreField {
    /// When the fields are ignored. The API server sets `OnSpokePresent` when it is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = "OnSpokePresent"))]
    pub condition: Option<IgnoreFieldsCondition>,
    /// The fields, as jq path expressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jq_path_expressions: Option<Vec<String>>,
    /// The fields, as JSONPath expressions such as `.data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_paths: Option<Vec<String>>,
    /// The fields, as JSON pointers such as `/data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_pointers: Option<Vec<String>>,
}

/// When the work agent ignores fields under server-side apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum IgnoreFieldsCondition {
    /// Whenever the object exists on the managed cluster: the fields are set only when creating it.
    #[default]
    OnSpokePresent,
    /// When only the managed cluster changed them: a change of the manifest is still applied.
    OnSpokeChange,
}

/// Which status values of an object the work agent reports back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackRule {
    /// The values to report, for rules of type `JSONPaths`; one per name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub json_paths: Option<Vec<JsonPath>>,
    /// What kind of rule this is.
    #[serde(rename = "type")]
    pub type_: FeedbackType,
}

/// The kinds of feedback rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum FeedbackType {
    /// The status values the agent knows for common kinds (such as a Deployment's replica counts).
    #[default]
    WellKnownStatus,
    /// The values at the JSONPaths given in `jsonPaths`.
    #[serde(rename = "JSONPaths")]
    JsonPaths,
}

/// One status value to report, found by a JSONPath.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JsonPath {
    /// The name the value is reported under.
    pub name: String,
    /// The JSONPath of the value within the object, e.g. `.status.replicas`.
    pub path: String,
    /// The API version to read the object at; the manifest's version when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A condition the work agent computes for an object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self.type != 'CEL' || self.condition != \"\"",
    "message": "Condition is required for CEL rules",
}]))]
pub struct ConditionRule {
    /// CEL expressions that must all be true for the condition to be `True`, for rules of type
    /// `CEL`. They see the object as `object`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel_expressions: Option<Vec<String>>,
    /// The condition type to set, e.g. `Complete`.
    pub condition: String,
    /// A fixed message for the condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A CEL expression computing the message; it sees `object` and the rule's `result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression: Option<String>,
    /// What kind of rule this is.
    #[serde(rename = "type")]
    pub type_: ConditionRuleType,
}

/// The kinds of condition rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ConditionRuleType {
    /// The condition as the agent knows it for common kinds (such as `Complete` for a Job).
    #[default]
    WellKnownConditions,
    /// The condition computed by the rule's CEL expressions.
    #[serde(rename = "CEL")]
    Cel,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural_schema;

    #[test]
    fn spec_round_trips_and_keeps_manifests() {
        let json = serde_json::json!({
            "workload": {"manifests": [
                {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c", "namespace": "d"},
                 "data": {"z": "1", "a": "2"}}
            ]},
            "manifestConfigs": [{
                "resourceIdentifier": {"resource": "configmaps", "name": "c", "namespace": "d"},
                "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {"force": true}},
                "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "n", "path": ".data.a"}]}],
                "conditionRules": [{"type": "CEL", "condition": "Ready", "celExpressions": ["true"]}]
            }],
            "deleteOption": {"propagationPolicy": "Orphan"}
        });
        let spec: ManifestWorkSpec = serde_json::from_value(json.clone()).unwrap();
        let config = &spec.manifest_configs.as_ref().unwrap()[0];
        assert_eq!(
            config.update_strategy.as_ref().unwrap().type_,
            Some(UpdateStrategyType::ServerSideApply)
        );
        assert_eq!(
            config.feedback_rules.as_ref().unwrap()[0].type_,
            FeedbackType::JsonPaths
        );
        assert_eq!(
            config.condition_rules.as_ref().unwrap()[0].type_,
            ConditionRuleType::Cel
        );
        let manifest = &spec.workload.as_ref().unwrap().manifests.as_ref().unwrap()[0];
        assert_eq!(manifest.name(), Some("c"));
        assert_eq!(serde_json::to_value(&spec).unwrap(), json);
    }

    #[test]
    fn required_fields_with_defaults_may_be_absent() {
        let strategy: UpdateStrategy = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(strategy.type_, None);
        assert_eq!(serde_json::to_value(&strategy).unwrap(), serde_json::json!({}));
        let schema = structural_schema::<UpdateStrategy>();
        assert_eq!(schema["required"], serde_json::json!(["type"]));
        assert_eq!(schema["properties"]["type"]["default"], "Update");
    }

    #[test]
    fn condition_rule_carries_its_cel_validation() {
        let schema = structural_schema::<ConditionRule>();
        assert_eq!(
            schema["x-kubernetes-validations"][0]["rule"],
            "self.type != 'CEL' || self.condition != \"\""
        );
        assert_eq!(
            schema["properties"]["type"]["enum"],
            serde_json::json!(["WellKnownConditions", "CEL"])
        );
    }
}
