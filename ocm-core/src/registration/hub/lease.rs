//! The hub's lease controller and clock sync (ocm-core.md §2.4).
//!
//! For every cluster that has had a `HubAcceptedManagedCluster` condition, the hub makes sure
//! the Lease `managed-cluster-lease` exists in the cluster namespace (created with `renewTime`
//! now) and watches it: once `now ≥ renewTime + 5 × leaseDurationSeconds` (0 counts as 60) the
//! condition `ManagedClusterConditionAvailable` becomes Unknown, reason
//! `ManagedClusterLeaseUpdateStopped`, with a Warning event; otherwise the cluster is looked at
//! again exactly when the lease would expire. Whenever `renewTime` (or the skip annotation) changes, the hub checks that the
//! agent's clock agrees with its own (within the same grace period, unless the cluster carries
//! the skip-clock-sync annotation) and sets `ManagedClusterConditionClockSynced`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::events::EventRecorder;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::conditions::{self, Status};
use ocm_api::meta::Condition;
use ocm_api::names::conditions::cluster::managed_cluster::{self as cluster_conditions, reasons};
use ocm_api::names::{annotations, labels, leases};
use serde_json::json;

use super::informers::{HubInformers, run_alone};
use super::own_writes::OwnWrites;
use super::{Backoff, HubError, publish, recorder};
use crate::metrics::ControllerMetrics;

const CONTROLLER: &str = "managedclusterlease";

/// The grace period of a lease: 5 × `leaseDurationSeconds`, a non-positive duration counting
/// as the default 60 s.
#[must_use]
pub fn grace_period(lease_duration_seconds: i32) -> Duration {
    let seconds = if lease_duration_seconds > 0 {
        lease_duration_seconds
    } else {
        leases::DEFAULT_DURATION_SECONDS
    };
    Duration::from_secs(
        u64::from(seconds.unsigned_abs()) * u64::from(leases::GRACE_PERIOD_MULTIPLIER.unsigned_abs()),
    )
}

/// How long a lease renewed at `renew` stays fresh at `now`: `None` once expired
/// (`now ≥ renew + grace`), else the time left.
#[must_use]
pub fn time_left(renew: Timestamp, lease_duration_seconds: i32, now: Timestamp) -> Option<Duration> {
    let grace = grace_period(lease_duration_seconds);
    let elapsed = now.duration_since(renew);
    let grace_signed = k8s_openapi::jiff::SignedDuration::try_from(grace).ok()?;
    (elapsed < grace_signed).then(|| Duration::try_from(grace_signed - elapsed).unwrap_or(grace))
}

/// Whether the agent's clock is in sync: `|now − renew| < grace`.
#[must_use]
pub fn clock_in_sync(renew: Timestamp, lease_duration_seconds: i32, now: Timestamp) -> bool {
    let grace = grace_period(lease_duration_seconds);
    now.duration_since(renew).abs().unsigned_abs() < grace
}

/// What failed while checking a cluster's lease.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// The shared store of leases has no writer any more (the informer stopped).
    #[error("the lease store of {cluster} is gone (its watch stopped)")]
    LeasesUnavailable {
        /// The cluster.
        cluster: String,
    },
    /// Creating the Lease failed.
    #[error("creating the lease of {cluster}: {source}")]
    CreateLease {
        /// The cluster.
        cluster: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing the cluster's status failed.
    #[error("updating the status of {cluster}: {source}")]
    PatchStatus {
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
    /// The renewTime (and skip annotation) last checked for clock sync, per cluster.
    last_renew: Mutex<HashMap<String, (Timestamp, bool)>>,
    /// The clusters' leases (the shared informer's store): read instead of the API server.
    leases: Store<Lease>,
    /// The hub controllers' writes of ManagedClusters the shared store has yet to show.
    own_writes: Arc<OwnWrites>,
}

/// Runs the lease controller until its watches stop.
///
/// # Errors
/// [`HubError::ControllerStopped`] when the controller stream ends.
pub async fn run(client: kube::Client, metrics: ControllerMetrics) -> Result<(), HubError> {
    let informers = HubInformers::new(&client);
    let controller = controller(client, metrics, &informers);
    run_alone(informers, controller, std::convert::identity).await
}

/// The lease controller over the shared informers: clusters, and the labelled Leases whose
/// changes reconcile their cluster and whose store answers the reconcile's lease lookups.
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
        last_renew: Mutex::new(HashMap::new()),
        leases: informers.leases.store(),
        own_writes: informers.clusters.own_writes(),
    });
    let controller = Controller::for_shared_stream(informers.clusters.applied(), informers.clusters.store())
        .watches_shared_stream(informers.leases.touched(), |lease: Arc<Lease>| {
            (lease.name_any() == leases::MANAGED_CLUSTER)
                .then(|| {
                    lease
                        .labels()
                        .get(labels::CLUSTER_NAME)
                        .map(|c| ObjectRef::new(c))
                })
                .flatten()
        });
    async move {
        controller
            .run(reconcile, error_policy, ctx)
            .for_each(|_| futures::future::ready(()))
            .await;
        Err(HubError::ControllerStopped(CONTROLLER))
    }
}

