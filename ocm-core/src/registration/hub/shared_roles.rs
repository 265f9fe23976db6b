//! Hub housekeeping beside the ManagedCluster controller (ocm-core.md §2.2):
//!
//! - the shared ClusterRoles `open-cluster-management:managedcluster:registration` and `…:work`
//!   exist (edits rolled back) while at least one ManagedCluster exists and are deleted when none
//!   does;
//! - the RBAC of a ManagedCluster that is gone without its finalizer having run (force-removed)
//!   is removed like on deletion, the work RoleBinding once no ManifestWork remains.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kube::runtime::reflector::Store;
use kube::{Api, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::{labels, objects};

use super::accept::{AcceptError, delete_ignoring_missing, remove_cluster_rbac};
use super::informers::{HubInformers, run_alone};
use super::{Backoff, HubError, HubOptions, apply, rbac};
use crate::metrics::ControllerMetrics;

const CONTROLLER: &str = "managedclusterhousekeeping";
/// How often the housekeeping runs without any event.
const RESYNC: Duration = Duration::from_secs(60);
/// The label add-on objects carry; the hub ignores objects with it.
const ADDON_NAME_LABEL: &str = labels::ADDON_NAME;

/// What failed during housekeeping.
#[derive(Debug, thiserror::Error)]
pub enum HousekeepingError {
    /// Reading a ManagedCluster that the store no longer holds failed.
    #[error("reading ManagedCluster {cluster}: {source}")]
    Get {
        /// The cluster.
        cluster: String,
        /// The API error.
        source: kube::Error,
    },
    /// A shared store lost its watch before its first list.
    #[error("a store of the housekeeping lost its watch")]
    StoreGone,
    /// Applying or deleting an object failed.
    #[error(transparent)]
    Objects(#[from] AcceptError),
}

/// Runs the housekeeping until its watches stop: on every ManagedCluster or labelled RBAC
/// change, and at least every minute (every `work_cleanup_requeue` while a gone cluster still
/// has ManifestWorks).
///
/// # Errors
/// [`HubError::ControllerStopped`] when the watches end.
pub async fn run(
    client: kube::Client,
    options: HubOptions,
    metrics: ControllerMetrics,
) -> Result<(), HubError> {
    let informers = HubInformers::new(&client);
    let controller = controller(client, options, metrics, &informers);
    run_alone(informers, controller, std::convert::identity).await
}

/// The stores one housekeeping pass reads.
struct Stores {
    clusters: Store<ManagedCluster>,
    cluster_role_bindings: Store<ClusterRoleBinding>,
    role_bindings: Store<RoleBinding>,
}

/// The housekeeping over the shared informers: woken by changes of clusters and labelled
/// ClusterRoles and ClusterRoleBindings, reading the stores of clusters and labelled bindings.
pub(crate) fn controller(
    client: kube::Client,
    options: HubOptions,
    metrics: ControllerMetrics,
    informers: &HubInformers,
) -> impl Future<Output = Result<(), HubError>> + Send + 'static {
    let clusters = informers.clusters.changes().map(|_| ());
    let roles = informers.cluster_roles.changes().map(|_| ());
    let bindings = informers.cluster_role_bindings.changes().map(|_| ());
    let stores = Stores {
        clusters: informers.clusters.store(),
        cluster_role_bindings: informers.cluster_role_bindings.store(),
        role_bindings: informers.role_bindings.store(),
    };
    async move {
        let mut events = std::pin::pin!(futures::stream::select(
            clusters,
            futures::stream::select(roles, bindings)
        ));
        let backoff = Backoff::default();
        let mut wait = RESYNC;
        loop {
            if matches!(tokio::time::timeout(wait, events.next()).await, Ok(None)) {
                break;
            }
            // One pass covers every event that is already waiting: while many clusters join, the
            // watches deliver events far faster than a pass takes.
            while let Some(event) = events.next().now_or_never() {
                if event.is_none() {
                    return Err(HubError::ControllerStopped(CONTROLLER));
                }
            }
            match housekeeping(&client, &options, &stores).await {
                Ok(done) => {
                    backoff.succeeded("");
                    metrics.reconciled(CONTROLLER, true);
                    wait = if done {
                        RESYNC
                    } else {
                        options.work_cleanup_requeue
                    };
                }
                Err(error) => {
                    metrics.reconciled(CONTROLLER, false);
                    tracing::warn!(%error, "hub housekeeping failed");
                    wait = backoff.failed("");
                }
            }
        }
        Err(HubError::ControllerStopped(CONTROLLER))
    }
}

/// One pass; tells whether nothing is left waiting for ManifestWorks.
async fn housekeeping(
    client: &kube::Client,
    options: &HubOptions,
    stores: &Stores,
) -> Result<bool, HousekeepingError> {
    for ready in [
        stores.clusters.wait_until_ready().await,
        stores.cluster_role_bindings.wait_until_ready().await,
        stores.role_bindings.wait_until_ready().await,
    ] {
        ready.map_err(|_| HousekeepingError::StoreGone)?;
    }
    let mut owners = BTreeSet::new();
    for binding in stores.cluster_role_bindings.state() {
        if let Some(cluster) = owner(binding.as_ref(), |c| {
            vec![objects::managed_cluster_cluster_role(c)]
        }) {
            owners.insert(cluster);
        }
    }
    for binding in stores.role_bindings.state() {
        let names = |c: &str| {
            vec![
                objects::managed_cluster_registration_role_binding(c),
                objects::managed_cluster_work_role_binding(c),
            ]
        };
        if let Some(cluster) = owner(binding.as_ref(), names) {
            owners.insert(cluster);
        }
    }
    let existing: BTreeSet<String> = stores.clusters.state().iter().map(|c| c.name_any()).collect();
    sync_shared_roles(client, options, !existing.is_empty()).await?;
    let mut done = true;
    let clusters = Api::<ManagedCluster>::all(client.clone());
    for gone in owners.difference(&existing) {
        // The stores come from separate watches: a cluster whose RBAC was seen before the
        // cluster itself is not gone. Ask the server before removing anything.
        let found = clusters
            .get_metadata_opt(gone)
            .await
            .map_err(|source| HousekeepingError::Get {
                cluster: gone.clone(),
                source,
            })?;
        if found.is_some() {
            continue;
        }
        tracing::info!(cluster = %gone, "removing the RBAC of a ManagedCluster that is gone");
        done &= remove_cluster_rbac(client, gone).await?;
    }
    Ok(done)
}

/// The cluster an RBAC object was made for: its cluster-name label, when its name is one of
/// the names the hub gives that cluster's objects and it is no add-on object.
fn owner<K: ResourceExt>(object: &K, names: impl Fn(&str) -> Vec<String>) -> Option<String> {
    if object.labels().contains_key(ADDON_NAME_LABEL) {
        return None;
    }
    let cluster = object
        .labels()
        .get(labels::CLUSTER_NAME)
        .filter(|c| !c.is_empty())?;
    names(cluster)
        .contains(&object.name_any())
        .then(|| cluster.clone())
}

async fn sync_shared_roles(
    client: &kube::Client,
    options: &HubOptions,
    wanted: bool,
) -> Result<(), AcceptError> {
    let roles = Api::<ClusterRole>::all(client.clone());
    for role in rbac::shared_cluster_roles(&options.extra_labels) {
        if wanted {
            apply(&roles, &role)
                .await
                .map_err(|source| AcceptError::ApplyObject {
                    kind: "ClusterRole",
                    name: role.name_any(),
                    source,
                })?;
        } else {
            delete_ignoring_missing(&roles, &role.name_any(), "ClusterRole").await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;

    fn binding(name: &str, labels: &[(&str, &str)]) -> RoleBinding {
        RoleBinding {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..RoleBinding::default()
        }
    }

    fn names(c: &str) -> Vec<String> {
        vec![objects::managed_cluster_registration_role_binding(c)]
    }

    #[test]
    fn owner_is_the_label_of_objects_the_hub_names() {
        let ours = binding(
            "open-cluster-management:managedcluster:c1:registration",
            &[(labels::CLUSTER_NAME, "c1")],
        );
        assert_eq!(owner(&ours, names), Some("c1".to_string()));
        // Another name, an add-on object, an empty label: not ours.
        assert_eq!(owner(&binding("x", &[(labels::CLUSTER_NAME, "c1")]), names), None);
        let addon = binding(
            "open-cluster-management:managedcluster:c1:registration",
            &[(labels::CLUSTER_NAME, "c1"), (labels::ADDON_NAME, "a")],
        );
        assert_eq!(owner(&addon, names), None);
        assert_eq!(
            owner(
                &binding(
                    "open-cluster-management:managedcluster::registration",
                    &[(labels::CLUSTER_NAME, "")]
                ),
                names
            ),
            None
        );
    }
}
