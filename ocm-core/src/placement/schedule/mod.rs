//! The scheduling core: a pure function from a Placement and the hub's state to the Placement's
//! decisions, decision groups, conditions and next requeue time (ocm-core.md §4.3).
//!
//! [`schedule`] takes the Placement, its current PlacementDecisions, a [`Fleet`] (clusters, sets,
//! bindings, add-on scores and the per-cluster count of every placement's decisions) and the
//! current time, and returns a [`Schedule`]. Nothing here talks to an API server, so the same code
//! is unit-tested, benchmarked, and run by the controller (`super::controller`).
//!
//! The steps follow upstream's scheduler:
//! 1. [`eligible`]: the bindings in the placement's namespace naming an existing set, the bound
//!    sets narrowed to `spec.clusterSets`, and their member clusters that are not deleting;
//! 2. filters: [`predicate`] (label, claim and CEL selectors, any predicate matching) then
//!    [`taints`] (taints and tolerations, `tolerationSeconds`);
//! 3. [`prioritize`]: weights per mode, scores of Balance, Steady, ResourceAllocatableCPU/Memory and
//!    AddOn scores, totals; clusters sorted by total (highest first) then name, the first
//!    `numberOfClusters` chosen;
//! 4. [`groups`]: decision groups and the PlacementDecision pages of at most 100 clusters;
//! 5. [`conditions`]: `PlacementMisconfigured` and `PlacementSatisfied`.

pub mod cel;
pub mod conditions;
pub mod eligible;
pub mod groups;
pub mod predicate;
pub mod prioritize;
pub mod quantity;
pub mod taints;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_api::meta::Condition;
use ocm_api::names::annotations::PLACEMENT_DISABLE;

pub use groups::{DecisionPage, Group};

/// Why a placement could not be scheduled at all (upstream returns these from its sync before
/// scheduling, and retries).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// A cluster set's member selector is invalid.
    #[error("failed to get clusters from ClusterSet {set:?}: {message}")]
    SetMembers {
        /// The set.
        set: String,
        /// What is wrong with its selector.
        message: String,
    },
}

/// Where the add-on scores (`AddOnPlacementScore`s) come from: one per cluster namespace and name.
pub trait ScoreSource: Send + Sync {
    /// The AddOnPlacementScore `name` in the namespace of `cluster`.
    fn score(&self, cluster: &str, name: &str) -> Option<Arc<AddOnPlacementScore>>;
}

/// Add-on scores held in a map by name, then by cluster namespace: a lookup allocates nothing,
/// and the scores of one name (what a prioritizer reads for every cluster) sit together.
#[derive(Debug, Clone, Default)]
pub struct ScoreMap {
    by_name: HashMap<String, HashMap<String, Arc<AddOnPlacementScore>>>,
}

impl ScoreMap {
    /// The scores of `scores`, keyed by their name and namespace.
    #[must_use]
    pub fn from_scores(scores: impl IntoIterator<Item = Arc<AddOnPlacementScore>>) -> Self {
        let mut map = Self::default();
        for score in scores {
            map.insert(score);
        }
        map
    }

    /// Adds `score`, replacing one of the same namespace and name.
    pub fn insert(&mut self, score: Arc<AddOnPlacementScore>) {
        let cluster = score.metadata.namespace.clone().unwrap_or_default();
        self.by_name
            .entry(score.name_any())
            .or_default()
            .insert(cluster, score);
    }
}

impl ScoreSource for ScoreMap {
    fn score(&self, cluster: &str, name: &str) -> Option<Arc<AddOnPlacementScore>> {
        self.by_name.get(name)?.get(cluster).cloned()
    }
}

impl ScoreSource for kube::runtime::reflector::Store<AddOnPlacementScore> {
    fn score(&self, cluster: &str, name: &str) -> Option<Arc<AddOnPlacementScore>> {
        self.get(&kube::runtime::reflector::ObjectRef::new(name).within(cluster))
    }
}

/// How many decisions of all placements on the hub name each cluster (for Balance).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionCounts(pub HashMap<String, u32>);

impl DecisionCounts {
    /// Counts the clusters of `decisions`.
    #[must_use]
    pub fn from_decisions<'a>(decisions: impl IntoIterator<Item = &'a PlacementDecision>) -> Self {
        let mut counts = Self::default();
        for decision in decisions {
            counts.add(decision.cluster_names());
        }
        counts
    }

    /// Counts `clusters` once more.
    pub fn add<'a>(&mut self, clusters: impl IntoIterator<Item = &'a str>) {
        for cluster in clusters {
            *self.0.entry(cluster.to_string()).or_insert(0) += 1;
        }
    }

    /// Counts `clusters` once less.
    pub fn remove<'a>(&mut self, clusters: impl IntoIterator<Item = &'a str>) {
        for cluster in clusters {
            if let Some(count) = self.0.get_mut(cluster) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    self.0.remove(cluster);
                }
            }
        }
    }
}

