//! ManagedClusterController (ocm-core.md §2.2): accepting, denying and cleaning up clusters.
//! (The shared ClusterRoles and force-removed clusters are [`super::shared_roles`]'s.)
//!
//! - accepted (`spec.hubAcceptsClient` true): the cluster namespace, the finalizer
//!   `api-resource-cleanup`, the per-cluster RBAC of [`super::rbac`], condition
//!   `HubAcceptedManagedCluster` True (False reason `Error` with the errors when a step failed);
//! - denied after having been accepted (condition True, or the finalizer in place when the
//!   acceptance's condition write lost to the denial): the ClusterRole shrinks to reading the own cluster, the
//!   ClusterRoleBinding stays, both RoleBindings go (the work one keeps its finalizer until no
//!   ManifestWork remains), condition False `HubClusterAdminDenied`;
//! - deleting: all cluster RBAC goes, and once no ManifestWork remains the cluster's finalizer
//!   is released. The namespace is never deleted.

use std::sync::Arc;

use crate::events::EventRecorder;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::conditions::{self, Status};
use ocm_api::meta::Condition;
use ocm_api::names::conditions::cluster::managed_cluster as cluster_conditions;
use ocm_api::names::conditions::cluster::managed_cluster::reasons;
use ocm_api::names::{annotations, labels, objects};
use ocm_api::work::v1::ManifestWork;
use serde_json::json;

use super::cluster_cache::{ClusterCache, cached, up_to_date};
use super::guarded;
use super::informers::{HubInformers, run_alone};
use super::own_writes::OwnWrites;
use super::{Backoff, HubError, HubOptions, apply, is_not_found, publish, rbac, recorder};
use crate::metrics::ControllerMetrics;

const CONTROLLER: &str = "managedcluster";

