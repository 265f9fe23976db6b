//! `cluster.open-cluster-management.io/v1beta1`: [`Placement`] selects managed clusters, and the
//! placement controller writes its choice into [`PlacementDecision`]s.

mod decision;
mod placement;

pub use decision::{ClusterDecision, PlacementDecision, PlacementDecisionStatus};
pub use placement::{
    AddOnScore, CLUSTERS_PER_GROUP_PATTERN, ClusterCelSelector, ClusterClaimSelector, ClusterPredicate,
    ClusterSelector, DecisionGroup, DecisionGroupStatus, DecisionStrategy, GROUP_NAME_PATTERN,
    GroupClusterSelector, GroupStrategy, Placement, PlacementSortBy, PlacementSpec, PlacementStatus,
    PrioritizerConfig, PrioritizerPolicy, SCORE_RATE_LIMIT_PATTERN, ScoreCoordinate, ScoreCoordinateType,
    SpreadConstraintsTerm, SpreadPolicy, TOPOLOGY_KEY_PATTERN, Toleration, TopologyKeyType,
    UnsatisfiableMaxSkewAction,
};
