//! `addon.open-cluster-management.io`: add-ons, their per-cluster instances and their
//! configuration.
//!
//! Every kind is served in two versions; the hub stores v1alpha1.
//!
//! | version | kinds |
//! |---|---|
//! | [`v1alpha1`] (stored) | [`ClusterManagementAddOn`](v1alpha1::ClusterManagementAddOn), [`ManagedClusterAddOn`](v1alpha1::ManagedClusterAddOn), [`AddOnDeploymentConfig`](v1alpha1::AddOnDeploymentConfig), [`AddOnTemplate`](v1alpha1::AddOnTemplate) |
//! | [`v1beta1`] | the same four kinds |
//!
//! AddOnDeploymentConfig and AddOnTemplate have the same schema in both versions (v1beta1 uses
//! the v1alpha1 spec types). ClusterManagementAddOn and ManagedClusterAddOn differ, and
//! [`conversion`] converts them the way upstream OCM does.
//!
//! Upstream the hub converts with a webhook; the CRDs generated here have no conversion webhook
//! (strategy `None`): a server that serves them converts in-process with [`conversion`].

pub mod conversion;
pub mod v1alpha1;
pub mod v1beta1;

use crate::crd::{self, GeneratedCrd, InstallTarget, VersionedCrd};

/// The API group of this module.
pub const GROUP: &str = "addon.open-cluster-management.io";

/// The version the hub stores every add-on kind in.
pub const STORAGE_VERSION: &str = "v1alpha1";

/// The annotation that carries a v1alpha1 ManagedClusterAddOn's `spec.installNamespace` on its
/// v1beta1 form, where the field does not exist.
pub const INSTALL_NAMESPACE_ANNOTATION: &str = "addon.open-cluster-management.io/v1alpha1-install-namespace";

/// The config name a v1beta1 ClusterManagementAddOn's `defaultConfigs` entry has when its kind
/// of configuration is supported without a default (a v1alpha1 `supportedConfigs` entry without
/// `defaultConfig`). It is not a valid object name, so no real config can have it.
pub const RESERVED_NO_DEFAULT_CONFIG_NAME: &str = "__reserved_no_default__";

/// The signer of client certificates for the Kubernetes API server: a v1alpha1 registration with
/// it is a v1beta1 `kubeClient` registration.
pub const KUBE_API_SERVER_CLIENT_SIGNER_NAME: &str = "kubernetes.io/kube-apiserver-client";

/// The namespace add-on agents are installed in when nothing says otherwise.
pub const DEFAULT_AGENT_INSTALL_NAMESPACE: &str = "open-cluster-management-agent-addon";

/// The pattern of a certificate signer name, such as `example.com/signer-name`.
pub const SIGNER_NAME_PATTERN: &str = r"^([a-z0-9][a-z0-9-]*[a-z0-9]\.)+[a-z]+\/[a-z0-9-\.]+$";

/// The pattern of the v1alpha1 ManagedClusterAddOn `spec.installNamespace`: a DNS label.
pub const INSTALL_NAMESPACE_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// The pattern of AddOnDeploymentConfig `spec.agentInstallNamespace`: a DNS label, or empty.
pub const AGENT_INSTALL_NAMESPACE_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$";

/// The pattern of a customized variable's name.
pub const VARIABLE_NAME_PATTERN: &str = r"^[a-zA-Z_][_a-zA-Z0-9]*$";

/// The pattern of a container ID in AddOnDeploymentConfig `spec.resourceRequirements`:
/// `<resource>:<name>:<container>`.
pub const CONTAINER_ID_PATTERN: &str = r"^(deployments|daemonsets|statefulsets|replicasets|jobs|cronjobs|pods|\*):.+:.+$";

/// The CRDs of this group: each kind serving v1alpha1 (stored) and v1beta1.
pub(crate) fn crds() -> crd::Result<Vec<GeneratedCrd>> {
    let hub = |crds| -> crd::Result<GeneratedCrd> {
        Ok(GeneratedCrd {
            target: InstallTarget::Hub,
            crd: crd::merge_versions(crds, STORAGE_VERSION)?,
        })
    };
    Ok(vec![
        hub(vec![
            v1alpha1::ClusterManagementAddOn::versioned_crd()?,
            v1beta1::ClusterManagementAddOn::versioned_crd()?,
        ])?,
        hub(vec![
            v1alpha1::ManagedClusterAddOn::versioned_crd()?,
            v1beta1::ManagedClusterAddOn::versioned_crd()?,
        ])?,
        hub(vec![
            v1alpha1::AddOnDeploymentConfig::versioned_crd()?,
            v1beta1::AddOnDeploymentConfig::versioned_crd()?,
        ])?,
        hub(vec![
            v1alpha1::AddOnTemplate::versioned_crd()?,
            v1beta1::AddOnTemplate::versioned_crd()?,
        ])?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crd_stores_v1alpha1_and_serves_both_versions() {
        for generated in crds().unwrap() {
            let versions: Vec<_> = generated
                .crd
                .spec
                .versions
                .iter()
                .map(|v| (v.name.as_str(), v.served, v.storage))
                .collect();
            assert_eq!(
                versions,
                vec![("v1alpha1", true, true), ("v1beta1", true, false)],
                "{}",
                generated.name()
            );
            assert!(generated.crd.spec.conversion.is_none(), "{}", generated.name());
        }
    }
}