/// The hub's state a placement is scheduled against.
#[derive(Clone, Copy)]
pub struct Fleet<'a> {
    /// Every ManagedCluster.
    pub clusters: &'a [Arc<ManagedCluster>],
    /// Every ManagedClusterSet.
    pub sets: &'a [Arc<ManagedClusterSet>],
    /// ManagedClusterSetBindings; those outside the placement's namespace are ignored.
    pub bindings: &'a [Arc<ManagedClusterSetBinding>],
    /// The add-on scores.
    pub scores: &'a Arc<dyn ScoreSource>,
    /// The decisions of every placement, counted per cluster (this placement's included).
    pub decision_counts: &'a DecisionCounts,
}

impl std::fmt::Debug for Fleet<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("clusters", &self.clusters.len())
            .field("sets", &self.sets.len())
            .field("bindings", &self.bindings.len())
            .finish_non_exhaustive()
    }
}

/// How a scheduling step ended, as upstream's framework status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Code {
    /// Everything worked.
    #[default]
    Success,
    /// A step worked but reported something (e.g. expired add-on scores).
    Warning,
    /// A step failed.
    Error,
    /// The placement's configuration is invalid.
    Misconfigured,
}

/// The status of the scheduling: which plugin reported what.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Status {
    /// How it ended.
    pub code: Code,
    /// The plugin that reported it (`Predicate`, `TaintToleration`, `AddOn/<r>/<s>`, or empty).
    pub plugin: String,
    /// What it reported.
    pub message: String,
}

impl Status {
    /// A status of `plugin` with `code` and `message`.
    #[must_use]
    pub fn new(plugin: &str, code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            plugin: plugin.to_string(),
            message: message.into(),
        }
    }

    /// Whether the status is an error (Error or Misconfigured).
    #[must_use]
    pub fn is_error(&self) -> bool {
        matches!(self.code, Code::Error | Code::Misconfigured)
    }
}

/// What scheduling a placement decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// The chosen clusters, best first.
    pub selected: Vec<String>,
    /// Every cluster that passed the filters with its total score, best first (the order the
    /// chosen clusters were taken in).
    pub scores: Vec<(Arc<ManagedCluster>, i64)>,
    /// `numberOfClusters` minus the chosen clusters (0 when `numberOfClusters` is unset).
    pub unscheduled: i64,
    /// The decision groups, in order, each with its PlacementDecision pages.
    pub groups: Vec<Group>,
    /// How the scheduling ended (the last warning, or the error that stopped it).
    pub status: Status,
    /// `PlacementMisconfigured` then `PlacementSatisfied`, with `lastTransitionTime` now.
    pub conditions: Vec<Condition>,
    /// When to schedule again because a toleration of a chosen cluster expires.
    pub requeue_after: Option<Duration>,
}

impl Schedule {
    /// The total score of `cluster`, if it passed the filters.
    #[must_use]
    pub fn score_of(&self, cluster: &str) -> Option<i64> {
        self.scores
            .iter()
            .find(|(c, _)| cluster_name(c) == cluster)
            .map(|(_, total)| *total)
    }

    /// Every PlacementDecision page, in order.
    pub fn pages(&self) -> impl Iterator<Item = (&Group, &DecisionPage)> {
        self.groups
            .iter()
            .flat_map(|g| g.pages.iter().map(move |p| (g, p)))
    }
}

/// The name of a cluster, without allocating.
#[must_use]
pub fn cluster_name(cluster: &ManagedCluster) -> &str {
    cluster.metadata.name.as_deref().unwrap_or_default()
}

/// Whether the controller leaves `placement` alone: it is being deleted, or scheduling is disabled
/// by annotation.
#[must_use]
pub fn is_skipped(placement: &Placement) -> bool {
    placement.metadata.deletion_timestamp.is_some()
        || placement.annotations().get(PLACEMENT_DISABLE).map(String::as_str) == Some("true")
}

