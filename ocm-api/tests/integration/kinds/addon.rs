//! `addon.open-cluster-management.io` kinds, both versions.

use ocm_api::addon::{v1alpha1, v1beta1};
use serde_json::Value;

use crate::examples_roundtrip::roundtrip as rt;

pub fn roundtrip(api_version: &str, kind: &str, value: &Value) -> Option<Result<Value, String>> {
    Some(match (api_version, kind) {
        ("addon.open-cluster-management.io/v1alpha1", "ClusterManagementAddOn") => {
            rt::<v1alpha1::ClusterManagementAddOn>(value)
        }
        ("addon.open-cluster-management.io/v1alpha1", "ManagedClusterAddOn") => {
            rt::<v1alpha1::ManagedClusterAddOn>(value)
        }
        ("addon.open-cluster-management.io/v1alpha1", "AddOnDeploymentConfig") => {
            rt::<v1alpha1::AddOnDeploymentConfig>(value)
        }
        ("addon.open-cluster-management.io/v1alpha1", "AddOnTemplate") => {
            rt::<v1alpha1::AddOnTemplate>(value)
        }
        ("addon.open-cluster-management.io/v1beta1", "ClusterManagementAddOn") => {
            rt::<v1beta1::ClusterManagementAddOn>(value)
        }
        ("addon.open-cluster-management.io/v1beta1", "ManagedClusterAddOn") => {
            rt::<v1beta1::ManagedClusterAddOn>(value)
        }
        ("addon.open-cluster-management.io/v1beta1", "AddOnDeploymentConfig") => {
            rt::<v1beta1::AddOnDeploymentConfig>(value)
        }
        ("addon.open-cluster-management.io/v1beta1", "AddOnTemplate") => rt::<v1beta1::AddOnTemplate>(value),
        _ => return None,
    })
}
