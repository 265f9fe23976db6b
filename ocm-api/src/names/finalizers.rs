//! Finalizers OCM controllers put on objects to clean up before they go away.

/// On a ManagedClusterAddOn whose manifests include pre-delete hooks.
pub const ADDON_PRE_DELETE: &str = "addon.open-cluster-management.io/addon-pre-delete";
/// On a ManagedClusterAddOn whose pre-delete hooks run on the hosting cluster.
pub const ADDON_HOSTING_PRE_DELETE: &str = "addon.open-cluster-management.io/hosting-addon-pre-delete";
/// On a ManagedClusterAddOn with manifests deployed on a hosting cluster.
pub const ADDON_HOSTING_MANIFESTS_CLEANUP: &str =
    "addon.open-cluster-management.io/hosting-manifests-cleanup";
/// Older name of [`ADDON_PRE_DELETE`]; removed whenever add-on finalizers change.
pub const ADDON_PRE_DELETE_DEPRECATED: &str = "cluster.open-cluster-management.io/addon-pre-delete";
/// Older name of [`ADDON_HOSTING_PRE_DELETE`]; removed whenever add-on finalizers change.
pub const ADDON_HOSTING_PRE_DELETE_DEPRECATED: &str =
    "cluster.open-cluster-management.io/hosting-addon-pre-delete";
/// Older name of [`ADDON_HOSTING_MANIFESTS_CLEANUP`]; removed whenever add-on finalizers change.
pub const ADDON_HOSTING_MANIFESTS_CLEANUP_DEPRECATED: &str =
    "cluster.open-cluster-management.io/hosting-manifests-cleanup";
/// The three older add-on finalizers, which the add-on framework strips.
pub const ADDON_DEPRECATED: [&str; 3] = [
    ADDON_PRE_DELETE_DEPRECATED,
    ADDON_HOSTING_PRE_DELETE_DEPRECATED,
    ADDON_HOSTING_MANIFESTS_CLEANUP_DEPRECATED,
];
/// On an accepted ManagedCluster: the hub removes its RBAC and waits for its works first.
pub const MANAGED_CLUSTER_API_RESOURCE_CLEANUP: &str =
    "cluster.open-cluster-management.io/api-resource-cleanup";
/// On every ManagedCluster (gate `ResourceCleanup`): the hub deletes the objects in its namespace first.
pub const MANAGED_CLUSTER_RESOURCE_CLEANUP: &str = "cluster.open-cluster-management.io/resource-cleanup";
/// On an AppliedManifestWork: the agent deletes the applied resources first.
pub const APPLIED_MANIFEST_WORK_CLEANUP: &str =
    "cluster.open-cluster-management.io/applied-manifest-work-cleanup";
/// On a ManifestWork (and the cluster's work RoleBinding): the agent removes what it applied first.
pub const MANIFEST_WORK_CLEANUP: &str = "cluster.open-cluster-management.io/manifest-work-cleanup";
/// On a ManifestWorkReplicaSet: its ManifestWorks are deleted first.
pub const MANIFEST_WORK_REPLICA_SET_CLEANUP: &str = "work.open-cluster-management.io/manifest-work-cleanup";
/// On a Klusterlet: the operator removes the agent first.
pub const KLUSTERLET_CLEANUP: &str = "operator.open-cluster-management.io/klusterlet-cleanup";
/// On a Klusterlet in hosted mode: the operator removes the hosted agent first.
pub const KLUSTERLET_HOSTED_CLEANUP: &str = "operator.open-cluster-management.io/klusterlet-hosted-cleanup";
/// On a ClusterManager: the operator removes the hub components first.
pub const CLUSTER_MANAGER_CLEANUP: &str = "operator.open-cluster-management.io/cluster-manager-cleanup";