/// Schedules `placement` against `fleet` at `now`, given its current decisions `existing` (the
/// PlacementDecisions in its namespace labelled with its name).
///
/// Returns `Ok(None)` for a placement the controller leaves alone ([`is_skipped`]).
///
/// # Errors
/// [`ScheduleError::SetMembers`] when an eligible set's member selector is invalid.
pub fn schedule(
    placement: &Placement,
    existing: &[Arc<PlacementDecision>],
    fleet: Fleet<'_>,
    now: Timestamp,
) -> Result<Option<Schedule>, ScheduleError> {
    if is_skipped(placement) {
        return Ok(None);
    }
    let eligibility = eligible::eligibility(placement, fleet)?;
    let existing_clusters: HashSet<&str> = existing.iter().flat_map(|d| d.cluster_names()).collect();

    let outcome = run_plugins(placement, &eligibility.candidates, &existing_clusters, fleet, now);
    let selected_clusters = outcome.selected;
    let selected: Vec<String> = selected_clusters.iter().map(|c| c.name_any()).collect();
    let (groups, group_status) = groups::decision_groups(placement, &selected_clusters);
    let mut status = outcome.status;
    if group_status.is_error() {
        status = group_status;
    }
    let conditions = vec![
        conditions::misconfigured(&status, now),
        conditions::satisfied(
            placement.spec.cluster_sets.as_deref().unwrap_or_default(),
            &eligibility.sets,
            eligibility.bindings,
            eligibility.candidates.len(),
            selected.len(),
            outcome.unscheduled,
            &status,
            now,
        ),
    ];
    Ok(Some(Schedule {
        selected,
        scores: outcome.scores,
        unscheduled: outcome.unscheduled,
        groups: groups::paginate(&placement.name_any(), groups),
        status,
        conditions,
        requeue_after: outcome.requeue_after,
    }))
}

/// What the filters and prioritizers decided.
struct PluginOutcome {
    selected: Vec<Arc<ManagedCluster>>,
    scores: Vec<(Arc<ManagedCluster>, i64)>,
    unscheduled: i64,
    status: Status,
    requeue_after: Option<Duration>,
}

impl PluginOutcome {
    fn failed(status: Status) -> Self {
        Self {
            selected: Vec::new(),
            scores: Vec::new(),
            unscheduled: 0,
            status,
            requeue_after: None,
        }
    }
}

/// Filters, scores, sorts and selects; an error status stops with nothing selected.
fn run_plugins(
    placement: &Placement,
    candidates: &[Arc<ManagedCluster>],
    existing: &HashSet<&str>,
    fleet: Fleet<'_>,
    now: Timestamp,
) -> PluginOutcome {
    let mut final_status = Status::default();
    let mut keep_warning = |status: Status| -> Result<(), Status> {
        match status.code {
            Code::Error | Code::Misconfigured => Err(status),
            Code::Warning => {
                final_status = status;
                Ok(())
            }
            Code::Success => Ok(()),
        }
    };

    let filtered = match predicate::filter(placement, candidates, fleet.scores) {
        Ok(clusters) => clusters,
        Err(status) => return PluginOutcome::failed(status),
    };
    let filtered = match taints::filter(placement, filtered, existing, now) {
        Ok(clusters) => clusters,
        Err(status) => return PluginOutcome::failed(status),
    };

    let weighted = match prioritize::prioritizers(placement) {
        Ok(weighted) => weighted,
        Err(status) => return PluginOutcome::failed(status),
    };
    let mut totals: Vec<i64> = vec![0; filtered.len()];
    for (prioritizer, weight) in &weighted {
        let (scores, status) = prioritizer.score(placement, &filtered, existing, fleet, now);
        if let Err(status) = keep_warning(status) {
            return PluginOutcome::failed(status);
        }
        for (total, score) in totals.iter_mut().zip(scores) {
            *total += score.unwrap_or(0) * i64::from(*weight);
        }
    }
    // Highest total first, then by name: a total order (names are unique), so the candidates'
    // order before this does not matter.
    let mut ranked: Vec<(Arc<ManagedCluster>, i64)> = filtered.into_iter().zip(totals).collect();
    ranked.sort_unstable_by(|(a, ta), (b, tb)| tb.cmp(ta).then_with(|| cluster_name(a).cmp(cluster_name(b))));

    let wanted = placement
        .spec
        .number_of_clusters
        .map_or(ranked.len(), |n| usize::try_from(n).unwrap_or(0));
    let selected: Vec<Arc<ManagedCluster>> = ranked.iter().take(wanted).map(|(c, _)| c.clone()).collect();
    let unscheduled = placement.spec.number_of_clusters.map_or(0, |n| {
        i64::from(n) - i64::try_from(selected.len()).unwrap_or(i64::MAX)
    });

    // Upstream computes this from the decisions as they were before this round and relies on the
    // round its own decision writes trigger; this controller does not schedule again on its own
    // writes, so the clusters being decided now are the ones whose tolerations can expire.
    let decided: HashSet<&str> = selected.iter().map(|c| cluster_name(c)).collect();
    let requeue_after = taints::requeue_after(placement, fleet.clusters, &decided, now);
    PluginOutcome {
        selected,
        scores: ranked,
        unscheduled,
        status: final_status,
        requeue_after,
    }
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
