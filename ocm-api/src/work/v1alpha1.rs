//! `work.open-cluster-management.io/v1alpha1`: the [`ManifestWorkReplicaSet`] kind.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{cluster::v1alpha1::RolloutStrategy, meta::Condition, work::v1::ManifestWorkSpec};

crate::resource::custom_resource! {
    /// One ManifestWork template for every cluster that some Placements select.
    ///
    /// The hub creates a ManifestWork from `spec.manifestWorkTemplate` in the namespace of each
    /// cluster the referenced Placements (in the same namespace) select, rolls changes out
    /// following each Placement's rollout strategy, and sums up the state of those ManifestWorks
    /// in `status`. Needs the hub's `ManifestWorkReplicaSet` feature.
    pub struct ManifestWorkReplicaSet {
        group: super::GROUP,
        version: "v1alpha1",
        plural: "manifestworkreplicasets",
        scope: Namespaced,
        short_names: ["mwrs"],
        spec: ManifestWorkReplicaSetSpec,
        spec_required: false,
        status: ManifestWorkReplicaSetStatus,
        printer_columns: [
            ("Placement", "string", ".status.conditions[?(@.type==\"PlacementVerified\")].reason"),
            ("Found", "string", ".status.conditions[?(@.type==\"PlacementVerified\")].status"),
            ("ManifestWorks", "string", ".status.conditions[?(@.type==\"ManifestworkApplied\")].reason"),
            ("Applied", "string", ".status.conditions[?(@.type==\"ManifestworkApplied\")].status"),
        ],
        description: "One ManifestWork template for every cluster that the referenced Placements select: the hub \
            creates a ManifestWork from it in each selected cluster's namespace and rolls changes out by each \
            Placement's rollout strategy.",
    }
}

/// The ManifestWork to create and the Placements that choose where.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSetSpec {
    /// Whether deleting the ManifestWorkReplicaSet waits for its ManifestWorks to be deleted.
    /// The API server sets `Background` when it is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = "Background"))]
    pub cascade_deletion_policy: Option<CascadeDeletionPolicy>,
    /// The spec of every ManifestWork created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_work_template: Option<ManifestWorkSpec>,
    /// The Placements, in the namespace of the ManifestWorkReplicaSet, whose decisions name the
    /// clusters; at least one.
    #[schemars(length(min = 1))]
    pub placement_refs: Vec<LocalPlacementReference>,
}

/// How deleting a ManifestWorkReplicaSet deletes its ManifestWorks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum CascadeDeletionPolicy {
    /// The ManifestWorkReplicaSet is deleted at once; its ManifestWorks are deleted afterwards.
    #[default]
    Background,
    /// The ManifestWorkReplicaSet stays until all its ManifestWorks are deleted.
    Foreground,
}

/// A Placement in the namespace of the ManifestWorkReplicaSet, and how to roll out to the
/// clusters it selects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalPlacementReference {
    /// The name of the Placement.
    #[schemars(length(min = 1))]
    pub name: String,
    /// How changes roll out over the selected clusters; all at once when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"all": {"progressDeadline": "None"}, "type": "All"}))]
    pub rollout_strategy: Option<RolloutStrategy>,
}

/// The state of the ManifestWorks of a ManifestWorkReplicaSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSetStatus {
    /// Conditions: `PlacementVerified`, `PlacementRolledOut` and `ManifestworkApplied`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// Counts of ManifestWorks per Placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_summary: Option<Vec<PlacementSummary>>,
    /// Counts of ManifestWorks over all Placements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<ManifestWorkReplicaSetSummary>,
}

/// Counts of the ManifestWorks created for one Placement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementSummary {
    /// Which decision groups of the Placement the rollout has reached, as text such as
    /// `1 (2 / 5 clusters applied)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_decision_groups: Option<String>,
    /// The name of the Placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<ManifestWorkReplicaSetSummary>,
}

/// Counts of ManifestWorks of a ManifestWorkReplicaSet by state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSetSummary {
    /// How many are `Applied`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::integer_schema")]
    pub applied: Option<i64>,
    /// How many are `Available`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::integer_schema")]
    pub available: Option<i64>,
    /// How many are `Degraded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::integer_schema")]
    pub degraded: Option<i64>,
    /// How many clusters the Placements select, so how many ManifestWorks there should be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::integer_schema")]
    pub desired_total: Option<i64>,
    /// How many are `Progressing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::integer_schema")]
    pub progressing: Option<i64>,
    /// How many there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::integer_schema")]
    pub total: Option<i64>,
    /// How many have the current template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::integer_schema")]
    pub updated: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural_schema;

    #[test]
    fn spec_schema_requires_policy_and_placements() {
        let schema = structural_schema::<ManifestWorkReplicaSetSpec>();
        assert_eq!(
            schema["required"],
            serde_json::json!(["cascadeDeletionPolicy", "placementRefs"])
        );
        assert_eq!(schema["properties"]["placementRefs"]["minItems"], 1);
        assert_eq!(
            schema["properties"]["placementRefs"]["items"]["properties"]["rolloutStrategy"]["default"],
            serde_json::json!({"all": {"progressDeadline": "None"}, "type": "All"})
        );
    }

    #[test]
    fn summary_counts_are_plain_integers() {
        let schema = structural_schema::<ManifestWorkReplicaSetSummary>();
        assert_eq!(schema["properties"]["total"]["type"], "integer");
        assert!(schema["properties"]["total"].get("format").is_none());
    }
}