/// What failed while reconciling a ManagedCluster.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// Applying the namespace or an RBAC object failed.
    #[error("applying {kind} {name}: {source}")]
    ApplyObject {
        /// The kind applied.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Deleting an RBAC object failed.
    #[error("deleting {kind} {name}: {source}")]
    DeleteObject {
        /// The kind deleted.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Patching the ManagedCluster (annotations, finalizers, status) failed.
    #[error("patching ManagedCluster {name}: {source}")]
    PatchCluster {
        /// The cluster.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Listing the ManifestWorks of the cluster namespace failed.
    #[error("listing ManifestWorks in {namespace}: {source}")]
    ListWorks {
        /// The cluster namespace.
        namespace: String,
        /// The API error.
        source: kube::Error,
    },
    /// Releasing the finalizer of the work RoleBinding failed.
    #[error("releasing the work RoleBinding of {cluster}: {source}")]
    ReleaseWorkBinding {
        /// The cluster.
        cluster: String,
        /// The API error.
        source: kube::Error,
    },
    /// Some accept steps failed (the condition carries them).
    #[error("accepting {cluster}: {message}")]
    AcceptSteps {
        /// The cluster.
        cluster: String,
        /// The aggregated errors.
        message: String,
    },
}

/// Shared state of the ManagedCluster controller.
struct Context {
    client: kube::Client,
    options: HubOptions,
    recorder: EventRecorder,
    metrics: ControllerMetrics,
    backoff: Backoff,
    /// The clusters' namespaces and RBAC as last seen (see [`super::cluster_cache`]).
    cache: ClusterCache,
    /// The hub controllers' writes of ManagedClusters the shared store has yet to show.
    own_writes: Arc<OwnWrites>,
}

/// Runs the ManagedCluster controller until its watches stop.
///
/// # Errors
/// [`HubError::ControllerStopped`] when the controller stream ends.
pub async fn run(
    client: kube::Client,
    options: HubOptions,
    metrics: ControllerMetrics,
) -> Result<(), HubError> {
    let informers = HubInformers::new(&client);
    let controller = controller(client, options, metrics, &informers);
    run_alone(informers, controller, std::convert::identity).await
}

/// The ManagedCluster controller over the shared `informers`: the clusters, and the labelled
/// namespaces and RBAC, whose changes (deletions included) reconcile the cluster they belong to.
pub(crate) fn controller(
    client: kube::Client,
    options: HubOptions,
    metrics: ControllerMetrics,
    informers: &HubInformers,
) -> impl Future<Output = Result<(), HubError>> + Send + 'static {
    let ctx = Arc::new(Context {
        recorder: recorder(&client),
        client,
        options,
        metrics,
        backoff: Backoff::default(),
        cache: ClusterCache {
            namespaces: informers.namespaces.store(),
            cluster_roles: informers.cluster_roles.store(),
            cluster_role_bindings: informers.cluster_role_bindings.store(),
            role_bindings: informers.role_bindings.store(),
        },
        own_writes: informers.clusters.own_writes(),
    });
    let controller = Controller::for_shared_stream(informers.clusters.applied(), informers.clusters.store())
        .watches_shared_stream(informers.namespaces.touched(), cluster_of)
        .watches_shared_stream(informers.cluster_roles.touched(), cluster_of)
        .watches_shared_stream(informers.cluster_role_bindings.touched(), cluster_of)
        .watches_shared_stream(informers.role_bindings.touched(), cluster_of);
    async move {
        controller
            .run(reconcile, error_policy, ctx)
            .for_each(|_| futures::future::ready(()))
            .await;
        Err(HubError::ControllerStopped(CONTROLLER))
    }
}

/// The ManagedCluster an RBAC object belongs to (by its non-empty cluster-name label).
fn cluster_of<K: ResourceExt>(object: Arc<K>) -> Option<ObjectRef<ManagedCluster>> {
    object
        .labels()
        .get(labels::CLUSTER_NAME)
        .filter(|name| !name.is_empty())
        .map(|name| ObjectRef::new(name))
}

fn error_policy(cluster: Arc<ManagedCluster>, error: &AcceptError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled(CONTROLLER, false);
    super::log_failure(&cluster.name_any(), error, "reconciling ManagedCluster failed");
    Action::requeue(ctx.backoff.failed(&cluster.name_any()))
}

#[tracing::instrument(skip_all, fields(cluster = %cluster.name_any()))]
async fn reconcile(cluster: Arc<ManagedCluster>, ctx: Arc<Context>) -> Result<Action, AcceptError> {
    if ctx.own_writes.behind(cluster.as_ref()) {
        return Ok(Action::await_change());
    }
    let name = cluster.name_any();
    let action = if cluster.metadata.deletion_timestamp.is_some() {
        cleanup(&cluster, &ctx).await?
    } else if ctx.options.auto_accept
        && !cluster
            .annotations()
            .contains_key(annotations::AUTOMATICALLY_ACCEPTED_ON)
    {
        auto_accept(&cluster, &ctx).await?
    } else if cluster.spec.hub_accepts_client.unwrap_or(false) {
        accept(&cluster, &ctx).await?
    } else {
        deny(&cluster, &ctx).await?
    };
    ctx.backoff.succeeded(&name);
    ctx.metrics.reconciled(CONTROLLER, true);
    Ok(action)
}

fn clusters(ctx: &Context) -> Api<ManagedCluster> {
    Api::all(ctx.client.clone())
}

async fn auto_accept(cluster: &ManagedCluster, ctx: &Context) -> Result<Action, AcceptError> {
    let name = cluster.name_any();
    // RFC 3339 with whole seconds, as upstream writes it.
    let now = super::now().0;
    let stamp = k8s_openapi::jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string();
    let mut patch = json!({"metadata": {"annotations": {annotations::AUTOMATICALLY_ACCEPTED_ON: stamp}}});
    if !cluster.spec.hub_accepts_client.unwrap_or(false) {
        patch["spec"] = json!({"hubAcceptsClient": true});
    }
    ctx.own_writes
        .noting(clusters(ctx).patch(&name, &PatchParams::default(), &Patch::Merge(&patch)))
        .await
        .map_err(|source| AcceptError::PatchCluster {
            name: name.clone(),
            source,
        })?;
    tracing::info!("cluster accepted automatically");
    Ok(Action::await_change())
}

/// Applies one object unless the cache shows it as wanted already, recording a failure in
/// `errors`.
async fn apply_collect<K>(
    api: Api<K>,
    cache: &Store<K>,
    object: &K,
    kind: &'static str,
    errors: &mut Vec<String>,
) where
    K: kube::Resource + serde::Serialize + serde::de::DeserializeOwned + Clone + std::fmt::Debug,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    if up_to_date(cache, object) {
        return;
    }
    if let Err(source) = apply(&api, object).await {
        errors.push(
            AcceptError::ApplyObject {
                kind,
                name: object.name_any(),
                source,
            }
            .to_string(),
        );
    }
}

