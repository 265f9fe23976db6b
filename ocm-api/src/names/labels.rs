//! Label keys OCM sets or selects on, and the values some of them take.

/// The managed cluster an object belongs to (cluster namespaces, CSRs, RBAC, leases).
pub const CLUSTER_NAME: &str = "open-cluster-management.io/cluster-name";
/// The add-on an object belongs to (add-on CSRs, deploy ManifestWorks).
pub const ADDON_NAME: &str = "open-cluster-management.io/addon-name";
/// The namespace of the ManagedClusterAddOn, on works created outside that namespace (hosted mode).
pub const ADDON_NAMESPACE: &str = "open-cluster-management.io/addon-namespace";
/// The AddOnTemplate an object was rendered from.
pub const ADDON_TEMPLATE_NAME: &str = "open-cluster-management.io/addon-template-name";
/// Membership of a cluster in an `ExclusiveClusterSetLabel` cluster set; the value is the set name.
pub const CLUSTER_SET: &str = "cluster.open-cluster-management.io/clusterset";
/// The Placement that owns a PlacementDecision; the value is the placement name.
pub const PLACEMENT: &str = "cluster.open-cluster-management.io/placement";
/// The index of the decision group a PlacementDecision belongs to.
pub const DECISION_GROUP_INDEX: &str = "cluster.open-cluster-management.io/decision-group-index";
/// The name of the decision group a PlacementDecision belongs to (empty for unnamed groups).
pub const DECISION_GROUP_NAME: &str = "cluster.open-cluster-management.io/decision-group-name";
/// Older label form of the hosted-manifest-location annotation; read when the annotation is absent.
pub const HOSTED_MANIFEST_LOCATION_DEPRECATED: &str =
    "addon.open-cluster-management.io/hosted-manifest-location";
/// Older API label marking an add-on manifest as a pre-delete hook.
pub const ADDON_PRE_DELETE_DEPRECATED: &str = "open-cluster-management.io/addon-pre-delete";
/// The ManifestWorkReplicaSet that owns a ManifestWork; see [`manifest_work_replica_set_key`].
pub const MANIFEST_WORK_REPLICA_SET: &str = "work.open-cluster-management.io/manifestworkreplicaset";
/// The Placement through which a ManifestWorkReplicaSet selected a work's cluster.
pub const MANIFEST_WORK_REPLICA_SET_PLACEMENT: &str = "work.open-cluster-management.io/placementname";
/// On a ClusterClaim or ClusterProperty: present means the claim is not reported to the hub.
pub const SPOKE_ONLY: &str = "open-cluster-management.io/spoke-only";
/// Prefix of the per-add-on health labels the hub sets on ManagedClusters; see [`addon_feature`].
pub const ADDON_FEATURE_PREFIX: &str = "feature.open-cluster-management.io/addon-";
/// [`addon_feature`] value: the add-on is available on the cluster.
pub const ADDON_FEATURE_AVAILABLE: &str = "available";
/// [`addon_feature`] value: the add-on reports itself unavailable.
pub const ADDON_FEATURE_UNHEALTHY: &str = "unhealthy";
/// [`addon_feature`] value: the add-on's health is unknown.
pub const ADDON_FEATURE_UNREACHABLE: &str = "unreachable";
/// On managed-cluster namespaces that host add-on agents (value `"true"`): pull secrets are copied in.
pub const ADDON_INSTALL_NAMESPACE: &str = "addon.open-cluster-management.io/namespace";
/// Prefix of the label the agent puts on namespaces a cluster set manages; see [`managed_namespace`].
pub const MANAGED_NAMESPACE_PREFIX: &str = "clusterset.open-cluster-management.io/";
/// On ClusterRoles (value `"true"`) whose rules are aggregated into the work agent's permissions.
pub const AGGREGATE_TO_WORK: &str = "open-cluster-management.io/aggregate-to-work";
/// The add-on that hub token-infrastructure objects (ServiceAccount, Role, RoleBinding) serve.
pub const TOKEN_INFRASTRUCTURE_ADDON: &str = "addon.open-cluster-management.io/name";
/// Marks (value `"true"`) the hub objects created for add-on token authentication.
pub const TOKEN_INFRASTRUCTURE: &str = "addon.open-cluster-management.io/token-infrastructure";

/// The health label of `addon` on a ManagedCluster: `feature.open-cluster-management.io/addon-<addon>`.
#[must_use]
pub fn addon_feature(addon: &str) -> String {
    format!("{ADDON_FEATURE_PREFIX}{addon}")
}

/// The value of [`MANIFEST_WORK_REPLICA_SET`] for a ManifestWorkReplicaSet: `<namespace>.<name>`.
#[must_use]
pub fn manifest_work_replica_set_key(namespace: &str, name: &str) -> String {
    format!("{namespace}.{name}")
}

/// The managed-namespace label for a hub: the prefix followed by the first 63 characters of the
/// hub hash (hex SHA-256 of the hub API server URL).
#[must_use]
pub fn managed_namespace(hub_hash: &str) -> String {
    let short: String = hub_hash.chars().take(63).collect();
    format!("{MANAGED_NAMESPACE_PREFIX}{short}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_build_upstream_keys() {
        assert_eq!(
            addon_feature("helloworld"),
            "feature.open-cluster-management.io/addon-helloworld"
        );
        assert_eq!(manifest_work_replica_set_key("default", "mwrs"), "default.mwrs");
        let hash = "a".repeat(64);
        assert_eq!(
            managed_namespace(&hash),
            format!("clusterset.open-cluster-management.io/{}", "a".repeat(63))
        );
        assert_eq!(
            managed_namespace("abc"),
            "clusterset.open-cluster-management.io/abc"
        );
    }
}