fn error_policy(cluster: Arc<ManagedCluster>, error: &LeaseError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled(CONTROLLER, false);
    super::log_failure(&cluster.name_any(), error, "checking the cluster lease failed");
    Action::requeue(ctx.backoff.failed(&cluster.name_any()))
}

#[tracing::instrument(skip_all, fields(cluster = %cluster.name_any()))]
async fn reconcile(cluster: Arc<ManagedCluster>, ctx: Arc<Context>) -> Result<Action, LeaseError> {
    if ctx.own_writes.behind(cluster.as_ref()) {
        return Ok(Action::await_change());
    }
    let name = cluster.name_any();
    let list = cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    if conditions::find(&list, cluster_conditions::HUB_ACCEPTED).is_none() {
        return Ok(Action::await_change());
    }
    let duration = cluster
        .spec
        .lease_duration_seconds
        .unwrap_or(leases::DEFAULT_DURATION_SECONDS);
    let now = Timestamp::now();
    // The store is complete before the first reconcile runs (the controller waits for it)
    // and takes a lease's change before the reconcile that change triggers.
    if ctx.leases.wait_until_ready().await.is_err() {
        return Err(LeaseError::LeasesUnavailable {
            cluster: name.clone(),
        });
    }
    let lease = ctx
        .leases
        .get(&ObjectRef::new(leases::MANAGED_CLUSTER).within(&name));
    let mut updated = list.clone();
    let action = match lease {
        None if cluster.metadata.deletion_timestamp.is_some() => {
            mark_unknown(&mut updated);
            Action::await_change()
        }
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(leases::MANAGED_CLUSTER.to_string()),
                    namespace: Some(name.clone()),
                    labels: Some([(labels::CLUSTER_NAME.to_string(), name.clone())].into()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(leases::MANAGED_CLUSTER.to_string()),
                    renew_time: Some(MicroTime(now)),
                    ..LeaseSpec::default()
                }),
            };
            let created = Api::<Lease>::namespaced(ctx.client.clone(), &name)
                .create(&PostParams::default(), &lease)
                .await;
            // AlreadyExists: the agent (or an earlier pass) created it after the store's copy;
            // its event reconciles again.
            if !matches!(&created, Err(kube::Error::Api(status)) if status.code == 409) {
                created.map_err(|source| LeaseError::CreateLease {
                    cluster: name.clone(),
                    source,
                })?;
            }
            Action::requeue(grace_period(duration))
        }
        Some(lease) => {
            let renew = lease
                .spec
                .as_ref()
                .and_then(|s| s.renew_time.as_ref())
                .map(|t| t.0)
                .or_else(|| lease.metadata.creation_timestamp.as_ref().map(|t| t.0))
                .unwrap_or(now);
            check_clock(&ctx, &cluster, &mut updated, renew, duration, now);
            match time_left(renew, duration, now) {
                Some(left) => Action::requeue(left),
                None => {
                    if mark_unknown(&mut updated) {
                        publish(
                            &ctx.recorder,
                            cluster.as_ref(),
                            Some(&name),
                            true,
                            "AvailableUnknown",
                            format!("The managed cluster ({name}) cannot connect to the hub cluster."),
                        )
                        .await;
                    }
                    Action::requeue(grace_period(duration))
                }
            }
        }
    };
    if updated != list {
        let patch = json!({"metadata": {"uid": cluster.uid(), "resourceVersion": cluster.resource_version()},
            "status": {"conditions": updated}});
        ctx.own_writes
            .noting(Api::<ManagedCluster>::all(ctx.client.clone()).patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            ))
            .await
            .map_err(|source| LeaseError::PatchStatus {
                cluster: name.clone(),
                source,
            })?;
    }
    ctx.backoff.succeeded(&name);
    ctx.metrics.reconciled(CONTROLLER, true);
    Ok(action)
}

