//! Structural schemas of custom resources: pruning, defaulting and OpenAPI validation.
//!
//! Pruning drops fields the schema does not declare (unless `x-kubernetes-preserve-unknown-fields`),
//! reporting each as a warning (`unknown field "spec.bogus"`) or, with `fieldValidation=Strict`,
//! refusing the object with kube-apiserver's "strict decoding error". Defaulting applies `default`
//! values. Validation checks types, formats, enums, required, patterns, bounds, lengths and list
//! uniqueness, with causes worded as kube-apiserver's.

use base64::Engine;
use serde_json::{Map, Value};

use crate::registry::ResourceInfo;
use crate::rest::FieldValidation;
use crate::status::{ApiError, Cause};

fn schema(info: &ResourceInfo) -> Option<&Value> {
    info.custom.as_ref().map(|c| &c.schema).filter(|s| !s.is_null())
}

fn preserves(s: &Value) -> bool {
    s.get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

fn prune(v: &mut Value, s: &Value, path: &str, unknown: &mut Vec<String>, root: bool) {
    if s.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true) && !root {
        // Embedded objects keep apiVersion/kind/metadata.
    }
    match v {
        Value::Object(map) => {
            let props = s.get("properties").and_then(Value::as_object);
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            let keep_all = preserves(s);
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                if root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let embedded = s.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true);
                if embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let child_schema = props.and_then(|p| p.get(&k)).or(additional);
                match child_schema {
                    Some(cs) => {
                        if let Some(child) = map.get_mut(&k) {
                            prune(child, cs, &join(path, &k), unknown, false);
                        }
                    }
                    None if keep_all => {}
                    None => {
                        map.remove(&k);
                        unknown.push(join(path, &k));
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = s.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune(item, is, &format!("{path}[{i}]"), unknown, false);
                }
            }
        }
        _ => {}
    }
}

/// A value that takes the schema's default: absent, or a `null` the schema does not allow.
fn takes_default(v: Option<&Value>, s: &Value) -> bool {
    match v {
        None => true,
        Some(Value::Null) => s.get("nullable").and_then(Value::as_bool) != Some(true),
        Some(_) => false,
    }
}

/// Drops from a custom resource (`apiVersion`, `kind` and `metadata` kept) every field `schema`
/// does not declare, as kube-apiserver does after converting an object to a version: what the
/// version does not know is not served in it, nor stored in it.
pub(crate) fn prune_unknown(object: &mut Value, schema: &Value) {
    if schema.is_null() {
        return;
    }
    prune(object, schema, "", &mut Vec::new(), true);
}

