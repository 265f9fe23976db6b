//! `about.k8s.io`: the SIG-Multicluster About API, with which a cluster describes itself. OCM
//! installs it on managed clusters.
//!
//! | version | kinds |
//! |---|---|
//! | [`v1alpha1`] | [`ClusterProperty`](v1alpha1::ClusterProperty) |

pub mod v1alpha1;

use crate::crd::{self, GeneratedCrd, InstallTarget, VersionedCrd};

/// The API group of this module.
pub const GROUP: &str = "about.k8s.io";

/// The CRDs of this group.
pub(crate) fn crds() -> crd::Result<Vec<GeneratedCrd>> {
    Ok(vec![GeneratedCrd {
        target: InstallTarget::Managed,
        crd: v1alpha1::ClusterProperty::versioned_crd()?,
    }])
}
