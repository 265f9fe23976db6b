//! `cluster.open-cluster-management.io`: managed clusters, cluster sets, placement and claims.
//!
//! | version | kinds |
//! |---|---|
//! | [`v1`] | [`ManagedCluster`](v1::ManagedCluster) |
//! | [`v1alpha1`] | rollout strategies |

pub mod v1;
pub mod v1alpha1;

use crate::crd::{self, GeneratedCrd, InstallTarget, VersionedCrd};

/// The API group of this module.
pub const GROUP: &str = "cluster.open-cluster-management.io";

/// The CRDs of this group.
pub(crate) fn crds() -> crd::Result<Vec<GeneratedCrd>> {
    Ok(vec![GeneratedCrd {
        target: InstallTarget::Hub,
        crd: v1::ManagedCluster::versioned_crd()?,
    }])
}
