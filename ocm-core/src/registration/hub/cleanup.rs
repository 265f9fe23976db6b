//! ResourceCleanup (ocm-core.md §2.9): the objects in a deleted cluster's namespace are deleted
//! before the cluster goes away.
//!
//! Every ManagedCluster that is not being deleted gets the finalizer
//! `cluster.open-cluster-management.io/resource-cleanup`. Once it is deleting, each resource type
//! of [`CleanupOptions::resources`] is handled in order (by default ManagedClusterAddOns, then
//! ManifestWorks): while objects of a type remain, only those with the lowest
//! `open-cluster-management.io/cleanup-priority` are deleted, the condition `Deleting` says what
//! remains, and the cluster is looked at again after [`CleanupOptions::requeue`]; later types wait
//! until earlier ones are gone. When nothing remains, `Deleting` becomes `True` and the finalizer is
//! removed. When listing or deleting fails, `Deleting` is `False` `DeletingError` with the error
//! and a `ResourceCleanupFail` Warning event is published. A cluster removed while objects remain
//! (its finalizers cleared by hand) is cleaned up the same way, without conditions.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::events::EventRecorder;
use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{GroupVersionKind, PartialObjectMeta};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Resource, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::conditions::{ConditionList, Status};
use ocm_api::meta::Condition;
use ocm_api::names::annotations::CLEANUP_PRIORITY;
use ocm_api::names::conditions::cluster::managed_cluster::{DELETING, reasons};
use ocm_api::names::finalizers::MANAGED_CLUSTER_RESOURCE_CLEANUP;
use serde_json::json;
use tokio::task::JoinSet;

use super::guarded;
use super::informers::{Change, HubInformers, run_alone};
use super::own_writes::OwnWrites;
use crate::metrics::ControllerMetrics;

const CONTROLLER: &str = "resource-cleanup";
/// The message of `Deleting` once nothing remains.
pub const NO_RESOURCE_MESSAGE: &str = "No cleaned resource in cluster ns.";
/// The lowest (first deleted) cleanup priority, also the one of missing or invalid annotations.
pub const MIN_PRIORITY: u32 = 0;
/// The highest (last deleted) cleanup priority.
pub const MAX_PRIORITY: u32 = 100;

/// How the cleanup controller behaves.
#[derive(Debug, Clone)]
pub struct CleanupOptions {
    /// The resource types deleted from the cluster namespace, in order.
    pub resources: Vec<ApiResource>,
    /// How long to wait before looking again while objects remain (upstream: 5 s).
    pub requeue: Duration,
}

impl Default for CleanupOptions {
    fn default() -> Self {
        Self {
            resources: default_resources(),
            requeue: Duration::from_secs(5),
        }
    }
}

/// Upstream's default `--gc-resource-list`: ManagedClusterAddOns, then ManifestWorks.
#[must_use]
pub fn default_resources() -> Vec<ApiResource> {
    vec![
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(
                "addon.open-cluster-management.io",
                "v1beta1",
                "ManagedClusterAddOn",
            ),
            "managedclusteraddons",
        ),
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("work.open-cluster-management.io", "v1", "ManifestWork"),
            "manifestworks",
        ),
    ]
}

/// The cleanup priority of an object from its annotation value: 0 when missing, not an integer
/// or outside `0..=100`.
#[must_use]
pub fn cleanup_priority(annotation: Option<&str>) -> u32 {
    annotation
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|p| (i64::from(MIN_PRIORITY)..=i64::from(MAX_PRIORITY)).contains(p))
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or(MIN_PRIORITY)
}

/// The names of the objects to delete now: those of the lowest priority present. Each item is
/// `(name, annotation value)`.
#[must_use]
pub fn first_to_delete<'a>(items: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> Vec<String> {
    let mut by_priority: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (name, annotation) in items {
        by_priority
            .entry(cleanup_priority(annotation))
            .or_default()
            .push(name.to_string());
    }
    by_priority.into_values().next().unwrap_or_default()
}

/// The message of `Deleting` `ResourceRemaining`, with upstream's wording (typo included):
/// `resource` is the plural resource name, `remaining` the number of objects left and
/// `finalizer_pending` how many of them carry finalizers.
#[must_use]
pub fn remaining_message(resource: &str, remaining: usize, finalizer_pending: usize) -> String {
    format!(
        "The resource {resource} is remaning, the remaining count is {remaining}, the finalizer pending count is {finalizer_pending}"
    )
}

