//! `cluster.open-cluster-management.io/v1alpha1`: rollout strategies (shared by
//! ManifestWorkReplicaSet and ClusterManagementAddOn), ClusterClaim and AddOnPlacementScore.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
