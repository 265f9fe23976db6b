//! `meta.k8s.io/v1` Table output: CRD printer columns and the usual columns of built-in kinds.

use futures::StreamExt;
use serde_json::{Value, json};

use crate::registry::ResourceInfo;
use crate::rest::watch::EventLines;

pub(super) const NAME_DESC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
pub(super) const AGE_DESC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const DATA_DESC: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";

pub(super) fn col(name: &str, ty: &str, format: &str, desc: &str, priority: i64) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": desc, "priority": priority})
}

/// The age of a timestamp as kubectl prints it ("5s", "3m", "2d").
pub fn age(ts: &str) -> String {
    let Ok(t) = chrono::DateTime::parse_from_rfc3339(ts) else {
        return "<unknown>".into();
    };
    let secs = (chrono::Utc::now() - t.with_timezone(&chrono::Utc))
        .num_seconds()
        .max(0);
    human_duration(secs)
}

/// A duration as kube's printers write it (`HumanDuration`: "90s", "5m30s", "5m", "60m", "3h10m",
/// "2d", "2y40d").
pub fn human_duration(secs: i64) -> String {
    let minutes = secs / 60;
    let hours = secs / 3600;
    let days = hours / 24;
    let with_rest = |major: String, rest: i64, unit: &str| {
        if rest == 0 {
            major
        } else {
            format!("{major}{rest}{unit}")
        }
    };
    match secs {
        s if s < 0 => "0s".to_string(),
        s if s < 120 => format!("{s}s"),
        _ if minutes < 10 => with_rest(format!("{minutes}m"), secs % 60, "s"),
        _ if minutes < 3 * 60 => format!("{minutes}m"),
        _ if hours < 8 => with_rest(format!("{hours}h"), minutes % 60, "m"),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 24 * 8 => with_rest(format!("{days}d"), hours % 24, "h"),
        _ if hours < 24 * 365 * 2 => format!("{days}d"),
        _ if hours < 24 * 365 * 8 => with_rest(format!("{}y", days / 365), days % 365, "d"),
        _ => format!("{}y", days / 365),
    }
}

fn int_at(o: &Value, pointer: &str) -> i64 {
    o.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn containers_field(o: &Value, field: &str) -> Value {
    let names: Vec<&str> = o
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c.get(field).and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    json!(names.join(","))
}

/// The `CONDITION` cell of a CertificateSigningRequest (`Pending`, `Approved,Issued`, ...).
fn csr_condition(o: &Value) -> Value {
    let mut parts: Vec<String> = o
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter(|c| {
                    c.get("status")
                        .and_then(Value::as_str)
                        .is_none_or(|s| s == "True")
                })
                .filter_map(|c| c.get("type").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if parts.is_empty() {
        parts.push("Pending".into());
    }
    if o.pointer("/status/certificate")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty())
    {
        parts.push("Issued".into());
    }
    json!(parts.join(","))
}

/// Evaluates the JSONPath subset printer columns use (`.a.b`, `[*]`, `[0]`, `[?(@.k=="v")]`).
pub fn json_path(v: &Value, path: &str) -> Vec<Value> {
    let mut cur = vec![v.clone()];
    let mut rest = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let field = &r[..end];
            cur = cur.iter().filter_map(|c| c.get(field).cloned()).collect();
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else { break };
            let inner = &r[..end];
            rest = &r[end + 1..];
            if inner == "*" {
                cur = cur
                    .iter()
                    .flat_map(|c| c.as_array().cloned().unwrap_or_default())
                    .collect();
            } else if let Ok(i) = inner.parse::<usize>() {
                cur = cur.iter().filter_map(|c| c.get(i).cloned()).collect();
            } else if let Some(f) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (k, want) = f.split_once("==").unwrap_or((f, ""));
                let want = want.trim().trim_matches('"').trim_matches('\'');
                cur = cur
                    .iter()
                    .flat_map(|c| c.as_array().cloned().unwrap_or_default())
                    .filter(|item| item.get(k.trim()).and_then(Value::as_str) == Some(want))
                    .collect();
            } else {
                return Vec::new();
            }
        } else {
            break;
        }
    }
    cur
}

