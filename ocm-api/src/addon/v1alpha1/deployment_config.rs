//! The v1alpha1 AddOnDeploymentConfig: how an add-on agent is deployed on managed clusters.
//!
//! The spec types are the same in v1beta1, which re-exports them.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    addon::{AGENT_INSTALL_NAMESPACE_PATTERN, CONTAINER_ID_PATTERN, VARIABLE_NAME_PATTERN},
    meta::{ResourceRequirements, Toleration},
};

crate::resource::custom_resource! {
    /// How an add-on agent is deployed on managed clusters (v1alpha1, the version the hub stores).
    ///
    /// A ClusterManagementAddOn or ManagedClusterAddOn refers to it as configuration of group
    /// `addon.open-cluster-management.io` and resource `addondeploymentconfigs`.
    pub struct AddOnDeploymentConfig {
        group: crate::addon::GROUP,
        version: "v1alpha1",
        plural: "addondeploymentconfigs",
        scope: Namespaced,
        short_names: [],
        spec: AddOnDeploymentConfigSpec,
        spec_required: true,
        printer_columns: [],
        description: "How an add-on agent is deployed on managed clusters: install namespace, node \
            placement, image registries, proxy, resources and template variables. Add-ons refer to it \
            as configuration of resource addondeploymentconfigs.",
    }
}

/// How an add-on agent is deployed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnDeploymentConfigSpec {
    /// The namespace on the managed cluster where the agent runs;
    /// `open-cluster-management-agent-addon` when absent. An empty string keeps the namespace
    /// that the add-on's manifests name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 63),
        regex(pattern = AGENT_INSTALL_NAMESPACE_PATTERN),
        extend("default" = "open-cluster-management-agent-addon")
    )]
    pub agent_install_namespace: Option<String>,
    /// Name-value pairs that the add-on's manifests use as variables (`{{NAME}}` in an
    /// AddOnTemplate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub customized_variables: Option<Vec<CustomizedVariable>>,
    /// Which nodes the agent's pods run on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_placement: Option<NodePlacement>,
    /// The HTTP(S) proxy the agent uses to reach the hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_config: Option<ProxyConfig>,
    /// Image registry overrides for the agent's images. They take precedence over the image
    /// registries annotation of the ManagedCluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registries: Option<Vec<ImageMirror>>,
    /// Compute resources of the agent's containers, by container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["containerID"]))]
    pub resource_requirements: Option<Vec<ContainerResourceRequirements>>,
}

/// A variable that an add-on's manifests can use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomizedVariable {
    /// The variable's name: letters, digits and underscores, not starting with a digit.
    #[schemars(length(max = 255), regex(pattern = VARIABLE_NAME_PATTERN))]
    pub name: String,
    /// The variable's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub value: Option<String>,
}

/// Which nodes of the managed cluster the add-on agent's pods run on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePlacement {
    /// Labels a node must have to run the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Node taints the agent's pods tolerate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
}

/// The HTTP(S) proxy an add-on agent uses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyConfig {
    /// PEM-encoded CA certificates to verify an HTTPS proxy with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::byte_string_schema")]
    pub ca_bundle: Option<ByteString>,
    /// Proxy URL that add-on agents send plain HTTP traffic through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// Proxy URL that add-on agents send HTTPS traffic through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// Comma-separated hosts, domains and CIDRs reached without the proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
}

/// An image registry (or image) override: images from `source` are pulled from `mirror`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageMirror {
    /// The registry (or image) to pull from instead.
    pub mirror: String,
    /// The registry (or image) to replace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Compute resources for the containers an ID matches.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerResourceRequirements {
    /// Which containers: `<resource>:<name>:<container>`, where resource is `deployments`,
    /// `daemonsets`, `statefulsets`, `replicasets`, `jobs`, `cronjobs`, `pods` or `*`, and name
    /// and container may be `*`.
    #[serde(rename = "containerID")]
    #[schemars(regex(pattern = CONTAINER_ID_PATTERN))]
    pub container_id: String,
    /// The compute resources of those containers.
    pub resources: ResourceRequirements,
}
