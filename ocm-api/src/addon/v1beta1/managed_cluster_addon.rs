//! The v1beta1 ManagedClusterAddOn: an add-on enabled on one managed cluster.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    AddOnConfig, AddOnMeta, ConfigGroupResource, ConfigSpecHash, HealthCheck, KubeClientDriver,
    ObjectReference,
};
use crate::{addon::SIGNER_NAME_PATTERN, meta::Condition};

crate::resource::custom_resource! {
    /// An add-on enabled on one managed cluster (v1beta1).
    ///
    /// It lives in the cluster's namespace on the hub and is named after the add-on (the name of
    /// its ClusterManagementAddOn). Its spec overrides configuration for this cluster; its status
    /// is written by the add-on manager and the cluster's agents. The hub stores v1alpha1 and
    /// converts (see [`crate::addon::conversion`]); the v1alpha1 `spec.installNamespace` is kept
    /// in the annotation [`V1ALPHA1_INSTALL_NAMESPACE`](crate::names::annotations::V1ALPHA1_INSTALL_NAMESPACE).
    pub struct ManagedClusterAddOn {
        group: crate::addon::GROUP,
        version: "v1beta1",
        plural: "managedclusteraddons",
        scope: Namespaced,
        short_names: ["mca", "mcas"],
        spec: ManagedClusterAddOnSpec,
        spec_required: true,
        status: ManagedClusterAddOnStatus,
        printer_columns: [
            ("Available", "string", ".status.conditions[?(@.type==\"Available\")].status"),
            ("Degraded", "string", ".status.conditions[?(@.type==\"Degraded\")].status"),
            ("Progressing", "string", ".status.conditions[?(@.type==\"Progressing\")].status"),
        ],
        description: "An add-on enabled on one managed cluster, in the cluster's namespace on the hub and \
            named after the add-on. Its spec overrides the add-on's configuration for this cluster; \
            the add-on manager and the cluster's agents report the add-on's state in its status.",
    }
}

/// How an add-on is configured on one cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterAddOnSpec {
    /// Configuration objects for this cluster; each replaces the add-on's configuration of the
    /// same kind (from its ClusterManagementAddOn) for this cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configs: Option<Vec<AddOnConfig>>,
}

/// The state of an add-on on one cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterAddOnStatus {
    /// How the add-on presents itself, copied from its ClusterManagementAddOn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on_meta: Option<AddOnMeta>,
    /// The state of the add-on: `Available`, `Degraded`, `Progressing`, `Configured`,
    /// `ManifestApplied`, `RegistrationApplied`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// The configuration objects the add-on uses on this cluster, one per kind, as the hub
    /// resolved them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_references: Option<Vec<ConfigReference>>,
    /// How the hub checks the add-on's health.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheck>,
    /// The namespace on the managed cluster for the add-on's hub credentials and lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The credentials the add-on agent gets for the hub, one per entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registrations: Option<Vec<RegistrationConfig>>,
    /// Objects related to the add-on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_objects: Option<Vec<ObjectReference>>,
    /// The kinds of configuration the add-on accepts, as its manager published them; `spec.configs`
    /// of other kinds are not supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend(
        "x-kubernetes-list-type" = "map",
        "x-kubernetes-list-map-keys" = ["group", "resource"]
    ))]
    pub supported_configs: Option<Vec<ConfigGroupResource>>,
}

/// The configuration object of one kind an add-on uses on a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReference {
    /// The configuration object the add-on should use, with its spec hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_config: Option<ConfigSpecHash>,
    /// The API group of the configuration resource; empty (the default) for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub group: Option<String>,
    /// The configuration object the add-on agent has applied, with its spec hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_config: Option<ConfigSpecHash>,
    /// The generation of the configuration object last seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_generation: Option<i64>,
    /// The resource name (plural, lower case) of the configuration kind.
    #[schemars(length(min = 1))]
    pub resource: String,
}

/// Credentials an add-on agent gets for the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationConfig {
    /// With type `customSigner`: the signer and the certificate subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_signer: Option<CustomSignerConfig>,
    /// With type `kubeClient`: how the agent authenticates and as whom.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_client: Option<KubeClientConfig>,
    /// The kind of credentials.
    #[serde(rename = "type")]
    pub type_: RegistrationConfigType,
}

/// The kinds of hub credentials of an add-on agent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum RegistrationConfigType {
    /// Credentials for the hub API server: a client certificate or a ServiceAccount token.
    #[default]
    #[serde(rename = "kubeClient")]
    KubeClient,
    /// A certificate of a custom signer.
    #[serde(rename = "customSigner")]
    CustomSigner,
}

/// Credentials of an add-on agent for the hub API server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeClientConfig {
    /// How the agent authenticates; the registration agent sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<KubeClientDriver>,
    /// The identity of the agent on the hub; when absent the hub chooses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<KubeClientSubject>,
}

/// The identity of an add-on agent on the hub API server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeClientSubject {
    /// The groups of the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    /// The user name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// A certificate of a custom signer for an add-on agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomSignerConfig {
    /// The signer's name, such as `example.com/signer-name`.
    #[schemars(length(min = 5, max = 571), regex(pattern = SIGNER_NAME_PATTERN))]
    pub signer_name: String,
    /// The subject of the certificate; when absent the hub chooses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<CustomSignerSubject>,
}

/// The subject of a custom signer's certificate: user, groups and organizational units.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomSignerSubject {
    /// The groups of the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    /// The organizational units of the certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization_units: Option<Vec<String>>,
    /// The user name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}
