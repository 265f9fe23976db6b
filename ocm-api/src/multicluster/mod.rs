//! `multicluster.x-k8s.io`: the SIG-Multicluster cluster inventory API, which OCM installs on the
//! hub and fills from its ManagedClusters.
//!
//! | version | kinds |
//! |---|---|
//! | [`v1alpha1`] | [`ClusterProfile`](v1alpha1::ClusterProfile) |

pub mod v1alpha1;

use crate::crd::{self, GeneratedCrd, InstallTarget, VersionedCrd};

/// The API group of this module.
pub const GROUP: &str = "multicluster.x-k8s.io";

/// The CRDs of this group.
pub(crate) fn crds() -> crd::Result<Vec<GeneratedCrd>> {
    Ok(vec![GeneratedCrd {
        target: InstallTarget::Hub,
        crd: v1alpha1::ClusterProfile::versioned_crd()?,
    }])
}