async fn accept(cluster: &ManagedCluster, ctx: &Context) -> Result<Action, AcceptError> {
    let name = cluster.name_any();
    let extra = &ctx.options.extra_labels;
    let client = &ctx.client;
    let mut errors = Vec::new();
    apply_collect(
        Api::<Namespace>::all(client.clone()),
        &ctx.cache.namespaces,
        &rbac::namespace(&name, extra),
        "Namespace",
        &mut errors,
    )
    .await;
    let mut current = cluster.clone();
    if !cluster
        .finalizers()
        .iter()
        .any(|f| f == rbac::API_RESOURCE_CLEANUP)
    {
        match add_finalizer(ctx, cluster).await? {
            Some(updated) => current = updated,
            // The cached finalizers were stale (another controller added its own since): the
            // newer copy comes back through the watch and starts the next round.
            None => return Ok(Action::await_change()),
        }
    }
    // The shared ClusterRoles the RoleBindings below refer to are the housekeeping's
    // (`shared_roles`), as upstream keeps them in a controller of their own: applying them here
    // would cost two writes per reconcile of every cluster.
    apply_collect(
        Api::all(client.clone()),
        &ctx.cache.cluster_roles,
        &rbac::cluster_role(&name, true, extra),
        "ClusterRole",
        &mut errors,
    )
    .await;
    let binding = rbac::cluster_role_binding(&name, extra);
    apply_collect(
        Api::all(client.clone()),
        &ctx.cache.cluster_role_bindings,
        &binding,
        "ClusterRoleBinding",
        &mut errors,
    )
    .await;
    let namespaced = Api::<RoleBinding>::namespaced(client.clone(), &name);
    let registration = rbac::registration_role_binding(&name, extra);
    apply_collect(
        namespaced.clone(),
        &ctx.cache.role_bindings,
        &registration,
        "RoleBinding",
        &mut errors,
    )
    .await;
    // A work RoleBinding still terminating from an earlier denial cannot be applied: it goes
    // once no ManifestWork remains, and the next pass creates it again.
    // A work RoleBinding still terminating from an earlier denial cannot be applied: it goes
    // once no ManifestWork remains, and the next pass creates it again.
    let work = rbac::work_role_binding(&name, extra);
    let mut requeue = None;
    if cached(&ctx.cache.role_bindings, &work).is_some_and(|b| b.metadata.deletion_timestamp.is_some()) {
        release_if_no_works(client, &name).await?;
        requeue = Some(ctx.options.work_cleanup_requeue);
    } else {
        apply_collect(
            namespaced,
            &ctx.cache.role_bindings,
            &work,
            "RoleBinding",
            &mut errors,
        )
        .await;
    }

    let condition = if errors.is_empty() {
        Condition::new(
            cluster_conditions::HUB_ACCEPTED,
            Status::True,
            reasons::HUB_CLUSTER_ADMIN_ACCEPTED,
            "Accepted by hub cluster admin",
            super::now(),
        )
    } else {
        Condition::new(
            cluster_conditions::HUB_ACCEPTED,
            Status::False,
            reasons::HUB_ACCEPT_ERROR,
            &errors.join("; "),
            super::now(),
        )
    };
    let was_true = accepted_condition(cluster).is_some_and(|c| c.status == "True");
    set_condition(ctx, &current, condition).await?;
    if !errors.is_empty() {
        return Err(AcceptError::AcceptSteps {
            cluster: name,
            message: errors.join("; "),
        });
    }
    if !was_true {
        publish(
            &ctx.recorder,
            cluster,
            None,
            false,
            "ManagedClusterAccepted",
            format!("managed cluster {name} is accepted by hub"),
        )
        .await;
    }
    Ok(requeue.map_or_else(Action::await_change, Action::requeue))
}

fn accepted_condition(cluster: &ManagedCluster) -> Option<&Condition> {
    let list = cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    conditions::find(list, cluster_conditions::HUB_ACCEPTED)
}

