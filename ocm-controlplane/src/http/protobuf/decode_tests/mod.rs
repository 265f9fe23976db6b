//! Decoder tests: bytes a real kubectl sent, bytes encoded with k8s-pb's prost types compared with
//! the JSON k8s-openapi writes for the same object (`objects`, `special_forms`), hand-built edge
//! cases and malformed input (`wire_bytes`). This module holds their shared helpers.

mod objects;
mod special_forms;
mod wire_bytes;

use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message as _;
use serde_json::{Value, json};

use super::*;
use crate::registry::Registry;

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn map(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn quantity(v: &str) -> Quantity {
    Quantity { string: s(v) }
}

fn int_or_string_int(v: i32) -> IntOrString {
    IntOrString {
        r#type: Some(0),
        int_val: Some(v),
        str_val: None,
    }
}

fn int_or_string_str(v: &str) -> IntOrString {
    IntOrString {
        r#type: Some(1),
        int_val: None,
        str_val: s(v),
    }
}

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: s(api_version),
            kind: s(kind),
        }),
        raw: Some(raw),
        content_encoding: s(""),
        content_type: s(""),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

fn info(group: &str, version: &str, resource: &str) -> std::sync::Arc<ResourceInfo> {
    Registry::with_builtins().get(group, version, resource).unwrap()
}

fn decode_as(group: &str, version: &str, resource: &str, body: &[u8]) -> Result<Value, ApiError> {
    let bytes = object_body_to_json(&info(group, version, resource), body)?;
    Ok(serde_json::from_slice(&bytes).unwrap())
}

fn decode_ok(group: &str, version: &str, resource: &str, body: &[u8]) -> Value {
    decode_as(group, version, resource, body).unwrap()
}

fn error_of(group: &str, version: &str, resource: &str, body: &[u8]) -> ApiError {
    decode_as(group, version, resource, body).unwrap_err()
}

/// Drops nulls and empty objects, recursively: the zero structs Go always writes and k8s-openapi
/// leaves out. Zero numbers, `false` and empty strings stay, so pointer semantics are compared.
/// Integral floats compare as integers (k8s-openapi writes `0.0` where Go writes `0`).
fn prune(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Number(n) if n.is_f64() && n.as_f64().is_some_and(|f| f.fract() == 0.0) => {
            Some(json!(n.as_f64().unwrap_or_default() as i64))
        }
        Value::Object(m) => {
            let pruned: serde_json::Map<String, Value> = m
                .iter()
                .filter_map(|(k, v)| prune(v).map(|v| (k.clone(), v)))
                .collect();
            (!pruned.is_empty()).then_some(Value::Object(pruned))
        }
        Value::Array(items) => Some(Value::Array(
            items.iter().map(|i| prune(i).unwrap_or(json!({}))).collect(),
        )),
        other => Some(other.clone()),
    }
}

/// `expected` as k8s-openapi writes it (a round trip through its type), checked to lose nothing.
fn openapi<T: serde::de::DeserializeOwned + serde::Serialize>(expected: Value) -> Value {
    let typed: T = serde_json::from_value(expected.clone()).unwrap();
    let written = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        prune(&written),
        prune(&expected),
        "the expected JSON has fields k8s-openapi does not know"
    );
    written
}

fn assert_same(decoded: &Value, expected: &Value) {
    assert_eq!(
        prune(decoded),
        prune(expected),
        "decoded:\n{}\nexpected:\n{}",
        serde_json::to_string_pretty(decoded).unwrap(),
        serde_json::to_string_pretty(expected).unwrap()
    );
}
