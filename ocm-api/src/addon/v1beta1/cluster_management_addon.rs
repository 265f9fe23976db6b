//! The v1beta1 ClusterManagementAddOn: an add-on registered with the hub.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AddOnConfig, AddOnMeta, DefaultConfigReference, InstallProgression, InstallStrategy};

crate::resource::custom_resource! {
    /// An add-on registered with the hub (v1beta1).
    ///
    /// Cluster-scoped and named after the add-on: every ManagedClusterAddOn of the add-on has the
    /// same name. It lists the kinds of configuration the add-on takes, with their defaults, and
    /// how the add-on gets installed on clusters. The hub stores v1alpha1 and converts (see
    /// [`crate::addon::conversion`]).
    pub struct ClusterManagementAddOn {
        group: crate::addon::GROUP,
        version: "v1beta1",
        plural: "clustermanagementaddons",
        scope: Cluster,
        short_names: ["cma", "cmas"],
        spec: ClusterManagementAddOnSpec,
        spec_required: true,
        status: ClusterManagementAddOnStatus,
        printer_columns: [
            ("DISPLAY NAME", "string", ".spec.addOnMeta.displayName"),
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
    /// How the add-on presents itself to users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on_meta: Option<AddOnMeta>,
    /// The kinds of configuration the add-on accepts, one entry per group and resource, each
    /// naming the default object of that kind. The name `__reserved_no_default__` says that the
    /// kind is accepted but has no default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend(
        "x-kubernetes-list-type" = "map",
        "x-kubernetes-list-map-keys" = ["group", "resource"]
    ))]
    pub default_configs: Option<Vec<AddOnConfig>>,
    /// How the add-on is installed on clusters; `Manual` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"type": "Manual"}))]
    pub install_strategy: Option<InstallStrategy>,
}

/// The configurations the hub resolved for an add-on, and its rollout progress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManagementAddOnStatus {
    /// The default configuration object of each kind, with its spec hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_config_references: Option<Vec<DefaultConfigReference>>,
    /// For each placement of the install strategy, the configurations rolling out to its
    /// clusters and how far the rollout got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_progressions: Option<Vec<InstallProgression>>,
}
