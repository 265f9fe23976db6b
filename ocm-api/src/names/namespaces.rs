//! Well-known namespaces.

/// Where the hub components (and the add-on manager) run by default.
pub const HUB: &str = "open-cluster-management-hub";
/// Where the klusterlet agents run by default.
pub const AGENT: &str = "open-cluster-management-agent";
/// Where add-on agents are installed on managed clusters by default.
pub const ADDON_AGENT: &str = "open-cluster-management-agent-addon";

/// The namespace of the cluster-manager operator and of the bootstrap ServiceAccount on a hub.
pub const OPEN_CLUSTER_MANAGEMENT: &str = "open-cluster-management";

/// The hub namespace of a managed cluster, which is named after the cluster.
#[must_use]
pub fn cluster(cluster: &str) -> &str {
    cluster
}
