//! `cluster.open-cluster-management.io`: managed clusters, cluster sets, placement and claims.
//!
//! | version | kinds |
//! |---|---|
//! | [`v1`] | [`ManagedCluster`](v1::ManagedCluster) |
//! | [`v1beta2`] | [`ManagedClusterSet`](v1beta2::ManagedClusterSet), [`ManagedClusterSetBinding`](v1beta2::ManagedClusterSetBinding) |
//! | [`v1beta1`] | [`Placement`](v1beta1::Placement), [`PlacementDecision`](v1beta1::PlacementDecision) |
//! | [`v1alpha1`] | [`ClusterClaim`](v1alpha1::ClusterClaim) (on managed clusters), [`AddOnPlacementScore`](v1alpha1::AddOnPlacementScore), rollout strategies |

pub mod v1;
pub mod v1alpha1;
pub mod v1beta1;
pub mod v1beta2;

use crate::crd::{self, GeneratedCrd, InstallTarget, VersionedCrd};

/// The API group of this module.
pub const GROUP: &str = "cluster.open-cluster-management.io";

/// The CRDs of this group.
pub(crate) fn crds() -> crd::Result<Vec<GeneratedCrd>> {
    let hub = |crd| GeneratedCrd {
        target: InstallTarget::Hub,
        crd,
    };
    Ok(vec![
        hub(v1::ManagedCluster::versioned_crd()?),
        hub(v1beta2::ManagedClusterSet::versioned_crd()?),
        hub(v1beta2::ManagedClusterSetBinding::versioned_crd()?),
        hub(v1beta1::Placement::versioned_crd()?),
        hub(v1beta1::PlacementDecision::versioned_crd()?),
        hub(v1alpha1::AddOnPlacementScore::versioned_crd()?),
        GeneratedCrd {
            target: InstallTarget::Managed,
            crd: v1alpha1::ClusterClaim::versioned_crd()?,
        },
    ])
}
