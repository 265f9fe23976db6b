//! The rollout planner: which clusters to update now under a [`RolloutStrategy`].
//!
//! Add-on configuration rollouts and ManifestWorkReplicaSets move a change over the clusters a
//! placement selects, following the placement's decision groups. [`plan`] takes the strategy,
//! the decision groups ([`ClusterGroups`]), the rollout status of every cluster that already has
//! the workload ([`ClusterRolloutStatus`]) and the current time, and returns a [`RolloutResult`]:
//! the clusters to update now, the clusters that timed out, the clusters no longer selected,
//! whether failures stopped the rollout, and when to look again. It reads no clock and no API,
//! and gives the same answer for the same input, the answer upstream OCM gives.
//!
//! # Strategies
//!
//! - **All**: every selected cluster that has not succeeded and not timed out, at once.
//! - **Progressive**: first the mandatory decision groups, group by group, tolerating no failure;
//!   then, over the other clusters in name order, at most `maxConcurrency` clusters in flight
//!   (by default all of them); new clusters stop being added once more than `maxFailures`
//!   clusters failed or timed out.
//! - **ProgressivePerGroup**: first the mandatory decision groups, then the other groups in index
//!   order; a group starts only when every earlier group has succeeded (and soaked for
//!   `minSuccessTime`), and the rollout stops in a group with more than `maxFailures` (counted
//!   per group) failed or timed-out clusters.
//!
//! A cluster counts as in flight while it is `ToApply`, `Progressing` or `Failed` and not past
//! `progressDeadline` (counted from its status time), and while it is `Succeeded` but has not
//! been so for `minSuccessTime`. Past the deadline it is reported as timed out.
//!
//! # Upstream quirks kept on purpose
//!
//! - Decision groups are enumerated by index from 0 to the number of groups minus one, as
//!   upstream's decision tracker does: a group whose index is beyond that range is ignored.
//! - A `Succeeded` cluster without a status time soaks forever when `minSuccessTime` is set
//!   (its soak is counted from "now"); a `Progressing` or `Failed` cluster without a status time
//!   never times out for the same reason.
//! - A `type` left out means `All`, the CRD default.

mod duration;
mod strategy;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::jiff::Timestamp;

pub use self::duration::{Error as DurationError, parse_go_duration};
pub use self::strategy::parse_progress_deadline;
use crate::cluster::v1alpha1::{RolloutStrategy, RolloutType};

/// Why a rollout could not be planned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// `progressDeadline` is neither `None` nor a Go duration of hours, minutes or seconds.
    #[error("invalid progressDeadline {0:?}")]
    ParseProgressDeadline(String),
    /// `minSuccessTime` is no Go duration.
    #[error("invalid minSuccessTime {value:?}: {source}")]
    ParseMinSuccessTime {
        /// The value given.
        value: String,
        /// What is wrong with it.
        #[source]
        source: DurationError,
    },
    /// `maxFailures` is a string without `%`, or a percentage that is no number.
    #[error("failed to parse the provided maxFailures: {0}")]
    ParseMaxFailures(String),
    /// `maxConcurrency` is a string without `%`, or a percentage that is no number.
    #[error("failed to parse the provided maxConcurrency: {0}")]
    ParseMaxConcurrency(String),
}

/// The result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A decision group of a placement: its name (empty for unnamed groups) and index.
///
/// Groups order by index, then name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GroupKey {
    /// The group's name, from the `cluster.open-cluster-management.io/decision-group-name` label.
    pub name: String,
    /// The group's index, from the `cluster.open-cluster-management.io/decision-group-index` label.
    pub index: i32,
}

impl GroupKey {
    /// A group key.
    #[must_use]
    pub fn new(name: &str, index: i32) -> Self {
        Self {
            name: name.to_owned(),
            index,
        }
    }
}

impl PartialOrd for GroupKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for GroupKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.index
            .cmp(&other.index)
            .then_with(|| self.name.cmp(&other.name))
    }
}

/// Where a cluster stands in a rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RolloutStatus {
    /// The cluster does not have the desired state yet.
    ToApply,
    /// The desired state was handed to the cluster and is being applied.
    Progressing,
    /// The desired state is applied and healthy.
    Succeeded,
    /// Applying the desired state failed.
    Failed,
    /// The cluster stayed `Progressing` or `Failed` past the progress deadline.
    TimeOut,
    /// The cluster takes no part in the rollout.
    Skip,
}

