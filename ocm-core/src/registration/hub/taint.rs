//! The taint controller (ocm-core.md §2.5): taints derived from `ManagedClusterConditionAvailable`.
//!
//! Missing or Unknown → `cluster.open-cluster-management.io/unreachable` (NoSelect); False →
//! `cluster.open-cluster-management.io/unavailable` (NoSelect); True → neither. Other taints are
//! kept. As upstream, an added taint is sent without `timeAdded`: the hub's mutating admission
//! (in-process on the embedded hub, the `hub` binary's webhook on a real one) stamps it, and
//! refuses an update that sets it. Where no admission stamped it (a hub without the webhooks),
//! the controller stamps it itself in a second patch; taints it keeps keep their time.

use std::sync::Arc;

use crate::events::EventRecorder;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use ocm_api::cluster::v1::{ManagedCluster, Taint, TaintEffect};
use ocm_api::conditions::{self, Status};
use ocm_api::names::conditions::cluster::managed_cluster as cluster_conditions;
use ocm_api::names::taints;
use serde_json::json;

use super::informers::{HubInformers, run_alone};
use super::own_writes::OwnWrites;
use super::{Backoff, HubError, publish, recorder};
use crate::metrics::ControllerMetrics;

const CONTROLLER: &str = "taint";

/// The taints a cluster should carry given its current `taints` and the status of its Available
/// condition (`None` when missing); `None` when nothing changes. Added taints have no
/// `timeAdded` (admission gives them one); taints kept keep theirs.
#[must_use]
pub fn desired_taints(current: &[Taint], available: Option<Status>) -> Option<Vec<Taint>> {
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
            time_added: None,
            value: None,
        });
    }
    (next != current).then_some(next)
}

/// `taints` with `timeAdded` = `now` where it is missing; `None` when every taint has one.
#[must_use]
pub fn stamp_missing_times(taints: &[Taint], now: &Time) -> Option<Vec<Taint>> {
    taints.iter().any(|t| t.time_added.is_none()).then(|| {
        taints
            .iter()
            .map(|t| Taint {
                time_added: t.time_added.clone().or_else(|| Some(now.clone())),
                ..t.clone()
            })
            .collect()
    })
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
    recorder: EventRecorder,
    metrics: ControllerMetrics,
    backoff: Backoff,
    /// The hub controllers' writes of ManagedClusters the shared store has yet to show.
    own_writes: Arc<OwnWrites>,
}

/// Runs the taint controller until its watch stops.
///
/// # Errors
/// [`HubError::ControllerStopped`] when the controller stream ends.
pub async fn run(client: kube::Client, metrics: ControllerMetrics) -> Result<(), HubError> {
    let informers = HubInformers::new(&client);
    let controller = controller(client, metrics, &informers);
    run_alone(informers, controller, std::convert::identity).await
}

/// The taint controller over the shared cluster informer.
pub(crate) fn controller(
    client: kube::Client,
    metrics: ControllerMetrics,
    informers: &HubInformers,
) -> impl Future<Output = Result<(), HubError>> + Send + 'static {
    let ctx = Arc::new(Context {
        recorder: recorder(&client),
        client,
        metrics,
        backoff: Backoff::default(),
        own_writes: informers.clusters.own_writes(),
    });
    let controller = Controller::for_shared_stream(informers.clusters.applied(), informers.clusters.store());
    async move {
        controller
            .run(reconcile, error_policy, ctx)
            .for_each(|_| futures::future::ready(()))
            .await;
        Err(HubError::ControllerStopped(CONTROLLER))
    }
}

fn error_policy(cluster: Arc<ManagedCluster>, error: &TaintError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled(CONTROLLER, false);
    super::log_failure(&cluster.name_any(), error, "updating taints failed");
    Action::requeue(ctx.backoff.failed(&cluster.name_any()))
}

