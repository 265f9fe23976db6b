//! The finalizers of the work agent (ocm-core.md §3.2, §3.6):
//!
//! - **add finalizer**: every ManifestWork not being deleted gets
//!   `cluster.open-cluster-management.io/manifest-work-cleanup`; the other controllers ignore
//!   works without it.
//! - **ManifestWork finalize**: when a work is being deleted, it gets condition `Deleting` True
//!   (`WorkDeleting`) and its AppliedManifestWork is deleted; once that is gone the work's
//!   finalizer is removed. AppliedManifestWork events wake the work they belong to.
//! - **AppliedManifestWork finalize**: when an AppliedManifestWork of this agent is being
//!   deleted, every resource it applied is deleted (§3.8); `status.appliedResources` keeps the
//!   ones still going, and its finalizer is removed once none remain.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::ResourceExt;
use kube::runtime::Controller;
use kube::runtime::controller::{Action, Config};
use kube::runtime::reflector::{ObjectRef, ReflectHandle};
use ocm_api::conditions::{ConditionList, Status};
use ocm_api::meta::Condition;
use ocm_api::names::conditions::work::manifest_work as work_conditions;
use ocm_api::names::finalizers;
use ocm_api::work::v1::{AppliedManifestWork, ManifestWork};

use super::{Backoff, Context, WorkAgentError, applied, log_failure, patch};

const ADD_FINALIZER: &str = "add-finalizer";
const WORK_FINALIZE: &str = "manifestwork-finalize";
const APPLIED_FINALIZE: &str = "appliedmanifestwork-finalize";