fn cell(values: Vec<Value>, ty: &str) -> Value {
    if values.is_empty() {
        return Value::Null;
    }
    if ty == "date" {
        return values[0].as_str().map(|s| json!(age(s))).unwrap_or(Value::Null);
    }
    if values.len() == 1 {
        return values[0].clone();
    }
    json!(
        values
            .iter()
            .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// A column definition and how to compute its cell.
pub(super) type Column = (Value, Box<dyn Fn(&Value) -> Value>);

fn columns(info: &ResourceInfo) -> Vec<Column> {
    let name_col = (
        col("Name", "string", "name", NAME_DESC, 0),
        Box::new(|o: &Value| o.pointer("/metadata/name").cloned().unwrap_or(Value::Null))
            as Box<dyn Fn(&Value) -> Value>,
    );
    let age_fn = |o: &Value| {
        o.pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .map(|s| json!(age(s)))
            .unwrap_or(Value::Null)
    };
    let mut out = vec![name_col];
    if let Some(c) = &info.custom {
        if c.printer_columns.is_empty() {
            out.push((col("Age", "date", "", AGE_DESC, 0), Box::new(age_fn)));
        }
        for pc in &c.printer_columns {
            let name = pc
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let ty = pc
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("string")
                .to_string();
            let path = pc
                .get("jsonPath")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let desc = pc
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("Custom resource definition column (in JSONPath format): {path}"));
            let format = pc.get("format").and_then(Value::as_str).unwrap_or_default();
            let priority = pc.get("priority").and_then(Value::as_i64).unwrap_or(0);
            let ty2 = ty.clone();
            out.push((
                col(&name, &ty, format, &desc, priority),
                Box::new(move |o: &Value| cell(json_path(o, &path), &ty2)),
            ));
        }
        return out;
    }
    if let Some(columns) = super::table_kinds::columns(info) {
        return columns;
    }
    match (info.group.as_str(), info.resource.as_str()) {
        // Kinds served with kube-apiserver's default table convertor: the creation time itself.
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            out.push((
                col("Created At", "date", "", AGE_DESC, 0),
                Box::new(super::table_kinds::created_at),
            ));
            return out;
        }
        ("", "configmaps") => out.push((
            col("Data", "string", "", DATA_DESC, 0),
            Box::new(|o: &Value| {
                let n = o
                    .get("data")
                    .and_then(Value::as_object)
                    .map(|m| m.len())
                    .unwrap_or(0)
                    + o.get("binaryData")
                        .and_then(Value::as_object)
                        .map(|m| m.len())
                        .unwrap_or(0);
                json!(n)
            }),
        )),
        ("", "secrets") => {
            out.push((col("Type", "string", "", "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types", 0), Box::new(|o: &Value| o.get("type").cloned().unwrap_or(Value::Null))));
            out.push((col("Data", "string", "", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4", 0), Box::new(|o: &Value| json!(o.get("data").and_then(Value::as_object).map(|m| m.len()).unwrap_or(0)))));
        }
        ("apps", "deployments") => {
            out.push((
                col("Ready", "string", "", "Number of the pod with ready state", 0),
                Box::new(|o: &Value| {
                    json!(format!(
                        "{}/{}",
                        int_at(o, "/status/readyReplicas"),
                        int_at(o, "/spec/replicas")
                    ))
                }),
            ));
            out.push((
                col("Up-to-date", "string", "", "Total number of non-terminating pods targeted by this deployment that have the desired template spec.", 0),
                Box::new(|o: &Value| json!(int_at(o, "/status/updatedReplicas"))),
            ));
            out.push((
                col("Available", "string", "", "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.", 0),
                Box::new(|o: &Value| json!(int_at(o, "/status/availableReplicas"))),
            ));
            out.push((col("Age", "string", "", AGE_DESC, 0), Box::new(age_fn)));
            out.push((
                col(
                    "Containers",
                    "string",
                    "",
                    "Names of each container in the template.",
                    1,
                ),
                Box::new(|o: &Value| containers_field(o, "name")),
            ));
            out.push((
                col(
                    "Images",
                    "string",
                    "",
                    "Images referenced by each container in the template.",
                    1,
                ),
                Box::new(|o: &Value| containers_field(o, "image")),
            ));
            out.push((
                col("Selector", "string", "", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.", 1),
                Box::new(|o: &Value| {
                    let labels: Vec<String> = o
                        .pointer("/spec/selector/matchLabels")
                        .and_then(Value::as_object)
                        .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect())
                        .unwrap_or_default();
                    json!(labels.join(","))
                }),
            ));
            return out;
        }
        ("certificates.k8s.io", "certificatesigningrequests") => {
            out.push((col("Age", "string", "", AGE_DESC, 0), Box::new(age_fn)));
            out.push((
                col(
                    "SignerName",
                    "string",
                    "",
                    "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.",
                    0,
                ),
                Box::new(|o: &Value| o.pointer("/spec/signerName").cloned().unwrap_or(Value::Null)),
            ));
            out.push((
                col("Requestor", "string", "", "Base64-encoded PKCS#10 CSR data", 0),
                Box::new(|o: &Value| o.pointer("/spec/username").cloned().unwrap_or(json!(""))),
            ));
            out.push((
                col(
                    "RequestedDuration",
                    "string",
                    "",
                    "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.",
                    0,
                ),
                Box::new(
                    |o: &Value| match o.pointer("/spec/expirationSeconds").and_then(Value::as_i64) {
                        Some(s) => json!(human_duration(s)),
                        None => json!("<none>"),
                    },
                ),
            ));
            out.push((
                col(
                    "Condition",
                    "string",
                    "",
                    "Conditions applied to the request, such as approval or denial.",
                    0,
                ),
                Box::new(csr_condition),
            ));
            return out;
        }
        ("", "namespaces") => out.push((
            col("Status", "string", "", "The status of the namespace", 0),
            Box::new(|o: &Value| o.pointer("/status/phase").cloned().unwrap_or(Value::Null)),
        )),
        _ => {}
    }
    out.push((col("Age", "string", "", AGE_DESC, 0), Box::new(age_fn)));
    out
}

fn partial(object: &Value) -> Value {
    partial_as(object, "meta.k8s.io/v1")
}

fn partial_as(object: &Value, api_version: &str) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": object.get("metadata").cloned().unwrap_or(json!({}))})
}

/// The Table of an `autoscaling/v1` Scale, as kube-apiserver prints it (name, desired and
/// available replicas, age): with the built-in Scale printer for built-in kinds, with the
/// apiextensions-apiserver's columns (read from the Scale's JSON, so an omitted 0 prints as
/// nothing) for custom resources.
pub fn scale_table(scale: &Value, include_object: Option<&str>, api_version: &str, custom: bool) -> Value {
    let columns = if custom {
        [
            col("Name", "string", "name", NAME_DESC, 0),
            col("Desired", "integer", "", "Number of desired replicas", 0),
            col("Available", "integer", "", "Number of actual replicas", 0),
            col("Age", "date", "", AGE_DESC, 0),
        ]
    } else {
        [
            col("Name", "string", "", NAME_DESC, 0),
            col(
                "Desired",
                "integer",
                "",
                "replicas is the desired number of instances for the scaled object.",
                0,
            ),
            col(
                "Available",
                "integer",
                "",
                "replicas is the actual number of observed instances of the scaled object.",
                0,
            ),
            col("Age", "string", "", AGE_DESC, 0),
        ]
    };
    let number = |p: &str| match scale.pointer(p).and_then(Value::as_i64) {
        Some(n) => json!(n),
        None if custom => Value::Null,
        None => json!(0),
    };
    let created = scale
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .map_or_else(|| "<unknown>".to_string(), age);
    let cells = json!([
        scale.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
        number("/spec/replicas"),
        number("/status/replicas"),
        created,
    ]);
    let object = match include_object {
        Some("None") => Value::Null,
        Some("Object") => scale.clone(),
        _ => partial_as(scale, api_version),
    };
    json!({"kind": "Table", "apiVersion": api_version,
        "metadata": {"resourceVersion": scale.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null)},
        "columnDefinitions": columns, "rows": [{"cells": cells, "object": object}]})
}

/// An object as `PartialObjectMetadata`, a list as `PartialObjectMetadataList` (a Status unchanged).
pub fn to_partial(body: &Value) -> Value {
    if body.get("kind").and_then(Value::as_str) == Some("Status") {
        return body.clone();
    }
    match body.get("items").and_then(Value::as_array) {
        Some(items) => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": body.get("metadata").cloned().unwrap_or(json!({})),
            "items": items.iter().map(partial).collect::<Vec<_>>(),
        }),
        None => partial(body),
    }
}

