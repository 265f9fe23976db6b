//! The ManifestWork controller (ocm-core.md §3.3): for each work of the cluster namespace with
//! the agent's finalizer, not being deleted and not `Complete`:
//!
//! 1. ensure its AppliedManifestWork (`super::applied`);
//! 2. parse every manifest and map its kind by discovery ([`manifests`]);
//! 3. apply them in upstream's kind order with the strategy of their `manifestConfigs`
//!    ([`config`], [`strategy`]), owner reference to the AppliedManifestWork unless the
//!    `deleteOption` orphans the resource; the pass is repeated for entries that hit a 409;
//! 4. write each manifest's `Applied` condition, merged into `resourceStatus.manifests`, and the
//!    work's `Applied` ([`status`]);
//! 5. record the applied resources in the AppliedManifestWork and delete those the work no
//!    longer holds;
//! 6. patch the work status (retried from a fresh read on 409) and the AppliedManifestWork
//!    status, and requeue after 4–6 minutes.
//!
//! A manifest that cannot be applied gets its own `Applied` False with the API server's
//! message while the others are applied; the reconcile then fails (after writing the status)
//! so the work is retried with backoff, as upstream's aggregated error does. Server-side apply
//! conflicts are reported but not retried. Reconciles are triggered by a new finalizer, a spec
//! or label change (which also resets the backoff) and by the requeues — not by status writes,
//! so this controller and the status controller do not wake each other.

mod config;
mod ignore_fields;
mod manifests;
mod status;
mod strategy;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::Controller;
use kube::runtime::controller::{Action, Config};
use kube::runtime::reflector::ReflectHandle;
use ocm_api::conditions::ConditionList;
use ocm_api::names::conditions::work::{manifest, manifest_work};
use ocm_api::names::finalizers;
use ocm_api::work::v1::{
    AppliedManifestResourceMeta, AppliedManifestWork, ManifestCondition, ManifestResourceMeta,
    ManifestResourceStatus, ManifestWork, ManifestWorkStatus, UpdateStrategyType,
};

use self::manifests::{ManifestError, Parsed};
use self::status::Outcome;
use self::strategy::{ResourceCache, StrategyError};
use super::executor::{ExecutorError, ExecutorTarget, NOT_ALLOWED_REQUEUE};
use super::{Backoff, Context, WorkAgentError, applied, is_status, log_failure, patch};

const CONTROLLER: &str = "manifestwork";

/// How many passes over the manifests a reconcile makes while some hit 409 Conflict (client-go
/// `retry.DefaultBackoff` has 4 steps).
const CONFLICT_PASSES: usize = 4;

