//! Watching a run's progress: the placements and PlacementDecisions of the placements' namespace,
//! until every measured placement is decided — its decisions hold `--select` clusters (all of them
//! when there are fewer) and its PlacementSatisfied condition is True (False when there are fewer)
//! — noting when each placement first was.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt;
use kube::api::ListParams;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::conditions;
use ocm_api::names::conditions::cluster::placement as placement_conditions;
use ocm_api::names::labels;
use tokio::time::Instant;

use super::PlacementLoadError;
use super::controller::ControllerProcess;
use super::fleet::{Names, Shape};
use crate::work::works::CreatedAt;

/// What the watches saw, as durations since the first placement was created.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// The placements measured.
    expected: HashSet<String>,
    /// Clusters each placement ends up with.
    want: usize,
    /// Whether PlacementSatisfied ends up True.
    satisfiable: bool,
    /// Per decision object: its placement and how many decisions it holds.
    decisions: HashMap<String, (String, usize)>,
    /// Per placement: decisions over all its decision objects.
    per_placement: HashMap<String, usize>,
    /// The status of each placement's PlacementSatisfied condition, where it has one.
    satisfied: HashMap<String, bool>,
    /// When each placement was first done.
    pub done: HashMap<String, Duration>,
    /// Per placement, its create request → done.
    pub latency: Vec<Duration>,
}

impl Progress {
    /// Progress of `expected` placements of `shape`, none done yet.
    pub fn new(expected: impl IntoIterator<Item = String>, shape: &Shape) -> Self {
        Self {
            expected: expected.into_iter().collect(),
            want: shape.decisions_per_placement(),
            satisfiable: shape.satisfiable(),
            ..Self::default()
        }
    }

    /// Whether every expected placement is done.
    pub fn finished(&self) -> bool {
        self.done.len() >= self.expected.len()
    }

    /// Decisions seen over all placements.
    pub fn decisions(&self) -> usize {
        self.per_placement.values().sum()
    }

    /// Placements PlacementSatisfied now.
    pub fn satisfied(&self) -> usize {
        self.satisfied.values().filter(|s| **s).count()
    }

    /// Whether `placement` has its decisions and its PlacementSatisfied condition.
    pub fn is_done(&self, placement: &str) -> bool {
        self.satisfied.get(placement) == Some(&self.satisfiable)
            && self.per_placement.get(placement) == Some(&self.want)
    }

    fn check(&mut self, placement: &str, start: Instant, created: &CreatedAt) {
        if !self.expected.contains(placement) || self.done.contains_key(placement) || !self.is_done(placement)
        {
            return;
        }
        let now = Instant::now();
        self.done.insert(placement.to_string(), now - start);
        if let Some(t) = created.lock().ok().and_then(|m| m.get(placement).copied()) {
            self.latency.push(now - t);
        }
    }

    /// Notes a PlacementDecision's decisions (its placement is its placement label).
    pub fn note_decision(&mut self, decision: &PlacementDecision, start: Instant, created: &CreatedAt) {
        let Some(placement) = decision.labels().get(labels::PLACEMENT).cloned() else {
            return;
        };
        let count = decision.status.as_ref().map_or(0, |s| s.decisions.len());
        if let Some((old_placement, old_count)) = self
            .decisions
            .insert(decision.name_any(), (placement.clone(), count))
            && let Some(sum) = self.per_placement.get_mut(&old_placement)
        {
            *sum = sum.saturating_sub(old_count);
        }
        *self.per_placement.entry(placement.clone()).or_default() += count;
        self.check(&placement, start, created);
    }

    /// Notes a placement's PlacementSatisfied condition.
    pub fn note_placement(&mut self, placement: &Placement, start: Instant, created: &CreatedAt) {
        let name = placement.name_any();
        let conditions = placement
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        match conditions::find(conditions, placement_conditions::SATISFIED) {
            Some(_) => {
                let satisfied = conditions::is_true(conditions, placement_conditions::SATISFIED);
                self.satisfied.insert(name.clone(), satisfied);
            }
            None => {
                self.satisfied.remove(&name);
            }
        }
        self.check(&name, start, created);
    }

    /// The latest time a placement was done (zero when none was).
    pub fn last(&self) -> Duration {
        self.done.values().max().copied().unwrap_or_default()
    }
}

/// Watches the placements and decisions of the run until the `shape.placements` measured ones are
/// done or `timeout` after `start` has passed.
pub async fn wait_done(
    client: Client,
    names: Names,
    shape: Shape,
    created: CreatedAt,
    start: Instant,
    timeout: Duration,
) -> Result<Progress, PlacementLoadError> {
    let placements: Api<Placement> = Api::namespaced(client.clone(), names.namespace());
    let decisions: Api<PlacementDecision> = Api::namespaced(client, names.namespace());
    let mut placement_events = std::pin::pin!(
        watcher(placements, watcher::Config::default())
            .default_backoff()
            .applied_objects()
    );
    let mut decision_events = std::pin::pin!(
        watcher(decisions, watcher::Config::default())
            .default_backoff()
            .applied_objects()
    );
    let mut progress = Progress::new((0..shape.placements).map(Names::placement), &shape);
    let deadline = start + timeout;
    while !progress.finished() {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {
                return Err(PlacementLoadError::Timeout {
                    decided: progress.done.len(),
                    satisfied: progress.satisfied(),
                    decisions: progress.decisions(),
                    placements: shape.placements,
                    want: shape.decisions_per_placement(),
                    timeout,
                });
            }
            event = placement_events.next() => match event {
                None => return Err(PlacementLoadError::Watch { what: "placements", message: "the watch ended".into() }),
                Some(Err(e)) => tracing::debug!(error = %e, "watching placements"),
                Some(Ok(p)) => progress.note_placement(&p, start, &created),
            },
            event = decision_events.next() => match event {
                None => return Err(PlacementLoadError::Watch { what: "placement decisions", message: "the watch ended".into() }),
                Some(Err(e)) => tracing::debug!(error = %e, "watching placement decisions"),
                Some(Ok(d)) => progress.note_decision(&d, start, &created),
            },
        }
    }
    Ok(progress)
}

