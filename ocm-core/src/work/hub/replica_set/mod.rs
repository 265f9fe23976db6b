//! The ManifestWorkReplicaSet controller (ocm-core.md §3.11; hub gate `ManifestWorkReplicaSet`):
//! one ManifestWork template for every cluster that some Placements select.
//!
//! For each replica set it creates, in the namespace of each cluster the PlacementDecisions of
//! its referenced Placements name, a ManifestWork from `spec.manifestWorkTemplate` (named from
//! the replica set's name by `generateName`, labelled
//! `work.open-cluster-management.io/manifestworkreplicaset=<namespace>.<name>` and
//! `work.open-cluster-management.io/placementname=<placement>`), rolls template changes out by
//! each reference's strategy (All, Progressive, ProgressivePerGroup, with
//! [`ocm_api::rollout::plan`]), deletes the works of clusters and Placements no longer selected,
//! and sums the works up in its status.
//!
//! | module | what it holds |
//! |---|---|
//! | [`works`] | the works of a replica set, template comparison, the desired work, a work's rollout status |
//! | [`decisions`] | a Placement's decisions → its clusters by decision group |
//! | [`deploy`] | the rollout step: create, update and delete works, `PlacementVerified`, `PlacementRolledOut` |
//! | [`summary`] | the status: counts, `placementSummary`, `ManifestworkApplied` |
//! | [`finalize`] | the finalizer and `cascadeDeletionPolicy` |
//! | [`watches`] | which replica sets an event of a work, Placement or decision concerns |
//!
//! One kube-runtime `Controller` over ManifestWorkReplicaSets; ManifestWorks (with the owner
//! label), Placements and PlacementDecisions are watched into reflector stores and their events
//! bring the replica sets concerned back. The status is written only when it changed. A
//! rollout waiting for a soak time or a deadline is looked at again then; every replica set is
//! looked at again every [`ReplicaSetOptions::resync`] otherwise. Failures are retried with
//! per-replica-set backoff.

pub mod decisions;
pub mod deploy;
pub mod finalize;
pub mod summary;
pub mod watches;
pub mod works;

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Config as ControllerConfig};
use kube::runtime::reflector::{self, Store, reflector};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::names::labels::MANIFEST_WORK_REPLICA_SET;
use ocm_api::work::v1::ManifestWork;
use ocm_api::work::v1alpha1::ManifestWorkReplicaSet;
use serde::de::DeserializeOwned;
use serde_json::json;

use self::works::ReplicaSetWorks;
use crate::metrics::ControllerMetrics;
use crate::registration::hub::{Backoff, log_failure};

/// The controller's name in metrics and logs.
pub const CONTROLLER_NAME: &str = "manifestworkreplicaset-controller";

/// How the ManifestWorkReplicaSet controller runs.
#[derive(Debug, Clone)]
pub struct ReplicaSetOptions {
    /// How many replica sets are reconciled at once (upstream: 5).
    pub workers: u16,
    /// How often every replica set is reconciled without a change (upstream's informer
    /// resync: 30 minutes).
    pub resync: Duration,
    /// Only the replica sets (and Placements) of this namespace; all when `None`. Works are
    /// watched in every namespace either way.
    pub namespace: Option<String>,
}

impl Default for ReplicaSetOptions {
    fn default() -> Self {
        Self {
            workers: 5,
            resync: Duration::from_secs(30 * 60),
            namespace: None,
        }
    }
}

