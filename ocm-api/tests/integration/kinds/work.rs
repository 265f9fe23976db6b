//! `work.open-cluster-management.io` kinds.

use ocm_api::work::{v1, v1alpha1};
use serde_json::Value;

use crate::examples_roundtrip::roundtrip as rt;

pub fn roundtrip(api_version: &str, kind: &str, value: &Value) -> Option<Result<Value, String>> {
    Some(match (api_version, kind) {
        ("work.open-cluster-management.io/v1", "ManifestWork") => rt::<v1::ManifestWork>(value),
        ("work.open-cluster-management.io/v1", "AppliedManifestWork") => rt::<v1::AppliedManifestWork>(value),
        ("work.open-cluster-management.io/v1alpha1", "ManifestWorkReplicaSet") => {
            rt::<v1alpha1::ManifestWorkReplicaSet>(value)
        }
        _ => return None,
    })
}