/// Whether placement `name` of `shape` is decided now.
async fn decided(client: &Client, names: &Names, name: &str, shape: &Shape) -> Result<bool, kube::Error> {
    let placement = Api::<Placement>::namespaced(client.clone(), names.namespace())
        .get_opt(name)
        .await?;
    let Some(placement) = placement else {
        return Ok(false);
    };
    let decisions = Api::<PlacementDecision>::namespaced(client.clone(), names.namespace())
        .list(&ListParams::default().labels(&format!("{}={name}", labels::PLACEMENT)))
        .await?;
    let mut progress = Progress::new([name.to_string()], shape);
    let created = CreatedAt::default();
    let start = Instant::now();
    progress.note_placement(&placement, start, &created);
    for d in &decisions.items {
        progress.note_decision(d, start, &created);
    }
    Ok(progress.is_done(name))
}

/// Polls placement `name` until it is decided, the controller exits, or `timeout` passes.
pub async fn wait_decided(
    client: &Client,
    names: &Names,
    name: &str,
    shape: &Shape,
    controller: &mut ControllerProcess,
    timeout: Duration,
) -> Result<(), PlacementLoadError> {
    let deadline = Instant::now() + timeout;
    loop {
        controller.check_running()?;
        match decided(client, names, name, shape).await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => tracing::debug!(error = %e, "reading placement {name}"),
        }
        if Instant::now() >= deadline {
            return Err(controller.failure(&format!(
                "placement {name} not decided after {}s",
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_api::cluster::v1beta1::{ClusterDecision, PlacementDecisionStatus, PlacementStatus};
    use ocm_api::meta::Condition;

    fn decision(name: &str, placement: &str, clusters: usize) -> PlacementDecision {
        let mut d: PlacementDecision = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {(labels::PLACEMENT): placement}},
        }))
        .unwrap();
        d.status = Some(PlacementDecisionStatus {
            decisions: (0..clusters)
                .map(|i| ClusterDecision {
                    cluster_name: format!("c{i}"),
                    reason: String::new(),
                    ..Default::default()
                })
                .collect(),
        });
        d
    }

    fn placement(name: &str, satisfied: bool) -> Placement {
        let mut p: Placement = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name}, "spec": {},
        }))
        .unwrap();
        p.status = Some(PlacementStatus {
            conditions: Some(vec![Condition::new(
                placement_conditions::SATISFIED,
                if satisfied {
                    conditions::Status::True
                } else {
                    conditions::Status::False
                },
                "R",
                "",
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
            )]),
            ..Default::default()
        });
        p
    }

    #[test]
    fn a_placement_is_done_with_all_its_decisions_and_satisfied() {
        let start = Instant::now();
        let created = CreatedAt::default();
        created.lock().unwrap().insert("p".into(), start);
        let shape = Shape {
            clusters: 100,
            placements: 2,
            select: 10,
        };
        let mut progress = Progress::new(["p".to_string(), "q".to_string()], &shape);
        progress.note_decision(&decision("p-decision-1", "p", 4), start, &created);
        progress.note_placement(&placement("p", true), start, &created);
        assert!(!progress.is_done("p"), "4 of 10 decisions");
        // The same decision object growing replaces its count.
        progress.note_decision(&decision("p-decision-1", "p", 10), start, &created);
        assert!(progress.is_done("p"));
        assert_eq!((progress.done.len(), progress.latency.len()), (1, 1));
        assert!(!progress.finished());
        // A placement outside the measured ones is never counted.
        progress.note_decision(&decision("r-decision-1", "r", 10), start, &created);
        progress.note_placement(&placement("r", true), start, &created);
        assert_eq!(progress.done.len(), 1);
        // Decisions first, then the condition; unsatisfied first does not count.
        progress.note_placement(&placement("q", false), start, &created);
        progress.note_decision(&decision("q-decision-1", "q", 6), start, &created);
        progress.note_decision(&decision("q-decision-2", "q", 4), start, &created);
        assert!(!progress.is_done("q"));
        progress.note_placement(&placement("q", true), start, &created);
        assert!(progress.finished());
        assert_eq!(progress.decisions(), 30);
        assert_eq!(progress.satisfied(), 3);
        assert!(progress.last() >= progress.done["p"]);
        // A decision without the placement label is ignored.
        let mut unlabelled = decision("x", "p", 3);
        unlabelled.metadata.labels = None;
        progress.note_decision(&unlabelled, start, &created);
        assert_eq!(progress.decisions(), 30);
    }

    #[test]
    fn with_fewer_clusters_than_asked_a_placement_is_done_unsatisfied_with_all_of_them() {
        // Upstream's smallest shape: 10 asked of 1 cluster.
        let shape = Shape {
            clusters: 1,
            placements: 1,
            select: 10,
        };
        assert_eq!((shape.decisions_per_placement(), shape.satisfiable()), (1, false));
        let (start, created) = (Instant::now(), CreatedAt::default());
        let mut progress = Progress::new(["p".to_string()], &shape);
        progress.note_decision(&decision("p-decision-1", "p", 1), start, &created);
        assert!(!progress.is_done("p"), "no condition yet");
        progress.note_placement(&placement("p", false), start, &created);
        assert!(progress.finished());
        assert_eq!(progress.satisfied(), 0);
    }
}
