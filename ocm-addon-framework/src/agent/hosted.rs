//! The annotation-based [`HostedModeInfo`] (upstream's `constants.GetHostedModeInfo`): a
//! ManagedClusterAddOn annotated `addon.open-cluster-management.io/hosting-cluster-name` runs
//! Hosted on the named cluster, even with an empty value; any other runs in Default mode.

use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::annotations;

use super::{HostedMode, HostedModeInfo, InstallMode};

/// The hosting cluster from the ManagedClusterAddOn's annotation; see the [module docs](self).
#[derive(Clone, Copy, Debug, Default)]
pub struct HostingClusterAnnotation;

impl HostedModeInfo for HostingClusterAnnotation {
    fn mode(&self, addon: &ManagedClusterAddOn, _cluster: &ManagedCluster) -> InstallMode {
        match addon
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotations::HOSTING_CLUSTER_NAME))
        {
            Some(hosting) => InstallMode::Hosted {
                hosting_cluster: hosting.clone(),
            },
            None => InstallMode::Default,
        }
    }
}

impl HostedMode {
    /// Hosted mode decided by the `hosting-cluster-name` annotation ([`HostingClusterAnnotation`]).
    #[must_use]
    pub fn by_annotation() -> Self {
        Self {
            info: std::sync::Arc::new(HostingClusterAnnotation),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_annotation_chooses_hosted_mode() {
        let mut addon = ManagedClusterAddOn::default();
        let cluster = ManagedCluster::default();
        assert_eq!(
            HostingClusterAnnotation.mode(&addon, &cluster),
            InstallMode::Default
        );
        addon.metadata.annotations =
            Some([(annotations::HOSTING_CLUSTER_NAME.to_owned(), String::new())].into());
        assert_eq!(
            HostingClusterAnnotation.mode(&addon, &cluster),
            InstallMode::Hosted {
                hosting_cluster: String::new()
            }
        );
    }
}
