//! Our generated CRDs against the upstream ones in `../shared/ocm-crds`: metadata annotations,
//! names, scope, versions, printer columns and, path by path, every validation-relevant keyword of
//! the schemas.
//! Descriptions are not compared: ours are written for users in our own words.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::shared;

/// Schema keywords compared at every path (descriptions are ours, and sub-schemas are walked).
const COMPARED_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "enum",
    "default",
    "nullable",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// Differences allowed on purpose: (CRD name, path, keyword) → reason.
const ALLOWED_DIFFERENCES: &[(&str, &str, &str, &str)] = &[(
    "clusterprofiles.multicluster.x-k8s.io",
    "metadata.annotations",
    "controller-gen.kubebuilder.io/version",
    "names the generator upstream's file came from; ours come from crdgen",
)];

/// Compares two schema nodes and everything under them, recording each difference by path.
fn compare_schema(path: &str, upstream: &Value, ours: &Value, diffs: &mut Vec<String>) {
    for keyword in COMPARED_KEYWORDS {
        let (a, b) = (upstream.get(*keyword), ours.get(*keyword));
        if !same_value(a, b) {
            diffs.push(format!(
                "{path}: {keyword}: upstream {} ours {}",
                show(a),
                show(b)
            ));
        }
    }
    let required = |v: &Value| -> BTreeSet<String> {
        v.get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let (ra, rb) = (required(upstream), required(ours));
    if ra != rb {
        diffs.push(format!("{path}: required: upstream {ra:?} ours {rb:?}"));
    }
    for combinator in ["anyOf", "allOf", "oneOf"] {
        let (a, b) = (upstream.get(combinator), ours.get(combinator));
        match (a.and_then(Value::as_array), b.and_then(Value::as_array)) {
            (Some(a), Some(b)) if a.len() == b.len() => {
                for (i, (x, y)) in a.iter().zip(b).enumerate() {
                    compare_schema(&format!("{path}.{combinator}[{i}]"), x, y, diffs);
                }
            }
            (None, None) => {}
            _ => diffs.push(format!(
                "{path}: {combinator}: upstream {} ours {}",
                show(a),
                show(b)
            )),
        }
    }
    let empty = serde_json::Map::new();
    let props = |v: &Value| {
        v.get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_else(|| empty.clone())
    };
    let (pa, pb) = (props(upstream), props(ours));
    for (name, child) in &pa {
        match pb.get(name) {
            Some(ours_child) => compare_schema(&format!("{path}.{name}"), child, ours_child, diffs),
            None => diffs.push(format!("{path}.{name}: missing in ours")),
        }
    }
    for name in pb.keys().filter(|name| !pa.contains_key(*name)) {
        diffs.push(format!("{path}.{name}: only in ours"));
    }
    for (key, suffix) in [("items", "[]"), ("additionalProperties", "{}")] {
        match (upstream.get(key), ours.get(key)) {
            (Some(a), Some(b)) => compare_schema(&format!("{path}{suffix}"), a, b, diffs),
            (None, None) => {}
            (a, b) => diffs.push(format!("{path}: {key}: upstream {} ours {}", show(a), show(b))),
        }
    }
}

/// Equality that treats `1` and `1.0` as the same number and compares objects key-wise.
fn same_value(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(Some(x), Some(y)))
        }
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.len() == y.len() && x.iter().all(|(k, v)| same_value(Some(v), y.get(k)))
        }
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "<absent>".to_owned(), Value::to_string)
}

