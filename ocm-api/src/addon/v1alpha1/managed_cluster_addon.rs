//! The v1alpha1 ManagedClusterAddOn: an add-on enabled on one managed cluster.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    AddOnConfig, AddOnConfiguration, AddOnMeta, ConfigGroupResource, ConfigSpecHash, HealthCheck,
    KubeClientDriver, ObjectReference,
};
use crate::{
    addon::{INSTALL_NAMESPACE_PATTERN, SIGNER_NAME_PATTERN},
    meta::Condition,
};

crate::resource::custom_resource! {
    /// An add-on enabled on one managed cluster (v1alpha1, the version the hub stores).
    ///
    /// It lives in the cluster's namespace on the hub and is named after the add-on (the name of
    /// its ClusterManagementAddOn). Its spec overrides configuration for this cluster; its status
    /// is written by the add-on manager and the cluster's agents.
    pub struct ManagedClusterAddOn {
        group: crate::addon::GROUP,
        version: "v1alpha1",
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
    /// Deprecated: use `agentInstallNamespace` of an AddOnDeploymentConfig. The namespace on the
    /// managed cluster where the add-on agent runs; `open-cluster-management-agent-addon` when
    /// absent. v1beta1 keeps it in the `addon.open-cluster-management.io/v1alpha1-install-namespace`
    /// annotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 63),
        regex(pattern = INSTALL_NAMESPACE_PATTERN),
        extend("default" = "open-cluster-management-agent-addon")
    )]
    pub install_namespace: Option<String>,
}

/// The state of an add-on on one cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterAddOnStatus {
    /// Deprecated: use `configReferences`. The add-on's configuration, by CRD and object name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on_configuration: Option<AddOnConfiguration>,
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
    /// How the agent authenticates with its kube client credentials (in v1beta1, the `driver` of
    /// each `kubeClient` registration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_client_driver: Option<KubeClientDriver>,
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
    /// Deprecated: use `desiredConfig`. The name of the configuration object.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Deprecated: use `desiredConfig`. The namespace of the configuration object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The resource name (plural, lower case) of the configuration kind.
    #[schemars(length(min = 1))]
    pub resource: String,
}

/// Credentials an add-on agent gets for the hub: a client certificate from a signer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationConfig {
    /// The signer of the certificate. `kubernetes.io/kube-apiserver-client` gives a client
    /// certificate for the hub API server; any other signer is a custom one.
    #[schemars(length(min = 5, max = 571), regex(pattern = SIGNER_NAME_PATTERN))]
    pub signer_name: String,
    /// The subject of the certificate; when absent the hub chooses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
}

/// The subject of a certificate: user, groups and organizational units.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// The groups of the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    /// The organizational units of the certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization_unit: Option<Vec<String>>,
    /// The user name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}