/// What failed while cleaning up a cluster.
#[derive(Debug, thiserror::Error)]
pub enum CleanupError {
    /// Reading the cluster failed.
    #[error("reading cluster {cluster}: {source}")]
    GetCluster {
        /// The cluster.
        cluster: String,
        /// The API error.
        source: kube::Error,
    },
    /// Adding or removing the finalizer failed.
    #[error("patching the finalizers of cluster {cluster}: {source}")]
    PatchFinalizers {
        /// The cluster.
        cluster: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing the `Deleting` condition failed.
    #[error("patching the status of cluster {cluster}: {source}")]
    PatchStatus {
        /// The cluster.
        cluster: String,
        /// The API error.
        source: kube::Error,
    },
    /// Listing objects in the cluster namespace failed.
    #[error("listing {resource} in namespace {namespace}: {source}")]
    List {
        /// The plural resource name.
        resource: String,
        /// The cluster namespace.
        namespace: String,
        /// The API error.
        source: kube::Error,
    },
    /// Deleting objects in the cluster namespace failed.
    #[error("failed to clean up {resource} in namespace {namespace}: {messages}")]
    Delete {
        /// The plural resource name.
        resource: String,
        /// The cluster namespace.
        namespace: String,
        /// The API errors, joined.
        messages: String,
    },
    /// The watch of ManagedClusters ended.
    #[error("the watch of ManagedClusters ended")]
    WatchEnded,
}

/// Where one pass over a cluster namespace left off.
#[derive(Debug, PartialEq, Eq)]
enum Pass {
    /// Objects remain: `Deleting` message for them.
    Remaining(String),
    /// Nothing of any listed type remains.
    Clean,
}

/// One pass: deletes the lowest-priority objects of the first listed type that has any.
async fn clean_namespace(
    client: &kube::Client,
    resources: &[ApiResource],
    namespace: &str,
) -> Result<Pass, CleanupError> {
    for ar in resources {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, ar);
        let list = match api.list_metadata(&ListParams::default()).await {
            Ok(list) => list,
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(source) => {
                return Err(CleanupError::List {
                    resource: ar.plural.clone(),
                    namespace: namespace.to_string(),
                    source,
                });
            }
        };
        if list.items.is_empty() {
            continue;
        }
        let items: &[PartialObjectMeta<DynamicObject>] = &list.items;
        let pending = items.iter().filter(|o| !o.finalizers().is_empty()).count();
        let message = remaining_message(&ar.plural, items.len(), pending);
        let names = first_to_delete(items.iter().map(|o| {
            (
                o.metadata.name.as_deref().unwrap_or_default(),
                o.annotations().get(CLEANUP_PRIORITY).map(String::as_str),
            )
        }));
        let mut failures = Vec::new();
        for name in &names {
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => failures.push(format!("{name}: {error}")),
            }
        }
        if !failures.is_empty() {
            return Err(CleanupError::Delete {
                resource: ar.plural.clone(),
                namespace: namespace.to_string(),
                messages: failures.join("; "),
            });
        }
        return Ok(Pass::Remaining(message));
    }
    Ok(Pass::Clean)
}

struct Context {
    client: kube::Client,
    options: CleanupOptions,
    recorder: EventRecorder,
    metrics: ControllerMetrics,
    /// Every ManagedCluster (the shared informer's store).
    clusters: Store<ManagedCluster>,
    /// The hub controllers' writes of ManagedClusters the shared store has yet to show.
    own_writes: Arc<OwnWrites>,
}

/// Runs the cleanup controller until its watch stops.
///
/// # Errors
/// [`CleanupError::WatchEnded`] when the watch of ManagedClusters ends.
pub async fn run(
    client: kube::Client,
    options: CleanupOptions,
    metrics: ControllerMetrics,
) -> Result<(), CleanupError> {
    let informers = HubInformers::new(&client);
    let controller = controller(client, options, metrics, &informers);
    run_alone(informers, controller, |_| CleanupError::WatchEnded).await
}

/// The cleanup controller over the shared cluster informer: deleting clusters are reconciled,
/// clusters that disappear are cleaned up by [`watch_removed`].
pub(crate) fn controller(
    client: kube::Client,
    options: CleanupOptions,
    metrics: ControllerMetrics,
    informers: &HubInformers,
) -> impl Future<Output = Result<(), CleanupError>> + Send + 'static {
    let ctx = Arc::new(Context {
        recorder: EventRecorder::new(
            client.clone(),
            Reporter {
                controller: "registration-controller".to_string(),
                instance: None,
            },
        ),
        client,
        options,
        metrics,
        clusters: informers.clusters.store(),
        own_writes: informers.clusters.own_writes(),
    });
    let controller = Controller::for_shared_stream(informers.clusters.applied(), informers.clusters.store())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));
    let gone = watch_removed(informers.clusters.changes(), ctx);
    async move {
        tokio::select! {
            () = controller => Err(CleanupError::WatchEnded),
            result = gone => result,
        }
    }
}

