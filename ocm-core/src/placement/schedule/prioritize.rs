//! Prioritizers: which ones a placement uses with which weight, and the score (−100..100) each
//! gives every cluster that passed the filters.
//!
//! Weights: mode `Additive` (or empty) starts from `Balance: 1, Steady: 1` and lets the
//! configurations override or extend them; mode `Exact` uses the configurations only. A weight of
//! 0 turns a prioritizer off (and it is not checked). The scores:
//! - **Balance**: with `c` the number of decisions of *other* placements naming the cluster and `M`
//!   the largest such number over all clusters, `2 × trunc(100 × (0.5 − c/M))` when `c > 0`, else 100;
//! - **Steady**: 100 for clusters in the placement's current decisions, else 0;
//! - **ResourceAllocatableCPU / Memory**: over the clusters reporting the resource as allocatable,
//!   `trunc(((a − min)/(max − min) − 0.5) × 200)` (100 when all are equal); clusters without
//!   allocatable or capacity get no score;
//! - **AddOn** `<resourceName>/<scoreName>`: the value named `scoreName` in the cluster's
//!   AddOnPlacementScore `resourceName`, 0 when missing or expired (`validUntil` passed, which is
//!   reported as a Warning).

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::{Placement, ScoreCoordinate, ScoreCoordinateType};

use super::quantity::approximate;
use super::{Code, Fleet, Status, cluster_name};

/// The highest score a prioritizer gives.
pub const MAX_SCORE: i64 = 100;

/// Mode `Additive`.
pub const MODE_ADDITIVE: &str = "Additive";
/// Mode `Exact`.
pub const MODE_EXACT: &str = "Exact";

/// A prioritizer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Prioritizer {
    /// Prefers clusters with fewer decisions of other placements.
    Balance,
    /// Prefers the clusters already chosen.
    Steady,
    /// Prefers clusters with more allocatable `resource` (`cpu` or `memory`).
    ResourceAllocatable {
        /// The built-in name (`ResourceAllocatableCPU`, `ResourceAllocatableMemory`).
        name: &'static str,
        /// The resource name in the cluster's status.
        resource: &'static str,
    },
    /// Uses a score published by an add-on.
    AddOn {
        /// The AddOnPlacementScore name.
        resource_name: String,
        /// The score's name within it.
        score_name: String,
    },
}

/// The identity of a configuration, as upstream keys its weights: type, built-in name, add-on.
type WeightKey = (ScoreCoordinateType, String, Option<(String, String)>);

fn key_of(coordinate: &ScoreCoordinate) -> WeightKey {
    (
        coordinate.type_.unwrap_or_default(),
        coordinate.built_in.clone().unwrap_or_default(),
        coordinate
            .add_on
            .as_ref()
            .map(|a| (a.resource_name.clone(), a.score_name.clone())),
    )
}

fn builtin(name: &str) -> WeightKey {
    (ScoreCoordinateType::BuiltIn, name.to_string(), None)
}

fn misconfigured(message: impl Into<String>) -> Status {
    Status::new("", Code::Misconfigured, message)
}

