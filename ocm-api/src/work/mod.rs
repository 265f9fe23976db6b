//! `work.open-cluster-management.io`: delivering Kubernetes objects from the hub to managed
//! clusters.
//!
//! | version | kinds |
//! |---|---|
//! | [`v1`] | [`ManifestWork`](v1::ManifestWork) (hub), [`AppliedManifestWork`](v1::AppliedManifestWork) (managed clusters) |
//! | [`v1alpha1`] | [`ManifestWorkReplicaSet`](v1alpha1::ManifestWorkReplicaSet) (hub) |

pub mod v1;
pub mod v1alpha1;

use crate::crd::{self, GeneratedCrd, InstallTarget, VersionedCrd};

/// The API group of this module.
pub const GROUP: &str = "work.open-cluster-management.io";

/// The CRDs of this group.
pub(crate) fn crds() -> crd::Result<Vec<GeneratedCrd>> {
    Ok(vec![
        GeneratedCrd {
            target: InstallTarget::Hub,
            crd: v1::ManifestWork::versioned_crd()?,
        },
        GeneratedCrd {
            target: InstallTarget::Managed,
            crd: v1::AppliedManifestWork::versioned_crd()?,
        },
        GeneratedCrd {
            target: InstallTarget::Hub,
            crd: v1alpha1::ManifestWorkReplicaSet::versioned_crd()?,
        },
    ])
}