fn apply_defaults(v: &mut Value, s: &Value) {
    match v {
        Value::Object(map) => {
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (k, ps) in props {
                    if let Some(d) = ps.get("default").filter(|d| !d.is_null())
                        && takes_default(map.get(k), ps)
                    {
                        map.insert(k.clone(), d.clone());
                    }
                    if let Some(child) = map.get_mut(k) {
                        apply_defaults(child, ps);
                    }
                }
            } else if let Some(add) = s.get("additionalProperties").filter(|a| a.is_object()) {
                for child in map.values_mut() {
                    default_null(child, add);
                    apply_defaults(child, add);
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = s.get("items") {
                for item in items {
                    default_null(item, is);
                    apply_defaults(item, is);
                }
            }
        }
        _ => {}
    }
}

/// A non-nullable `null` map value or list item becomes the schema's default, if it has one.
fn default_null(v: &mut Value, s: &Value) {
    if v.is_null()
        && takes_default(Some(v), s)
        && let Some(d) = s.get("default").filter(|d| !d.is_null())
    {
        *v = d.clone();
    }
}

/// Decoding of a custom resource body: pruning (with warnings or a strict error), removal of the
/// nulls the schema does not allow (see [`crate::rest::nulls`]) and defaulting.
pub fn decode_custom(
    info: &ResourceInfo,
    object: &mut Value,
    mode: FieldValidation,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    decode_custom_with(info, object, mode, warnings, true)
}

/// Decoding of the object server-side apply merged: as [`decode_custom`], but its nulls stay and
/// are validated (kube-apiserver's apply does not pass the merged object through the decoder that
/// drops them; a custom resource applied with `spec.x: null` is refused with 422).
pub fn decode_custom_applied(
    info: &ResourceInfo,
    object: &mut Value,
    mode: FieldValidation,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    decode_custom_with(info, object, mode, warnings, false)
}

fn decode_custom_with(
    info: &ResourceInfo,
    object: &mut Value,
    mode: FieldValidation,
    warnings: &mut Vec<String>,
    prune_nulls: bool,
) -> Result<(), ApiError> {
    let Some(s) = schema(info) else { return Ok(()) };
    let mut unknown = Vec::new();
    prune(object, s, "", &mut unknown, true);
    if prune_nulls {
        crate::rest::nulls::prune_custom(s, object);
    }
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        const KNOWN: &[&str] = &[
            "name",
            "generateName",
            "namespace",
            "selfLink",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "labels",
            "annotations",
            "ownerReferences",
            "finalizers",
            "managedFields",
        ];
        let keys: Vec<String> = meta.keys().cloned().collect();
        for k in keys {
            if !KNOWN.contains(&k.as_str()) {
                meta.remove(&k);
                unknown.push(format!("metadata.{k}"));
            }
        }
    }
    unknown.sort();
    match mode {
        FieldValidation::Strict if !unknown.is_empty() => {
            let list: Vec<String> = unknown.iter().map(|u| format!("unknown field \"{u}\"")).collect();
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
                info.kind,
                info.version,
                info.kind,
                list.join(", ")
            )));
        }
        FieldValidation::Warn => warnings.extend(unknown.iter().map(|u| format!("unknown field \"{u}\""))),
        _ => {}
    }
    apply_defaults(object, s);
    Ok(())
}

