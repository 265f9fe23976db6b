//! The v1alpha1 AddOnTemplate: an add-on described entirely by manifests and registration
//! settings, without code of its own.
//!
//! The spec types are the same in v1beta1, which re-exports them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Subject;
use crate::{addon::SIGNER_NAME_PATTERN, work::v1::ManifestWorkSpec};

crate::resource::custom_resource! {
    /// An add-on described by a template (v1alpha1, the version the hub stores): the agent's
    /// manifests and the hub credentials the agent needs.
    ///
    /// A ClusterManagementAddOn selects it as configuration of resource `addontemplates`; the
    /// add-on manager renders the manifests for each cluster (replacing variables such as
    /// `{{CLUSTER_NAME}}`) and delivers them in a ManifestWork.
    pub struct AddOnTemplate {
        group: crate::addon::GROUP,
        version: "v1alpha1",
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

/// The agent manifests of a template add-on and its registration with the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnTemplateSpec {
    /// The name of the add-on the template belongs to.
    pub addon_name: String,
    /// The agent's manifests and how to apply them, as in a ManifestWork. Strings in the
    /// manifests may use variables such as `{{CLUSTER_NAME}}`, `{{HUB_KUBECONFIG}}` and the
    /// customized variables of an AddOnDeploymentConfig.
    pub agent_spec: ManifestWorkSpec,
    /// The credentials the agent gets for the hub, one per entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration: Option<Vec<RegistrationSpec>>,
}

/// One set of hub credentials for a template add-on's agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationSpec {
    /// With type `CustomSigner`: the signer and its CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_signer: Option<CustomSignerRegistrationConfig>,
    /// With type `KubeClient`: the permissions on the hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_client: Option<KubeClientRegistrationConfig>,
    /// The kind of credentials.
    #[serde(rename = "type")]
    pub type_: RegistrationType,
}

/// The kinds of credentials a template add-on's agent can get.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum RegistrationType {
    /// A client certificate for the hub API server, with the permissions listed.
    #[default]
    KubeClient,
    /// A certificate of a custom signer, signed by the add-on manager with a CA from a Secret.
    CustomSigner,
}

/// A certificate of a custom signer for a template add-on's agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomSignerRegistrationConfig {
    /// The signer's name, such as `example.com/signer-name`.
    #[schemars(length(min = 5, max = 571), regex(pattern = SIGNER_NAME_PATTERN))]
    pub signer_name: String,
    /// The Secret (of type `kubernetes.io/tls`) on the hub holding the signer's CA certificate
    /// and key.
    #[serde(rename = "signingCA")]
    pub signing_ca: SigningCARef,
    /// The subject of the certificate; when absent the hub chooses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
}

/// A Secret holding a signing CA.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SigningCARef {
    /// The name of the Secret.
    pub name: String,
    /// The namespace of the Secret; the add-on manager's namespace when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// The hub permissions of a template add-on's agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeClientRegistrationConfig {
    /// Roles bound to the agent's identity on the hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub_permissions: Option<Vec<HubPermissionConfig>>,
}

/// One role bound to a template add-on agent's identity on the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HubPermissionConfig {
    /// With type `CurrentCluster`: the ClusterRole to bind in the cluster's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_cluster: Option<CurrentClusterBindingConfig>,
    /// With type `SingleNamespace`: the role to bind and the namespace to bind it in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub single_namespace: Option<SingleNamespaceBindingConfig>,
    /// Where the role is bound.
    #[serde(rename = "type")]
    pub type_: HubPermissionsBindingType,
}

/// Where a hub role of a template add-on's agent is bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum HubPermissionsBindingType {
    /// In the namespace of the agent's own cluster, on every cluster.
    #[default]
    CurrentCluster,
    /// In one fixed namespace of the hub.
    SingleNamespace,
}

/// A ClusterRole bound in the namespace of the agent's cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CurrentClusterBindingConfig {
    /// The name of the ClusterRole.
    pub cluster_role_name: String,
}

/// A role bound in one namespace of the hub.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SingleNamespaceBindingConfig {
    /// The namespace to bind the role in.
    pub namespace: String,
    /// The Role or ClusterRole to bind.
    pub role_ref: RoleRef,
}

/// A Role or ClusterRole to bind (Kubernetes `rbacv1.RoleRef`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct RoleRef {
    /// The API group of the role: `rbac.authorization.k8s.io`.
    pub api_group: String,
    /// `Role` or `ClusterRole`.
    pub kind: String,
    /// The name of the role.
    pub name: String,
}