/// The prioritizers of `placement` with a non-zero weight, in a stable order (defaults first, then
/// configurations in order).
///
/// # Errors
/// A Misconfigured status for an unknown mode or built-in prioritizer, or an AddOn coordinate
/// without `addOn`.
pub fn prioritizers(placement: &Placement) -> Result<Vec<(Prioritizer, i32)>, Status> {
    let policy = placement.spec.prioritizer_policy.clone().unwrap_or_default();
    let mode = policy.mode.as_deref().unwrap_or_default();
    let mut weights: Vec<(WeightKey, i32)> = match mode {
        MODE_EXACT => Vec::new(),
        "" | MODE_ADDITIVE => vec![(builtin("Balance"), 1), (builtin("Steady"), 1)],
        other => {
            return Err(misconfigured(format!(
                "incorrect prioritizer policy mode: {other}"
            )));
        }
    };
    for config in policy.configurations.iter().flatten() {
        let key = key_of(&config.score_coordinate);
        let weight = config.weight.unwrap_or(1);
        match weights.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = weight,
            None => weights.push((key, weight)),
        }
    }
    let mut result = Vec::new();
    for ((kind, built_in, add_on), weight) in weights {
        if weight == 0 {
            continue;
        }
        let prioritizer = match kind {
            ScoreCoordinateType::BuiltIn => match built_in.as_str() {
                "Balance" => Prioritizer::Balance,
                "Steady" => Prioritizer::Steady,
                "ResourceAllocatableCPU" => Prioritizer::ResourceAllocatable {
                    name: "ResourceAllocatableCPU",
                    resource: "cpu",
                },
                "ResourceAllocatableMemory" => Prioritizer::ResourceAllocatable {
                    name: "ResourceAllocatableMemory",
                    resource: "memory",
                },
                other => return Err(misconfigured(format!("incorrect builtin prioritizer: {other}"))),
            },
            ScoreCoordinateType::AddOn => {
                let Some((resource_name, score_name)) = add_on else {
                    return Err(misconfigured("addOn should not be empty"));
                };
                Prioritizer::AddOn {
                    resource_name,
                    score_name,
                }
            }
        };
        result.push((prioritizer, weight));
    }
    Ok(result)
}

impl Prioritizer {
    /// The name upstream reports: the built-in's name or `AddOn/<resourceName>/<scoreName>`.
    #[must_use]
    pub fn name(&self) -> String {
        match self {
            Self::Balance => "Balance".to_string(),
            Self::Steady => "Steady".to_string(),
            Self::ResourceAllocatable { name, .. } => (*name).to_string(),
            Self::AddOn {
                resource_name,
                score_name,
            } => format!("AddOn/{resource_name}/{score_name}"),
        }
    }

    /// The score of each of `clusters`, in their order (`None`: no score, which counts as 0);
    /// `existing` are the clusters of the placement's current decisions.
    #[must_use]
    pub fn score(
        &self,
        _placement: &Placement,
        clusters: &[Arc<ManagedCluster>],
        existing: &HashSet<&str>,
        fleet: Fleet<'_>,
        now: Timestamp,
    ) -> (Vec<Option<i64>>, Status) {
        match self {
            Self::Balance => (balance(clusters, existing, fleet), Status::default()),
            Self::Steady => (
                clusters
                    .iter()
                    .map(|c| {
                        Some(if existing.contains(cluster_name(c)) {
                            MAX_SCORE
                        } else {
                            0
                        })
                    })
                    .collect(),
                Status::default(),
            ),
            Self::ResourceAllocatable { resource, .. } => {
                (allocatable(clusters, resource), Status::default())
            }
            Self::AddOn {
                resource_name,
                score_name,
            } => add_on(&self.name(), clusters, resource_name, score_name, fleet, now),
        }
    }
}

/// Balance scores.
fn balance(clusters: &[Arc<ManagedCluster>], existing: &HashSet<&str>, fleet: Fleet<'_>) -> Vec<Option<i64>> {
    let others = |cluster: &str, count: u32| count.saturating_sub(u32::from(existing.contains(cluster)));
    // The largest count of other placements' decisions: a cluster's own count bounds it, so the
    // placement's own decisions are looked up only for counts above the best so far.
    let mut max = 0;
    for (cluster, count) in &fleet.decision_counts.0 {
        if *count > max {
            max = max.max(others(cluster, *count));
        }
    }
    clusters
        .iter()
        .map(|c| {
            let name = cluster_name(c);
            let count = fleet.decision_counts.0.get(name).map_or(0, |n| others(name, *n));
            let score = if count > 0 && max > 0 {
                let usage = f64::from(count) / f64::from(max);
                // Truncation toward zero, as Go's int64 conversion.
                #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
                let half = (MAX_SCORE as f64 * (0.5 - usage)) as i64;
                2 * half
            } else {
                MAX_SCORE
            };
            Some(score)
        })
        .collect()
}