/// Sets Available Unknown (lease stopped) unless it already is Unknown; tells whether it changed.
fn mark_unknown(list: &mut Vec<Condition>) -> bool {
    if conditions::has_status(list, cluster_conditions::AVAILABLE, Status::Unknown) {
        return false;
    }
    conditions::set(
        list,
        Condition::new(
            cluster_conditions::AVAILABLE,
            Status::Unknown,
            reasons::LEASE_UPDATE_STOPPED,
            "Registration agent stopped updating its lease.",
            super::now(),
        ),
    )
}

/// Sets the clock-sync condition when `renew` moved since the last check.
fn check_clock(
    ctx: &Context,
    cluster: &ManagedCluster,
    list: &mut Vec<Condition>,
    renew: Timestamp,
    duration: i32,
    now: Timestamp,
) {
    let name = cluster.name_any();
    let skip = cluster
        .annotations()
        .get(annotations::SKIP_CLOCK_SYNC_CHECK)
        .is_some_and(|v| v == "true");
    {
        let mut seen = ctx
            .last_renew
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.get(&name) == Some(&(renew, skip)) {
            return;
        }
        seen.insert(name, (renew, skip));
    }
    let condition = if skip || clock_in_sync(renew, duration, now) {
        Condition::new(
            cluster_conditions::CLOCK_SYNCED,
            Status::True,
            reasons::CLOCK_SYNCED,
            "The clock of the managed cluster is synced with the hub.",
            super::now(),
        )
    } else {
        Condition::new(
            cluster_conditions::CLOCK_SYNCED,
            Status::False,
            reasons::CLOCK_OUT_OF_SYNC,
            "The clock of hub and agent is out of sync. This may cause the Unknown status and affect agent functionalities.",
            super::now(),
        )
    };
    conditions::set(list, condition);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + second).unwrap()
    }

    #[test]
    fn grace_is_five_lease_durations_and_zero_means_sixty() {
        assert_eq!(grace_period(1), Duration::from_secs(5));
        assert_eq!(grace_period(60), Duration::from_secs(300));
        assert_eq!(grace_period(0), Duration::from_secs(300));
        assert_eq!(grace_period(-3), Duration::from_secs(300));
    }

    #[test]
    fn lease_expires_exactly_at_renew_plus_grace() {
        assert_eq!(time_left(at(0), 1, at(0)), Some(Duration::from_secs(5)));
        assert_eq!(time_left(at(0), 1, at(3)), Some(Duration::from_secs(2)));
        assert_eq!(time_left(at(0), 1, at(5)), None);
        assert_eq!(time_left(at(0), 1, at(100)), None);
        assert_eq!(time_left(at(0), 0, at(299)), Some(Duration::from_secs(1)));
        // A renewTime in the future (skewed agent clock) is fresh for longer than the grace.
        assert!(time_left(at(10), 1, at(0)).is_some_and(|d| d > Duration::from_secs(5)));
    }

    #[test]
    fn clock_sync_allows_skew_below_the_grace_either_way() {
        assert!(clock_in_sync(at(0), 1, at(4)));
        assert!(!clock_in_sync(at(0), 1, at(5)));
        assert!(clock_in_sync(at(4), 1, at(0)));
        assert!(!clock_in_sync(at(6), 1, at(0)));
    }
}
