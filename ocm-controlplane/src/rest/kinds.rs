//! Kind-specific defaulting, preparation and validation of built-in kinds.
//!
//! Three stages, in kube-apiserver's order: `default` runs while decoding (its fields are recorded in
//! managedFields), `prepare` is the strategy's preparation after the field manager (status resets,
//! server-set fields), `validate` returns field causes for a 422.

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::registry::{ResourceInfo, Special};
use crate::status::Cause;
use crate::validation;

fn special(info: &ResourceInfo) -> Special {
    info.behavior.as_ref().map(|b| b.special).unwrap_or(Special::None)
}

fn meta_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    object
        .as_object_mut()?
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

/// Scheme defaulting (recorded in managedFields).
pub fn default(info: &ResourceInfo, object: &mut Value) {
    match special(info) {
        Special::Namespace => {
            let name = object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if let Some(meta) = meta_mut(object) {
                let labels = meta.entry("labels").or_insert_with(|| json!({}));
                if let Some(l) = labels.as_object_mut() {
                    l.insert("kubernetes.io/metadata.name".into(), json!(name));
                }
            }
        }
        Special::Secret => {
            if let Some(map) = object.as_object_mut() {
                if let Some(Value::Object(string_data)) = map.remove("stringData") {
                    let data = map.entry("data").or_insert_with(|| json!({}));
                    if !data.is_object() {
                        *data = json!({});
                    }
                    if let Some(d) = data.as_object_mut() {
                        for (k, v) in string_data {
                            let s = v.as_str().unwrap_or_default();
                            d.insert(k, json!(base64::engine::general_purpose::STANDARD.encode(s)));
                        }
                    }
                }
                let empty_type = map.get("type").and_then(Value::as_str).is_none_or(str::is_empty);
                if empty_type {
                    map.insert("type".into(), json!("Opaque"));
                }
            }
        }
        Special::Crd => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                // `preserveUnknownFields` is an omitempty bool in v1.
                if spec.get("preserveUnknownFields") == Some(&json!(false)) {
                    spec.remove("preserveUnknownFields");
                }
                spec.entry("conversion")
                    .or_insert_with(|| json!({"strategy": "None"}));
            }
        }
        _ => {
            super::kinds_workloads::default(info, object);
            validation::builtin::default(info, object);
        }
    }
}

/// Strategy preparation on create (after the field manager).
pub fn prepare_create(info: &ResourceInfo, object: &mut Value) {
    validation::builtin::prepare(info, object, None);
    if let Special::Namespace = special(info)
        && let Some(map) = object.as_object_mut()
    {
        let spec = map.entry("spec").or_insert_with(|| json!({}));
        if let Some(s) = spec.as_object_mut()
            && !s.contains_key("finalizers")
        {
            s.insert("finalizers".into(), json!(["kubernetes"]));
        }
        map.insert("status".into(), json!({"phase": "Active"}));
    }
}

/// The strategy's preparation of an update (after the field manager saw the request).
///
/// CertificateSigningRequest: conditions without `lastUpdateTime` get the current time; without
/// `lastTransitionTime` they keep the time of the stored condition of the same type and status,
/// else get the current time (kubectl's `certificate approve` sends neither).
pub fn prepare_update(info: &ResourceInfo, old: &Value, new: &mut Value) {
    validation::builtin::prepare(info, new, Some(old));
    if special(info) != Special::Csr {
        return;
    }
    let now = json!(crate::fieldmanager::now_rfc3339());
    let old_conditions = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(conditions) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let unset = |v: Option<&Value>| v.is_none_or(|t| t.is_null() || t.as_str() == Some(""));
    for condition in conditions.iter_mut() {
        let Some(c) = condition.as_object_mut() else {
            continue;
        };
        if unset(c.get("lastUpdateTime")) {
            c.insert("lastUpdateTime".into(), now.clone());
        }
        if unset(c.get("lastTransitionTime")) {
            let previous = old_conditions.iter().find(|o| {
                o.get("type") == c.get("type")
                    && o.get("status") == c.get("status")
                    && !unset(o.get("lastTransitionTime"))
            });
            let time = previous
                .and_then(|o| o.get("lastTransitionTime"))
                .cloned()
                .unwrap_or_else(|| now.clone());
            c.insert("lastTransitionTime".into(), time);
        }
    }
}

