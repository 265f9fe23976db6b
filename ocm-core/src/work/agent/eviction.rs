//! Evicting unmanaged AppliedManifestWorks (ocm-core.md §3.10).
//!
//! An AppliedManifestWork of this agent id is unmanaged when its ManifestWork is missing from
//! the cluster namespace on the hub, or when its name does not start with the current hub hash
//! (the agent now talks to another hub). Such an AppliedManifestWork gets
//! `status.evictionStartTime` and is deleted once the grace period has passed since then (its
//! resources then go through the AppliedManifestWork finalizer); if its work comes back first,
//! `evictionStartTime` is cleared. A grace period of 100 years or more disables eviction.
//! AppliedManifestWorks of other agent ids are left alone.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::runtime::Controller;
use kube::runtime::controller::{Action, Config};
use kube::runtime::reflector::{ObjectRef, ReflectHandle};
use ocm_api::work::v1::{AppliedManifestWork, ManifestWork};

use super::{Backoff, Context, WorkAgentError, is_status, log_failure, patch};

const CONTROLLER: &str = "unmanaged-appliedmanifestwork";

/// A grace period this long or longer disables eviction (upstream's bound: 100 years).
pub const EVICTION_DISABLED_AT: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// What failed while evicting.
#[derive(Debug, thiserror::Error)]
pub enum EvictionError {
    /// Writing `evictionStartTime` failed.
    #[error("patching the eviction start time of AppliedManifestWork {name}: {source}")]
    PatchStatus {
        /// The AppliedManifestWork.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Deleting the AppliedManifestWork failed.
    #[error("evicting AppliedManifestWork {name}: {source}")]
    Delete {
        /// The AppliedManifestWork.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

struct State {
    ctx: Arc<Context>,
    errors: Backoff,
}

/// Runs the eviction controller (one worker, as upstream).
pub(crate) async fn run(
    ctx: Arc<Context>,
    applied: ReflectHandle<AppliedManifestWork>,
    works: ReflectHandle<ManifestWork>,
) -> Result<(), WorkAgentError> {
    let agent_id = ctx.agent_id.clone();
    let trigger = applied
        .filter(move |amw| futures::future::ready(amw.spec.agent_id.as_deref() == Some(agent_id.as_str())));
    let hub_hash = ctx.hub_hash.clone();
    let state = Arc::new(State {
        ctx: ctx.clone(),
        errors: Backoff::new(Duration::from_millis(5), Duration::from_secs(1000)),
    });
    // A work missing from a store that has not listed yet is not missing.
    ctx.works
        .wait_until_ready()
        .await
        .map_err(|_| WorkAgentError::WatchStopped("ManifestWork"))?;
    Controller::for_shared_stream(trigger, ctx.applied.clone())
        .with_config(Config::default().concurrency(1))
        .watches_shared_stream(works, move |work: Arc<ManifestWork>| {
            Some(ObjectRef::<AppliedManifestWork>::new(&format!(
                "{hub_hash}-{}",
                work.name_any()
            )))
        })
        .run(
            |amw, state: Arc<State>| async move {
                let result = reconcile(&amw, &state.ctx).await;
                state.ctx.metrics.reconciled(CONTROLLER, result.is_ok());
                if result.is_ok() {
                    state.errors.forget(&amw.name_any());
                }
                result
            },
            |amw, error: &EvictionError, state: Arc<State>| {
                log_failure(&amw.name_any(), error, "evicting the AppliedManifestWork failed");
                Action::requeue(state.errors.failed(&amw.name_any()))
            },
            state,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(WorkAgentError::ControllerStopped(CONTROLLER))
}

/// What to do with an AppliedManifestWork.
#[derive(Debug, PartialEq, Eq)]
enum Decision {
    /// Leave it (another agent's, or being deleted).
    Skip,
    /// It is managed (or eviction is disabled): clear `evictionStartTime` if set.
    Keep,
    /// It is unmanaged: start or continue the grace period.
    Evict,
}

fn decide(amw: &AppliedManifestWork, ctx: &Context) -> Decision {
    if amw.metadata.deletion_timestamp.is_some()
        || amw.spec.agent_id.as_deref() != Some(ctx.agent_id.as_str())
    {
        return Decision::Skip;
    }
    if ctx.options.eviction_grace_period >= EVICTION_DISABLED_AT {
        return Decision::Keep;
    }
    let work = ObjectRef::<ManifestWork>::new(&amw.spec.manifest_work_name).within(&ctx.cluster);
    if ctx.works.get(&work).is_none() || !amw.name_any().starts_with(ctx.hub_hash.as_str()) {
        return Decision::Evict;
    }
    Decision::Keep
}

#[tracing::instrument(skip_all, fields(applied = %amw.name_any()))]
async fn reconcile(amw: &AppliedManifestWork, ctx: &Context) -> Result<Action, EvictionError> {
    let name = amw.name_any();
    let status = amw.status.clone().unwrap_or_default();
    match decide(amw, ctx) {
        Decision::Skip => Ok(Action::await_change()),
        Decision::Keep => {
            if status.eviction_start_time.is_some() {
                let mut cleared = status.clone();
                cleared.eviction_start_time = None;
                patch::patch_status(&ctx.applied_api(), amw, &status, &cleared)
                    .await
                    .map_err(|source| EvictionError::PatchStatus { name, source })?;
            }
            Ok(Action::await_change())
        }
        Decision::Evict => {
            let Some(Time(start)) = status.eviction_start_time.clone() else {
                let mut started = status.clone();
                started.eviction_start_time = Some(super::now());
                patch::patch_status(&ctx.applied_api(), amw, &status, &started)
                    .await
                    .map_err(|source| EvictionError::PatchStatus { name, source })?;
                tracing::info!("AppliedManifestWork is unmanaged: eviction grace period started");
                return Ok(Action::requeue(ctx.options.eviction_grace_period));
            };
            let elapsed = k8s_openapi::jiff::Timestamp::now().duration_since(start);
            let elapsed = Duration::try_from(elapsed).unwrap_or_default();
            if let Some(remaining) = ctx.options.eviction_grace_period.checked_sub(elapsed)
                && !remaining.is_zero()
            {
                return Ok(Action::requeue(remaining));
            }
            match ctx.applied_api().delete(&name, &Default::default()).await {
                Ok(_) => {
                    tracing::info!(agent_id = %ctx.agent_id, "AppliedManifestWork evicted after the eviction grace period");
                    Ok(Action::await_change())
                }
                Err(error) if is_status(&error, 404) => Ok(Action::await_change()),
                Err(source) => Err(EvictionError::Delete { name, source }),
            }
        }
    }
}