/// Cleans up the namespaces of clusters that disappear while objects remain there.
async fn watch_removed(
    changes: impl Stream<Item = Change<ManagedCluster>>,
    ctx: Arc<Context>,
) -> Result<(), CleanupError> {
    let mut tasks = JoinSet::new();
    let mut changes = std::pin::pin!(changes);
    while let Some(change) = changes.next().await {
        if let Change::Deleted(cluster) = change {
            let name = cluster.name_any();
            let ctx = ctx.clone();
            tasks.spawn(async move { clean_removed(&name, &ctx).await });
        }
        while tasks.try_join_next().is_some() {}
    }
    Err(CleanupError::WatchEnded)
}

/// Cleans the namespace of a removed cluster until nothing remains (or the cluster comes back,
/// when the controller takes over).
#[tracing::instrument(skip(ctx))]
async fn clean_removed(name: &str, ctx: &Context) {
    let key = ObjectRef::<ManagedCluster>::new(name);
    loop {
        // The store took the deletion before it was reported: a copy in it is a new cluster.
        if ctx.clusters.get(&key).is_some() {
            return;
        }
        match clean_namespace(&ctx.client, &ctx.options.resources, name).await {
            Ok(Pass::Clean) => {
                ctx.metrics.reconciled(CONTROLLER, true);
                return;
            }
            Ok(Pass::Remaining(_)) => ctx.metrics.reconciled(CONTROLLER, true),
            Err(error) => {
                ctx.metrics.reconciled(CONTROLLER, false);
                tracing::warn!(%error, "cleaning the namespace of a removed cluster failed");
            }
        }
        tokio::time::sleep(ctx.options.requeue).await;
    }
}

fn error_policy(cluster: Arc<ManagedCluster>, error: &CleanupError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled(CONTROLLER, false);
    super::log_failure(&cluster.name_any(), error, "resource cleanup failed");
    Action::requeue(ctx.options.requeue)
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

async fn publish(ctx: &Context, cluster: &ManagedCluster, warning: bool, reason: &str, note: String) {
    let event = Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.to_string(),
        note: Some(note),
        action: reason.to_string(),
        secondary: None,
    };
    if let Err(error) = ctx.recorder.publish(&event, &cluster.object_ref(&())).await {
        tracing::debug!(%error, "publishing an event failed");
    }
}

/// Writes `Deleting` when it changed.
async fn set_deleting(
    ctx: &Context,
    cluster: &ManagedCluster,
    condition: Condition,
) -> Result<(), CleanupError> {
    let mut conditions = cluster.status.as_ref().and_then(|s| s.conditions.clone());
    if !conditions.set_condition(condition) {
        return Ok(());
    }
    let name = cluster.name_any();
    ctx.own_writes
        .noting(Api::<ManagedCluster>::all(ctx.client.clone()).patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"conditions": conditions}})),
        ))
        .await
        .map_err(|source| CleanupError::PatchStatus {
            cluster: name,
            source,
        })?;
    Ok(())
}

/// Adds the `resource-cleanup` finalizer with a patch guarded by the cached finalizers (not the
/// whole object's version: see [`super::guarded`]); a cluster gone meanwhile is left alone, and
/// stale cached finalizers wait for the newer copy the watch brings.
async fn add_finalizer(ctx: &Context, cluster: &ManagedCluster) -> Result<(), CleanupError> {
    let name = cluster.name_any();
    let operations = guarded::add_finalizer(&cluster.metadata, MANAGED_CLUSTER_RESOURCE_CLEANUP);
    let result = match guarded::json_patch(operations) {
        Ok(patch) => {
            ctx.own_writes
                .noting(Api::<ManagedCluster>::all(ctx.client.clone()).patch(
                    &name,
                    &PatchParams::default(),
                    &patch,
                ))
                .await
        }
        Err(error) => Err(error),
    };
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) if guarded::is_stale(&error) => {
            tracing::debug!(cluster = %name, "cluster finalizers changed since they were cached");
            Ok(())
        }
        Err(source) => Err(CleanupError::PatchFinalizers {
            cluster: name,
            source,
        }),
    }
}

