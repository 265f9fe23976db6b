//! The add-on owner controller (upstream's `addon-owner-controller`, addon-framework.md §5.5):
//! every ManagedClusterAddOn whose ClusterManagementAddOn of the same name exists and is
//! [managed by the add-on manager](super::managed_by_addon_manager) gets a controller owner
//! reference to it (`addon.open-cluster-management.io/v1beta1`, `ClusterManagementAddOn`,
//! `controller` and `blockOwnerDeletion` true). Deleting the ClusterManagementAddOn then
//! garbage-collects its ManagedClusterAddOns, and the add-on framework's registration controller,
//! which waits for this reference, goes on.
//!
//! An existing reference of the same kind, name and API group is replaced when it differs (a
//! different UID after the ClusterManagementAddOn was re-created, say); others are kept.

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use serde_json::json;

use crate::metrics::ControllerMetrics;

/// The controller's name in metrics and logs (upstream's).
const CONTROLLER: &str = "addon-owner-controller";

/// The API version owner references name.
const OWNER_API_VERSION: &str = "addon.open-cluster-management.io/v1beta1";

/// The kind owner references name.
const OWNER_KIND: &str = "ClusterManagementAddOn";

/// How long a failed reconcile waits before the next try.
const RETRY: Duration = Duration::from_secs(5);

