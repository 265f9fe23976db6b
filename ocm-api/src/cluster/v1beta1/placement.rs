//! The [`Placement`] kind: which managed clusters a workload or add-on goes to.

use k8s_openapi::apimachinery::pkg::{apis::meta::v1::Time, util::intstr::IntOrString};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::v1::{TAINT_KEY_PATTERN, TaintEffect};
use crate::meta::{Condition, LabelSelector, LabelSelectorRequirement};

/// The pattern of a decision group's name.
pub const GROUP_NAME_PATTERN: &str = r"^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$";

/// The pattern of `clustersPerDecisionGroup`: a positive count or a percentage from 1% to 100%.
pub const CLUSTERS_PER_GROUP_PATTERN: &str = r"^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$";

/// The pattern of `scoreRateLimit`: whole hours, minutes or seconds.
pub const SCORE_RATE_LIMIT_PATTERN: &str = r"^[0-9]+[hms]$";

/// The pattern of a spread constraint's `topologyKey`: a label or claim name with an optional
/// DNS-subdomain prefix.
pub const TOPOLOGY_KEY_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";

crate::resource::custom_resource! {
    /// Selects managed clusters for whatever refers to it (ManifestWorkReplicaSets, add-on install
    /// strategies, …).
    ///
    /// The candidates are the members of the cluster sets bound to the Placement's namespace,
    /// optionally narrowed to `spec.clusterSets`. Of those, the clusters that match any predicate
    /// and tolerate every taint they carry are scored by the prioritizers, and the best
    /// `numberOfClusters` (all, when unset) are chosen. The placement controller writes the chosen
    /// clusters into [`PlacementDecision`](super::PlacementDecision)s labelled with the
    /// placement's name ([`labels::PLACEMENT`](crate::names::labels::PLACEMENT)).
    pub struct Placement {
        group: crate::cluster::GROUP,
        version: "v1beta1",
        plural: "placements",
        scope: Namespaced,
        short_names: [],
        spec: PlacementSpec,
        spec_required: true,
        status: PlacementStatus,
        printer_columns: [
            ("Succeeded", "string", ".status.conditions[?(@.type==\"PlacementSatisfied\")].status"),
            ("Reason", "string", ".status.conditions[?(@.type==\"PlacementSatisfied\")].reason"),
            ("SelectedClusters", "integer", ".status.numberOfSelectedClusters"),
        ],
        description: "Selects managed clusters from the cluster sets bound to its namespace: the clusters that \
            match a predicate and tolerate their taints are scored by the prioritizers, and the best \
            numberOfClusters of them (all, when unset) are written into PlacementDecisions.",
    }
}

/// Which clusters a placement selects, how many, and how it ranks and groups them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementSpec {
    /// The bound cluster sets to choose from; every set bound to the namespace when absent or
    /// empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_sets: Option<Vec<String>>,
    /// How the chosen clusters are split into decision groups, which progressive rollouts use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_strategy: Option<DecisionStrategy>,
    /// How many clusters to choose; every matching cluster when absent. The placement is not
    /// satisfied while fewer clusters match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_of_clusters: Option<i32>,
    /// Cluster requirements, any one of which a cluster must meet; every candidate matches when
    /// there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicates: Option<Vec<ClusterPredicate>>,
    /// How candidates are scored when only some of them are chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prioritizer_policy: Option<PrioritizerPolicy>,
    /// The shortest interval between two updates of the scores recorded in the decisions, as a Go
    /// duration of whole hours, minutes or seconds; `1m` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = SCORE_RATE_LIMIT_PATTERN), extend("default" = "1m"))]
    pub score_rate_limit: Option<String>,
    /// The order of the clusters in the decisions; by cluster name by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "ClusterName"))]
    pub sort_by: Option<PlacementSortBy>,
    /// How the chosen clusters spread over topology domains (label or claim values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_policy: Option<SpreadPolicy>,
    /// The cluster taints this placement tolerates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
}

/// The order of the clusters in a placement's decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum PlacementSortBy {
    /// Alphabetically by cluster name.
    #[default]
    ClusterName,
    /// By score.
    Score,
}

