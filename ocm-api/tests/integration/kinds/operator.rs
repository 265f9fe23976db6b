//! `operator.open-cluster-management.io` kinds.

use ocm_api::operator::v1;
use serde_json::Value;

use crate::examples_roundtrip::roundtrip as rt;

pub fn roundtrip(api_version: &str, kind: &str, value: &Value) -> Option<Result<Value, String>> {
    Some(match (api_version, kind) {
        ("operator.open-cluster-management.io/v1", "ClusterManager") => rt::<v1::ClusterManager>(value),
        ("operator.open-cluster-management.io/v1", "Klusterlet") => rt::<v1::Klusterlet>(value),
        _ => return None,
    })
}
