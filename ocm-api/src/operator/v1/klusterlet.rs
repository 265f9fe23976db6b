//! The [`Klusterlet`] kind: how the klusterlet operator runs the agents of a managed cluster.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    EKS_CLUSTER_ARN_PATTERN, FeatureGate, HOSTNAME_PATTERN, NodePlacement, OperatorStatus,
    RegistrationAuthType, ResourceRequirement,
};

/// The pattern of a managed cluster name: a DNS label.
pub const CLUSTER_NAME_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// The pattern of the agent namespace: it starts with `open-cluster-management-`.
pub const AGENT_NAMESPACE_PATTERN: &str = r"^open-cluster-management-[-a-z0-9]*[a-z0-9]$";

/// The pattern of an IPv4 address.
pub const IPV4_PATTERN: &str =
    r"^(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)$";

/// The pattern of a duration in whole hours, minutes and seconds, such as `1h30m` or `10s`.
pub const DURATION_PATTERN: &str = r"^([0-9]+(s|m|h))+$";

/// The klusterlet mode that runs the registration and work agents on the managed cluster, the
/// default.
pub const KLUSTERLET_MODE_DEFAULT: &str = "Default";
/// The klusterlet mode that runs the agents on a hosting cluster, outside the managed cluster.
pub const KLUSTERLET_MODE_HOSTED: &str = "Hosted";
/// The klusterlet mode that runs registration and work as one agent on the managed cluster.
pub const KLUSTERLET_MODE_SINGLETON: &str = "Singleton";
/// The klusterlet mode that runs one combined agent on a hosting cluster.
pub const KLUSTERLET_MODE_SINGLETON_HOSTED: &str = "SingletonHosted";

crate::resource::custom_resource! {
    /// How the klusterlet operator runs the agents of a managed cluster: which cluster to register
    /// as, images, feature gates, and how to reach and authenticate to the hub.
    ///
    /// There is one per managed cluster, usually named `klusterlet`. The agents find the hub
    /// through the `bootstrap-hub-kubeconfig` Secret in the agent namespace.
    pub struct Klusterlet {
        group: super::super::GROUP,
        version: "v1",
        plural: "klusterlets",
        scope: Cluster,
        short_names: [],
        spec: KlusterletSpec,
        spec_required: false,
        status: OperatorStatus,
        printer_columns: [],
        description: "How the klusterlet operator runs the registration and work agents of a managed cluster: the \
            cluster name to register as, images, feature gates, and how to reach the hub.",
    }
}

/// How to run the agents of a managed cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KlusterletSpec {
    /// The name of the ManagedCluster to register as; generated when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63), regex(pattern = CLUSTER_NAME_PATTERN))]
    pub cluster_name: Option<String>,
    /// How and where the agents run; `Default` mode when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_option: Option<KlusterletDeployOption>,
    /// The API server addresses of this cluster as the hub should reach it, recorded in the
    /// ManagedCluster; taken from the local kubeconfig when absent.
    #[serde(
        rename = "externalServerURLs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub external_server_urls: Option<Vec<ServerUrl>>,
    /// A host name and IP address to add to the agents' `/etc/hosts`, for a hub API server whose
    /// name the cluster's DNS cannot resolve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub_api_server_host_alias: Option<HubApiServerHostAlias>,
    /// The image of the combined agent, in the `Singleton` modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_spec: Option<String>,
    /// The namespace of the agents; `open-cluster-management-agent` when absent. Add-ons go to
    /// `<namespace>-addon`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 57), regex(pattern = AGENT_NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
    /// Where the agents' pods are scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_placement: Option<NodePlacement>,
    /// The PriorityClass of the agents' pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Settings of the registration agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_configuration: Option<RegistrationConfiguration>,
    /// The image of the registration agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_image_pull_spec: Option<String>,
    /// The compute resources of the agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_requirement: Option<ResourceRequirement>,
    /// Settings of the work agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_configuration: Option<WorkAgentConfiguration>,
    /// The image of the work agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_image_pull_spec: Option<String>,
}