/// What failed in the owner controller.
#[derive(Debug, thiserror::Error)]
pub enum OwnerError {
    /// Writing the owner references of a ManagedClusterAddOn failed.
    #[error("setting the owner of add-on {namespace}/{name}: {source}")]
    PatchOwner {
        /// The cluster namespace.
        namespace: String,
        /// The add-on.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// The controller stream ended.
    #[error("the add-on owner controller stopped")]
    Stopped,
}

struct Context {
    client: kube::Client,
    cluster_management_addons: Store<ClusterManagementAddOn>,
    metrics: ControllerMetrics,
}

/// The controller owner reference to `owner`.
#[must_use]
pub fn owner_reference(owner: &ClusterManagementAddOn) -> OwnerReference {
    OwnerReference {
        api_version: OWNER_API_VERSION.to_string(),
        kind: OWNER_KIND.to_string(),
        name: owner.name_any(),
        uid: owner.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// `existing` with `required` merged in as upstream's `MergeOwnerRefs` does (a reference of the
/// same name, kind and API group is replaced when it differs, else `required` is appended), or
/// `None` when nothing changes.
#[must_use]
pub fn merge_owner(existing: &[OwnerReference], required: &OwnerReference) -> Option<Vec<OwnerReference>> {
    let group = |api_version: &str| api_version.rsplit_once('/').map_or("", |(g, _)| g).to_string();
    let same = |r: &OwnerReference| {
        r.name == required.name
            && r.kind == required.kind
            && group(&r.api_version) == group(&required.api_version)
    };
    let mut merged = existing.to_vec();
    match merged.iter().position(same) {
        Some(at) if merged[at] == *required => None,
        Some(at) => {
            merged[at] = required.clone();
            Some(merged)
        }
        None => {
            merged.push(required.clone());
            Some(merged)
        }
    }
}

/// Which ManagedClusterAddOns the owner controller handles.
#[derive(Clone, Debug, Default)]
pub struct OwnerOptions {
    /// Only the add-ons of these cluster namespaces; empty: every namespace (a hub). Tests and
    /// `ocm-testkit` sharing a real hub with others keep to their own clusters this way.
    pub namespaces: Vec<String>,
}

/// Runs the owner controller for every namespace until it stops.
///
/// # Errors
/// [`OwnerError::Stopped`] when the controller stream ends.
pub async fn run(client: kube::Client, metrics: ControllerMetrics) -> Result<(), OwnerError> {
    run_with(client, OwnerOptions::default(), metrics).await
}

/// Runs the owner controller for the namespaces of `options` until it stops.
///
/// # Errors
/// [`OwnerError::Stopped`] when the controller stream ends.
pub async fn run_with(
    client: kube::Client,
    options: OwnerOptions,
    metrics: ControllerMetrics,
) -> Result<(), OwnerError> {
    let (cluster_management_addons, writer) = kube::runtime::reflector::store();
    let cma_watch = kube::runtime::reflector(
        writer,
        watcher(
            Api::<ClusterManagementAddOn>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff(),
    )
    .touched_objects()
    .filter_map(|event| async move { event.ok() });
    let ctx = Arc::new(Context {
        client: client.clone(),
        cluster_management_addons,
        metrics,
    });
    let apis: Vec<Api<ManagedClusterAddOn>> = if options.namespaces.is_empty() {
        vec![Api::all(client)]
    } else {
        options
            .namespaces
            .iter()
            .map(|namespace| Api::namespaced(client.clone(), namespace))
            .collect()
    };
    // One controller per scope; each ClusterManagementAddOn event is fanned out to all of them.
    let (wake, _) = tokio::sync::broadcast::channel::<ClusterManagementAddOn>(256);
    let mut controllers = Vec::new();
    for api in apis {
        let addons = Controller::new(api, watcher::Config::default());
        let managed_addons = addons.store();
        let woken = futures::stream::unfold(wake.subscribe(), |mut receiver| async move {
            loop {
                match receiver.recv().await {
                    Ok(owner) => return Some((owner, receiver)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
        .flat_map(move |owner: ClusterManagementAddOn| {
            // A ClusterManagementAddOn wakes every ManagedClusterAddOn of its name.
            let name = owner.name_any();
            let keys: Vec<ObjectRef<ManagedClusterAddOn>> = managed_addons
                .state()
                .iter()
                .filter(|addon| addon.name_any() == name)
                .map(|addon| ObjectRef::from_obj(addon.as_ref()))
                .collect();
            futures::stream::iter(keys)
        });
        controllers.push(
            addons
                .reconcile_on(woken)
                .run(reconcile, error_policy, ctx.clone())
                .for_each(|_| futures::future::ready(()))
                .boxed(),
        );
    }
    let fan_out = cma_watch.for_each(move |owner| {
        // No receiver only while no controller runs yet; nothing to wake then.
        let _ = wake.send(owner);
        futures::future::ready(())
    });
    tokio::select! {
        _ = futures::future::select_all(controllers) => {}
        () = fan_out => {}
    }
    Err(OwnerError::Stopped)
}

fn error_policy(addon: Arc<ManagedClusterAddOn>, error: &OwnerError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled(CONTROLLER, false);
    tracing::warn!(addon = %addon.name_any(), namespace = ?addon.namespace(), %error, "setting the add-on owner failed");
    Action::requeue(RETRY)
}

#[tracing::instrument(skip_all, fields(namespace = ?addon.namespace(), addon = %addon.name_any()))]
async fn reconcile(addon: Arc<ManagedClusterAddOn>, ctx: Arc<Context>) -> Result<Action, OwnerError> {
    let name = addon.name_any();
    let owner = ctx
        .cluster_management_addons
        .get(&ObjectRef::new(&name))
        .filter(|owner| super::managed_by_addon_manager(owner));
    let merged = owner.and_then(|owner| merge_owner(addon.owner_references(), &owner_reference(&owner)));
    if let (Some(merged), Some(namespace)) = (merged, addon.namespace()) {
        // The resourceVersion makes this an update of what was read, as upstream's full Update.
        let patch = json!({"metadata": {"ownerReferences": merged,
            "resourceVersion": addon.resource_version()}});
        Api::<ManagedClusterAddOn>::namespaced(ctx.client.clone(), &namespace)
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| OwnerError::PatchOwner {
                namespace,
                name: name.clone(),
                source,
            })?;
        tracing::debug!("owner reference set");
    }
    ctx.metrics.reconciled(CONTROLLER, true);
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(api_version: &str, name: &str, uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: OWNER_KIND.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    #[test]
    fn appends_replaces_or_leaves_the_owner() {
        let required = reference(OWNER_API_VERSION, "helloworld", "u2");
        let other = OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "helloworld".into(),
            uid: "x".into(),
            ..Default::default()
        };
        assert_eq!(
            merge_owner(std::slice::from_ref(&other), &required),
            Some(vec![other.clone(), required.clone()])
        );
        // Same group at another version with an old UID: replaced in place.
        let stale = reference("addon.open-cluster-management.io/v1alpha1", "helloworld", "u1");
        assert_eq!(
            merge_owner(&[stale, other.clone()], &required),
            Some(vec![required.clone(), other.clone()])
        );
        assert_eq!(merge_owner(&[other, required.clone()], &required), None);
    }
}
