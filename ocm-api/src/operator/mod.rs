//! `operator.open-cluster-management.io`: how the OCM operators install the hub and the agents.
//!
//! | version | kinds |
//! |---|---|
//! | [`v1`] | [`ClusterManager`](v1::ClusterManager) (hub), [`Klusterlet`](v1::Klusterlet) (managed clusters) |

pub mod v1;

use crate::crd::{self, GeneratedCrd, InstallTarget, VersionedCrd};

/// The API group of this module.
pub const GROUP: &str = "operator.open-cluster-management.io";

/// The CRDs of this group, installed together with the operators.
pub(crate) fn crds() -> crd::Result<Vec<GeneratedCrd>> {
    Ok(vec![
        GeneratedCrd {
            target: InstallTarget::Operator,
            crd: v1::ClusterManager::versioned_crd()?,
        },
        GeneratedCrd {
            target: InstallTarget::Operator,
            crd: v1::Klusterlet::versioned_crd()?,
        },
    ])
}