/// The allocatable of `resource` in `cluster`'s status, and whether it reports a capacity too.
fn resource_of(cluster: &ManagedCluster, resource: &str) -> (Option<f64>, bool) {
    let status = cluster.status.as_ref();
    let allocatable = status
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| a.get(resource))
        .and_then(|q| approximate(&q.0));
    let has_capacity = status
        .and_then(|s| s.capacity.as_ref())
        .is_some_and(|c| c.contains_key(resource));
    (allocatable, has_capacity)
}

/// ResourceAllocatable scores: min and max over the clusters reporting allocatable, a score for
/// those reporting capacity too.
fn allocatable(clusters: &[Arc<ManagedCluster>], resource: &str) -> Vec<Option<i64>> {
    let values: Vec<(Option<f64>, bool)> = clusters.iter().map(|c| resource_of(c, resource)).collect();
    let (min, max) = values
        .iter()
        .filter_map(|(a, _)| *a)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), a| {
            (lo.min(a), hi.max(a))
        });
    if min > max {
        return vec![None; clusters.len()];
    }
    values
        .into_iter()
        .map(|(a, has_capacity)| {
            let a = a.filter(|_| has_capacity)?;
            #[allow(clippy::float_cmp, clippy::cast_possible_truncation)]
            let score = if max - min != 0.0 {
                (((a - min) / (max - min) - 0.5) * 2.0 * 100.0) as i64
            } else {
                MAX_SCORE
            };
            Some(score)
        })
        .collect()
}