/// How and where the agents of a managed cluster run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KlusterletDeployOption {
    /// `Default`, `Hosted`, `Singleton` or `SingletonHosted` (see the `KLUSTERLET_MODE_*`
    /// constants); `Default` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// An API server address of the managed cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerUrl {
    /// PEM-encoded CA certificates to verify the API server with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::byte_string_schema")]
    pub ca_bundle: Option<ByteString>,
    /// The URL, `https://host:port`.
    pub url: String,
}

/// A host entry for the hub's API server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HubApiServerHostAlias {
    /// The host name of the hub's API server, as its kubeconfig names it.
    #[schemars(regex(pattern = HOSTNAME_PATTERN))]
    pub hostname: String,
    /// The IPv4 address the host name stands for.
    #[schemars(regex(pattern = IPV4_PATTERN))]
    pub ip: String,
}

/// Settings of the registration agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationConfiguration {
    /// How add-ons that need a Kubernetes client on the hub get their credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on_kube_client_registration_driver: Option<AddOnKubeClientRegistrationDriver>,
    /// Where the kubeconfigs to bootstrap with come from; the `bootstrap-hub-kubeconfig` Secret
    /// alone when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_kube_configs: Option<BootstrapKubeConfigs>,
    /// How long, in seconds, the client certificates the agent requests are valid; the hub's
    /// signer decides when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cert_expiration_seconds: Option<i32>,
    /// Annotations set on the ManagedCluster when the agent creates it; their keys must start
    /// with `agent.open-cluster-management.io/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_annotations: Option<BTreeMap<String, String>>,
    /// Limits on the ClusterClaims the agent reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_claim_configuration: Option<ClusterClaimConfiguration>,
    /// Labels set on the ManagedCluster when the agent creates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_labels: Option<BTreeMap<String, String>>,
    /// Feature gates to switch on or off; the others keep their defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_gates: Option<Vec<FeatureGate>>,
    /// The burst of the agent's client of the managed cluster's API; 100 when absent.
    #[serde(rename = "kubeAPIBurst", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 100))]
    pub kube_api_burst: Option<i32>,
    /// The queries per second of the agent's client of the managed cluster's API; 50 when absent.
    #[serde(rename = "kubeAPIQPS", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 50))]
    pub kube_api_qps: Option<i32>,
    /// How the agent authenticates to the hub; `csr` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_driver: Option<RegistrationDriver>,
}

/// How add-ons that need a Kubernetes client on the hub get their credentials.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnKubeClientRegistrationDriver {
    /// The kind of credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_type: Option<AddOnKubeClientAuthType>,
    /// Settings of the `token` auth type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<TokenConfig>,
}

/// The kinds of credentials add-ons get for the hub.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum AddOnKubeClientAuthType {
    /// A client certificate, requested with a CertificateSigningRequest.
    #[default]
    #[serde(rename = "csr")]
    Csr,
    /// A service account token.
    #[serde(rename = "token")]
    Token,
}

/// Settings of service account tokens for add-ons.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenConfig {
    /// How long, in seconds, a token is valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_seconds: Option<i64>,
}

/// Where the kubeconfigs the registration agent bootstraps with come from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapKubeConfigs {
    /// The Secrets, for type `LocalSecrets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_secrets_config: Option<LocalSecretsConfig>,
    /// The source. The API server sets `None` when it is absent.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = "None"))]
    pub type_: Option<BootstrapKubeConfigsType>,
}

/// The sources of bootstrap kubeconfigs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum BootstrapKubeConfigsType {
    /// Only the `bootstrap-hub-kubeconfig` Secret.
    #[default]
    None,
    /// A list of Secrets in the agent namespace, one per hub the agent may join, tried in order
    /// (the `MultipleHubs` feature).
    LocalSecrets,
}

/// Bootstrap kubeconfigs from Secrets in the agent namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalSecretsConfig {
    /// How long, in seconds, the agent waits on an unreachable hub before trying the next one;
    /// at least 180, and 600 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 180), extend("default" = 600))]
    pub hub_connection_timeout_seconds: Option<i32>,
    /// The Secrets, each holding a kubeconfig under the key `kubeconfig`, in order of preference.
    pub kube_config_secrets: Vec<KubeConfigSecret>,
}

