//! The taint controller (ocm-core.md §2.5): taints derived from `ManagedClusterConditionAvailable`.
//!
//! Missing or Unknown → `cluster.open-cluster-management.io/unreachable` (NoSelect); False →
//! `cluster.open-cluster-management.io/unavailable` (NoSelect); True → neither. Other taints are
//! kept. Upstream leaves `timeAdded` to its mutating webhook; we have none, so the controller
//! stamps `timeAdded` itself when it adds a taint and keeps the time of taints it keeps.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::Recorder;
use kube::runtime::{Controller, watcher};
use kube::{Api, ResourceExt};
use ocm_api::cluster::v1::{ManagedCluster, Taint, TaintEffect};
use ocm_api::conditions::{self, Status};
use ocm_api::names::conditions::cluster::managed_cluster as cluster_conditions;
use ocm_api::names::taints;
use serde_json::json;

use super::{Backoff, HubError, publish, recorder};
use crate::metrics::ControllerMetrics;

const CONTROLLER: &str = "taint";

/// The taints a cluster should carry given its current `taints` and the status of its Available
/// condition (`None` when missing); `None` when nothing changes. Added taints get `timeAdded`
/// `now`; taints kept keep theirs.
#[must_use]
pub fn desired_taints(current: &[Taint], available: Option<Status>, now: &Time) -> Option<Vec<Taint>> {
    let (wanted, unwanted): (Option<&str>, &[&str]) = match available {
        None | Some(Status::Unknown) => (Some(taints::UNREACHABLE), &[taints::UNAVAILABLE]),
        Some(Status::False) => (Some(taints::UNAVAILABLE), &[taints::UNREACHABLE]),
        Some(Status::True) => (None, &[taints::UNREACHABLE, taints::UNAVAILABLE]),
    };
    let mut next: Vec<Taint> = current
        .iter()
        .filter(|t| !unwanted.contains(&t.key.as_str()))
        .cloned()
        .collect();
    if let Some(key) = wanted
        && !next
            .iter()
            .any(|t| t.key == key && t.effect == TaintEffect::NoSelect && t.value.is_none())
    {
        next.retain(|t| t.key != key);
        next.push(Taint {
            key: key.to_string(),
            effect: TaintEffect::NoSelect,
            time_added: Some(now.clone()),
            value: None,
        });
    }
    (next != current).then_some(next)
}

/// What failed while updating taints.
#[derive(Debug, thiserror::Error)]
pub enum TaintError {
    /// Patching `spec.taints` failed.
    #[error("patching the taints of {cluster}: {source}")]
    PatchTaints {
        /// The cluster.
        cluster: String,
        /// The API error.
        source: kube::Error,
    },
}

struct Context {
    client: kube::Client,
    recorder: Recorder,
    metrics: ControllerMetrics,
    backoff: Backoff,
}

/// Runs the taint controller until its watch stops.
///
/// # Errors
/// [`HubError::ControllerStopped`] when the controller stream ends.
pub async fn run(client: kube::Client, metrics: ControllerMetrics) -> Result<(), HubError> {
    let ctx = Arc::new(Context {
        recorder: recorder(&client),
        client: client.clone(),
        metrics,
        backoff: Backoff::default(),
    });
    Controller::new(Api::<ManagedCluster>::all(client), watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(HubError::ControllerStopped(CONTROLLER))
}

fn error_policy(cluster: Arc<ManagedCluster>, error: &TaintError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled(CONTROLLER, false);
    super::log_failure(&cluster.name_any(), error, "updating taints failed");
    Action::requeue(ctx.backoff.failed(&cluster.name_any()))
}

#[tracing::instrument(skip_all, fields(cluster = %cluster.name_any()))]
async fn reconcile(cluster: Arc<ManagedCluster>, ctx: Arc<Context>) -> Result<Action, TaintError> {
    let name = cluster.name_any();
    if cluster.metadata.deletion_timestamp.is_none() {
        let list = cluster
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        let available = conditions::find(list, cluster_conditions::AVAILABLE).and_then(|c| c.status());
        let current = cluster.spec.taints.as_deref().unwrap_or_default();
        if let Some(next) = desired_taints(current, available, &super::now()) {
            let patch = json!({"metadata": {"uid": cluster.uid(), "resourceVersion": cluster.resource_version()},
                "spec": {"taints": next}});
            Api::<ManagedCluster>::all(ctx.client.clone())
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|source| TaintError::PatchTaints {
                    cluster: name.clone(),
                    source,
                })?;
            publish(
                &ctx.recorder,
                cluster.as_ref(),
                None,
                false,
                "ManagedClusterConditionAvailableUpdated",
                format!(
                    "Update the original taints to {:?}",
                    next.iter().map(|t| t.key.as_str()).collect::<Vec<_>>()
                ),
            )
            .await;
        }
    }
    ctx.backoff.succeeded(&name);
    ctx.metrics.reconciled(CONTROLLER, true);
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn time(s: i64) -> Time {
        Time(Timestamp::from_second(1_700_000_000 + s).unwrap())
    }

    fn taint(key: &str, at: i64) -> Taint {
        Taint {
            key: key.into(),
            effect: TaintEffect::NoSelect,
            time_added: Some(time(at)),
            value: None,
        }
    }

    #[test]
    fn unknown_or_missing_adds_unreachable_with_time_added_now() {
        let next = desired_taints(&[], None, &time(5)).unwrap();
        assert_eq!(next, vec![taint(taints::UNREACHABLE, 5)]);
        let next = desired_taints(&[taint(taints::UNAVAILABLE, 1)], Some(Status::Unknown), &time(5)).unwrap();
        assert_eq!(next, vec![taint(taints::UNREACHABLE, 5)]);
    }

    #[test]
    fn kept_taints_keep_their_time_and_nothing_changes() {
        assert_eq!(
            desired_taints(&[taint(taints::UNREACHABLE, 1)], Some(Status::Unknown), &time(9)),
            None
        );
        assert_eq!(
            desired_taints(&[taint(taints::UNAVAILABLE, 1)], Some(Status::False), &time(9)),
            None
        );
        assert_eq!(
            desired_taints(&[taint("user/x", 1)], Some(Status::True), &time(9)),
            None
        );
    }

    #[test]
    fn false_swaps_to_unavailable_and_true_clears_both() {
        let next = desired_taints(
            &[taint("user/x", 1), taint(taints::UNREACHABLE, 2)],
            Some(Status::False),
            &time(7),
        );
        assert_eq!(
            next.unwrap(),
            vec![taint("user/x", 1), taint(taints::UNAVAILABLE, 7)]
        );
        let next = desired_taints(
            &[taint(taints::UNREACHABLE, 2), taint(taints::UNAVAILABLE, 3)],
            Some(Status::True),
            &time(7),
        );
        assert_eq!(next.unwrap(), Vec::<Taint>::new());
    }
}
