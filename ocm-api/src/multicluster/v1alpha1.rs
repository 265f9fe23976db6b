//! `multicluster.x-k8s.io/v1alpha1`: the [`ClusterProfile`] kind.

use k8s_openapi::{ByteString, apimachinery::pkg::apis::meta::v1::Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::meta::Condition;

crate::resource::custom_resource! {
    /// One cluster of a multicluster inventory, as the cluster manager that owns it describes it.
    ///
    /// With the hub feature gate `ClusterProfile`, OCM keeps a ClusterProfile for each
    /// ManagedCluster in every namespace with a ManagedClusterSetBinding whose set holds the
    /// cluster, owned by the cluster manager `open-cluster-management`, and copies the cluster's
    /// state into its status.
    pub struct ClusterProfile {
        group: super::GROUP,
        version: "v1alpha1",
        plural: "clusterprofiles",
        scope: Namespaced,
        short_names: [],
        spec: ClusterProfileSpec,
        spec_required: true,
        status: ClusterProfileStatus,
        printer_columns: [],
        description: "One cluster of a multicluster inventory, as the cluster manager that owns it describes \
            it. OCM can keep one for each ManagedCluster in the namespaces its cluster sets are bound to.",
    }
}

/// Who owns a cluster profile and how to show it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileSpec {
    /// The cluster manager that owns the profile; it cannot change once set.
    #[schemars(extend("x-kubernetes-validations" = [
        {"rule": "self == oldSelf", "message": "ClusterManager is immutable"}
    ]))]
    pub cluster_manager: ClusterManager,
    /// A name for people to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// The cluster manager that owns a cluster profile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManager {
    /// The cluster manager's name; `open-cluster-management` for OCM.
    pub name: String,
}

/// The state of a cluster as its cluster manager reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileStatus {
    /// Ways to reach the cluster's API server, each named after its kind of access (such as
    /// `kubeconfig` or `oidc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_providers: Option<Vec<AccessProvider>>,
    /// The conditions of the cluster, such as whether it is healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Deprecated: use `accessProviders`. Clients use both lists; for a provider named in both,
    /// the entry in `accessProviders` wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_providers: Option<Vec<AccessProvider>>,
    /// Facts about the cluster: its ClusterProperties (About API) or whatever else its cluster
    /// manager reports, such as the claims of an OCM ManagedCluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Vec<Property>>,
    /// The cluster's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<ClusterVersion>,
}

/// A way to reach a cluster's API server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessProvider {
    /// Where the API server is and how to trust it, as in a kubeconfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<KubeconfigCluster>,
    /// The provider's name, which identifies the kind of access information.
    pub name: String,
}

/// The connection details of a cluster's API server, as the `cluster` of a kubeconfig's
/// `clusters` entry (with its kebab-case field names).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct KubeconfigCluster {
    /// The path of a file of PEM-encoded CA certificates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<String>,
    /// PEM-encoded CA certificates; wins over `certificate-authority`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::byte_string_schema")]
    pub certificate_authority_data: Option<ByteString>,
    /// Whether to ask the server not to compress responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_compression: Option<bool>,
    /// Extra information for the clients that understand it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<NamedExtension>>,
    /// Whether to skip verifying the server's certificate (insecure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// The URL of a proxy to reach the server through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
    /// The address of the API server, `https://host:port`.
    pub server: String,
    /// The server name to verify the server's certificate against, instead of the host of `server`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_server_name: Option<String>,
}

/// A named piece of extra information in a kubeconfig.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamedExtension {
    /// The information, a Kubernetes-style object kept as it is.
    #[schemars(schema_with = "crate::schema::preserved_object_schema")]
    pub extension: serde_json::Value,
    /// The extension's name.
    pub name: String,
}

/// A named fact about a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Property {
    /// When the fact was last observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_time: Option<Time>,
    /// The fact's name, e.g. `id.k8s.io`.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The fact's value.
    #[schemars(length(min = 1, max = 1024))]
    pub value: String,
}

/// The version of a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersion {
    /// The Kubernetes version, as `/version` reports it (`gitVersion`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_provider_uses_kubeconfig_field_names() {
        let json = serde_json::json!({
            "name": "open-cluster-management",
            "cluster": {
                "server": "https://east.example.com:6443",
                "certificate-authority-data": "Y2E=",
                "insecure-skip-tls-verify": false,
                "tls-server-name": "east",
                "extensions": [{"name": "client.authentication.k8s.io/exec",
                    "extension": {"clusterName": "east"}}]
            }
        });
        let provider: AccessProvider = serde_json::from_value(json.clone()).unwrap();
        let cluster = provider.cluster.as_ref().unwrap();
        assert_eq!(cluster.certificate_authority_data.as_ref().unwrap().0, b"ca");
        assert_eq!(cluster.tls_server_name.as_deref(), Some("east"));
        assert_eq!(serde_json::to_value(&provider).unwrap(), json);
    }
}