/// The rollout status of one cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterRolloutStatus {
    /// The cluster's name.
    pub cluster_name: String,
    /// The decision group the cluster is in.
    pub group_key: GroupKey,
    /// Where the cluster stands.
    pub status: RolloutStatus,
    /// When the status last changed (for add-ons, the `Progressing` condition's
    /// `lastTransitionTime`); the progress deadline and the soak time count from it.
    pub last_transition_time: Option<Timestamp>,
    /// Set by the planner: when the cluster's soak time ends or its deadline passes.
    pub recheck_time: Option<Timestamp>,
}

impl ClusterRolloutStatus {
    /// The status of a cluster, without status time.
    #[must_use]
    pub fn new(cluster_name: &str, group_key: GroupKey, status: RolloutStatus) -> Self {
        Self {
            cluster_name: cluster_name.to_owned(),
            group_key,
            status,
            last_transition_time: None,
            recheck_time: None,
        }
    }

    /// The same status, last changed at `time`.
    #[must_use]
    pub fn since(mut self, time: Timestamp) -> Self {
        self.last_transition_time = Some(time);
        self
    }
}

/// The clusters a placement selects, by decision group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterGroups {
    groups: BTreeMap<GroupKey, BTreeSet<String>>,
}

impl ClusterGroups {
    /// No group.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `cluster` to the group `key` (creating the group).
    pub fn insert(&mut self, key: GroupKey, cluster: &str) {
        self.groups.entry(key).or_default().insert(cluster.to_owned());
    }

    /// Adds a group with its clusters (a group may be empty).
    #[must_use]
    pub fn with_group<'a>(mut self, key: GroupKey, clusters: impl IntoIterator<Item = &'a str>) -> Self {
        let group = self.groups.entry(key).or_default();
        group.extend(clusters.into_iter().map(str::to_owned));
        self
    }

    /// The groups with their clusters, by index.
    pub fn groups(&self) -> impl Iterator<Item = (&GroupKey, &BTreeSet<String>)> {
        self.groups.iter()
    }

    /// Every cluster of every group.
    #[must_use]
    pub fn clusters(&self) -> BTreeSet<&str> {
        self.groups.values().flatten().map(String::as_str).collect()
    }

    /// The group a cluster is in (the first by index if it is in several).
    #[must_use]
    pub fn group_of(&self, cluster: &str) -> Option<&GroupKey> {
        self.groups
            .iter()
            .find(|(_, clusters)| clusters.contains(cluster))
            .map(|(key, _)| key)
    }
}

impl<'a> FromIterator<(&'a str, GroupKey)> for ClusterGroups {
    fn from_iter<I: IntoIterator<Item = (&'a str, GroupKey)>>(iter: I) -> Self {
        let mut groups = Self::new();
        for (cluster, key) in iter {
            groups.insert(key, cluster);
        }
        groups
    }
}

/// What to do next in a rollout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RolloutResult {
    /// The clusters to update now (or keep updating): new ones as `ToApply`, the others with
    /// their status and, where one applies, their `recheck_time`.
    pub clusters_to_rollout: Vec<ClusterRolloutStatus>,
    /// The clusters past their progress deadline, with status `TimeOut`.
    pub clusters_timed_out: Vec<ClusterRolloutStatus>,
    /// The clusters with a status that the placement no longer selects.
    pub clusters_removed: Vec<ClusterRolloutStatus>,
    /// Whether more clusters failed or timed out than `maxFailures` allows, which stops the
    /// rollout from adding clusters.
    pub max_failure_breach: bool,
    /// When the nearest soak time ends or deadline passes, if any is ahead.
    pub recheck_after: Option<std::time::Duration>,
}

/// Plans the next step of a rollout at `now`.
///
/// `groups` are the clusters the placement selects; `statuses` are the clusters that already
/// have a rollout status (clusters of `groups` without one are new and get `ToApply`).
///
/// # Errors
///
/// [`Error::ParseProgressDeadline`], [`Error::ParseMinSuccessTime`],
/// [`Error::ParseMaxFailures`] or [`Error::ParseMaxConcurrency`] when the strategy holds an
/// invalid value.
pub fn plan(
    strategy: &RolloutStrategy,
    groups: &ClusterGroups,
    statuses: &[ClusterRolloutStatus],
    now: Timestamp,
) -> Result<RolloutResult> {
    let planner = strategy::Planner { groups, now };
    match strategy.type_.unwrap_or_default() {
        RolloutType::All => planner.all(strategy.all.as_ref().map(|a| &a.config), statuses),
        RolloutType::Progressive => {
            planner.progressive(&strategy.progressive.clone().unwrap_or_default(), statuses)
        }
        RolloutType::ProgressivePerGroup => planner.progressive_per_group(
            &strategy.progressive_per_group.clone().unwrap_or_default(),
            statuses,
        ),
    }
}
