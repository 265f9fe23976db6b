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
use kube::api::ListParams;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::{labels, objects};

use super::accept::{AcceptError, delete_ignoring_missing, remove_cluster_rbac};
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
    /// Listing objects failed.
    #[error("listing {what}: {source}")]
    List {
        /// What was listed.
        what: &'static str,
        /// The API error.
        source: kube::Error,
    },
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
    let clusters = watcher::watcher(
        Api::<ManagedCluster>::all(client.clone()),
        watcher::Config::default(),
    )
    .map(|_| ());
    let roles = watcher::watcher(
        Api::<ClusterRole>::all(client.clone()),
        watcher::Config::default().labels(labels::CLUSTER_NAME),
    )
    .map(|_| ());
    let bindings = watcher::watcher(
        Api::<ClusterRoleBinding>::all(client.clone()),
        watcher::Config::default().labels(labels::CLUSTER_NAME),
    )
    .map(|_| ());
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
        // watches deliver events far faster than a pass (three lists) takes.
        while let Some(event) = events.next().now_or_never() {
            if event.is_none() {
                return Err(HubError::ControllerStopped(CONTROLLER));
            }
        }
        match housekeeping(&client, &options).await {
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

/// One pass; tells whether nothing is left waiting for ManifestWorks.
async fn housekeeping(client: &kube::Client, options: &HubOptions) -> Result<bool, HousekeepingError> {
    // RBAC first, clusters second: RBAC seen here belongs to a cluster that existed before the
    // cluster list, so a cluster missing from that list is really gone.
    let by_label = ListParams::default().labels(labels::CLUSTER_NAME);
    let list_failed = |what| move |source| HousekeepingError::List { what, source };
    let mut owners = BTreeSet::new();
    for binding in Api::<ClusterRoleBinding>::all(client.clone())
        .list_metadata(&by_label)
        .await
        .map_err(list_failed("ClusterRoleBindings"))?
    {
        if let Some(cluster) = owner(&binding, |c| vec![objects::managed_cluster_cluster_role(c)]) {
            owners.insert(cluster);
        }
    }
    for binding in Api::<RoleBinding>::all(client.clone())
        .list_metadata(&by_label)
        .await
        .map_err(list_failed("RoleBindings"))?
    {
        let names = |c: &str| {
            vec![
                objects::managed_cluster_registration_role_binding(c),
                objects::managed_cluster_work_role_binding(c),
            ]
        };
        if let Some(cluster) = owner(&binding, names) {
            owners.insert(cluster);
        }
    }
    let clusters = Api::<ManagedCluster>::all(client.clone())
        .list_metadata(&ListParams::default())
        .await
        .map_err(list_failed("ManagedClusters"))?;
    let existing: BTreeSet<String> = clusters.items.iter().map(ResourceExt::name_any).collect();
    sync_shared_roles(client, options, !existing.is_empty()).await?;
    let mut done = true;
    for gone in owners.difference(&existing) {
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