/// Validation of a new object on create (`old` = `None`) or update.
pub fn validate(info: &ResourceInfo, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    match special(info) {
        Special::ConfigMap | Special::Secret => {
            for field in ["data", "binaryData"] {
                if let Some(m) = object.get(field).and_then(Value::as_object) {
                    for k in m.keys() {
                        for e in validation::config_key(k) {
                            causes.push(Cause::invalid(format!("{field}[{k}]"), &json!(k), &e));
                        }
                    }
                }
            }
            if special(info) == Special::Secret {
                let ty = object.get("type").and_then(Value::as_str).unwrap_or("Opaque");
                let data = object.get("data").and_then(Value::as_object);
                let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
                let required: &[&str] = match ty {
                    "kubernetes.io/tls" => &["tls.crt", "tls.key"],
                    "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
                    "kubernetes.io/dockercfg" => &[".dockercfg"],
                    "kubernetes.io/ssh-auth" => &["ssh-privatekey"],
                    _ => &[],
                };
                for k in required {
                    if !has(k) {
                        causes.push(Cause::required(format!("data[{k}]"), ""));
                    }
                }
                if let Some(old) = old {
                    let old_ty = old.get("type").and_then(Value::as_str).unwrap_or("Opaque");
                    if old_ty != ty {
                        causes.push(Cause::invalid("type", &json!(ty), "field is immutable"));
                    }
                }
            }
            if let Some(old) = old
                && old.get("immutable").and_then(Value::as_bool) == Some(true)
            {
                for field in ["data", "binaryData"] {
                    if old.get(field) != object.get(field) {
                        causes.push(Cause::forbidden(
                            field,
                            "field is immutable when `immutable` is set",
                        ));
                    }
                }
                if object.get("immutable").and_then(Value::as_bool) != Some(true) {
                    causes.push(Cause::forbidden(
                        "immutable",
                        "field is immutable when `immutable` is set",
                    ));
                }
            }
        }
        Special::Crd => causes.extend(crate::crd::approval::validate(object, old)),
        Special::CoreEvent | Special::EventsEvent if old.is_none() => {
            causes.extend(super::kinds_events::validate_create(
                object,
                special(info) == Special::EventsEvent,
            ));
        }
        Special::Csr => {
            if let Some(old) = old
                && old.get("spec") != object.get("spec")
            {
                causes.push(Cause::invalid("spec", &Value::Null, "field is immutable"));
            }
            causes.extend(csr_conditions(object, old));
        }
        _ => {}
    }
    causes
}

/// The condition rules of a CSR's approval as kube-apiserver validates them: Approved and Denied
/// exclude each other, and an update may not remove an Approved, Denied or Failed condition.
fn csr_conditions(object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let types = |v: &Value| -> Vec<String> {
        v.pointer("/status/conditions")
            .and_then(Value::as_array)
            .map(|c| {
                c.iter()
                    .filter_map(|c| c.get("type").and_then(Value::as_str).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let new_types = types(object);
    let mut causes = Vec::new();
    if new_types.iter().any(|t| t == "Approved")
        && let Some(i) = new_types.iter().position(|t| t == "Denied")
    {
        causes.push(Cause::invalid(
            format!("status.conditions[{i}].type"),
            &json!("Denied"),
            "Approved and Denied conditions are mutually exclusive",
        ));
    }
    if let Some(old) = old {
        for kind in ["Approved", "Denied", "Failed"] {
            if types(old).iter().any(|t| t == kind) && !new_types.iter().any(|t| t == kind) {
                causes.push(Cause::forbidden(
                    "status.conditions",
                    &format!("updates may not remove a condition of type {kind:?}"),
                ));
            }
        }
    }
    causes
}