/// AddOn scores, with a Warning naming the expired score objects.
fn add_on(
    plugin: &str,
    clusters: &[Arc<ManagedCluster>],
    resource_name: &str,
    score_name: &str,
    fleet: Fleet<'_>,
    now: Timestamp,
) -> (Vec<Option<i64>>, Status) {
    let mut expired = String::new();
    let mut scores = Vec::with_capacity(clusters.len());
    for cluster in clusters {
        let name = cluster_name(cluster);
        let mut value = 0;
        if let Some(score) = fleet.scores.score(name, resource_name) {
            let status = score.status.as_ref();
            let valid_until = status.and_then(|s| s.valid_until.as_ref());
            if valid_until.is_some_and(|until| now > until.0) {
                expired.push(' ');
                expired.push_str(name);
                expired.push('/');
                expired.push_str(resource_name);
            } else if let Some(item) = status
                .and_then(|s| s.scores.as_ref())
                .and_then(|items| items.iter().rev().find(|i| i.name == score_name))
            {
                value = i64::from(item.value);
            }
        }
        scores.push(Some(value));
    }
    let status = if expired.is_empty() {
        Status::default()
    } else {
        Status::new(
            plugin,
            Code::Warning,
            format!("AddOnPlacementScores{expired} expired"),
        )
    };
    (scores, status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::schedule::testing::*;
    use ocm_api::cluster::v1beta1::{AddOnScore, PrioritizerConfig, PrioritizerPolicy};
    use std::collections::HashMap;

    fn config(built_in: &str, weight: i32) -> PrioritizerConfig {
        PrioritizerConfig {
            score_coordinate: ScoreCoordinate {
                add_on: None,
                built_in: Some(built_in.into()),
                type_: Some(ScoreCoordinateType::BuiltIn),
            },
            weight: Some(weight),
        }
    }

    fn addon_config(resource: &str, score: &str, weight: i32) -> PrioritizerConfig {
        PrioritizerConfig {
            score_coordinate: ScoreCoordinate {
                add_on: Some(AddOnScore {
                    resource_name: resource.into(),
                    score_name: score.into(),
                }),
                built_in: None,
                type_: Some(ScoreCoordinateType::AddOn),
            },
            weight: Some(weight),
        }
    }

    fn with_policy(mode: Option<&str>, configurations: Vec<PrioritizerConfig>) -> Placement {
        let mut p = placement("ns", "p");
        p.spec.prioritizer_policy = Some(PrioritizerPolicy {
            configurations: Some(configurations),
            mode: mode.map(str::to_string),
        });
        p
    }

    fn named(list: &[(Prioritizer, i32)]) -> Vec<(String, i32)> {
        list.iter().map(|(p, w)| (p.name(), *w)).collect()
    }

    fn s(pairs: &[(&str, i64)]) -> HashMap<String, i64> {
        pairs.iter().map(|(k, v)| ((*k).to_string(), *v)).collect()
    }

    /// The scores of `clusters` by name (clusters without a score left out).
    fn by_name(clusters: &[Arc<ManagedCluster>], scores: Vec<Option<i64>>) -> HashMap<String, i64> {
        clusters
            .iter()
            .zip(scores)
            .filter_map(|(c, s)| Some((cluster_name(c).to_string(), s?)))
            .collect()
    }

    #[test]
    fn additive_mode_extends_and_overrides_the_defaults() {
        let p = placement("ns", "p");
        assert_eq!(
            named(&prioritizers(&p).unwrap()),
            [("Balance".into(), 1), ("Steady".into(), 1)]
        );
        let p = with_policy(
            Some("Additive"),
            vec![
                config("Steady", 3),
                config("ResourceAllocatableCPU", 2),
                config("Balance", 0),
            ],
        );
        assert_eq!(
            named(&prioritizers(&p).unwrap()),
            [("Steady".into(), 3), ("ResourceAllocatableCPU".into(), 2)]
        );
    }

    #[test]
    fn exact_mode_uses_only_the_configurations() {
        let p = with_policy(
            Some("Exact"),
            vec![
                addon_config("demo", "cpu", -2),
                config("ResourceAllocatableMemory", 1),
            ],
        );
        assert_eq!(
            named(&prioritizers(&p).unwrap()),
            [
                ("AddOn/demo/cpu".into(), -2),
                ("ResourceAllocatableMemory".into(), 1)
            ]
        );
    }

    #[test]
    fn bad_policies_are_misconfigured() {
        let err = prioritizers(&with_policy(Some("Sum"), vec![])).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (Code::Misconfigured, "incorrect prioritizer policy mode: Sum")
        );
        let err = prioritizers(&with_policy(None, vec![config("Spread", 1)])).unwrap_err();
        assert_eq!(err.message, "incorrect builtin prioritizer: Spread");
        // A disabled prioritizer is not checked.
        assert!(prioritizers(&with_policy(None, vec![config("Spread", 0)])).is_ok());
        let mut bad = addon_config("x", "y", 1);
        bad.score_coordinate.add_on = None;
        let err = prioritizers(&with_policy(None, vec![bad])).unwrap_err();
        assert_eq!(err.message, "addOn should not be empty");
    }

    fn arcs(world: &World) -> Vec<Arc<ManagedCluster>> {
        world.clusters.clone()
    }

    #[test]
    fn balance_prefers_clusters_with_fewer_foreign_decisions() {
        let world = World::with_clusters(&["c1", "c2", "c3", "c4"])
            .decision(decision("ns", "other", 1, &["c1", "c2"]))
            .decision(decision("ns2", "more", 1, &["c1"]))
            .decision(decision("ns", "p", 1, &["c3", "c1"]));
        let p = placement("ns", "p");
        let own = world.own(&p);
        let existing: HashSet<&str> = own.iter().flat_map(|d| d.cluster_names()).collect();
        let (scores, status) = Prioritizer::Balance.score(&p, &arcs(&world), &existing, world.fleet(), now());
        assert_eq!(status.code, Code::Success);
        // c1: 2 foreign of max 2 → 2×trunc(100×(0.5−1)) = −100; c2: 1 of 2 → 0; c3 (own only), c4 → 100.
        assert_eq!(
            by_name(&arcs(&world), scores),
            s(&[("c1", -100), ("c2", 0), ("c3", 100), ("c4", 100)])
        );
    }

    #[test]
    fn balance_truncates_toward_zero() {
        let world = World::with_clusters(&["c1", "c2"])
            .decision(decision("ns", "a", 1, &["c1", "c2"]))
            .decision(decision("ns", "b", 1, &["c1"]))
            .decision(decision("ns", "c", 1, &["c1"]));
        let p = placement("ns", "p");
        let (scores, _) =
            Prioritizer::Balance.score(&p, &arcs(&world), &HashSet::new(), world.fleet(), now());
        // c2: 1/3 → trunc(100 × 0.1666) = 16 → 32.
        assert_eq!(by_name(&arcs(&world), scores), s(&[("c1", -100), ("c2", 32)]));
    }

    #[test]
    fn steady_prefers_current_decisions() {
        let world = World::with_clusters(&["c1", "c2"]);
        let existing: HashSet<&str> = ["c2"].into_iter().collect();
        let (scores, _) = Prioritizer::Steady.score(
            &placement("ns", "p"),
            &arcs(&world),
            &existing,
            world.fleet(),
            now(),
        );
        assert_eq!(by_name(&arcs(&world), scores), s(&[("c1", 0), ("c2", 100)]));
    }

    #[test]
    fn resource_allocatable_normalises_between_min_and_max() {
        let world = World::new()
            .cluster(
                cluster("c1")
                    .resource("cpu", "10", "10")
                    .resource("memory", "100Gi", "100Gi"),
            )
            .cluster(
                cluster("c2")
                    .resource("cpu", "6", "10")
                    .resource("memory", "100Gi", "200Gi"),
            )
            .cluster(cluster("c3").resource("cpu", "2", "10"))
            .cluster(cluster("c4").resource("cpu", "20", ""))
            .cluster(cluster("c5"));
        let cpu = Prioritizer::ResourceAllocatable {
            name: "ResourceAllocatableCPU",
            resource: "cpu",
        };
        let (scores, _) = cpu.score(
            &placement("ns", "p"),
            &arcs(&world),
            &HashSet::new(),
            world.fleet(),
            now(),
        );
        // min 2, max 20 (c4 counts for min/max but has no capacity, so no score).
        // c1: (8/18 − 0.5) × 200 = −11.1 → −11; c2: (4/18 − 0.5) × 200 = −55.5 → −55; c3: −100.
        assert_eq!(
            by_name(&arcs(&world), scores),
            s(&[("c1", -11), ("c2", -55), ("c3", -100)])
        );
        let memory = Prioritizer::ResourceAllocatable {
            name: "ResourceAllocatableMemory",
            resource: "memory",
        };
        let (scores, _) = memory.score(
            &placement("ns", "p"),
            &arcs(&world),
            &HashSet::new(),
            world.fleet(),
            now(),
        );
        assert_eq!(by_name(&arcs(&world), scores), s(&[("c1", 100), ("c2", 100)]));
    }

    #[test]
    fn add_on_scores_with_missing_and_expired_values() {
        let world = World::with_clusters(&["c1", "c2", "c3", "c4"])
            .score(score("c1", "demo", &[("cpu", 80)], Some(at(60))))
            .score(score("c2", "demo", &[("cpu", 90)], Some(at(-60))))
            .score(score("c3", "demo", &[("mem", 70)], None));
        let p = Prioritizer::AddOn {
            resource_name: "demo".into(),
            score_name: "cpu".into(),
        };
        let (scores, status) = p.score(
            &placement("ns", "p"),
            &arcs(&world),
            &HashSet::new(),
            world.fleet(),
            now(),
        );
        assert_eq!(
            by_name(&arcs(&world), scores),
            s(&[("c1", 80), ("c2", 0), ("c3", 0), ("c4", 0)])
        );
        assert_eq!(status.code, Code::Warning);
        assert_eq!(status.plugin, "AddOn/demo/cpu");
        assert_eq!(status.message, "AddOnPlacementScores c2/demo expired");
    }
}
