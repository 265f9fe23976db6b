//! `cluster.open-cluster-management.io` kinds.

use ocm_api::cluster::{v1, v1alpha1, v1beta1, v1beta2};
use serde_json::Value;

use crate::examples_roundtrip::roundtrip as rt;

pub fn roundtrip(api_version: &str, kind: &str, value: &Value) -> Option<Result<Value, String>> {
    Some(match (api_version, kind) {
        ("cluster.open-cluster-management.io/v1", "ManagedCluster") => rt::<v1::ManagedCluster>(value),
        ("cluster.open-cluster-management.io/v1beta2", "ManagedClusterSet") => {
            rt::<v1beta2::ManagedClusterSet>(value)
        }
        ("cluster.open-cluster-management.io/v1beta2", "ManagedClusterSetBinding") => {
            rt::<v1beta2::ManagedClusterSetBinding>(value)
        }
        ("cluster.open-cluster-management.io/v1beta1", "Placement") => rt::<v1beta1::Placement>(value),
        ("cluster.open-cluster-management.io/v1beta1", "PlacementDecision") => {
            rt::<v1beta1::PlacementDecision>(value)
        }
        ("cluster.open-cluster-management.io/v1alpha1", "ClusterClaim") => {
            rt::<v1alpha1::ClusterClaim>(value)
        }
        ("cluster.open-cluster-management.io/v1alpha1", "AddOnPlacementScore") => {
            rt::<v1alpha1::AddOnPlacementScore>(value)
        }
        _ => return None,
    })
}