/// A Secret holding a bootstrap kubeconfig.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfigSecret {
    /// The name of the Secret.
    pub name: String,
}

/// Limits on the ClusterClaims the registration agent reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterClaimConfiguration {
    /// How many custom (not reserved) claims the agent reports at most. The API server sets 20
    /// when it is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = 20))]
    pub max_custom_cluster_claims: Option<i32>,
    /// Name suffixes of claims that count as reserved, so are always reported; at most 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10), inner(length(min = 1, max = 64)))]
    pub reserved_cluster_claim_suffixes: Option<Vec<String>>,
}

/// How the registration agent authenticates to the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationDriver {
    /// The auth type. The API server sets `csr` when it is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = "csr"))]
    pub auth_type: Option<RegistrationAuthType>,
    /// Settings of the `awsirsa` auth type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_irsa: Option<AwsIrsa>,
}

/// The EKS clusters of registration through AWS IAM roles for service accounts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AwsIrsa {
    /// The ARN of the hub's EKS cluster.
    #[schemars(length(min = 1), regex(pattern = EKS_CLUSTER_ARN_PATTERN))]
    pub hub_cluster_arn: String,
    /// The ARN of this managed cluster's EKS cluster.
    #[schemars(length(min = 1), regex(pattern = EKS_CLUSTER_ARN_PATTERN))]
    pub managed_cluster_arn: String,
}

/// Settings of the work agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkAgentConfiguration {
    /// How long an AppliedManifestWork whose ManifestWork is gone from the hub is kept before it
    /// and its objects are deleted, e.g. `1h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub applied_manifest_work_eviction_grace_period: Option<String>,
    /// Feature gates to switch on or off; the others keep their defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_gates: Option<Vec<FeatureGate>>,
    /// The burst of the agent's client of the hub's API; 100 when absent.
    #[serde(rename = "hubKubeAPIBurst", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 100))]
    pub hub_kube_api_burst: Option<i32>,
    /// The queries per second of the agent's client of the hub's API; 50 when absent.
    #[serde(rename = "hubKubeAPIQPS", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 50))]
    pub hub_kube_api_qps: Option<i32>,
    /// The burst of the agent's client of the managed cluster's API; 100 when absent.
    #[serde(rename = "kubeAPIBurst", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 100))]
    pub kube_api_burst: Option<i32>,
    /// The queries per second of the agent's client of the managed cluster's API; 50 when absent.
    #[serde(rename = "kubeAPIQPS", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 50))]
    pub kube_api_qps: Option<i32>,
    /// How often the agent updates the status of ManifestWorks, e.g. `10s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub status_sync_interval: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural_schema;

    #[test]
    fn upper_case_wire_names_round_trip() {
        let json = serde_json::json!({
            "externalServerURLs": [{"url": "https://localhost"}],
            "workConfiguration": {"hubKubeAPIQPS": 20, "kubeAPIBurst": 200},
            "registrationConfiguration": {"kubeAPIQPS": 10, "registrationDriver": {"authType": "grpc"}},
        });
        let spec: KlusterletSpec = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(
            spec.work_configuration.as_ref().unwrap().hub_kube_api_qps,
            Some(20)
        );
        let registration = spec.registration_configuration.as_ref().unwrap();
        assert_eq!(
            registration.registration_driver.as_ref().unwrap().auth_type,
            Some(RegistrationAuthType::Grpc)
        );
        assert_eq!(serde_json::to_value(&spec).unwrap(), json);
    }

    #[test]
    fn claim_suffixes_are_bounded() {
        let schema = structural_schema::<ClusterClaimConfiguration>();
        let suffixes = &schema["properties"]["reservedClusterClaimSuffixes"];
        assert_eq!(suffixes["maxItems"], 10);
        assert_eq!(suffixes["items"]["minLength"], 1);
        assert_eq!(suffixes["items"]["maxLength"], 64);
        assert_eq!(schema["required"], serde_json::json!(["maxCustomClusterClaims"]));
    }
}
