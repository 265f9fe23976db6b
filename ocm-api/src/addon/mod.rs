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
pub const CONTAINER_ID_PATTERN: &str =
    r"^(deployments|daemonsets|statefulsets|replicasets|jobs|cronjobs|pods|\*):.+:.+$";

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