/// How a watch presents the object of each event.
#[derive(Debug, Clone)]
pub enum WatchAs {
    /// A one-row Table (`includeObject` as for lists).
    Table(Option<String>),
    /// `PartialObjectMetadata`.
    Partial,
}

/// Re-encodes the object of every ADDED, MODIFIED and DELETED event (ERROR and BOOKMARK pass
/// unchanged). As kube-apiserver does, only the first Table carries column definitions; later
/// ones have `columnDefinitions: null` and clients keep the first.
pub fn transform_watch(info: &ResourceInfo, lines: EventLines, how: WatchAs) -> EventLines {
    let info = info.clone();
    let mut first = true;
    lines
        .map(move |line| {
            let Ok(mut event) = serde_json::from_slice::<Value>(&line) else {
                return line;
            };
            if !matches!(event["type"].as_str(), Some("ADDED" | "MODIFIED" | "DELETED")) {
                return line;
            }
            let object = event["object"].take();
            event["object"] = match &how {
                WatchAs::Partial => partial(&object),
                WatchAs::Table(include_object) => {
                    let mut table = to_table(&info, &object, include_object.as_deref());
                    if !first {
                        table["columnDefinitions"] = Value::Null;
                    }
                    first = false;
                    table
                }
            };
            let mut text = event.to_string();
            text.push('\n');
            bytes::Bytes::from(text)
        })
        .boxed()
}

