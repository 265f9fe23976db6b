//! The v1beta1 AddOnDeploymentConfig; its spec is the v1alpha1 one.

use super::AddOnDeploymentConfigSpec;

crate::resource::custom_resource! {
    /// How an add-on agent is deployed on managed clusters (v1beta1).
    ///
    /// A ClusterManagementAddOn or ManagedClusterAddOn refers to it as configuration of group
    /// `addon.open-cluster-management.io` and resource `addondeploymentconfigs`. Its schema is
    /// the same in both versions.
    pub struct AddOnDeploymentConfig {
        group: crate::addon::GROUP,
        version: "v1beta1",
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
