//! Annotation keys OCM reads or writes, and the fixed values some of them take.

/// On an add-on manifest (Job or Pod): run it as a pre-delete hook instead of deploying it.
pub const ADDON_PRE_DELETE: &str = "addon.open-cluster-management.io/addon-pre-delete";
/// On an add-on manifest: leave the object on the cluster when the add-on is removed.
pub const DELETION_ORPHAN: &str = "addon.open-cluster-management.io/deletion-orphan";
/// Older opt-out from automatic add-on installation; kept in the API, no longer honored.
pub const DISABLE_ADDON_AUTOMATIC_INSTALLATION: &str =
    "addon.open-cluster-management.io/disable-automatic-installation";
/// On an add-on manifest in hosted mode: which cluster it goes to (see the `HOSTED_MANIFEST_LOCATION_*` values).
pub const HOSTED_MANIFEST_LOCATION: &str = "addon.open-cluster-management.io/hosted-manifest-location";
/// [`HOSTED_MANIFEST_LOCATION`] value: deploy on the managed cluster (the default).
pub const HOSTED_MANIFEST_LOCATION_MANAGED: &str = "managed";
/// [`HOSTED_MANIFEST_LOCATION`] value: deploy on the hosting cluster.
pub const HOSTED_MANIFEST_LOCATION_HOSTING: &str = "hosting";
/// [`HOSTED_MANIFEST_LOCATION`] value: deploy nowhere.
pub const HOSTED_MANIFEST_LOCATION_NONE: &str = "none";
/// On a ManagedClusterAddOn: the cluster that hosts the add-on agent (hosted mode).
pub const HOSTING_CLUSTER_NAME: &str = "addon.open-cluster-management.io/hosting-cluster-name";
/// On a ClusterManagementAddOn (v1alpha1): who installs and upgrades the add-on.
pub const ADDON_LIFECYCLE: &str = "addon.open-cluster-management.io/lifecycle";
/// [`ADDON_LIFECYCLE`] value: the general add-on manager handles the add-on.
pub const ADDON_LIFECYCLE_ADDON_MANAGER: &str = "addon-manager";
/// [`ADDON_LIFECYCLE`] value: the add-on's own controller handles it.
pub const ADDON_LIFECYCLE_SELF: &str = "self";
/// On a v1beta1 ManagedClusterAddOn: the v1alpha1 `spec.installNamespace`, which v1beta1 lacks.
pub const V1ALPHA1_INSTALL_NAMESPACE: &str = "addon.open-cluster-management.io/v1alpha1-install-namespace";
/// On a ManagedClusterAddOn: JSON values merged into the add-on's template values.
pub const ADDON_VALUES: &str = "addon.open-cluster-management.io/values";
/// Prefix of ManagedCluster annotations that the add-on manager copies onto the cluster's add-ons.
pub const ADDON_PREFIX: &str = "addon.open-cluster-management.io";
/// On a Placement (value `"true"`): the scheduler leaves the placement alone.
pub const PLACEMENT_DISABLE: &str = "cluster.open-cluster-management.io/experimental-scheduling-disable";
/// On objects in a deleted cluster's namespace: cleanup order, 0 to 100, lowest first.
pub const CLEANUP_PRIORITY: &str = "open-cluster-management.io/cleanup-priority";
/// On ManifestWorks (and server-side-applied objects): hashes of the configurations they were built from.
pub const CONFIG_SPEC_HASH: &str = "open-cluster-management.io/config-spec-hash";
/// On a CSR created through the gRPC server: the user that really asked for it.
pub const CSR_USER: &str = "open-cluster-management.io/csr-user";
/// On a ManagedCluster: JSON image registry overrides for add-ons running on it.
pub const IMAGE_REGISTRIES: &str = "open-cluster-management.io/image-registries";
/// On resources the work agent applied: the hash of the applied spec.
pub const OBJECT_HASH: &str = "open-cluster-management.io/object-hash";
/// Prefix of the annotations the registration agent sets on its ManagedCluster when creating it.
pub const CLUSTER_ANNOTATIONS_PREFIX: &str = "agent.open-cluster-management.io";
/// On a ManagedCluster: when the hub accepted it automatically (RFC 3339); blocks re-accepting.
pub const AUTOMATICALLY_ACCEPTED_ON: &str = "open-cluster-management.io/automatically-accepted-on";
/// On a ManagedCluster (value `"true"`): the hub skips its clock-skew check.
pub const SKIP_CLOCK_SYNC_CHECK: &str = "registration.open-cluster-management.io/skip-clock-sync-check";
/// On the `default` and `global` cluster sets (value `"false"`): the hub stops restoring their selectors.
pub const CLUSTER_SET_AUTO_UPDATE: &str = "cluster.open-cluster-management.io/autoupdate";
/// On a ManagedCluster registered with AWS IRSA: the ARN of the managed EKS cluster.
pub const MANAGED_CLUSTER_ARN: &str = "agent.open-cluster-management.io/managed-cluster-arn";
/// On a ManagedCluster registered with AWS IRSA: the suffix of its hub IAM role.
pub const MANAGED_CLUSTER_IAM_ROLE_SUFFIX: &str =
    "agent.open-cluster-management.io/managed-cluster-iam-role-suffix";
