//! The non-OCM kinds that OCM installs: `multicluster.x-k8s.io` and `about.k8s.io`.

use ocm_api::{about, multicluster};
use serde_json::Value;

use crate::examples_roundtrip::roundtrip as rt;

pub fn roundtrip(api_version: &str, kind: &str, value: &Value) -> Option<Result<Value, String>> {
    Some(match (api_version, kind) {
        ("multicluster.x-k8s.io/v1alpha1", "ClusterProfile") => {
            rt::<multicluster::v1alpha1::ClusterProfile>(value)
        }
        ("about.k8s.io/v1alpha1", "ClusterProperty") => rt::<about::v1alpha1::ClusterProperty>(value),
        _ => return None,
    })
}