/// What failed while reconciling a ManifestWork.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Ensuring the AppliedManifestWork failed.
    #[error(transparent)]
    EnsureApplied(#[from] applied::EnsureAppliedError),
    /// Some manifests could not be applied (their conditions say why).
    #[error("applying ManifestWork {work}: {message}")]
    Manifests {
        /// The work.
        work: String,
        /// The errors, joined.
        message: String,
    },
    /// Reading an applied resource (for its UID) failed.
    #[error("failed to get resource with key {namespace}/{name}: {message}")]
    ReadResource {
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// Deleting resources the work no longer holds failed.
    #[error(transparent)]
    DeleteResources(#[from] applied::DeleteResourcesError),
    /// Patching the work status failed.
    #[error("patching the status of ManifestWork {work}: {source}")]
    PatchWorkStatus {
        /// The work.
        work: String,
        /// The API error.
        source: kube::Error,
    },
    /// Patching the AppliedManifestWork status failed.
    #[error("patching the status of AppliedManifestWork {name}: {source}")]
    PatchAppliedStatus {
        /// The AppliedManifestWork.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

/// Why one manifest was not applied.
#[derive(Debug, thiserror::Error)]
enum ManifestFailure {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// The work's executor may not apply the manifest, or checking it failed (§3.9).
    #[error(transparent)]
    Executor(#[from] ExecutorError),
}

impl ManifestFailure {
    fn is_conflict(&self) -> bool {
        matches!(self, Self::Strategy(error) if error.is_conflict())
    }

    fn outcome(&self) -> Outcome {
        match self {
            Self::Strategy(StrategyError::IgnoreFields(error)) => {
                Outcome::IgnoreFieldsFailed(error.to_string())
            }
            other => Outcome::Failed(other.to_string()),
        }
    }

    /// Whether the work is retried with backoff for it (server-side apply conflicts are not:
    /// a retry cannot resolve them).
    fn retried(&self) -> bool {
        !matches!(self, Self::Strategy(StrategyError::ServerSideApplyConflict(_))) && !self.not_allowed()
    }

    /// Whether the executor may not apply the manifest: tried again after
    /// [`NOT_ALLOWED_REQUEUE`] instead of with backoff.
    fn not_allowed(&self) -> bool {
        matches!(self, Self::Executor(error) if error.is_not_allowed())
    }
}

/// How applying one manifest ended.
#[derive(Debug)]
struct ApplyResult {
    meta: ManifestResourceMeta,
    /// The object written or read (ReadOnly: the manifest), or why not.
    result: Result<DynamicObject, ManifestFailure>,
}

/// The controller's state.
pub(crate) struct State {
    ctx: Arc<Context>,
    cache: ResourceCache,
    /// Reconcile failures: 5 ms doubling to 1000 s, reset by a spec or label change.
    errors: Arc<Backoff>,
    /// Requeue while resources the work dropped are still being deleted: 5 ms to 1000 s.
    pending: Backoff,
}

/// What of a work triggers a reconcile: its UID, spec, labels and whether it has the finalizer.
fn trigger_key(work: &ManifestWork) -> String {
    let has_finalizer = work
        .finalizers()
        .iter()
        .any(|f| f == finalizers::MANIFEST_WORK_CLEANUP);
    serde_json::json!([work.metadata.uid, work.spec, work.metadata.labels, has_finalizer]).to_string()
}

/// Runs the ManifestWork controller.
pub(crate) async fn run(ctx: Arc<Context>, works: ReflectHandle<ManifestWork>) -> Result<(), WorkAgentError> {
    let errors = Arc::new(Backoff::new(Duration::from_millis(5), Duration::from_secs(1000)));
    let seen: Arc<Mutex<HashMap<String, String>>> = Arc::default();
    let trigger = works.filter({
        let errors = errors.clone();
        move |work| {
            let key = trigger_key(work);
            let name = work.name_any();
            let mut seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let changed = seen.get(&name) != Some(&key);
            if changed {
                seen.insert(name.clone(), key);
                errors.forget(&name);
            }
            let has_finalizer = work
                .finalizers()
                .iter()
                .any(|f| f == finalizers::MANIFEST_WORK_CLEANUP);
            futures::future::ready(changed && has_finalizer)
        }
    });
    let state = Arc::new(State {
        ctx: ctx.clone(),
        cache: ResourceCache::default(),
        errors,
        pending: Backoff::new(Duration::from_millis(5), Duration::from_secs(1000)),
    });
    ctx.applied
        .wait_until_ready()
        .await
        .map_err(|_| WorkAgentError::WatchStopped("AppliedManifestWork"))?;
    Controller::for_shared_stream(trigger, ctx.works.clone())
        .with_config(Config::default().concurrency(ctx.options.workers))
        .run(
            |work, state: Arc<State>| async move {
                let result = reconcile(&work, &state).await;
                state.ctx.metrics.reconciled(CONTROLLER, result.is_ok());
                if result.is_ok() {
                    state.errors.forget(&work.name_any());
                }
                result
            },
            |work, error: &ApplyError, state: Arc<State>| {
                log_failure(&work.name_any(), error, "applying the ManifestWork failed");
                Action::requeue(state.errors.failed(&work.name_any()))
            },
            state,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(WorkAgentError::ControllerStopped(CONTROLLER))
}

#[tracing::instrument(skip_all, fields(work = %work.name_any(), generation = work.metadata.generation))]
async fn reconcile(work: &ManifestWork, state: &State) -> Result<Action, ApplyError> {
    let ctx = &state.ctx;
    let name = work.name_any();
    if work.metadata.deletion_timestamp.is_some()
        || !work
            .finalizers()
            .iter()
            .any(|f| f == finalizers::MANIFEST_WORK_CLEANUP)
        || work
            .status
            .as_ref()
            .is_some_and(|s| s.conditions.is_condition_true(manifest_work::COMPLETE))
    {
        return Ok(Action::await_change());
    }
    let amw = applied::ensure(ctx, work).await?;
    let old_status = work.status.clone().unwrap_or_default();
    let generation = work.metadata.generation.unwrap_or_default();

    let results = apply_all(work, &amw, &old_status, state).await;

    let now = super::now();
    let manifest_conditions: Vec<ManifestCondition> = results
        .iter()
        .map(|r| ManifestCondition {
            conditions: vec![status::applied_condition(
                &r.result
                    .as_ref()
                    .err()
                    .map_or(Outcome::Applied, ManifestFailure::outcome),
                generation,
                now.clone(),
            )],
            resource_meta: r.meta.clone(),
            status_feedback: None,
        })
        .collect();
    let failures: Vec<String> = results
        .iter()
        .filter_map(|r| r.result.as_ref().err())
        .filter(|e| e.retried())
        .map(ToString::to_string)
        .collect();

    let mut new_status = compute_status(&old_status, manifest_conditions.clone(), generation, &now);

    // Record what the work applied, and delete what it no longer holds.
    let mut requeue = super::jitter(ctx.options.apply_resync, ctx.options.apply_resync_jitter);
    if results
        .iter()
        .any(|r| r.result.as_ref().err().is_some_and(ManifestFailure::not_allowed))
    {
        requeue = requeue.min(NOT_ALLOWED_REQUEUE);
    }
    let mut amw_error = None;
    let old_applied = amw.status.clone().unwrap_or_default();
    let mut new_applied = old_applied.clone();
    if amw.metadata.deletion_timestamp.is_none()
        && new_status
            .conditions
            .find_condition(manifest_work::APPLIED)
            .is_some()
    {
        match record_applied(ctx, &amw, &results).await {
            Ok((resources, pending)) => {
                if pending {
                    requeue = requeue.min(state.pending.failed(&name));
                } else {
                    state.pending.forget(&name);
                }
                new_applied.applied_resources = Some(resources).filter(|r| !r.is_empty());
            }
            Err(error) => amw_error = Some(error),
        }
    }

    patch_work_status(
        ctx,
        work,
        &old_status,
        &mut new_status,
        manifest_conditions,
        generation,
    )
    .await?;
    if new_applied != old_applied {
        patch::patch_status(&ctx.applied_api(), &amw, &old_applied, &new_applied)
            .await
            .map_err(|source| ApplyError::PatchAppliedStatus {
                name: amw.name_any(),
                source,
            })?;
    }
    if !failures.is_empty() {
        return Err(ApplyError::Manifests {
            work: name,
            message: failures.join("; "),
        });
    }
    if let Some(error) = amw_error {
        return Err(error);
    }
    tracing::debug!(?requeue, "applied");
    Ok(Action::requeue(requeue))
}

/// The status with the new manifest conditions merged in and the work's Applied set.
fn compute_status(
    old: &ManifestWorkStatus,
    manifest_conditions: Vec<ManifestCondition>,
    generation: i64,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> ManifestWorkStatus {
    let mut new = old.clone();
    let old_manifests = old
        .resource_status
        .as_ref()
        .and_then(|r| r.manifests.as_deref())
        .unwrap_or_default();
    let merged = status::merge_manifest_conditions(old_manifests, manifest_conditions.clone(), now);
    new.resource_status = Some(ManifestResourceStatus {
        manifests: Some(merged).filter(|m| !m.is_empty()),
    });
    status::set_work_applied(&mut new, &manifest_conditions, generation, now.clone());
    new
}

/// Patches the work status; on 409 reads the work again and merges the same manifest
/// conditions into its fresh status (so the other writer's conditions survive).
async fn patch_work_status(
    ctx: &Context,
    work: &ManifestWork,
    old_status: &ManifestWorkStatus,
    new_status: &mut ManifestWorkStatus,
    manifest_conditions: Vec<ManifestCondition>,
    generation: i64,
) -> Result<(), ApplyError> {
    let api = ctx.works_api();
    let name = work.name_any();
    let mut current = work.clone();
    let mut old = old_status.clone();
    for attempt in 0..5 {
        match patch::patch_status(&api, &current, &old, &*new_status).await {
            Ok(_) => return Ok(()),
            Err(error) if is_status(&error, 409) && attempt < 4 => {
                tracing::debug!("work status conflict, merging into a fresh read");
                current = api
                    .get(&name)
                    .await
                    .map_err(|source| ApplyError::PatchWorkStatus {
                        work: name.clone(),
                        source,
                    })?;
                if current.metadata.generation.unwrap_or_default() != generation {
                    // The spec changed meanwhile: the next reconcile applies it.
                    return Ok(());
                }
                old = current.status.clone().unwrap_or_default();
                *new_status = compute_status(&old, manifest_conditions.clone(), generation, &super::now());
            }
            Err(source) => return Err(ApplyError::PatchWorkStatus { work: name, source }),
        }
    }
    Ok(())
}

/// The Api of a parsed manifest's resource.
fn resource_api(ctx: &Context, parsed: &Parsed, mapping: &super::mapper::Mapping) -> Api<DynamicObject> {
    let api_resource = mapping.api_resource();
    match parsed.meta.namespace.as_deref().filter(|_| mapping.namespaced) {
        Some(namespace) => Api::namespaced_with(ctx.spoke.clone(), namespace, &api_resource),
        None => Api::all_with(ctx.spoke.clone(), &api_resource),
    }
}

/// Applies every manifest in kind order; entries that hit 409 are applied again (up to
/// [`CONFLICT_PASSES`] passes). The results are in spec order.
async fn apply_all(
    work: &ManifestWork,
    amw: &AppliedManifestWork,
    old_status: &ManifestWorkStatus,
    state: &State,
) -> Vec<ApplyResult> {
    let ctx = &state.ctx;
    let manifests = work
        .spec
        .workload
        .as_ref()
        .and_then(|w| w.manifests.as_deref())
        .unwrap_or_default();
    let parsed = manifests::parse(manifests, &ctx.mapper).await;
    let owner = applied::owner_ref(amw);
    let mut results: Vec<Option<ApplyResult>> = (0..manifests.len()).map(|_| None).collect();
    for pass in 0..CONFLICT_PASSES {
        for item in &parsed {
            let needs = match &results[item.index] {
                None => true,
                Some(result) => result.result.as_ref().is_err_and(ManifestFailure::is_conflict),
            };
            if needs {
                results[item.index] = Some(apply_one(work, item, &owner, old_status, state).await);
            }
        }
        let conflicts = results
            .iter()
            .flatten()
            .any(|r| r.result.as_ref().is_err_and(ManifestFailure::is_conflict));
        if !conflicts {
            break;
        }
        tokio::time::sleep(Duration::from_millis(
            10 * 5u64.pow(u32::try_from(pass).unwrap_or(0)),
        ))
        .await;
    }
    results.into_iter().flatten().collect()
}

/// The owner reference for a resource: the AppliedManifestWork's, or (not owned) the same
/// reference with UID `<uid>-`, which removes an existing one and adds none.
fn required_owner(owned: bool, owner: &OwnerReference) -> OwnerReference {
    if owned {
        owner.clone()
    } else {
        OwnerReference {
            uid: format!("{}-", owner.uid),
            ..owner.clone()
        }
    }
}

#[tracing::instrument(skip_all, fields(ordinal = item.meta.ordinal, kind = item.meta.kind.as_deref(), name = item.meta.name.as_deref()))]
async fn apply_one(
    work: &ManifestWork,
    item: &Parsed,
    owner: &OwnerReference,
    old_status: &ManifestWorkStatus,
    state: &State,
) -> ApplyResult {
    let meta = item.meta.clone();
    let mapping = match &item.mapping {
        Ok(mapping) => mapping,
        Err(error) => {
            return ApplyResult {
                meta,
                result: Err(ManifestFailure::Manifest(error.clone())),
            };
        }
    };
    // A manifest whose Complete condition is True is not applied again.
    let old_manifests = old_status
        .resource_status
        .as_ref()
        .and_then(|r| r.manifests.as_deref())
        .unwrap_or_default();
    if status::find_manifest(&meta, old_manifests)
        .is_some_and(|m| ocm_api::conditions::is_true(&m.conditions, manifest::COMPLETE))
    {
        return ApplyResult {
            result: serde_json::from_value(serde_json::Value::Object(item.object.clone()))
                .map_err(|e| ManifestFailure::Strategy(StrategyError::Encode(e))),
            meta,
        };
    }
    let owned = config::owned_by_work(
        &mapping.group,
        &mapping.resource,
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
        work.spec.delete_option.as_ref(),
    );
    // The executor's permissions (§3.9), before anything is written.
    let manifest_object = serde_json::Value::Object(item.object.clone());
    let target = ExecutorTarget {
        group: &mapping.group,
        version: &mapping.version,
        resource: &mapping.resource,
        namespace: meta.namespace.as_deref().unwrap_or_default(),
        name: meta.name.as_deref().unwrap_or_default(),
        object: &manifest_object,
    };
    if let Err(error) = state
        .ctx
        .executor
        .check(work.spec.executor.as_ref(), &target, owned)
        .await
    {
        return ApplyResult {
            meta,
            result: Err(ManifestFailure::Executor(error)),
        };
    }
    let owner = required_owner(owned, owner);
    let configs = work.spec.manifest_configs.as_deref().unwrap_or_default();
    let option = super::manifest_config::find_manifest_config(&meta, configs);
    let api = resource_api(&state.ctx, item, mapping);
    let name = meta.name.clone().unwrap_or_default();
    let object = item.object.clone();
    let result = match strategy::strategy_of(option.as_ref()) {
        UpdateStrategyType::Update => strategy::update(&api, &name, object, &owner, &state.cache).await,
        UpdateStrategyType::CreateOnly => strategy::create_only(&api, &name, object, &owner).await,
        UpdateStrategyType::ServerSideApply => {
            let option = option.unwrap_or_default();
            strategy::server_side_apply(&api, &name, object, &owner, &option).await
        }
        UpdateStrategyType::ReadOnly => {
            serde_json::from_value(serde_json::Value::Object(object)).map_err(StrategyError::Encode)
        }
    };
    if let Err(error) = &result {
        tracing::debug!(%error, "applying the manifest failed");
    }
    ApplyResult {
        meta,
        result: result.map_err(ManifestFailure::from),
    }
}

/// Step 8: the resources the work applied now (with their UIDs), after deleting those it no
/// longer holds; tells whether deletions are still pending.
async fn record_applied(
    ctx: &Context,
    amw: &AppliedManifestWork,
    results: &[ApplyResult],
) -> Result<(Vec<AppliedManifestResourceMeta>, bool), ApplyError> {
    let mut current = Vec::new();
    for result in results {
        let meta = &result.meta;
        let uid = match result.result.as_ref().ok().and_then(|o| o.metadata.uid.clone()) {
            Some(uid) => uid,
            None => match live_uid(ctx, meta).await? {
                Some(uid) => uid,
                None => continue,
            },
        };
        current.push(AppliedManifestResourceMeta {
            group: meta.group.clone(),
            version: meta.version.clone().unwrap_or_default(),
            resource: meta.resource.clone().unwrap_or_default(),
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
            uid: Some(uid),
        });
    }
    let recorded = amw
        .status
        .as_ref()
        .and_then(|s| s.applied_resources.as_deref())
        .unwrap_or_default();
    let dropped = applied::untracked(recorded, &current);
    let deletion = applied::delete_applied_resources(ctx, amw, &dropped).await;
    if let Some(error) = deletion.error {
        return Err(ApplyError::DeleteResources(error));
    }
    let pending = !deletion.pending.is_empty();
    current.extend(deletion.pending);
    applied::sort(&mut current);
    Ok((current, pending))
}

/// The UID of a manifest's live object; `None` when it does not exist.
async fn live_uid(ctx: &Context, meta: &ManifestResourceMeta) -> Result<Option<String>, ApplyError> {
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let (Some(resource), Some(version)) = (meta.resource.as_deref(), meta.version.as_deref()) else {
        return Err(ApplyError::ReadResource {
            namespace,
            name,
            message: "not found".to_string(),
        });
    };
    if name.is_empty() {
        return Err(ApplyError::ReadResource {
            namespace,
            name,
            message: "not found".to_string(),
        });
    }
    let recorded = AppliedManifestResourceMeta {
        group: meta.group.clone(),
        version: version.to_string(),
        resource: resource.to_string(),
        namespace: meta.namespace.clone(),
        name: name.clone(),
        uid: None,
    };
    match applied::resource_api(ctx, &recorded).get_opt(&name).await {
        Ok(live) => Ok(live.and_then(|o| o.metadata.uid)),
        Err(error) => Err(ApplyError::ReadResource {
            namespace,
            name,
            message: error.to_string(),
        }),
    }
}