/// Compares one upstream CRD with ours; returns the differences.
fn compare_crd(upstream: &Value, ours: &Value) -> Vec<String> {
    let mut diffs = compare_annotations(upstream, ours);
    let spec_a = &upstream["spec"];
    let spec_b = &ours["spec"];
    for field in ["group", "scope"] {
        if spec_a[field] != spec_b[field] {
            diffs.push(format!(
                "spec.{field}: upstream {} ours {}",
                spec_a[field], spec_b[field]
            ));
        }
    }
    for field in [
        "kind",
        "listKind",
        "plural",
        "singular",
        "shortNames",
        "categories",
    ] {
        if spec_a["names"].get(field) != spec_b["names"].get(field) {
            diffs.push(format!(
                "spec.names.{field}: upstream {} ours {}",
                show(spec_a["names"].get(field)),
                show(spec_b["names"].get(field))
            ));
        }
    }
    let versions = |spec: &Value| -> BTreeMap<String, Value> {
        spec["versions"]
            .as_array()
            .map(|vs| {
                vs.iter()
                    .map(|v| (v["name"].as_str().unwrap_or_default().to_owned(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (va, vb) = (versions(spec_a), versions(spec_b));
    if va.keys().collect::<Vec<_>>() != vb.keys().collect::<Vec<_>>() {
        diffs.push(format!("versions: upstream {:?} ours {:?}", va.keys(), vb.keys()));
    }
    for (name, a) in &va {
        let Some(b) = vb.get(name) else { continue };
        for field in ["served", "storage", "deprecated"] {
            if a.get(field) != b.get(field) {
                diffs.push(format!(
                    "{name}.{field}: upstream {} ours {}",
                    show(a.get(field)),
                    show(b.get(field))
                ));
            }
        }
        let status = |v: &Value| v.pointer("/subresources/status").is_some();
        if status(a) != status(b) {
            diffs.push(format!(
                "{name}.subresources.status: upstream {} ours {}",
                status(a),
                status(b)
            ));
        }
        let columns = |v: &Value| -> Vec<Value> {
            v.get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .map(|cols| {
                    cols.iter()
                        .map(|c| {
                            serde_json::json!({
                                "name": c["name"], "type": c["type"], "jsonPath": c["jsonPath"],
                                "format": c.get("format"), "priority": c.get("priority").filter(|p| **p != 0),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        if columns(a) != columns(b) {
            diffs.push(format!(
                "{name}.additionalPrinterColumns: upstream {:?} ours {:?}",
                columns(a),
                columns(b)
            ));
        }
        let schema = |v: &Value| {
            v.pointer("/schema/openAPIV3Schema")
                .cloned()
                .unwrap_or(Value::Null)
        };
        compare_schema(name, &schema(a), &schema(b), &mut diffs);
    }
    diffs
}

/// Compares `metadata.annotations` key by key (kube-apiserver acts on some of them, such as
/// `api-approved.kubernetes.io`).
fn compare_annotations(upstream: &Value, ours: &Value) -> Vec<String> {
    let annotations = |v: &Value| -> BTreeMap<String, Value> {
        v.pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    };
    let (a, b) = (annotations(upstream), annotations(ours));
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            format!(
                "metadata.annotations: {k}: upstream {} ours {}",
                show(a.get(k)),
                show(b.get(k))
            )
        })
        .collect()
}

/// Whether a difference is allowed on purpose.
fn allowed(crd: &str, diff: &str) -> bool {
    ALLOWED_DIFFERENCES
        .iter()
        .any(|(name, path, keyword, _reason)| *name == crd && diff.starts_with(&format!("{path}: {keyword}")))
}

#[test]
fn generated_crds_match_upstream() {
    let Some(shared) = shared::dir("generated_crds_match_upstream") else {
        return;
    };
    let ours: BTreeMap<String, Value> = ocm_api::crd::all()
        .unwrap()
        .into_iter()
        .map(|g| (g.name().to_owned(), serde_json::to_value(&g.crd).unwrap()))
        .collect();
    let mut report = Vec::new();
    let mut checked = 0;
    for dir in ["hub", "managed", "operator"] {
        for path in shared::yaml_files(&shared.join("ocm-crds").join(dir)) {
            let upstream = shared::read_yaml(&path);
            let name = upstream["metadata"]["name"].as_str().unwrap().to_owned();
            let Some(ours) = ours.get(&name) else {
                report.push(format!("{name}: no generated CRD"));
                continue;
            };
            checked += 1;
            for diff in compare_crd(&upstream, ours) {
                if !allowed(&name, &diff) {
                    report.push(format!("{name}: {diff}"));
                }
            }
        }
    }
    println!("compared {checked} CRDs");
    assert!(
        report.is_empty(),
        "{} differences from upstream:\n{}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn comparison_names_each_differing_annotation() {
    let upstream = serde_json::json!({"metadata": {"annotations": {
        "api-approved.kubernetes.io": "https://example.com/1", "same": "x"}}});
    let ours = serde_json::json!({"metadata": {"annotations": {"same": "x", "extra": "y"}}});
    assert_eq!(
        compare_annotations(&upstream, &ours),
        vec![
            "metadata.annotations: api-approved.kubernetes.io: upstream \"https://example.com/1\" ours <absent>"
                .to_owned(),
            "metadata.annotations: extra: upstream <absent> ours \"y\"".to_owned(),
        ]
    );
    assert!(allowed(
        "clusterprofiles.multicluster.x-k8s.io",
        "metadata.annotations: controller-gen.kubebuilder.io/version: upstream \"v0.17.3\" ours <absent>"
    ));
}

#[test]
fn committed_crds_are_fresh() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
    let mut stale = Vec::new();
    for generated in ocm_api::crd::all().unwrap() {
        let path = dir.join(generated.relative_path());
        let expected = ocm_api::crd::to_yaml(&generated.crd).unwrap();
        if std::fs::read_to_string(&path).ok().as_deref() != Some(expected.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale CRDs (run `cargo run -p ocm-api --bin crdgen`): {}",
        stale.join(", ")
    );
}

#[test]
fn comparison_names_each_differing_path() {
    let upstream = serde_json::json!({"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 3}, "b": {"type": "integer"}}, "required": ["a"]});
    let ours = serde_json::json!({"type": "object", "properties": {
        "a": {"type": "string"}, "c": {"type": "integer"}}});
    let mut diffs = Vec::new();
    compare_schema("v1", &upstream, &ours, &mut diffs);
    assert_eq!(
        diffs,
        vec![
            "v1: required: upstream {\"a\"} ours {}".to_owned(),
            "v1.a: maxLength: upstream 3 ours <absent>".to_owned(),
            "v1.b: missing in ours".to_owned(),
            "v1.c: only in ours".to_owned(),
        ]
    );
}