/// What failed in the ManifestWorkReplicaSet controller.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaSetError {
    /// The controller or one of its watches stopped.
    #[error("the ManifestWorkReplicaSet controller stopped")]
    ControllerStopped,
    /// A cache was dropped before it filled.
    #[error("the {0} cache is gone")]
    CacheGone(&'static str),
    /// A Placement's decisions could not be read.
    #[error("reading placement decisions: {0}")]
    ReadDecisions(#[from] decisions::GroupIndexError),
    /// A rollout strategy holds an invalid value.
    #[error("planning the rollout of {replica_set} over placement {placement}: {source}")]
    PlanRollout {
        /// The replica set.
        replica_set: String,
        /// The Placement reference.
        placement: String,
        /// What is invalid.
        source: Box<ocm_api::rollout::Error>,
    },
    /// Listing the works of a cluster namespace failed.
    #[error("listing the ManifestWorks of {namespace}: {source}")]
    ListWorks {
        /// The cluster namespace.
        namespace: String,
        /// The API error.
        source: kube::Error,
    },
    /// Creating a work failed.
    #[error("creating a ManifestWork in {namespace}: {source}")]
    CreateWork {
        /// The cluster namespace.
        namespace: String,
        /// The API error.
        source: kube::Error,
    },
    /// Updating a work failed.
    #[error("updating the ManifestWork {namespace}/{name}: {source}")]
    UpdateWork {
        /// The cluster namespace.
        namespace: String,
        /// The work.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Deleting a work failed.
    #[error("deleting the ManifestWork {namespace}/{name}: {source}")]
    DeleteWork {
        /// The cluster namespace.
        namespace: String,
        /// The work.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Adding or removing the finalizer failed.
    #[error("patching the finalizers of {replica_set}: {source}")]
    PatchFinalizers {
        /// The replica set.
        replica_set: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing the status failed.
    #[error("patching the status of {replica_set}: {source}")]
    PatchStatus {
        /// The replica set.
        replica_set: String,
        /// The API error.
        source: kube::Error,
    },
    /// Several of the above.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<ReplicaSetError>),
}

impl ReplicaSetError {
    /// One error for `errors` (the error itself when there is one).
    fn several(mut errors: Vec<ReplicaSetError>) -> Self {
        if errors.len() == 1
            && let Some(error) = errors.pop()
        {
            return error;
        }
        Self::Several(errors)
    }
}

/// What the reconciler reads.
pub(crate) struct Context {
    client: kube::Client,
    works: Store<ManifestWork>,
    placements: Store<Placement>,
    decisions: Store<PlacementDecision>,
    options: ReplicaSetOptions,
    backoff: Backoff,
    metrics: ControllerMetrics,
}

impl Context {
    /// Waits until every cache has been filled once.
    async fn ready(&self) -> Result<(), ReplicaSetError> {
        self.works
            .wait_until_ready()
            .await
            .map_err(|_| ReplicaSetError::CacheGone("ManifestWork"))?;
        self.placements
            .wait_until_ready()
            .await
            .map_err(|_| ReplicaSetError::CacheGone("Placement"))?;
        self.decisions
            .wait_until_ready()
            .await
            .map_err(|_| ReplicaSetError::CacheGone("PlacementDecision"))?;
        Ok(())
    }
}

/// `Api<K>` in `namespace`, or over all namespaces.
fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

/// A watch into a reflector store, as a stream of the watch events after they are stored.
fn watched<K>(
    api: Api<K>,
    config: watcher::Config,
) -> (Store<K>, impl Stream<Item = watcher::Event<K>> + Send + 'static)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store::<K>();
    let stream = reflector(writer, watcher(api, config))
        .default_backoff()
        .filter_map(|event| futures::future::ready(event.ok()));
    (store, stream)
}

/// Runs the ManifestWorkReplicaSet controller until it stops.
///
/// # Errors
/// [`ReplicaSetError::ControllerStopped`] when its streams end.
pub async fn run(
    client: kube::Client,
    options: ReplicaSetOptions,
    metrics: ControllerMetrics,
) -> Result<(), ReplicaSetError> {
    let namespace = options.namespace.clone();
    let sets: Api<ManifestWorkReplicaSet> = api(&client, namespace.as_deref());
    let controller = Controller::new(sets, watcher::Config::default())
        .with_config(ControllerConfig::default().concurrency(options.workers));
    let set_store = controller.store();
    let (works, work_events) = watched::<ManifestWork>(
        Api::all(client.clone()),
        watcher::Config::default().labels(MANIFEST_WORK_REPLICA_SET),
    );
    let (placements, placement_events) =
        watched::<Placement>(api(&client, namespace.as_deref()), watcher::Config::default());
    let (decisions, decision_events) =
        watched::<PlacementDecision>(api(&client, namespace.as_deref()), watcher::Config::default());

    let work_triggers = work_events
        .filter_map(|event| futures::future::ready(watches::touched(&event).and_then(watches::for_work)));
    let store = set_store.clone();
    let placement_triggers = placement_events
        .map(move |event| {
            watches::touched(&event)
                .map(|p| {
                    watches::for_placement(&store.state(), &p.namespace().unwrap_or_default(), &p.name_any())
                })
                .unwrap_or_default()
        })
        .flat_map(futures::stream::iter);
    let store = set_store.clone();
    let decision_triggers = decision_events
        .map(move |event| {
            watches::touched(&event)
                .map(|d| watches::for_decision(&store.state(), d))
                .unwrap_or_default()
        })
        .flat_map(futures::stream::iter);

    let ctx = Arc::new(Context {
        client,
        works,
        placements,
        decisions,
        options,
        backoff: Backoff::default(),
        metrics,
    });
    controller
        .reconcile_on(work_triggers)
        .reconcile_on(placement_triggers)
        .reconcile_on(decision_triggers)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(ReplicaSetError::ControllerStopped)
}

fn key(set: &ManifestWorkReplicaSet) -> String {
    format!("{}/{}", set.namespace().unwrap_or_default(), set.name_any())
}

fn error_policy(set: Arc<ManifestWorkReplicaSet>, error: &ReplicaSetError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled(CONTROLLER_NAME, false);
    log_failure(&key(&set), error, "reconciling a ManifestWorkReplicaSet failed");
    Action::requeue(ctx.backoff.failed(&key(&set)))
}

/// Writes `status` when it differs from the replica set's.
async fn write_status(
    ctx: &Context,
    set: &ManifestWorkReplicaSet,
    status: &ocm_api::work::v1alpha1::ManifestWorkReplicaSetStatus,
) -> Result<(), ReplicaSetError> {
    if set.status.as_ref() == Some(status) {
        return Ok(());
    }
    let patch = json!({
        "metadata": {"uid": set.uid(), "resourceVersion": set.resource_version()},
        "status": status,
    });
    Api::<ManifestWorkReplicaSet>::namespaced(ctx.client.clone(), &set.namespace().unwrap_or_default())
        .patch_status(&set.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| ReplicaSetError::PatchStatus {
            replica_set: key(set),
            source,
        })?;
    Ok(())
}

#[tracing::instrument(skip_all, fields(replica_set = %key(&set)))]
async fn reconcile(set: Arc<ManifestWorkReplicaSet>, ctx: Arc<Context>) -> Result<Action, ReplicaSetError> {
    ctx.ready().await?;
    let works = ReplicaSetWorks::collect(&works::owner_key(&set), ctx.works.state().iter());
    if set.metadata.deletion_timestamp.is_some() {
        finalize::finalize(&ctx, &set, &works).await?;
        ctx.metrics.reconciled(CONTROLLER_NAME, true);
        return Ok(Action::await_change());
    }
    if finalize::ensure_finalizer(&ctx, &set).await? {
        ctx.metrics.reconciled(CONTROLLER_NAME, true);
        return Ok(Action::await_change());
    }
    let now = Time(Timestamp::now());
    let mut status = set.status.clone().unwrap_or_default();
    let outcome = deploy::deploy(&ctx, &set, &works, &mut status, &now).await;
    if !outcome.stopped {
        let template = works::template(&set);
        summary::count_works(&mut status, |p| works.of_placement(p), &template, &now);
    }
    let mut errors = outcome.errors;
    if let Err(error) = write_status(&ctx, &set, &status).await {
        errors.push(error);
    }
    if !errors.is_empty() {
        return Err(ReplicaSetError::several(errors));
    }
    ctx.backoff.succeeded(&key(&set));
    ctx.metrics.reconciled(CONTROLLER_NAME, true);
    let resync = ctx.options.resync;
    Ok(Action::requeue(
        outcome
            .recheck_after
            .map_or(resync, |recheck| recheck.min(resync)),
    ))
}
