//! `cluster.open-cluster-management.io/v1alpha1`: rollout strategies (shared by
//! ManifestWorkReplicaSet and ClusterManagementAddOn), ClusterClaim and AddOnPlacementScore.

use k8s_openapi::apimachinery::pkg::{apis::meta::v1::Time, util::intstr::IntOrString};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::meta::Condition;

/// The pattern of `maxFailures` and `maxConcurrency`: a count or a percentage up to 100%.
pub const COUNT_OR_PERCENT_PATTERN: &str = r"^((100|[0-9]{1,2})%|[0-9]+)$";

/// The pattern of `progressDeadline`: a Go duration of whole hours, minutes or seconds, or `None`.
pub const PROGRESS_DEADLINE_PATTERN: &str = r"^(([0-9])+[h|m|s])|None$";

/// How a change rolls out over the clusters that placements select.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// Settings of the `All` rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<RolloutAll>,
    /// Settings of the `Progressive` rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progressive: Option<RolloutProgressive>,
    /// Settings of the `ProgressivePerGroup` rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progressive_per_group: Option<RolloutProgressivePerGroup>,
    /// The kind of rollout; `All` when absent.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "All"))]
    pub type_: Option<RolloutType>,
}

/// The kinds of rollout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum RolloutType {
    /// Every selected cluster at once.
    #[default]
    All,
    /// Cluster by cluster, at most `maxConcurrency` at a time, in decision-group order.
    Progressive,
    /// Decision group by decision group: the next group starts when the previous one succeeded.
    ProgressivePerGroup,
}

/// Settings every kind of rollout shares.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutConfig {
    /// How many clusters (or what percentage of them) may fail or time out before the rollout
    /// stops; `0` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "crate::schema::int_or_string_schema",
        extend("pattern" = COUNT_OR_PERCENT_PATTERN, "default" = 0)
    )]
    pub max_failures: Option<IntOrString>,
    /// How long a cluster must stay successful before the rollout moves on (a Go duration such as
    /// `5m`); `0` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "0"))]
    pub min_success_time: Option<String>,
    /// How long a cluster may take to succeed before it counts as timed out (`90m`, `2h`), or
    /// `None` to wait forever, the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = PROGRESS_DEADLINE_PATTERN), extend("default" = "None"))]
    pub progress_deadline: Option<String>,
}

/// The `All` rollout: every selected cluster at once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutAll {
    /// Failure and timing settings.
    #[serde(flatten)]
    pub config: RolloutConfig,
}

/// The `ProgressivePerGroup` rollout: decision group after decision group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutProgressivePerGroup {
    /// Failure and timing settings.
    #[serde(flatten)]
    pub config: RolloutConfig,
    /// Decision groups that must all succeed first, whatever `maxFailures` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mandatory_decision_groups: Option<Vec<MandatoryDecisionGroup>>,
}

/// The `Progressive` rollout: cluster by cluster, at most `maxConcurrency` at a time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutProgressive {
    /// Failure and timing settings.
    #[serde(flatten)]
    pub config: RolloutConfig,
    /// Decision groups that must all succeed first, whatever `maxFailures` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mandatory_decision_groups: Option<Vec<MandatoryDecisionGroup>>,
    /// How many clusters (or what percentage of them) update at the same time; by default the
    /// size of the largest decision group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "crate::schema::int_or_string_schema",
        extend("pattern" = COUNT_OR_PERCENT_PATTERN)
    )]
    pub max_concurrency: Option<IntOrString>,
}

/// A decision group named by name or by index (the name wins when both are given).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandatoryDecisionGroup {
    /// The index of the decision group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_index: Option<i32>,
    /// The name of the decision group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_name: Option<String>,
}

crate::resource::custom_resource! {
    /// A fact a managed cluster states about itself, such as its ID or platform.
    ///
    /// ClusterClaims are created on the managed cluster; the registration agent copies their names
    /// and values into the `status.clusterClaims` of the cluster's ManagedCluster on the hub, where
    /// placements can select on them. A claim labelled `open-cluster-management.io/spoke-only` stays
    /// on the managed cluster. The well-known claim names are in
    /// [`objects::RESERVED_CLUSTER_CLAIMS`](crate::names::objects::RESERVED_CLUSTER_CLAIMS).
    pub struct ClusterClaim {
        group: super::GROUP,
        version: "v1alpha1",
        plural: "clusterclaims",
        scope: Cluster,
        short_names: [],
        spec: ClusterClaimSpec,
        spec_required: false,
        printer_columns: [],
        description: "A fact a managed cluster states about itself, created on the managed cluster; its name \
            is the claim's name. The registration agent reports claims in the status of the cluster's \
            ManagedCluster on the hub, where placements can select on them.",
    }
}

/// The value of a cluster claim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterClaimSpec {
    /// The claimed value; its meaning depends on the claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub value: Option<String>,
}

crate::resource::custom_resource! {
    /// Scores that an add-on publishes for one managed cluster, for placements to rank clusters by.
    ///
    /// It lives in the cluster's namespace on the hub. A placement uses a score by naming this
    /// object and the score in a prioritizer of type `AddOn`, or through
    /// `managedCluster.scores("<name>")` in a CEL selector. Once `validUntil` has passed,
    /// placements ignore the scores.
    pub struct AddOnPlacementScore {
        group: super::GROUP,
        version: "v1alpha1",
        plural: "addonplacementscores",
        scope: Namespaced,
        short_names: [],
        status: AddOnPlacementScoreStatus,
        printer_columns: [],
        description: "Scores that an add-on publishes for one managed cluster, in the cluster's namespace on \
            the hub; placements rank clusters by them through AddOn prioritizers and CEL selectors.",
    }
}

/// The scores of one cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnPlacementScoreStatus {
    /// The conditions of the scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// The scores, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub scores: Option<Vec<AddOnPlacementScoreItem>>,
    /// When the scores stop being valid; they never expire when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<Time>,
}

/// One named score.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnPlacementScoreItem {
    /// The score's name, which prioritizers refer to.
    pub name: String,
    /// The score, from -100 to 100.
    #[schemars(range(min = -100, max = 100))]
    pub value: i32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural_schema;

    #[test]
    fn rollout_schema_has_upstream_defaults_and_patterns() {
        let schema = structural_schema::<RolloutStrategy>();
        let all = &schema["properties"]["all"]["properties"];
        assert_eq!(all["maxFailures"]["default"], 0);
        assert_eq!(all["maxFailures"]["pattern"], COUNT_OR_PERCENT_PATTERN);
        assert_eq!(all["maxFailures"]["x-kubernetes-int-or-string"], true);
        assert_eq!(all["progressDeadline"]["default"], "None");
        assert_eq!(all["minSuccessTime"]["default"], "0");
        assert_eq!(schema["properties"]["type"]["default"], "All");
        assert_eq!(
            schema["properties"]["progressive"]["properties"]["mandatoryDecisionGroups"]["items"]["properties"]
                ["groupIndex"]["format"],
            "int32"
        );
    }

    #[test]
    fn flattened_config_round_trips() {
        let json = serde_json::json!({
            "type": "Progressive",
            "progressive": {"maxConcurrency": "25%", "maxFailures": 2, "minSuccessTime": "5m",
                "mandatoryDecisionGroups": [{"groupName": "canary"}]}
        });
        let strategy: RolloutStrategy = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(strategy.type_, Some(RolloutType::Progressive));
        assert_eq!(serde_json::to_value(&strategy).unwrap(), json);
    }
}
