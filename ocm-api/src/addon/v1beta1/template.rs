//! The v1beta1 AddOnTemplate; its spec is the v1alpha1 one.

use super::AddOnTemplateSpec;

crate::resource::custom_resource! {
    /// An add-on described by a template (v1beta1): the agent's manifests and the hub credentials
    /// the agent needs. Its schema is the same in both versions.
    pub struct AddOnTemplate {
        group: crate::addon::GROUP,
        version: "v1beta1",
        plural: "addontemplates",
        scope: Cluster,
        short_names: [],
        spec: AddOnTemplateSpec,
        spec_required: true,
        printer_columns: [
            ("ADDON NAME", "string", ".spec.addonName"),
        ],
        description: "An add-on described by a template: the manifests of its agent and the hub \
            credentials the agent needs. A ClusterManagementAddOn selects it as configuration of \
            resource addontemplates.",
    }
}