async fn deny(cluster: &ManagedCluster, ctx: &Context) -> Result<Action, AcceptError> {
    // A cluster that was never accepted has nothing to take back. Acceptance adds the
    // `api-resource-cleanup` finalizer before it grants anything, and its condition write can
    // lose to the spec turning false (409 on the cached version): a cluster with the finalizer
    // but no condition was granted its RBAC and is denied like one whose condition says True.
    let previous = accepted_condition(cluster);
    let granted = cluster
        .finalizers()
        .iter()
        .any(|f| f == rbac::API_RESOURCE_CLEANUP);
    if previous.is_none() && !granted {
        return Ok(Action::await_change());
    }
    let was_true = previous.is_some_and(|c| c.status == "True");
    let name = cluster.name_any();
    let extra = &ctx.options.extra_labels;
    let role = rbac::cluster_role(&name, false, extra);
    if !up_to_date(&ctx.cache.cluster_roles, &role) {
        apply(&Api::<ClusterRole>::all(ctx.client.clone()), &role)
            .await
            .map_err(|source| AcceptError::ApplyObject {
                kind: "ClusterRole",
                name: role.name_any(),
                source,
            })?;
    }
    let bindings = Api::<RoleBinding>::namespaced(ctx.client.clone(), &name);
    delete_ignoring_missing(
        &bindings,
        &objects::managed_cluster_registration_role_binding(&name),
        "RoleBinding",
    )
    .await?;
    let released = release_work_binding(&ctx.client, &name).await?;
    let condition = Condition::new(
        cluster_conditions::HUB_ACCEPTED,
        Status::False,
        reasons::HUB_CLUSTER_ADMIN_DENIED,
        "Denied by hub cluster admin",
        super::now(),
    );
    set_condition(ctx, cluster, condition).await?;
    if was_true {
        publish(
            &ctx.recorder,
            cluster,
            None,
            false,
            "ManagedClusterDenied",
            format!("managed cluster {name} is denied by hub"),
        )
        .await;
    }
    Ok(if released {
        Action::await_change()
    } else {
        Action::requeue(ctx.options.work_cleanup_requeue)
    })
}

async fn cleanup(cluster: &ManagedCluster, ctx: &Context) -> Result<Action, AcceptError> {
    let name = cluster.name_any();
    if !remove_cluster_rbac(&ctx.client, &name).await? {
        return Ok(Action::requeue(ctx.options.work_cleanup_requeue));
    }
    if cluster
        .finalizers()
        .iter()
        .any(|f| f == rbac::API_RESOURCE_CLEANUP)
    {
        let remaining: Vec<String> = cluster
            .finalizers()
            .iter()
            .filter(|f| *f != rbac::API_RESOURCE_CLEANUP)
            .cloned()
            .collect();
        patch_finalizers(ctx, cluster, &remaining).await?;
    }
    Ok(Action::await_change())
}

/// Deletes the cluster's ClusterRole, ClusterRoleBinding and RoleBindings (the work one is
/// released once no ManifestWork remains); tells whether everything is gone.
pub(super) async fn remove_cluster_rbac(client: &kube::Client, name: &str) -> Result<bool, AcceptError> {
    let role_name = objects::managed_cluster_cluster_role(name);
    delete_ignoring_missing(
        &Api::<ClusterRoleBinding>::all(client.clone()),
        &role_name,
        "ClusterRoleBinding",
    )
    .await?;
    delete_ignoring_missing(
        &Api::<ClusterRole>::all(client.clone()),
        &role_name,
        "ClusterRole",
    )
    .await?;
    let bindings = Api::<RoleBinding>::namespaced(client.clone(), name);
    delete_ignoring_missing(
        &bindings,
        &objects::managed_cluster_registration_role_binding(name),
        "RoleBinding",
    )
    .await?;
    release_work_binding(client, name).await
}

pub(super) async fn delete_ignoring_missing<K>(
    api: &Api<K>,
    name: &str,
    kind: &'static str,
) -> Result<(), AcceptError>
where
    K: kube::Resource + serde::de::DeserializeOwned + Clone + std::fmt::Debug,
{
    let result = api.delete(name, &DeleteParams::default()).await;
    if is_not_found(&result) {
        return Ok(());
    }
    result.map(|_| ()).map_err(|source| AcceptError::DeleteObject {
        kind,
        name: name.to_string(),
        source,
    })
}

