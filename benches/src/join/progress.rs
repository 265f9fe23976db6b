//! Watching the hub's ManagedClusters until every cluster is Joined and Available, noting when
//! each one was accepted, joined, and joined and available, counted from its agent's start.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::conditions;
use ocm_api::names::conditions::cluster::managed_cluster;
use serde::Serialize;
use tokio::time::Instant;

use super::JoinError;

/// The milestones of one cluster, as durations since its agent started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Milestones {
    /// `HubAcceptedManagedCluster` True.
    pub accepted: Option<Duration>,
    /// `ManagedClusterJoined` True.
    pub joined: Option<Duration>,
    /// Joined and `ManagedClusterConditionAvailable` True.
    pub available: Option<Duration>,
}

/// Which milestones a cluster's conditions show: (accepted, joined, joined and available).
pub fn reached(cluster: &ManagedCluster) -> (bool, bool, bool) {
    let conditions = cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let accepted = conditions::is_true(conditions, managed_cluster::HUB_ACCEPTED);
    let joined = conditions::is_true(conditions, managed_cluster::JOINED);
    let available = joined && conditions::is_true(conditions, managed_cluster::AVAILABLE);
    (accepted, joined, available)
}

/// Records the milestones `cluster` shows that were not seen before; true when it just became
/// Joined and Available.
fn note(entry: &mut Milestones, cluster: &ManagedCluster, since_start: Duration) -> bool {
    let (accepted, joined, available) = reached(cluster);
    if accepted && entry.accepted.is_none() {
        entry.accepted = Some(since_start);
    }
    if joined && entry.joined.is_none() {
        entry.joined = Some(since_start);
    }
    if available && entry.available.is_none() {
        entry.available = Some(since_start);
        return true;
    }
    false
}

/// Watches ManagedClusters through `client` until `expected` of them are Joined and Available,
/// or `timeout` after `start`. Returns each cluster's milestones; `started` tells when a
/// cluster's agents started (clusters it does not know, or not yet started, are ignored).
pub async fn wait_all_available(
    client: kube::Client,
    expected: usize,
    started: &(dyn Fn(&str) -> Option<Instant> + Sync),
    start: Instant,
    timeout: Duration,
) -> Result<HashMap<String, Milestones>, JoinError> {
    let api: Api<ManagedCluster> = Api::all(client);
    let mut events = std::pin::pin!(
        watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
    );
    let mut milestones: HashMap<String, Milestones> = HashMap::new();
    let mut available = 0;
    let deadline = start + timeout;
    while available < expected {
        let event = tokio::time::timeout_at(deadline, events.next()).await;
        let cluster = match event {
            Err(_) => {
                return Err(JoinError::Timeout {
                    joined: available,
                    agents: expected,
                    timeout,
                });
            }
            Ok(None) => return Err(JoinError::Watch("the watch ended".into())),
            Ok(Some(Err(e))) => {
                tracing::debug!(error = %e, "watching ManagedClusters");
                continue;
            }
            Ok(Some(Ok(cluster))) => cluster,
        };
        let name = cluster.name_any();
        let Some(since) = started(&name) else {
            continue;
        };
        let entry = milestones.entry(name).or_default();
        if note(entry, &cluster, since.elapsed()) {
            available += 1;
        }
    }
    Ok(milestones)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_api::cluster::v1::ManagedClusterStatus;
    use ocm_api::meta::Condition;

    fn cluster(true_conditions: &[&str]) -> ManagedCluster {
        let mut c = ManagedCluster::new("c", Default::default());
        c.status = Some(ManagedClusterStatus {
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
        c
    }

    #[test]
    fn milestones_are_noted_once_and_available_needs_joined() {
        let mut m = Milestones::default();
        let s = Duration::from_secs;
        assert!(!note(&mut m, &cluster(&[managed_cluster::HUB_ACCEPTED]), s(1)));
        // Available without Joined is not the end.
        assert!(!note(
            &mut m,
            &cluster(&[managed_cluster::HUB_ACCEPTED, managed_cluster::AVAILABLE]),
            s(2)
        ));
        let all = cluster(&[
            managed_cluster::HUB_ACCEPTED,
            managed_cluster::JOINED,
            managed_cluster::AVAILABLE,
        ]);
        assert!(note(&mut m, &all, s(3)));
        assert!(!note(&mut m, &all, s(4)), "counted once");
        assert_eq!(
            m,
            Milestones {
                accepted: Some(s(1)),
                joined: Some(s(3)),
                available: Some(s(3)),
            }
        );
    }
}
