//! ManifestWork garbage collection (ocm-core.md §3.11, hub gate CleanUpCompletedManifestWork):
//! a work with `spec.deleteOption.ttlSecondsAfterFinished` is deleted that many seconds after
//! its `Complete` condition turned True (at once for 0). Works being deleted and works a
//! ManifestWorkReplicaSet owns (label `work.open-cluster-management.io/manifestworkreplicaset`)
//! are left alone: the replica set manages their lifecycle.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, Preconditions};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use kube::{Api, ResourceExt};
use ocm_api::conditions::{self, Status};
use ocm_api::names::conditions::work::manifest_work as work_conditions;
use ocm_api::names::labels;
use ocm_api::work::v1::ManifestWork;

use crate::metrics::ControllerMetrics;
use crate::registration::hub::{Backoff, log_failure};

const CONTROLLER: &str = "manifestwork-garbage-collection";

/// What failed in the garbage collection.
#[derive(Debug, thiserror::Error)]
pub enum GarbageCollectionError {
    /// Deleting an expired work failed.
    #[error("deleting the finished ManifestWork {namespace}/{name}: {source}")]
    DeleteWork {
        /// The work's namespace.
        namespace: String,
        /// The work's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// The controller's watch ended.
    #[error("the ManifestWork garbage collection stopped watching")]
    ControllerStopped,
}

/// When `work` is to be deleted: `Complete`'s last transition plus the TTL; `None` when it is
/// not to be deleted (no TTL, not Complete, being deleted, owned by a ManifestWorkReplicaSet).
#[must_use]
pub fn expiry(work: &ManifestWork) -> Option<Timestamp> {
    if work.metadata.deletion_timestamp.is_some()
        || work.labels().contains_key(labels::MANIFEST_WORK_REPLICA_SET)
    {
        return None;
    }
    let ttl = work.spec.delete_option.as_ref()?.ttl_seconds_after_finished?;
    let list = work.status.as_ref()?.conditions.as_deref()?;
    let complete = conditions::find(list, work_conditions::COMPLETE)?;
    if complete.status() != Some(Status::True) {
        return None;
    }
    complete
        .last_transition_time
        .0
        .checked_add(SignedDuration::from_secs(ttl.max(0)))
        .ok()
}

struct Context {
    client: kube::Client,
    metrics: ControllerMetrics,
    backoff: Backoff,
}

/// Runs the garbage collection of finished ManifestWorks in every namespace until its watch
/// stops.
///
/// # Errors
/// [`GarbageCollectionError::ControllerStopped`] when the watch ends.
pub async fn run(client: kube::Client, metrics: ControllerMetrics) -> Result<(), GarbageCollectionError> {
    let ctx = Arc::new(Context {
        client: client.clone(),
        metrics,
        backoff: Backoff::default(),
    });
    Controller::new(Api::<ManifestWork>::all(client), watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(GarbageCollectionError::ControllerStopped)
}

fn key(work: &ManifestWork) -> String {
    format!("{}/{}", work.namespace().unwrap_or_default(), work.name_any())
}

fn error_policy(work: Arc<ManifestWork>, error: &GarbageCollectionError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled(CONTROLLER, false);
    log_failure(&key(&work), error, "deleting a finished ManifestWork failed");
    Action::requeue(ctx.backoff.failed(&key(&work)))
}

#[tracing::instrument(skip_all, fields(work = %key(&work)))]
async fn reconcile(work: Arc<ManifestWork>, ctx: Arc<Context>) -> Result<Action, GarbageCollectionError> {
    let Some(at) = expiry(&work) else {
        ctx.metrics.reconciled(CONTROLLER, true);
        return Ok(Action::await_change());
    };
    let left = at.duration_since(Timestamp::now());
    if left.is_positive() {
        ctx.metrics.reconciled(CONTROLLER, true);
        let wait = Duration::try_from(left).unwrap_or(Duration::from_secs(1));
        return Ok(Action::requeue(wait));
    }
    let namespace = work.namespace().unwrap_or_default();
    let name = work.name_any();
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: work.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match Api::<ManifestWork>::namespaced(ctx.client.clone(), &namespace)
        .delete(&name, &params)
        .await
    {
        Ok(_) => tracing::info!("deleted the finished ManifestWork: its ttlSecondsAfterFinished passed"),
        // Gone already, or replaced by a new work of the same name (not finished yet).
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
        Err(source) => {
            return Err(GarbageCollectionError::DeleteWork {
                namespace,
                name,
                source,
            });
        }
    }
    ctx.backoff.succeeded(&key(&work));
    ctx.metrics.reconciled(CONTROLLER, true);
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use ocm_api::meta::Condition;
    use ocm_api::work::v1::{DeleteOption, ManifestWorkSpec, ManifestWorkStatus};

    use super::*;

    fn work(ttl: Option<i64>, complete: Option<(Status, i64)>) -> ManifestWork {
        let mut w = ManifestWork::new(
            "w",
            ManifestWorkSpec {
                delete_option: ttl.map(|t| DeleteOption {
                    ttl_seconds_after_finished: Some(t),
                    ..DeleteOption::default()
                }),
                ..ManifestWorkSpec::default()
            },
        );
        w.status = complete.map(|(status, at)| ManifestWorkStatus {
            conditions: Some(vec![Condition::new(
                work_conditions::COMPLETE,
                status,
                "ConditionRulesAggregated",
                "",
                Time(Timestamp::from_second(at).unwrap()),
            )]),
            ..ManifestWorkStatus::default()
        });
        w
    }

    #[test]
    fn expires_ttl_after_completion() {
        let at = |s| Some(Timestamp::from_second(s).unwrap());
        assert_eq!(expiry(&work(Some(30), Some((Status::True, 1000)))), at(1030));
        assert_eq!(expiry(&work(Some(0), Some((Status::True, 1000)))), at(1000));
        assert_eq!(expiry(&work(None, Some((Status::True, 1000)))), None);
        assert_eq!(expiry(&work(Some(30), Some((Status::False, 1000)))), None);
        assert_eq!(expiry(&work(Some(30), None)), None);
        let mut owned = work(Some(30), Some((Status::True, 1000)));
        owned
            .labels_mut()
            .insert(labels::MANIFEST_WORK_REPLICA_SET.into(), "ns.mwrs".into());
        assert_eq!(expiry(&owned), None);
        let mut deleting = work(Some(30), Some((Status::True, 1000)));
        deleting.metadata.deletion_timestamp = Some(Time(Timestamp::from_second(2000).unwrap()));
        assert_eq!(expiry(&deleting), None);
    }
}