/// What failed while finalizing.
#[derive(Debug, thiserror::Error)]
pub enum FinalizeError {
    /// Adding or removing the ManifestWork finalizer failed.
    #[error("patching the finalizers of ManifestWork {name}: {source}")]
    PatchWorkFinalizers {
        /// The work.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Setting the Deleting condition failed.
    #[error("patching the status of ManifestWork {name}: {source}")]
    PatchWorkStatus {
        /// The work.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Deleting the AppliedManifestWork failed.
    #[error("deleting AppliedManifestWork {name}: {source}")]
    DeleteApplied {
        /// The AppliedManifestWork.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing the AppliedManifestWork (status or finalizer) failed.
    #[error("patching AppliedManifestWork {name}: {source}")]
    PatchApplied {
        /// The AppliedManifestWork.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Deleting applied resources failed.
    #[error("deleting the resources of AppliedManifestWork {name}: {source}")]
    DeleteResources {
        /// The AppliedManifestWork.
        name: String,
        /// What failed.
        source: applied::DeleteResourcesError,
    },
}

/// Runs the controller adding the finalizer to every ManifestWork (one worker, as upstream).
pub(crate) async fn run_add_finalizer(
    ctx: Arc<Context>,
    works: ReflectHandle<ManifestWork>,
) -> Result<(), WorkAgentError> {
    let backoff = Arc::new(Backoff::new(Duration::from_millis(5), Duration::from_secs(1000)));
    let trigger = works.filter(|work| {
        futures::future::ready(
            work.metadata.deletion_timestamp.is_none()
                && !work
                    .finalizers()
                    .iter()
                    .any(|f| f == finalizers::MANIFEST_WORK_CLEANUP),
        )
    });
    Controller::for_shared_stream(trigger, ctx.works.clone())
        .with_config(Config::default().concurrency(1))
        .run(
            |work, ctx| async move {
                let result = add_finalizer(&work, &ctx).await;
                ctx.metrics.reconciled(ADD_FINALIZER, result.is_ok());
                result.map(|()| Action::await_change())
            },
            {
                let backoff = backoff.clone();
                move |work, error: &FinalizeError, _ctx| {
                    log_failure(
                        &work.name_any(),
                        error,
                        "adding the ManifestWork finalizer failed",
                    );
                    Action::requeue(backoff.failed(&work.name_any()))
                }
            },
            ctx,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(WorkAgentError::ControllerStopped(ADD_FINALIZER))
}

#[tracing::instrument(skip_all, fields(work = %work.name_any()))]
async fn add_finalizer(work: &ManifestWork, ctx: &Context) -> Result<(), FinalizeError> {
    if work.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    patch::add_finalizer(&ctx.works_api(), work, finalizers::MANIFEST_WORK_CLEANUP)
        .await
        .map_err(|source| FinalizeError::PatchWorkFinalizers {
            name: work.name_any(),
            source,
        })?;
    Ok(())
}

/// The state of the ManifestWork finalize controller.
struct WorkFinalize {
    ctx: Arc<Context>,
    /// Requeue while the AppliedManifestWork still exists: 5 ms doubling to 1000 s.
    pending: Backoff,
    errors: Backoff,
}

/// Runs the ManifestWork finalize controller.
pub(crate) async fn run_work_finalize(
    ctx: Arc<Context>,
    works: ReflectHandle<ManifestWork>,
    applied: ReflectHandle<AppliedManifestWork>,
) -> Result<(), WorkAgentError> {
    let trigger = works.filter(|work| futures::future::ready(work.metadata.deletion_timestamp.is_some()));
    let mapping_ctx = ctx.clone();
    let state = Arc::new(WorkFinalize {
        ctx: ctx.clone(),
        pending: Backoff::new(Duration::from_millis(5), Duration::from_secs(1000)),
        errors: Backoff::new(Duration::from_millis(5), Duration::from_secs(1000)),
    });
    Controller::for_shared_stream(trigger, ctx.works.clone())
        .with_config(Config::default().concurrency(ctx.options.workers))
        .watches_shared_stream(applied, move |amw: Arc<AppliedManifestWork>| {
            let name = amw.name_any();
            mapping_ctx
                .work_name_of(&name)
                .map(|work| ObjectRef::<ManifestWork>::new(work).within(&mapping_ctx.cluster))
        })
        .run(
            |work, state: Arc<WorkFinalize>| async move {
                let result = finalize_work(&work, &state).await;
                state.ctx.metrics.reconciled(WORK_FINALIZE, result.is_ok());
                if result.is_ok() {
                    state.errors.forget(&work.name_any());
                }
                result
            },
            |work, error: &FinalizeError, state: Arc<WorkFinalize>| {
                log_failure(&work.name_any(), error, "finalizing the ManifestWork failed");
                Action::requeue(state.errors.failed(&work.name_any()))
            },
            state,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(WorkAgentError::ControllerStopped(WORK_FINALIZE))
}

#[tracing::instrument(skip_all, fields(work = %work.name_any()))]
async fn finalize_work(work: &ManifestWork, state: &WorkFinalize) -> Result<Action, FinalizeError> {
    let ctx = &state.ctx;
    let name = work.name_any();
    if work.metadata.deletion_timestamp.is_none() {
        return Ok(Action::await_change());
    }
    let applied_name = ctx.applied_name(&name);
    if let Some(amw) = ctx.applied.get(&ObjectRef::new(&applied_name))
        && amw.metadata.deletion_timestamp.is_none()
    {
        let mut status = work.status.clone().unwrap_or_default();
        let deleting = Condition::new(
            work_conditions::DELETING,
            Status::True,
            work_conditions::reasons::WORK_DELETING,
            "ManifestWork is being deleted",
            super::now(),
        )
        .with_observed_generation(work.metadata.generation.unwrap_or_default());
        status.conditions.set_condition(deleting);
        patch::patch_status(
            &ctx.works_api(),
            work,
            &work.status.clone().unwrap_or_default(),
            &status,
        )
        .await
        .map_err(|source| FinalizeError::PatchWorkStatus {
            name: name.clone(),
            source,
        })?;
        match ctx.applied_api().delete(&applied_name, &Default::default()).await {
            Ok(_) => {}
            Err(error) if super::is_status(&error, 404) => {}
            Err(source) => {
                return Err(FinalizeError::DeleteApplied {
                    name: applied_name,
                    source,
                });
            }
        }
    }
    // The store may lag behind the delete just sent: ask the spoke whether it is gone.
    match ctx.applied_api().get_opt(&applied_name).await {
        Ok(None) => {}
        Ok(Some(_)) => return Ok(Action::requeue(state.pending.failed(&name))),
        Err(source) => {
            return Err(FinalizeError::DeleteApplied {
                name: applied_name,
                source,
            });
        }
    }
    state.pending.forget(&name);
    patch::remove_finalizer(&ctx.works_api(), work, finalizers::MANIFEST_WORK_CLEANUP)
        .await
        .map_err(|source| FinalizeError::PatchWorkFinalizers { name, source })?;
    Ok(Action::await_change())
}

/// The state of the AppliedManifestWork finalize controller.
struct AppliedFinalize {
    ctx: Arc<Context>,
    /// Requeue while resources are still going: 50 ms doubling to 60 s.
    pending: Backoff,
    errors: Backoff,
}

/// Runs the AppliedManifestWork finalize controller (AppliedManifestWorks of this agent id).
pub(crate) async fn run_applied_finalize(
    ctx: Arc<Context>,
    applied: ReflectHandle<AppliedManifestWork>,
) -> Result<(), WorkAgentError> {
    let agent_id = ctx.agent_id.clone();
    let trigger = applied.filter(move |amw| {
        futures::future::ready(
            amw.spec.agent_id.as_deref() == Some(agent_id.as_str())
                && amw.metadata.deletion_timestamp.is_some(),
        )
    });
    let state = Arc::new(AppliedFinalize {
        ctx: ctx.clone(),
        pending: Backoff::new(Duration::from_millis(50), Duration::from_secs(60)),
        errors: Backoff::new(Duration::from_millis(50), Duration::from_secs(60)),
    });
    Controller::for_shared_stream(trigger, ctx.applied.clone())
        .with_config(Config::default().concurrency(ctx.options.workers))
        .run(
            |amw, state: Arc<AppliedFinalize>| async move {
                let result = finalize_applied(&amw, &state).await;
                state.ctx.metrics.reconciled(APPLIED_FINALIZE, result.is_ok());
                if result.is_ok() {
                    state.errors.forget(&amw.name_any());
                }
                result
            },
            |amw, error: &FinalizeError, state: Arc<AppliedFinalize>| {
                log_failure(
                    &amw.name_any(),
                    error,
                    "finalizing the AppliedManifestWork failed",
                );
                Action::requeue(state.errors.failed(&amw.name_any()))
            },
            state,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(WorkAgentError::ControllerStopped(APPLIED_FINALIZE))
}

#[tracing::instrument(skip_all, fields(applied = %amw.name_any()))]
async fn finalize_applied(
    amw: &AppliedManifestWork,
    state: &AppliedFinalize,
) -> Result<Action, FinalizeError> {
    let ctx = &state.ctx;
    let name = amw.name_any();
    if amw.metadata.deletion_timestamp.is_none()
        || !amw
            .finalizers()
            .iter()
            .any(|f| f == finalizers::APPLIED_MANIFEST_WORK_CLEANUP)
        || amw.spec.agent_id.as_deref() != Some(ctx.agent_id.as_str())
    {
        return Ok(Action::await_change());
    }
    let old_status = amw.status.clone().unwrap_or_default();
    let resources = old_status.applied_resources.clone().unwrap_or_default();
    let outcome = applied::delete_applied_resources(ctx, amw, &resources).await;
    let mut status = old_status.clone();
    status.applied_resources = if outcome.pending.is_empty() {
        None
    } else {
        Some(outcome.pending.clone())
    };
    let patched = patch::patch_status(&ctx.applied_api(), amw, &old_status, &status)
        .await
        .map_err(|source| FinalizeError::PatchApplied {
            name: name.clone(),
            source,
        })?;
    if let Some(source) = outcome.error {
        return Err(FinalizeError::DeleteResources { name, source });
    }
    if patched {
        // The update event wakes this AppliedManifestWork again.
        return Ok(Action::await_change());
    }
    if !outcome.pending.is_empty() {
        tracing::debug!(pending = outcome.pending.len(), "resources pending deletion");
        return Ok(Action::requeue(state.pending.failed(&name)));
    }
    state.pending.forget(&name);
    patch::remove_finalizer(&ctx.applied_api(), amw, finalizers::APPLIED_MANIFEST_WORK_CLEANUP)
        .await
        .map_err(|source| FinalizeError::PatchApplied { name, source })?;
    Ok(Action::await_change())
}
