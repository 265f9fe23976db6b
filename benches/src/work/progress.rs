//! Watching a run's progress: the ManifestWorks on the hub until every one is Applied and
//! Available, and the ConfigMaps on the spoke until every one exists, noting when each milestone
//! was first seen.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use ocm_api::conditions;
use ocm_api::names::conditions::work::manifest_work;
use ocm_api::work::v1::ManifestWork;
use tokio::time::Instant;

use super::WorkError;
use super::options::Until;
use super::works::{CLUSTER, CreatedAt, LABEL, SPOKE_NAMESPACE, Shape};

/// What the watches saw, as durations since the first work was created.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// When each ConfigMap first appeared on the spoke.
    pub configmaps: HashMap<String, Duration>,
    /// When each work first showed `Applied` True.
    pub applied: HashMap<String, Duration>,
    /// When each work first showed `Available` True.
    pub available: HashMap<String, Duration>,
    /// Per work, its create request → `Applied` True.
    pub applied_latency: Vec<Duration>,
    /// Per work, its create request → `Available` True.
    pub available_latency: Vec<Duration>,
}

impl Progress {
    /// Whether `shape` is done: every ConfigMap exists and every work is Applied (and
    /// Available, `until` says).
    pub fn done(&self, shape: &Shape, until: Until) -> bool {
        self.configmaps.len() >= shape.manifests()
            && self.applied.len() >= shape.works
            && (until == Until::Applied || self.available.len() >= shape.works)
    }

    /// Notes the milestones `work` shows for the first time.
    pub fn note_work(&mut self, work: &ManifestWork, start: Instant, created: &CreatedAt) {
        let name = work.name_any();
        let conditions = work
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        let now = Instant::now();
        let created_at = created.lock().ok().and_then(|m| m.get(&name).copied());
        if conditions::is_true(conditions, manifest_work::APPLIED) && !self.applied.contains_key(&name) {
            self.applied.insert(name.clone(), now - start);
            if let Some(t) = created_at {
                self.applied_latency.push(now - t);
            }
        }
        if conditions::is_true(conditions, manifest_work::AVAILABLE) && !self.available.contains_key(&name) {
            self.available.insert(name, now - start);
            if let Some(t) = created_at {
                self.available_latency.push(now - t);
            }
        }
    }

    /// Notes a ConfigMap seen on the spoke.
    pub fn note_configmap(&mut self, name: String, start: Instant) {
        self.configmaps
            .entry(name)
            .or_insert_with(|| Instant::now() - start);
    }

    /// The latest of `milestones` (zero when there are none).
    pub fn last(milestones: &HashMap<String, Duration>) -> Duration {
        milestones.values().max().copied().unwrap_or_default()
    }
}

/// Watches the hub's works and the spoke's ConfigMaps until `shape` is done (`until`) or
/// `timeout` after `start` has passed.
pub async fn wait_done(
    hub: kube::Client,
    spoke: kube::Client,
    shape: Shape,
    until: Until,
    created: CreatedAt,
    start: Instant,
    timeout: Duration,
) -> Result<Progress, WorkError> {
    let works: Api<ManifestWork> = Api::namespaced(hub, CLUSTER);
    let configmaps: Api<ConfigMap> = Api::namespaced(spoke, SPOKE_NAMESPACE);
    let mut work_events = std::pin::pin!(
        watcher(works, watcher::Config::default())
            .default_backoff()
            .applied_objects()
    );
    let mut configmap_events = std::pin::pin!(
        watcher(
            configmaps,
            watcher::Config::default().labels(&format!("{LABEL}=true"))
        )
        .default_backoff()
        .applied_objects()
    );
    let mut progress = Progress::default();
    let deadline = start + timeout;
    while !progress.done(&shape, until) {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {
                return Err(WorkError::Timeout {
                    configmaps: progress.configmaps.len(),
                    expected_configmaps: shape.manifests(),
                    applied: progress.applied.len(),
                    available: progress.available.len(),
                    works: shape.works,
                    timeout,
                });
            }
            event = work_events.next() => match event {
                None => return Err(WorkError::Watch { what: "ManifestWorks", message: "the watch ended".into() }),
                Some(Err(e)) => tracing::debug!(error = %e, "watching ManifestWorks"),
                Some(Ok(work)) => progress.note_work(&work, start, &created),
            },
            event = configmap_events.next() => match event {
                None => return Err(WorkError::Watch { what: "ConfigMaps", message: "the watch ended".into() }),
                Some(Err(e)) => tracing::debug!(error = %e, "watching ConfigMaps"),
                Some(Ok(cm)) => progress.note_configmap(cm.name_any(), start),
            },
        }
    }
    Ok(progress)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_api::meta::Condition;
    use ocm_api::work::v1::ManifestWorkStatus;

    fn work(name: &str, true_conditions: &[&str]) -> ManifestWork {
        let mut w = ManifestWork::new(name, Default::default());
        w.status = Some(ManifestWorkStatus {
            conditions: Some(
                true_conditions
                    .iter()
                    .map(|t| {
                        Condition::new(
                            t,
                            conditions::Status::True,
                            "R",
                            "",
                            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                                k8s_openapi::jiff::Timestamp::now(),
                            ),
                        )
                    })
                    .collect(),
            ),
            ..Default::default()
        });
        w
    }

    #[test]
    fn milestones_are_noted_once_and_done_needs_all_three() {
        let shape = Shape {
            works: 1,
            manifests_per_work: 2,
            configmap_bytes: 1,
        };
        let start = Instant::now();
        let created: CreatedAt = Default::default();
        created.lock().unwrap().insert("w".into(), start);
        let mut p = Progress::default();
        p.note_work(&work("w", &[]), start, &created);
        assert!(p.applied.is_empty());
        p.note_work(&work("w", &[manifest_work::APPLIED]), start, &created);
        p.note_work(&work("w", &[manifest_work::APPLIED]), start, &created);
        assert_eq!((p.applied.len(), p.applied_latency.len()), (1, 1));
        p.note_configmap("a".into(), start);
        p.note_configmap("a".into(), start);
        assert!(!p.done(&shape, Until::Applied));
        p.note_configmap("b".into(), start);
        assert!(p.done(&shape, Until::Applied));
        assert!(!p.done(&shape, Until::Available), "not Available yet");
        p.note_work(
            &work("w", &[manifest_work::APPLIED, manifest_work::AVAILABLE]),
            start,
            &created,
        );
        assert!(p.done(&shape, Until::Available));
        assert_eq!(p.available_latency.len(), 1);
        assert!(Progress::last(&p.configmaps) >= p.configmaps["a"]);
    }
}
