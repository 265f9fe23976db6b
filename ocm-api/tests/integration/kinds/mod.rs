//! The type of every (apiVersion, kind), for the round-trip tests; one file per API group.

use serde_json::Value;

mod addon;
mod cluster;
mod operator;
mod other;
mod work;

/// Round-trips `value` through the type of `api_version`/`kind`, or `None` for an unknown kind.
pub fn roundtrip(api_version: &str, kind: &str, value: &Value) -> Option<Result<Value, String>> {
    cluster::roundtrip(api_version, kind, value)
        .or_else(|| work::roundtrip(api_version, kind, value))
        .or_else(|| operator::roundtrip(api_version, kind, value))
        .or_else(|| other::roundtrip(api_version, kind, value))
        .or_else(|| addon::roundtrip(api_version, kind, value))
}