async fn patch_finalizers(
    ctx: &Context,
    cluster: &ManagedCluster,
    finalizers: Vec<String>,
) -> Result<(), CleanupError> {
    let name = cluster.name_any();
    let patch = json!({"metadata": {"uid": cluster.uid(), "resourceVersion": cluster.resource_version(),
        "finalizers": finalizers}});
    match ctx
        .own_writes
        .noting(Api::<ManagedCluster>::all(ctx.client.clone()).patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        ))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(CleanupError::PatchFinalizers {
            cluster: name,
            source,
        }),
    }
}

#[tracing::instrument(skip_all, fields(cluster = %cluster.name_any()))]
async fn reconcile(cluster: Arc<ManagedCluster>, ctx: Arc<Context>) -> Result<Action, CleanupError> {
    if ctx.own_writes.behind(cluster.as_ref()) {
        return Ok(Action::await_change());
    }
    let has_finalizer = cluster
        .finalizers()
        .iter()
        .any(|f| f == MANAGED_CLUSTER_RESOURCE_CLEANUP);
    if cluster.metadata.deletion_timestamp.is_none() {
        if !has_finalizer {
            add_finalizer(&ctx, &cluster).await?;
        }
        ctx.metrics.reconciled(CONTROLLER, true);
        return Ok(Action::await_change());
    }
    let name = cluster.name_any();
    match clean_namespace(&ctx.client, &ctx.options.resources, &name).await {
        Ok(Pass::Remaining(message)) => {
            let condition = Condition::new(
                DELETING,
                Status::False,
                reasons::DELETING_RESOURCE_REMAINING,
                &message,
                now(),
            );
            set_deleting(&ctx, &cluster, condition).await?;
            ctx.metrics.reconciled(CONTROLLER, true);
            Ok(Action::requeue(ctx.options.requeue))
        }
        Ok(Pass::Clean) => {
            let condition = Condition::new(
                DELETING,
                Status::True,
                reasons::DELETING_NO_RESOURCE,
                NO_RESOURCE_MESSAGE,
                now(),
            );
            set_deleting(&ctx, &cluster, condition).await?;
            if has_finalizer {
                publish(
                    &ctx,
                    &cluster,
                    false,
                    "ResourceCleanupCompleted",
                    format!("the resources in cluster {name} are cleaned up"),
                )
                .await;
                let finalizers = cluster
                    .finalizers()
                    .iter()
                    .filter(|f| *f != MANAGED_CLUSTER_RESOURCE_CLEANUP)
                    .cloned()
                    .collect();
                patch_finalizers(&ctx, &cluster, finalizers).await?;
            }
            ctx.metrics.reconciled(CONTROLLER, true);
            Ok(Action::await_change())
        }
        Err(error) => {
            if matches!(error, CleanupError::Delete { .. } | CleanupError::List { .. }) {
                let message = error.to_string();
                let condition =
                    Condition::new(DELETING, Status::False, reasons::DELETING_ERROR, &message, now());
                set_deleting(&ctx, &cluster, condition).await?;
                publish(
                    &ctx,
                    &cluster,
                    true,
                    "ResourceCleanupFail",
                    format!("failed to clean up resources in cluster {name}: {message}"),
                )
                .await;
            }
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_defaults_to_zero_for_missing_invalid_or_out_of_range() {
        assert_eq!(cleanup_priority(None), 0);
        assert_eq!(cleanup_priority(Some("abc")), 0);
        assert_eq!(cleanup_priority(Some("-1")), 0);
        assert_eq!(cleanup_priority(Some("101")), 0);
        assert_eq!(cleanup_priority(Some("100")), 100);
        assert_eq!(cleanup_priority(Some("20")), 20);
    }

    #[test]
    fn only_the_lowest_priority_present_is_deleted() {
        let items = [
            ("w1", None),
            ("w2", Some("100")),
            ("w3", Some("20")),
            ("w4", Some("x")),
        ];
        assert_eq!(first_to_delete(items), vec!["w1".to_string(), "w4".to_string()]);
        let items = [("w2", Some("100")), ("w3", Some("20"))];
        assert_eq!(first_to_delete(items), vec!["w3".to_string()]);
        assert!(first_to_delete([]).is_empty());
    }

    #[test]
    fn remaining_message_keeps_upstream_wording() {
        assert_eq!(
            remaining_message("manifestworks", 3, 1),
            "The resource manifestworks is remaning, the remaining count is 3, the finalizer pending count is 1"
        );
    }
}
