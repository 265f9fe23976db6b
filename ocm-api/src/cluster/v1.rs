//! `cluster.open-cluster-management.io/v1`: the [`ManagedCluster`] kind.

use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString,
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Time},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::meta::Condition;

/// The pattern a taint key matches: an optional DNS-subdomain prefix and a qualified name.
pub const TAINT_KEY_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

crate::resource::custom_resource! {
    /// A cluster registered with the hub: what the hub wants of it (`spec`) and what its agent
    /// reports (`status`).
    ///
    /// A ManagedCluster is cluster-scoped and named after the cluster. Joining is a double opt-in:
    /// the agent on the managed cluster creates this object and a CSR, and a hub administrator
    /// approves the CSR and sets `spec.hubAcceptsClient`. The hub then creates a namespace named
    /// after the cluster, where the cluster's ManifestWorks and add-ons live.
    pub struct ManagedCluster {
        group: super::GROUP,
        version: "v1",
        plural: "managedclusters",
        scope: Cluster,
        short_names: ["mcl", "mcls"],
        spec: ManagedClusterSpec,
        spec_required: false,
        status: ManagedClusterStatus,
        printer_columns: [
            ("Hub Accepted", "boolean", ".spec.hubAcceptsClient"),
            ("Managed Cluster URLs", "string", ".spec.managedClusterClientConfigs[*].url"),
            ("Joined", "string", ".status.conditions[?(@.type==\"ManagedClusterJoined\")].status"),
            ("Available", "string", ".status.conditions[?(@.type==\"ManagedClusterConditionAvailable\")].status"),
            ("Age", "date", ".metadata.creationTimestamp"),
        ],
        description: "A cluster registered with the hub. Its name is the cluster's name; joining is a double \
            opt-in of the cluster's agent (which creates this object and a CSR) and a hub administrator \
            (who approves the CSR and sets spec.hubAcceptsClient).",
    }
}

/// What the hub wants of a managed cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSpec {
    /// Whether the hub accepts the cluster's agent. Only a user allowed to update the
    /// `managedclusters/accept` subresource may set it; until it is true the agent gets no
    /// access to its cluster namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub_accepts_client: Option<bool>,
    /// How often, in seconds, the agent renews its lease on the hub. The hub marks the cluster
    /// unknown after five missed periods. Defaults to 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 60))]
    pub lease_duration_seconds: Option<i32>,
    /// The API server addresses of the managed cluster, with the CA bundles to trust them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_cluster_client_configs: Option<Vec<ClientConfig>>,
    /// Taints that keep placements from selecting the cluster unless they tolerate them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<Taint>>,
}

/// How to reach the API server of a managed cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientConfig {
    /// PEM-encoded CA certificates to verify the API server's serving certificate with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::byte_string_schema")]
    pub ca_bundle: Option<ByteString>,
    /// The URL of the API server, `https://host:port`.
    pub url: String,
}

/// A taint on a managed cluster: placements that do not tolerate it avoid the cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    /// What the taint does to placements that do not tolerate it.
    pub effect: TaintEffect,
    /// The taint key, e.g. `gpu` or `example.com/maintenance`.
    #[schemars(length(max = 316), regex(pattern = TAINT_KEY_PATTERN))]
    pub key: String,
    /// When the taint was added; set by the hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-nullable" = true))]
    pub time_added: Option<Time>,
    /// The taint value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub value: Option<String>,
}

/// What a taint does to placements that do not tolerate it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum TaintEffect {
    /// Placements do not select the cluster; clusters already selected are removed.
    #[default]
    NoSelect,
    /// Placements select the cluster only if no other cluster fits.
    PreferNoSelect,
    /// Placements do not newly select the cluster; clusters already selected stay.
    NoSelectIfNew,
}

/// The state of a managed cluster as its agent and the hub report it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterStatus {
    /// The allocatable resources of the cluster's nodes, summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity_map_schema")]
    pub allocatable: Option<BTreeMap<String, Quantity>>,
    /// The capacity of the cluster's nodes, summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity_map_schema")]
    pub capacity: Option<BTreeMap<String, Quantity>>,
    /// Facts the cluster claims about itself, from its ClusterClaims (and ClusterProperties).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_claims: Option<Vec<ManagedClusterClaim>>,
    /// The conditions of the cluster: accepted, joined, available, clock synced, deleting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// The namespaces that the cluster sets this cluster belongs to manage on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend(
        "x-kubernetes-list-type" = "map",
        "x-kubernetes-list-map-keys" = ["clusterSet", "name"]
    ))]
    pub managed_namespaces: Option<Vec<ClusterSetManagedNamespace>>,
    /// The Kubernetes version of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<ManagedClusterVersion>,
}

/// A claim of a managed cluster, as reported in its status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterClaim {
    /// The claim's name, e.g. `id.k8s.io`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub name: Option<String>,
    /// The claim's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub value: Option<String>,
}

/// A namespace that a cluster set manages on this cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSetManagedNamespace {
    /// The cluster set that manages the namespace.
    pub cluster_set: String,
    /// The state of the namespace on the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// The namespace's name.
    #[schemars(length(max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub name: String,
}

/// The version of a managed cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterVersion {
    /// The Kubernetes version, as `/version` reports it (`gitVersion`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<String>,
}