/// Gives the taints of `cluster` that have no `timeAdded` the current time (what the hub's
/// admission does where it runs), with `cluster`'s resourceVersion as precondition.
async fn stamp(ctx: &Context, api: &Api<ManagedCluster>, cluster: &ManagedCluster) -> Result<(), TaintError> {
    let written = cluster.spec.taints.as_deref().unwrap_or_default();
    let Some(stamped) = stamp_missing_times(written, &super::now()) else {
        return Ok(());
    };
    let name = cluster.name_any();
    let patch = json!({"metadata": {"uid": cluster.uid(), "resourceVersion": cluster.resource_version()},
        "spec": {"taints": stamped}});
    ctx.own_writes
        .noting(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)))
        .await
        .map(|_| ())
        .map_err(|source| TaintError::PatchTaints {
            cluster: name,
            source,
        })
}

#[tracing::instrument(skip_all, fields(cluster = %cluster.name_any()))]
async fn reconcile(cluster: Arc<ManagedCluster>, ctx: Arc<Context>) -> Result<Action, TaintError> {
    if ctx.own_writes.behind(cluster.as_ref()) {
        return Ok(Action::await_change());
    }
    let name = cluster.name_any();
    if cluster.metadata.deletion_timestamp.is_none() {
        let list = cluster
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        let available = conditions::find(list, cluster_conditions::AVAILABLE).and_then(|c| c.status());
        let current = cluster.spec.taints.as_deref().unwrap_or_default();
        let api = Api::<ManagedCluster>::all(ctx.client.clone());
        if let Some(next) = desired_taints(current, available) {
            let patch = json!({"metadata": {"uid": cluster.uid(), "resourceVersion": cluster.resource_version()},
                "spec": {"taints": next}});
            let patched = ctx
                .own_writes
                .noting(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)))
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
            // No admission stamped the added taint (a hub without the webhooks): stamp it.
            stamp(&ctx, &api, &patched).await?;
        } else {
            // A stamp that did not land (its patch met another writer's change) is made now.
            stamp(&ctx, &api, &cluster).await?;
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

    fn new_taint(key: &str) -> Taint {
        Taint {
            time_added: None,
            ..taint(key, 0)
        }
    }

    #[test]
    fn unknown_or_missing_adds_unreachable_without_time_added() {
        let next = desired_taints(&[], None).unwrap();
        assert_eq!(next, vec![new_taint(taints::UNREACHABLE)]);
        let next = desired_taints(&[taint(taints::UNAVAILABLE, 1)], Some(Status::Unknown)).unwrap();
        assert_eq!(next, vec![new_taint(taints::UNREACHABLE)]);
    }

    #[test]
    fn missing_times_are_stamped_and_others_kept() {
        let stamped = stamp_missing_times(&[taint("a", 1), new_taint("b")], &time(5)).unwrap();
        assert_eq!(stamped, vec![taint("a", 1), taint("b", 5)]);
        assert_eq!(stamp_missing_times(&[taint("a", 1)], &time(5)), None);
    }

    #[test]
    fn kept_taints_keep_their_time_and_nothing_changes() {
        assert_eq!(
            desired_taints(&[taint(taints::UNREACHABLE, 1)], Some(Status::Unknown)),
            None
        );
        assert_eq!(
            desired_taints(&[taint(taints::UNAVAILABLE, 1)], Some(Status::False)),
            None
        );
        assert_eq!(desired_taints(&[taint("user/x", 1)], Some(Status::True)), None);
    }

    #[test]
    fn false_swaps_to_unavailable_and_true_clears_both() {
        let next = desired_taints(
            &[taint("user/x", 1), taint(taints::UNREACHABLE, 2)],
            Some(Status::False),
        );
        assert_eq!(
            next.unwrap(),
            vec![taint("user/x", 1), new_taint(taints::UNAVAILABLE)]
        );
        let next = desired_taints(
            &[taint(taints::UNREACHABLE, 2), taint(taints::UNAVAILABLE, 3)],
            Some(Status::True),
        );
        assert_eq!(next.unwrap(), Vec::<Taint>::new());
    }
}
