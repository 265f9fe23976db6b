//! PATCH: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch applied to
//! the stored object, then written through the update loop; server-side apply is handed to
//! [`super::apply`].

use serde_json::{Value, json};

use super::strategic;
use super::{Api, Reply, RequestContext, decode, kinds};
use crate::registry::{ResourceInfo, shapes, structure};
use crate::status::ApiError;

impl Api {
    /// PATCH of the type `content_type` names; `force` (server-side apply only) takes fields
    /// other managers own.
    pub async fn patch(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        content_type: &str,
        body: &[u8],
        force: bool,
    ) -> Result<Reply, ApiError> {
        let mut warnings = Vec::new();
        let kind = content_type.split(';').next().unwrap_or_default().trim();
        if kind == "application/apply-patch+yaml" {
            return self.apply(info, ctx, body, force).await;
        }
        if force {
            return Err(super::apply::force_on_non_apply());
        }
        enum P {
            Merge(Value),
            Strategic(Value),
            Json(json_patch::Patch),
        }
        let patch = match kind {
            "application/merge-patch+json" => P::Merge(parse_patch(body)?),
            "application/strategic-merge-patch+json" if !info.is_custom() => P::Strategic(parse_patch(body)?),
            "application/json-patch+json" => {
                let v = parse_patch(body)?;
                if !v.is_array() {
                    return Err(ApiError::bad_request(format!(
                        "error decoding patch: json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                        crate::gojson::value_kind(&v)
                    )));
                }
                match serde_json::from_value::<json_patch::Patch>(v) {
                    Ok(p) => P::Json(p),
                    Err(_) => return Err(generic_invalid()),
                }
            }
            "application/strategic-merge-patch+json" | "application/apply-patch+cbor" => {
                return Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                ));
            }
            _ => {
                return Err(
                    ApiError::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
                        .with_details(json!({})),
                );
            }
        };
        let patch_rv = match &patch {
            P::Merge(v) | P::Strategic(v) => v
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            P::Json(_) => String::new(),
        };
        let registry = self.registry.clone();
        let info_c = info.clone();
        let field_validation = ctx.field_validation;
        let mut extra_warnings = Vec::new();
        let reply = self
            .write_loop(info, ctx, &patch_rv, &mut warnings, |current| {
                let mut target = current.clone();
                match &patch {
                    P::Merge(p) => super::nulls::merge_patch(&mut target, p),
                    P::Strategic(p) => {
                        let schema = structure::builtin_root(&info_c.group, &info_c.resource);
                        let invalid = |detail: String| {
                            let quoted = crate::gojson::quote(&strategic::go_print(p));
                            ApiError::new(
                                422,
                                "Invalid",
                                format!(" \"\" is invalid: patch: Invalid value: {quoted}: {detail}"),
                            )
                            .with_details(json!({"causes": [{"reason": "FieldValueInvalid",
                                "message": format!("Invalid value: {quoted}: {detail}"), "field": "patch"}]}))
                        };
                        target = strategic::apply(current, p, schema).map_err(|e| match e {
                            // kube-apiserver passes the merge library's own error through: a
                            // bare 500 (interpretStrategicMergePatchError's default).
                            strategic::StrategicMergeError::MissingMergeKey { .. } => {
                                ApiError::new(500, "", e.to_string())
                            }
                            other => invalid(other.to_string()),
                        })?;
                        if let Some(go_type) = schema.and_then(|s| strategic::first_type_mismatch(&target, s)) {
                            return Err(invalid(format!("unrecognized type: {go_type}")));
                        }
                    }
                    P::Json(p) => {
                        if apply_json_patch(&mut target, p).is_err() {
                            return Err(generic_invalid());
                        }
                    }
                }
                // The patched object as kube-apiserver's patch libraries print it (quoted in errors).
                let patched = target.clone();
                let shown = || {
                    let original = shapes::go_ordered(&info_c.group, &info_c.resource, current);
                    let go = match &patch {
                        P::Merge(p) | P::Strategic(p) => go_merge(&original, p),
                        P::Json(p) => go_json_patched(&patched, p),
                    };
                    crate::gojson::encode(&go)
                };
                let mut object = target;
                decode::check_type(&registry, &info_c, &mut object)?;
                if info_c.is_custom() {
                    crate::crd::schema::decode_custom(&info_c, &mut object, field_validation, &mut extra_warnings)?;
                } else {
                    super::nulls::prune_builtin(&info_c.group, &info_c.resource, &mut object);
                    if let Err(e) = decode::check_builtin_types(&info_c, &object) {
                        let detail = e.message.split_once(": ").map(|(_, d)| d.to_string()).unwrap_or(e.message);
                        let quoted = crate::gojson::quote(&shown());
                        return Err(ApiError::new(
                            422,
                            "Invalid",
                            format!(" \"\" is invalid: patch: Invalid value: {quoted}: {detail}"),
                        )
                        .with_details(json!({"causes": [{"reason": "FieldValueInvalid", "message": format!("Invalid value: {quoted}: {detail}"), "field": "patch"}]})));
                    }
                    crate::registry::shapes::normalize_decoded(&info_c.group, &info_c.resource, &mut object);
                    kinds::default(&info_c, &mut object);
                }
                Ok(object)
            })
            .await?;
        let mut reply = reply;
        reply.warnings.extend(extra_warnings);
        Ok(reply)
    }
}