/// How a placement's chosen clusters are split into decision groups.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionStrategy {
    /// The groups and their size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_strategy: Option<GroupStrategy>,
}

/// The decision groups of a placement: named groups first, then chunks of the remaining clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupStrategy {
    /// The most clusters in one decision group, as a count or a percentage of the chosen clusters;
    /// `100%` by default. Named groups larger than this are split too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "crate::schema::int_or_string_schema",
        extend("pattern" = CLUSTERS_PER_GROUP_PATTERN, "default" = "100%")
    )]
    pub clusters_per_decision_group: Option<IntOrString>,
    /// Named groups, built first from the chosen clusters their selectors match; the clusters in
    /// no named group then form further, unnamed groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_groups: Option<Vec<DecisionGroup>>,
}

/// A named decision group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionGroup {
    /// Which of the chosen clusters belong to the group.
    pub group_cluster_selector: GroupClusterSelector,
    /// The group's name, which rollout strategies refer to.
    #[schemars(regex(pattern = GROUP_NAME_PATTERN))]
    pub group_name: String,
}

/// Which clusters belong to a decision group: those matching all of its selectors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupClusterSelector {
    /// Requirements on the clusters' claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_selector: Option<ClusterClaimSelector>,
    /// Requirements on the clusters' labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// One requirement that a placement's candidate clusters may meet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPredicate {
    /// What a cluster must satisfy to meet this predicate; every cluster meets it when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_cluster_selector: Option<ClusterSelector>,
}

/// Requirements on a cluster's labels, claims and CEL-visible state, all of which must hold.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSelector {
    /// CEL expressions over the ManagedCluster, all of which must be true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel_selector: Option<ClusterCelSelector>,
    /// Requirements on the cluster's claims (`status.clusterClaims`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_selector: Option<ClusterClaimSelector>,
    /// Requirements on the cluster's labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// Requirements on a cluster's claims, written like label selector requirements with claim
/// names as keys.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterClaimSelector {
    /// Requirements on claim values, all of which must hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
}

/// CEL expressions a cluster must satisfy.
///
/// Each expression sees the ManagedCluster as `managedCluster`, can use the Kubernetes semver
/// functions, and `managedCluster.scores("<AddOnPlacementScore name>")` for the cluster's add-on
/// scores.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCelSelector {
    /// The expressions, all of which must evaluate to true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel_expressions: Option<Vec<String>>,
}

/// How a placement scores its candidate clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizerPolicy {
    /// The prioritizers and their weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configurations: Option<Vec<PrioritizerConfig>>,
    /// `Additive` (the default): the listed prioritizers are added to the built-in `Steady` and
    /// `Balance` ones of weight 1, and a listed one overrides its default weight. `Exact`: only
    /// the listed prioritizers count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Additive"))]
    pub mode: Option<String>,
}

/// One prioritizer of a placement and its weight.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizerConfig {
    /// Where the prioritizer's scores come from.
    pub score_coordinate: ScoreCoordinate,
    /// How much the prioritizer counts, from -10 to 10; 1 by default. A negative weight prefers
    /// clusters with low scores, and 0 turns the prioritizer off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -10, max = 10), extend("default" = 1))]
    pub weight: Option<i32>,
}

/// Where a prioritizer's scores come from: a built-in prioritizer or an add-on's scores.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScoreCoordinate {
    /// The add-on score to use, for type `AddOn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on: Option<AddOnScore>,
    /// The built-in prioritizer, for type `BuiltIn`: `Balance`, `Steady`,
    /// `ResourceAllocatableCPU`, `ResourceAllocatableMemory` or `Spread`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_in: Option<String>,
    /// The kind of source; `BuiltIn` when absent.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = "BuiltIn"))]
    pub type_: Option<ScoreCoordinateType>,
}

/// The kinds of prioritizer score sources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ScoreCoordinateType {
    /// A prioritizer built into the placement controller.
    #[default]
    BuiltIn,
    /// A score that an add-on publishes in an AddOnPlacementScore in each cluster's namespace.
    AddOn,
}

