//! `null` values as kube-apiserver's decoders treat them.
//!
//! Typed Go clients send `null` for every nil slice, map and pointer whose field lacks
//! `omitempty` (`"volumes": null`, `"creationTimestamp": null`, `"conditions": null` …), also
//! inside merge patches and list items. kube-apiserver never validates those nulls:
//!
//! - **Built-in kinds** are decoded into Go structs, where a `null` leaves the field at its zero
//!   value: a struct field disappears (and comes back as its zero value only if the field has no
//!   `omitempty`, which [`crate::registry::shapes`] restores), a `null` map value or list item of a
//!   string becomes `""`, of a number `0`, of a boolean `false`, of a struct `{}`.
//! - **Custom resources** are decoded as unstructured JSON, then apiextensions-apiserver drops every
//!   map member whose schema is neither `nullable` nor has a `default` (its
//!   `PruneNonNullableNullsWithoutDefaults`); members with a `default` are defaulted later
//!   (see [`crate::crd::schema`]); list items are left alone. `metadata` is decoded as a Go
//!   `ObjectMeta`, so its nulls vanish as a built-in's do.
//!
//! Both run after a patch has been applied and before defaulting and validation, in kube's order:
//! apply the patch → decode → default → validate. Server-side apply is the exception for custom
//! resources: kube-apiserver does not decode the merged object again, so its non-nullable nulls
//! reach validation and are refused with 422 (measured on v1.36.2); built-in kinds lose them in
//! the conversion to Go structs as on every other write. A `null` in a JSON merge patch is not a value
//! but "delete this key"; [`merge_patch`] applies merge patches with the semantics of the library
//! kube-apiserver uses, which also drops the nulls inside the objects a patch brings in.

use serde_json::{Map, Value};

use crate::registry::structure::{self, Node};

/// Removes the nulls a Go struct decoding of a built-in kind would not keep (see the module docs).
/// Kinds without a known structure only lose the nulls of their `metadata`.
pub fn prune_builtin(group: &str, resource: &str, object: &mut Value) {
    match structure::builtin_root(group, resource) {
        Some(root) => go_decode(object, root),
        None => prune_metadata(object),
    }
}

/// Removes the non-nullable nulls without a default from a custom resource (`schema`: the
/// addressed version's `openAPIV3Schema`), and the nulls of its `metadata`.
pub fn prune_custom(schema: &Value, object: &mut Value) {
    prune_non_nullable(object, Some(schema));
    prune_metadata(object);
}

fn prune_metadata(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata")
        && let Some(root) = structure::builtin_root("", "configmaps").and_then(|cm| cm.property("metadata"))
    {
        go_decode(meta, root);
    }
}

/// The zero value Go decodes a `null` map value or list item of this schema into, if it keeps
/// one (pointers, slices, maps and untyped values stay `null`).
fn zero_of(node: Node<'_>) -> Option<Value> {
    if node.is_int_or_string() {
        return None;
    }
    match node.type_name() {
        Some("string") => Some(Value::String(String::new())),
        Some("integer" | "number") => Some(Value::from(0)),
        Some("boolean") => Some(Value::Bool(false)),
        Some("object") if node.has_properties() => Some(Value::Object(Map::new())),
        _ => None,
    }
}

