//! `cluster.open-cluster-management.io` kinds.

use ocm_api::cluster::v1;
use serde_json::Value;

use crate::examples_roundtrip::roundtrip as rt;

pub fn roundtrip(api_version: &str, kind: &str, value: &Value) -> Option<Result<Value, String>> {
    Some(match (api_version, kind) {
        ("cluster.open-cluster-management.io/v1", "ManagedCluster") => rt::<v1::ManagedCluster>(value),
        _ => return None,
    })
}