/// Defaulting of a stored custom resource (e.g. after a status write).
pub fn default_custom(info: &ResourceInfo, object: &mut Value) {
    if let Some(s) = schema(info) {
        apply_defaults(object, s);
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_ok(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

fn num_str(v: &Value) -> String {
    v.to_string()
}

fn validate_value(v: &Value, s: &Value, path: &str, out: &mut Vec<Cause>) {
    if v.is_null() && s.get("nullable").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let int_or_string = s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true);
    if int_or_string {
        if !(v.is_string() || v.is_i64() || v.is_u64()) {
            out.push(Cause::type_invalid(
                path,
                &Value::String(type_name(v).into()),
                &format!(
                    "{path} in body must be of type integer,string: \"{}\"",
                    type_name(v)
                ),
            ));
            return;
        }
    } else if let Some(ty) = s.get("type").and_then(Value::as_str)
        && !type_ok(ty, v)
    {
        let shown = Value::String(type_name(v).into());
        out.push(Cause::type_invalid(
            path,
            &shown,
            &format!("{path} in body must be of type {ty}: \"{}\"", type_name(v)),
        ));
        return;
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        let supported: Vec<String> = e
            .iter()
            .map(|x| x.as_str().map(str::to_string).unwrap_or_else(|| x.to_string()))
            .collect();
        out.push(Cause::not_supported(path, v, &supported));
    }
    match v {
        Value::String(st) => {
            if let Some(f) = s.get("format").and_then(Value::as_str)
                && f == "byte"
                && base64::engine::general_purpose::STANDARD.decode(st).is_err()
            {
                out.push(Cause::type_invalid(
                    path,
                    v,
                    &format!("{path} in body must be of type byte: {v}"),
                ));
            }
            if let Some(p) = s.get("pattern").and_then(Value::as_str)
                && let Ok(re) = regex::Regex::new(p)
                && !re.is_match(st)
            {
                out.push(Cause::invalid(
                    path,
                    v,
                    &format!("{path} in body should match '{p}'"),
                ));
            }
            let len = st.chars().count() as u64;
            if let Some(m) = s.get("maxLength").and_then(Value::as_u64)
                && len > m
            {
                out.push(Cause {
                    reason: "FieldValueTooLong".into(),
                    message: format!("Too long: may not be more than {m} bytes"),
                    field: path.into(),
                });
            }
            if let Some(m) = s.get("minLength").and_then(Value::as_u64)
                && len < m
            {
                out.push(Cause::invalid(
                    path,
                    v,
                    &format!("{path} in body should be at least {m} chars long"),
                ));
            }
        }
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            if let Some(max) = s.get("maximum")
                && f > max.as_f64().unwrap_or(f64::MAX)
            {
                out.push(Cause::invalid(
                    path,
                    v,
                    &format!("{path} in body should be less than or equal to {}", num_str(max)),
                ));
            }
            if let Some(min) = s.get("minimum")
                && f < min.as_f64().unwrap_or(f64::MIN)
            {
                out.push(Cause::invalid(
                    path,
                    v,
                    &format!(
                        "{path} in body should be greater than or equal to {}",
                        num_str(min)
                    ),
                ));
            }
        }
        Value::Array(items) => {
            if let Some(m) = s.get("maxItems").and_then(Value::as_u64)
                && items.len() as u64 > m
            {
                out.push(Cause {
                    reason: "FieldValueTooMany".into(),
                    message: format!("Too many: {}: must have at most {m} items", items.len()),
                    field: path.into(),
                });
            }
            if let Some(m) = s.get("minItems").and_then(Value::as_u64)
                && (items.len() as u64) < m
            {
                out.push(Cause::invalid(
                    path,
                    v,
                    &format!("{path} in body should have at least {m} items"),
                ));
            }
            if let Some(is) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate_value(item, is, &format!("{path}[{i}]"), out);
                }
            }
            match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => {
                    for (i, item) in items.iter().enumerate() {
                        if items[..i].contains(item) {
                            out.push(Cause {
                                reason: "FieldValueDuplicate".into(),
                                message: format!("Duplicate value: {item}"),
                                field: format!("{path}[{i}]"),
                            });
                        }
                    }
                }
                Some("map") => {
                    let keys: Vec<&str> = s
                        .get("x-kubernetes-list-map-keys")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    for (i, item) in items.iter().enumerate() {
                        let key: Vec<Option<&Value>> = keys.iter().map(|k| item.get(*k)).collect();
                        if items[..i]
                            .iter()
                            .any(|o| keys.iter().map(|k| o.get(*k)).collect::<Vec<_>>() == key)
                        {
                            let shown: Map<String, Value> = keys
                                .iter()
                                .zip(&key)
                                .filter_map(|(k, v)| v.map(|v| (k.to_string(), v.clone())))
                                .collect();
                            out.push(Cause {
                                reason: "FieldValueDuplicate".into(),
                                message: format!("Duplicate value: {}", Value::Object(shown)),
                                field: format!("{path}[{i}]"),
                            });
                        }
                    }
                }
                _ => {}
            }
        }
        Value::Object(map) => {
            if let Some(req) = s.get("required").and_then(Value::as_array) {
                for r in req.iter().filter_map(Value::as_str) {
                    if !map.contains_key(r) {
                        out.push(Cause::required(join(path, r), ""));
                    }
                }
            }
            let props = s.get("properties").and_then(Value::as_object);
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for k in keys {
                if path.is_empty() && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(cs) = props.and_then(|p| p.get(k.as_str())).or(additional)
                    && let Some(child) = map.get(k.as_str())
                {
                    validate_value(child, cs, &join(path, k), out);
                }
            }
        }
        _ => {}
    }
}

/// OpenAPI validation of a custom resource, then its CEL rules (`old`: the stored object of an
/// update, for transition rules).
pub fn validate_custom(info: &ResourceInfo, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let Some(s) = schema(info) else { return Vec::new() };
    let mut out = Vec::new();
    validate_value(object, s, "", &mut out);
    if let Some(rules) = info.custom.as_ref().and_then(|c| c.cel.as_ref()) {
        if super::cel::blocks_rules(&out) {
            out.push(super::cel::not_checked());
        } else {
            out.extend(super::cel::validate(rules, object, old));
        }
    }
    out
}