fn go_decode(value: &mut Value, node: Node<'_>) {
    if node.preserves_unknown_fields() && !node.has_properties() {
        // Raw JSON (`runtime.RawExtension`, `apiextensionsv1.JSON`): kept as sent.
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(values) = node.map_values() {
                for child in map.values_mut() {
                    if child.is_null() {
                        if let Some(zero) = zero_of(values) {
                            *child = zero;
                        }
                    } else {
                        go_decode(child, values);
                    }
                }
            } else if node.has_properties() {
                map.retain(|_, child| !child.is_null());
                for (key, child) in map.iter_mut() {
                    if let Some(field) = node.property(key) {
                        go_decode(child, field);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node.items() {
                for child in items.iter_mut() {
                    if child.is_null() {
                        if let Some(zero) = zero_of(item) {
                            *child = zero;
                        }
                    } else {
                        go_decode(child, item);
                    }
                }
            }
        }
        _ => {}
    }
}

fn non_nullable_without_default(schema: &Value) -> bool {
    schema.get("nullable").and_then(Value::as_bool) != Some(true)
        && schema.get("default").is_none_or(Value::is_null)
}

/// The schema of member `key` of an object of schema `schema`.
fn member_schema<'a>(schema: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    let schema = schema?;
    schema
        .get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
}

fn prune_non_nullable(value: &mut Value, schema: Option<&Value>) {
    match value {
        Value::Object(map) => {
            map.retain(|key, child| {
                !(child.is_null() && member_schema(schema, key).is_some_and(non_nullable_without_default))
            });
            for (key, child) in map.iter_mut() {
                prune_non_nullable(child, member_schema(schema, key));
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.get("items"));
            for child in items.iter_mut() {
                prune_non_nullable(child, item_schema);
            }
        }
        _ => {}
    }
}

/// Applies a JSON merge patch (RFC 7386) as kube-apiserver's merge-patch library does: a `null`
/// deletes its key, objects merge recursively, anything else replaces, and the values a patch
/// brings in lose the nulls of their objects, also inside lists (null list items stay).
pub fn merge_patch(doc: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *doc = without_object_nulls(patch);
        return;
    };
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    if let Value::Object(map) = doc {
        for (key, value) in patch {
            if value.is_null() {
                map.remove(key);
            } else {
                merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

fn without_object_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_object_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_object_nulls).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_in_nulls_become_go_zero_values() {
        let mut d = json!({"metadata": {"name": "d", "creationTimestamp": null, "labels": {"a": null}},
            "spec": {"replicas": null, "selector": {"matchLabels": {"app": "x"}}, "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "x"}},
                "spec": {"volumes": null, "nodeSelector": null, "containers": [
                    {"name": "c", "image": "i", "args": ["a", null], "resources": {}, "env": null},
                    null]}}},
            "status": {}});
        prune_builtin("apps", "deployments", &mut d);
        assert_eq!(
            d,
            json!({"metadata": {"name": "d", "labels": {"a": ""}},
            "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [
                    {"name": "c", "image": "i", "args": ["a", ""], "resources": {}}, {}]}}},
            "status": {}})
        );
    }

    #[test]
    fn raw_json_keeps_its_nulls() {
        let mut r = json!({"metadata": {"name": "r"}, "data": {"x": null}, "revision": 1});
        prune_builtin("apps", "controllerrevisions", &mut r);
        assert_eq!(r["data"], json!({"x": null}));
    }

    #[test]
    fn custom_nulls_follow_the_structural_schema() {
        let schema = json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "list": {"type": "array", "items": {"type": "object", "properties": {
                    "a": {"type": "string"}, "b": {"type": "string", "nullable": true}}}},
                "plain": {"type": "string"},
                "nullable": {"type": "string", "nullable": true},
                "defaulted": {"type": "string", "default": "d"},
                "map": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}});
        let mut o = json!({"metadata": {"name": "x", "creationTimestamp": null, "finalizers": null},
            "spec": {"list": [{"a": null, "b": null}, null], "plain": null, "nullable": null,
                "defaulted": null, "map": {"k": null}, "free": {"k": null}},
            "status": null});
        prune_custom(&schema, &mut o);
        assert_eq!(
            o,
            json!({"metadata": {"name": "x"},
            "spec": {"list": [{"b": null}, null], "nullable": null, "defaulted": null, "map": {},
                "free": {"k": null}},
            "status": null})
        );
    }

    #[test]
    fn merge_patches_delete_keys_and_drop_nulls_they_bring() {
        let mut doc = json!({"a": 1, "b": {"c": 2}, "l": [1]});
        merge_patch(
            &mut doc,
            &json!({"a": null, "b": {"c": null, "d": {"e": null, "f": 1}},
                "l": [{"x": null, "y": 1}, null], "n": {"m": null}}),
        );
        assert_eq!(doc, json!({"b": {"d": {"f": 1}}, "l": [{"y": 1}, null], "n": {}}));
    }
}