/// Deletes the work RoleBinding and releases its finalizer once no ManifestWork remains; tells
/// whether the binding is gone (or about to be, finalizer released).
async fn release_work_binding(client: &kube::Client, cluster: &str) -> Result<bool, AcceptError> {
    let bindings = Api::<RoleBinding>::namespaced(client.clone(), cluster);
    let name = objects::managed_cluster_work_role_binding(cluster);
    delete_ignoring_missing(&bindings, &name, "RoleBinding").await?;
    release_if_no_works(client, cluster).await
}

/// Removes the finalizer of the (deleted) work RoleBinding when no ManifestWork remains in the
/// cluster namespace; tells whether none remains.
async fn release_if_no_works(client: &kube::Client, cluster: &str) -> Result<bool, AcceptError> {
    let bindings = Api::<RoleBinding>::namespaced(client.clone(), cluster);
    let name = objects::managed_cluster_work_role_binding(cluster);
    let works = Api::<ManifestWork>::namespaced(client.clone(), cluster)
        .list_metadata(&ListParams::default().limit(1))
        .await
        .map_err(|source| AcceptError::ListWorks {
            namespace: cluster.to_string(),
            source,
        })?;
    if !works.items.is_empty() {
        return Ok(false);
    }
    let existing = bindings
        .get_opt(&name)
        .await
        .map_err(|source| AcceptError::ReleaseWorkBinding {
            cluster: cluster.to_string(),
            source,
        })?;
    let Some(binding) = existing else { return Ok(true) };
    if binding
        .finalizers()
        .iter()
        .any(|f| f == rbac::MANIFEST_WORK_CLEANUP)
    {
        let remaining: Vec<String> = binding
            .finalizers()
            .iter()
            .filter(|f| *f != rbac::MANIFEST_WORK_CLEANUP)
            .cloned()
            .collect();
        let patch = json!({"metadata": {"uid": binding.uid(), "resourceVersion": binding.resource_version(),
            "finalizers": remaining}});
        let result = bindings
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        if !is_not_found(&result) {
            result.map_err(|source| AcceptError::ReleaseWorkBinding {
                cluster: cluster.to_string(),
                source,
            })?;
        }
    }
    Ok(true)
}

/// Adds the `api-resource-cleanup` finalizer with a patch guarded by the cached finalizers
/// (not the whole object's version: see [`super::guarded`]): the updated cluster, or `None`
/// when the cached finalizers were stale.
async fn add_finalizer(
    ctx: &Context,
    cluster: &ManagedCluster,
) -> Result<Option<ManagedCluster>, AcceptError> {
    let name = cluster.name_any();
    let operations = guarded::add_finalizer(&cluster.metadata, rbac::API_RESOURCE_CLEANUP);
    let patch = guarded::json_patch(operations).map_err(|source| AcceptError::PatchCluster {
        name: name.clone(),
        source,
    })?;
    match ctx
        .own_writes
        .noting(clusters(ctx).patch(&name, &PatchParams::default(), &patch))
        .await
    {
        Ok(updated) => Ok(Some(updated)),
        Err(error) if guarded::is_stale(&error) => {
            tracing::debug!(cluster = %name, "cluster finalizers changed since they were cached");
            Ok(None)
        }
        Err(source) => Err(AcceptError::PatchCluster { name, source }),
    }
}

async fn patch_finalizers(
    ctx: &Context,
    cluster: &ManagedCluster,
    finalizers: &[String],
) -> Result<ManagedCluster, AcceptError> {
    let name = cluster.name_any();
    let patch = json!({"metadata": {"uid": cluster.uid(), "resourceVersion": cluster.resource_version(),
        "finalizers": finalizers}});
    ctx.own_writes
        .noting(clusters(ctx).patch(&name, &PatchParams::default(), &Patch::Merge(&patch)))
        .await
        .map_err(|source| AcceptError::PatchCluster { name, source })
}

/// Sets `condition` on the cluster's status with a merge patch, when it changes anything.
async fn set_condition(
    ctx: &Context,
    cluster: &ManagedCluster,
    condition: Condition,
) -> Result<(), AcceptError> {
    let mut list = cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    if !conditions::set(&mut list, condition) {
        return Ok(());
    }
    let name = cluster.name_any();
    let patch = json!({"metadata": {"uid": cluster.uid(), "resourceVersion": cluster.resource_version()},
        "status": {"conditions": list}});
    ctx.own_writes
        .noting(clusters(ctx).patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)))
        .await
        .map(|_| ())
        .map_err(|source| AcceptError::PatchCluster { name, source })
}
