//! The v1alpha1 ClusterManagementAddOn: an add-on registered with the hub.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    AddOnConfiguration, AddOnMeta, ConfigReferent, DefaultConfigReference, InstallProgression,
    InstallStrategy,
};

crate::resource::custom_resource! {
    /// An add-on registered with the hub (v1alpha1, the version the hub stores).
    ///
    /// Cluster-scoped and named after the add-on: every ManagedClusterAddOn of the add-on has the
    /// same name. It lists the kinds of configuration the add-on takes, with their defaults, and
    /// how the add-on gets installed on clusters.
    pub struct ClusterManagementAddOn {
        group: crate::addon::GROUP,
        version: "v1alpha1",
        plural: "clustermanagementaddons",
        scope: Cluster,
        short_names: ["cma", "cmas"],
        spec: ClusterManagementAddOnSpec,
        spec_required: true,
        status: ClusterManagementAddOnStatus,
        printer_columns: [
            ("DISPLAY NAME", "string", ".spec.addOnMeta.displayName"),
            ("CRD NAME", "string", ".spec.addOnConfiguration.crdName"),
        ],
        description: "An add-on registered with the hub, named after the add-on. It lists the kinds of \
            configuration the add-on accepts, with their defaults, and how the add-on is installed on \
            managed clusters.",
    }
}

/// What an add-on is, which configuration it takes and how it is installed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManagementAddOnSpec {
    /// Deprecated: use `supportedConfigs`. The add-on's configuration, by CRD and object name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on_configuration: Option<AddOnConfiguration>,
    /// How the add-on presents itself to users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on_meta: Option<AddOnMeta>,
    /// How the add-on is installed on clusters; `Manual` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"type": "Manual"}))]
    pub install_strategy: Option<InstallStrategy>,
    /// The kinds of configuration the add-on accepts, one entry per group and resource, each
    /// with an optional default object. (v1beta1 calls these `defaultConfigs`.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend(
        "x-kubernetes-list-type" = "map",
        "x-kubernetes-list-map-keys" = ["group", "resource"]
    ))]
    pub supported_configs: Option<Vec<ConfigMeta>>,
}

/// A kind of configuration an add-on accepts, and its default object if there is one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMeta {
    /// The object used on clusters that configure nothing else for this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_config: Option<ConfigReferent>,
    /// The API group of the configuration resource; empty (the default) for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub group: Option<String>,
    /// The resource name (plural, lower case) of the configuration kind.
    #[schemars(length(min = 1))]
    pub resource: String,
}

/// The configurations the hub resolved for an add-on, and its rollout progress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManagementAddOnStatus {
    /// The default configuration object of each kind, with its spec hash. (The wire name has a
    /// lower-case `c` in this version.)
    #[serde(
        rename = "defaultconfigReferences",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub default_config_references: Option<Vec<DefaultConfigReference>>,
    /// For each placement of the install strategy, the configurations rolling out to its
    /// clusters and how far the rollout got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_progressions: Option<Vec<InstallProgression>>,
}