/// A score that an add-on publishes for each cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnScore {
    /// The name of the AddOnPlacementScore in each cluster's namespace.
    pub resource_name: String,
    /// The name of the score within it.
    pub score_name: String,
}

/// How a placement's chosen clusters spread over topology domains.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpreadPolicy {
    /// The constraints, at most eight, applied in order: earlier constraints matter more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8))]
    pub spread_constraints: Option<Vec<SpreadConstraintsTerm>>,
}

/// One spread constraint: how unevenly the chosen clusters may spread over the values of a label
/// or claim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpreadConstraintsTerm {
    /// The largest allowed difference between the number of chosen clusters in any two topology
    /// domains; 1 by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 1))]
    pub max_skew: Option<i32>,
    /// The label or claim whose values are the topology domains.
    #[schemars(length(max = 316), regex(pattern = TOPOLOGY_KEY_PATTERN))]
    pub topology_key: String,
    /// Whether `topologyKey` names a label or a claim.
    pub topology_key_type: TopologyKeyType,
    /// What to do when the constraint cannot be met; `ScheduleAnyway` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "ScheduleAnyway"))]
    pub when_unsatisfiable: Option<UnsatisfiableMaxSkewAction>,
}

/// Whether a topology key names a label or a claim.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum TopologyKeyType {
    /// A label of the ManagedCluster.
    #[default]
    Label,
    /// A claim in the ManagedCluster's status.
    Claim,
}

/// What a placement does when a spread constraint cannot be met.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum UnsatisfiableMaxSkewAction {
    /// Choose fewer clusters rather than break the constraint.
    DoNotSchedule,
    /// Choose the clusters anyway, keeping the skew as small as possible.
    #[default]
    ScheduleAnyway,
}

/// A cluster taint that a placement tolerates.
///
/// With operator `Equal` it matches taints of the same key, value and effect; with `Exists`,
/// taints of the same key and effect whatever their value. An empty key with `Exists` matches
/// every taint, and an empty effect matches every effect.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    /// The taint effect to match; every effect when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<TaintEffect>,
    /// The taint key to match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 316), regex(pattern = TAINT_KEY_PATTERN))]
    pub key: Option<String>,
    /// `Equal` (the default) or `Exists`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Equal"))]
    pub operator: Option<String>,
    /// For the effects `NoSelect` and `PreferNoSelect`: how long, in seconds counted from the
    /// taint's `timeAdded`, the toleration lasts; forever when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
    /// The taint value to match with operator `Equal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub value: Option<String>,
}

/// What a placement chose.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementStatus {
    /// The conditions of the placement: `PlacementSatisfied` and `PlacementMisconfigured`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// The decision groups, in order, with the decisions that hold their clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_groups: Option<Vec<DecisionGroupStatus>>,
    /// When the scores in the decisions were last updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_score_update_time: Option<Time>,
    /// How many clusters the placement chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_of_selected_clusters: Option<i32>,
}

/// One decision group of a placement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionGroupStatus {
    /// How many clusters the group holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub cluster_count: Option<i32>,
    /// The group's position, counting from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_group_index: Option<i32>,
    /// The group's name; empty for the unnamed groups of clusters no named group matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_group_name: Option<String>,
    /// The names of the PlacementDecisions that hold the group's clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_coordinate_type_is_left_out_when_absent() {
        let json = serde_json::json!({"builtIn": "Steady"});
        let coordinate: ScoreCoordinate = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(coordinate.type_, None);
        assert_eq!(serde_json::to_value(&coordinate).unwrap(), json);
    }

    #[test]
    fn clusters_per_group_keeps_integer_or_percentage() {
        for value in [serde_json::json!(150), serde_json::json!("25%")] {
            let json = serde_json::json!({"clustersPerDecisionGroup": value});
            let strategy: GroupStrategy = serde_json::from_value(json.clone()).unwrap();
            assert_eq!(serde_json::to_value(&strategy).unwrap(), json);
        }
    }
}