/// Applies an RFC 6902 patch as kube-apiserver's JSON patch library does. It differs from the RFC in
/// one way clients rely on: a `test` for `null` passes when the member is absent from an object that
/// exists (kube-rs's `finalizer()` adds the first finalizer with `test /metadata/finalizers null`).
pub(super) fn apply_json_patch(
    target: &mut Value,
    patch: &json_patch::Patch,
) -> Result<(), json_patch::PatchError> {
    for op in patch.iter() {
        if let json_patch::PatchOperation::Test(t) = op
            && t.value.is_null()
            && absent_from_object(target, t.path.as_str())
        {
            continue;
        }
        json_patch::patch(target, std::slice::from_ref(op))?;
    }
    Ok(())
}

/// Whether the JSON pointer names a missing member of an existing object.
fn absent_from_object(doc: &Value, pointer: &str) -> bool {
    let Some((parent, token)) = pointer.rsplit_once('/') else {
        return false;
    };
    let key = token.replace("~1", "/").replace("~0", "~");
    matches!(doc.pointer(parent), Some(Value::Object(m)) if !m.contains_key(&key))
}

pub(super) fn parse_patch(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|_| {
        let go = crate::gojson::syntax_error(body).unwrap_or_else(|| "unexpected end of JSON input".into());
        ApiError::bad_request(format!("error decoding patch: {go}"))
    })
}

pub(super) fn generic_invalid() -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
    )
    .with_details(json!({}))
}

/// A JSON merge patch applied as kube-apiserver's library applies it to the encoded object: the
/// patched levels come out with sorted keys, untouched values keep their encoding, and patch values
/// that replace something are taken as sent (objects pruned of nulls, sorted).
pub fn go_merge(doc: &Value, patch: &Value) -> Value {
    let (Value::Object(doc), Value::Object(patch)) = (doc, patch) else {
        return prune_nulls(patch);
    };
    let mut merged = doc.clone();
    for (key, value) in patch {
        if value.is_null() {
            merged.remove(key);
            continue;
        }
        let next = match merged.get(key) {
            Some(current @ Value::Object(_)) if value.is_object() => go_merge(current, value),
            Some(Value::Object(_)) | None | Some(Value::Null) => prune_nulls(value),
            Some(_) if value.is_object() || value.is_array() => prune_nulls(value),
            Some(_) => value.clone(),
        };
        merged.insert(key.clone(), next);
    }
    let mut keys: Vec<&String> = merged.keys().collect();
    keys.sort();
    Value::Object(
        keys.into_iter()
            .map(|k| (k.clone(), merged[k.as_str()].clone()))
            .collect(),
    )
}

/// A patch value with nulls removed from its objects and every object's keys sorted.
fn prune_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().filter(|k| !map[k.as_str()].is_null()).collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), prune_nulls(&map[k.as_str()])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(prune_nulls).collect()),
        other => other.clone(),
    }
}

/// A JSON-patched object as kube-apiserver's library prints it: the top level and every object
/// an operation went through have sorted keys.
fn go_json_patched(result: &Value, patch: &json_patch::Patch) -> Value {
    let mut out = result.clone();
    sort_keys(&mut out);
    for op in patch.iter() {
        let path = match op {
            json_patch::PatchOperation::Add(o) => o.path.to_string(),
            json_patch::PatchOperation::Remove(o) => o.path.to_string(),
            json_patch::PatchOperation::Replace(o) => o.path.to_string(),
            json_patch::PatchOperation::Move(o) => o.path.to_string(),
            json_patch::PatchOperation::Copy(o) => o.path.to_string(),
            json_patch::PatchOperation::Test(o) => o.path.to_string(),
        };
        let mut pointer = String::new();
        for token in path.split('/').skip(1) {
            pointer.push('/');
            pointer.push_str(token);
            if let Some(node) = out.pointer_mut(&pointer) {
                sort_keys(node);
            }
        }
    }
    out
}

fn sort_keys(value: &mut Value) {
    if let Value::Object(map) = value {
        let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        map.extend(entries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_untouched_encoding() {
        let doc: Value = serde_json::from_str(
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"m","uid":"u"},"data":{"c":"3","a":"1"}}"#,
        )
        .unwrap();
        let patch = json!({"data": {"a": 5}});
        assert_eq!(
            go_merge(&doc, &patch).to_string(),
            r#"{"apiVersion":"v1","data":{"a":5,"c":"3"},"kind":"ConfigMap","metadata":{"name":"m","uid":"u"}}"#
        );
        let patch = json!({"data": null, "x": {"b": null, "z": 1, "a": 2}});
        assert_eq!(
            go_merge(&doc, &patch).to_string(),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m","uid":"u"},"x":{"a":2,"z":1}}"#
        );
    }
}