/// Converts an object or list answer into a `meta.k8s.io/v1` Table.
pub fn to_table(info: &ResourceInfo, body: &Value, include_object: Option<&str>) -> Value {
    to_table_version(info, body, include_object, "meta.k8s.io/v1")
}

/// Converts an object or list answer into a Table of `api_version` (`meta.k8s.io/v1` or
/// `meta.k8s.io/v1beta1`; row objects as `PartialObjectMetadata` of the same version).
pub fn to_table_version(
    info: &ResourceInfo,
    body: &Value,
    include_object: Option<&str>,
    api_version: &str,
) -> Value {
    let cols = columns(info);
    let items: Vec<Value> = match body.get("items").and_then(Value::as_array) {
        Some(items) => items.clone(),
        None => vec![body.clone()],
    };
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let cells: Vec<Value> = cols.iter().map(|(_, f)| f(o)).collect();
            let object = match include_object {
                Some("None") => Value::Null,
                Some("Object") => {
                    let mut full = o.clone();
                    if let Some(m) = full.as_object_mut() {
                        m.insert("apiVersion".into(), json!(info.api_version()));
                        m.insert("kind".into(), json!(info.kind));
                    }
                    full
                }
                _ => partial_as(o, api_version),
            };
            json!({"cells": cells, "object": object})
        })
        .collect();
    let mut metadata = serde_json::Map::new();
    let rv = body
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or(Value::Null);
    metadata.insert("resourceVersion".into(), rv);
    if let Some(c) = body
        .pointer("/metadata/continue")
        .filter(|c| c.as_str().is_some_and(|c| !c.is_empty()))
    {
        metadata.insert("continue".into(), c.clone());
    }
    if let Some(r) = body.pointer("/metadata/remainingItemCount") {
        metadata.insert("remainingItemCount".into(), r.clone());
    }
    json!({"kind": "Table", "apiVersion": api_version, "metadata": metadata,
        "columnDefinitions": cols.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>(), "rows": rows})
}
