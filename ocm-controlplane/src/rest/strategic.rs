//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds.
//!
//! A JSON merge patch whose lists can merge: a list whose schema says
//! `x-kubernetes-patch-strategy: merge` merges its items by `x-kubernetes-patch-merge-key`
//! (containers by `name`, ports by `containerPort`, ...) or, for lists of scalars, as a set; other
//! lists are replaced. Directives:
//! - `$patch: replace` in a map replaces it whole; as a list item, the list is replaced by the
//!   other items; `$patch: delete` deletes a map, or the list item with the given merge key;
//!   `$patch: merge` is the default;
//! - `$deleteFromPrimitiveList/<field>: [..]` removes values from a list of scalars;
//! - `$setElementOrder/<field>: [..]` orders a merged list (items are named by merge key, or are
//!   the scalars themselves); items the order does not name keep their place after the named ones;
//! - `$retainKeys: [..]` (fields with strategy `retainKeys`) drops every other key of the map;
//! - `null` deletes a field.
//!
//! Directives never reach the stored object. The structure of built-in kinds comes from
//! [`crate::registry::structure`].

use serde_json::{Map, Value};

use crate::registry::structure::Node;

/// A strategic merge patch that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategicMergeError {
    /// A list item of a merging list lacks the list's merge key.
    #[error("map: {item} does not contain declared merge key: {key}")]
    MissingMergeKey {
        /// The item, printed as Go prints a map.
        item: String,
        /// The merge key.
        key: String,
    },
    /// `$patch` has a value other than replace, delete or merge.
    #[error("Unknown patch type: {0}")]
    UnknownDirective(String),
    /// A directive's value has the wrong shape.
    #[error("invalid {directive} directive: {why}")]
    InvalidDirective {
        /// The directive (`$setElementOrder/containers`).
        directive: String,
        /// What is wrong.
        why: String,
    },
}

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// `original` with `patch` applied; `schema` describes `original`'s type (`None`: unknown
/// structure, lists are replaced).
///
/// # Errors
/// A malformed directive or a list item without its merge key.
pub fn apply(
    original: &Value,
    patch: &Value,
    schema: Option<Node<'_>>,
) -> Result<Value, StrategicMergeError> {
    match (original, patch) {
        (Value::Object(o), Value::Object(p)) => {
            Ok(merge_map(o, p, schema)?.map_or(Value::Null, Value::Object))
        }
        (_, Value::Object(p)) => Ok(merge_map(&Map::new(), p, schema)?.map_or(Value::Null, Value::Object)),
        _ => Ok(strip_directives(patch)),
    }
}

fn child_schema<'a>(schema: Option<Node<'a>>, key: &str) -> Option<Node<'a>> {
    let s = schema?;
    s.property(key).or_else(|| s.map_values())
}

/// Merges a patch map into an original map; `None` when the patch deletes the map.
fn merge_map(
    original: &Map<String, Value>,
    patch: &Map<String, Value>,
    schema: Option<Node<'_>>,
) -> Result<Option<Map<String, Value>>, StrategicMergeError> {
    match patch.get(PATCH) {
        None => {}
        Some(Value::String(d)) if d == "merge" => {}
        Some(Value::String(d)) if d == "replace" => {
            let mut replaced = Map::new();
            for (k, v) in patch {
                if k != PATCH {
                    replaced.insert(k.clone(), strip_directives(v));
                }
            }
            return Ok(Some(replaced));
        }
        Some(Value::String(d)) if d == "delete" => return Ok(None),
        Some(other) => return Err(StrategicMergeError::UnknownDirective(go_print(other))),
    }
    let mut out = original.clone();
    let mut orders: Vec<(&str, &Value)> = Vec::new();
    for (key, value) in patch {
        if key == PATCH || key == RETAIN_KEYS {
            continue;
        }
        if let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) {
            orders.push((field, value));
            continue;
        }
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            let Value::Array(remove) = value else {
                return Err(StrategicMergeError::InvalidDirective {
                    directive: key.clone(),
                    why: "not a list".into(),
                });
            };
            if let Some(Value::Array(items)) = out.get_mut(field) {
                items.retain(|item| !remove.contains(item));
            }
            continue;
        }
        if value.is_null() {
            out.remove(key);
            continue;
        }
        let field_schema = child_schema(schema, key);
        let merged = match (out.get(key), value) {
            (Some(Value::Object(o)), Value::Object(p)) => merge_map(o, p, field_schema)?.map(Value::Object),
            (None | Some(Value::Null), Value::Object(p)) => {
                merge_map(&Map::new(), p, field_schema)?.map(Value::Object)
            }
            (current, Value::Array(p)) => {
                let merging = field_schema.is_some_and(|s| s.patch_strategies().contains(&"merge"));
                if merging {
                    let empty = Vec::new();
                    let o = match current {
                        Some(Value::Array(o)) => o,
                        _ => &empty,
                    };
                    merge_list(o, p, field_schema)?.map(Value::Array)
                } else {
                    replace_list(p)
                }
            }
            (_, v) => Some(strip_directives(v)),
        };
        match merged {
            Some(v) => {
                out.insert(key.clone(), v);
            }
            None => {
                out.remove(key);
            }
        }
    }
    for (field, order) in orders {
        let Value::Array(order) = order else {
            return Err(StrategicMergeError::InvalidDirective {
                directive: format!("{SET_ELEMENT_ORDER}{field}"),
                why: "not a list".into(),
            });
        };
        let key = child_schema(schema, field).and_then(|s| s.patch_merge_key().map(str::to_string));
        let live = match original.get(field) {
            Some(Value::Array(live)) => live.as_slice(),
            _ => &[],
        };
        if let Some(Value::Array(items)) = out.get_mut(field) {
            let merged = std::mem::take(items);
            *items = normalize_order(merged, order, live, key.as_deref());
        }
    }
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let Value::Array(keys) = retain else {
            return Err(StrategicMergeError::InvalidDirective {
                directive: RETAIN_KEYS.into(),
                why: "not a list".into(),
            });
        };
        let keep: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
        out.retain(|k, _| keep.contains(&k.as_str()));
    }
    Ok(Some(out))
}

/// A list without a merge strategy: the patch's list, unless one of its items says
/// `$patch: delete` for the whole list (then the field goes).
fn replace_list(patch: &[Value]) -> Option<Value> {
    Some(Value::Array(
        patch
            .iter()
            .filter(|item| item.get(PATCH).is_none())
            .map(strip_directives)
            .collect(),
    ))
}

fn is_scalar_list(items: &[Value]) -> bool {
    items.iter().all(|v| !v.is_object() && !v.is_array())
}

/// Merges a list with strategy `merge`; `None` when the result is to be removed.
fn merge_list(
    original: &[Value],
    patch: &[Value],
    schema: Option<Node<'_>>,
) -> Result<Option<Vec<Value>>, StrategicMergeError> {
    // `{"$patch": "replace"}` among the items replaces the list with the other items.
    if patch
        .iter()
        .any(|item| item.get(PATCH).and_then(Value::as_str) == Some("replace"))
    {
        return Ok(Some(
            patch
                .iter()
                .filter(|item| item.get(PATCH).is_none())
                .map(strip_directives)
                .collect(),
        ));
    }
    if is_scalar_list(patch) && is_scalar_list(original) {
        let mut out = original.to_vec();
        for item in patch {
            if !out.contains(item) {
                out.push(item.clone());
            }
        }
        return Ok(Some(normalize_order(out, patch, original, None)));
    }
    let items_schema = schema.and_then(|s| s.items());
    let Some(key) = schema.and_then(|s| s.patch_merge_key()) else {
        return Ok(replace_list(patch).and_then(|v| v.as_array().cloned()));
    };
    let mut out = original.to_vec();
    for item in patch {
        let Value::Object(p) = item else {
            out.push(item.clone());
            continue;
        };
        let Some(wanted) = p.get(key) else {
            return Err(StrategicMergeError::MissingMergeKey {
                item: go_print(item),
                key: key.to_string(),
            });
        };
        let position = out.iter().position(|o| o.get(key) == Some(wanted));
        let directive = p.get(PATCH).and_then(Value::as_str);
        match (position, directive) {
            (Some(i), Some("delete")) => {
                out.remove(i);
            }
            (None, Some("delete")) => {}
            (Some(i), _) => {
                let merged = match &out[i] {
                    Value::Object(o) => merge_map(o, p, items_schema)?,
                    _ => merge_map(&Map::new(), p, items_schema)?,
                };
                match merged {
                    Some(m) => out[i] = Value::Object(m),
                    None => {
                        out.remove(i);
                    }
                }
            }
            (None, _) => {
                if let Some(m) = merge_map(&Map::new(), p, items_schema)? {
                    out.push(Value::Object(m));
                }
            }
        }
    }
    Ok(Some(normalize_order(out, patch, original, Some(key))))
}

/// Where `item` stands in `list`: by merge key, or as a scalar.
fn position_in(list: &[Value], item: &Value, key: Option<&str>) -> Option<usize> {
    list.iter().position(|o| match key {
        Some(k) => o.get(k).is_some() && o.get(k) == item.get(k),
        None => o == item,
    })
}

/// The order kube gives a merged list (strategicpatch's `normalizeElementOrder`): the items the
/// patch names in the patch's order (`patch_order`: the patch's list or its `$setElementOrder`),
/// the others in the live object's order (`live`), the two interleaved by their places in the
/// live list where both have one; an item the live list lacks goes before the live-only items
/// still to place.
fn normalize_order(
    merged: Vec<Value>,
    patch_order: &[Value],
    live: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let (mut from_patch, mut live_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| position_in(patch_order, item, key).is_some());
    from_patch.sort_by_key(|item| position_in(patch_order, item, key).unwrap_or(usize::MAX));
    live_only.sort_by_key(|item| position_in(live, item, key).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(from_patch.len() + live_only.len());
    let mut left = live_only.into_iter().peekable();
    let mut right = from_patch.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => match (position_in(live, l, key), position_in(live, r, key)) {
                (Some(li), Some(ri)) => li < ri,
                _ => false,
            },
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// A patch value with every directive removed.
fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    *k != PATCH
                        && *k != RETAIN_KEYS
                        && !k.starts_with(SET_ELEMENT_ORDER)
                        && !k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
                })
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

/// How Go's `fmt` prints a decoded JSON value (`map[a:1 b:[x y]]`), as kube-apiserver quotes
/// patches in its errors.
pub fn go_print(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(go_print).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys.iter().map(|k| format!("{k}:{}", go_print(&m[*k]))).collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// The first scalar of `object` whose JSON type does not fit its schema, as the Go type the
/// schema names (`int32`, `int64`, `float64`, `bool`, `string`): what kube's unstructured
/// converter reports as `unrecognized type: <type>`.
pub fn first_type_mismatch(object: &Value, schema: Node<'_>) -> Option<String> {
    if schema.is_int_or_string() {
        return None;
    }
    let go_type = || {
        let format = schema.schema().get("format").and_then(Value::as_str);
        match (schema.type_name(), format) {
            (Some("integer"), Some(f @ ("int32" | "int64"))) => Some(f.to_string()),
            (Some("integer"), _) => Some("int64".to_string()),
            (Some("number"), _) => Some("float64".to_string()),
            (Some("boolean"), _) => Some("bool".to_string()),
            (Some("string"), _) => Some("string".to_string()),
            _ => None,
        }
    };
    match object {
        Value::Object(m) => m.iter().find_map(|(k, v)| {
            let child = schema.property(k).or_else(|| schema.map_values())?;
            first_type_mismatch(v, child)
        }),
        Value::Array(items) => {
            let child = schema.items()?;
            items.iter().find_map(|v| first_type_mismatch(v, child))
        }
        Value::Null => None,
        Value::String(_) if schema.type_name() == Some("string") => None,
        Value::Bool(_) if schema.type_name() == Some("boolean") => None,
        Value::Number(_) if matches!(schema.type_name(), Some("integer" | "number")) => None,
        _ => go_type(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::structure::builtin_root;
    use serde_json::json;

    fn deployment() -> Value {
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "nginx:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
            {"name": "side", "image": "busybox:1"}]}}}})
    }

    fn patched(original: &Value, patch: Value) -> Value {
        apply(original, &patch, builtin_root("apps", "deployments")).unwrap()
    }

    fn containers(v: &Value) -> &Value {
        &v["spec"]["template"]["spec"]["containers"]
    }

    #[test]
    fn containers_and_env_merge_by_name() {
        let out = patched(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app",
                "env": [{"name": "B", "value": "two"}, {"name": "C", "value": "3"}]}]}}}}),
        );
        assert_eq!(
            containers(&out)[0]["env"],
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "two"}, {"name": "C", "value": "3"}])
        );
        assert_eq!(containers(&out)[0]["image"], "nginx:1");
        assert_eq!(containers(&out)[1]["name"], "side");
    }

    #[test]
    fn delete_directives_remove_items() {
        let out = patched(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [{"$patch": "delete", "name": "side"}]}}}}),
        );
        assert_eq!(containers(&out).as_array().unwrap().len(), 1);
        let out = patched(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"$patch": "delete", "name": "A"}]}]}}}}),
        );
        assert_eq!(containers(&out)[0]["env"], json!([{"name": "B", "value": "2"}]));
    }

    #[test]
    fn set_element_order_orders_and_never_leaks() {
        let out = patched(
            &json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}}}),
            json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "extra"}, {"name": "app"}],
                "containers": [{"name": "extra", "image": "busybox:2"}]}}}}),
        );
        assert_eq!(
            containers(&out),
            &json!([{"name": "extra", "image": "busybox:2"}, {"name": "app", "image": "nginx:1"}])
        );
        assert!(
            out["spec"]["template"]["spec"]
                .get("$setElementOrder/containers")
                .is_none()
        );
    }

    #[test]
    fn replace_retain_keys_and_null() {
        let original = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "replicas": 2, "template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}});
        let out = patched(
            &original,
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}, "replicas": null}}),
        );
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
        assert!(out["spec"].get("replicas").is_none());
        let out = patched(
            &original,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}}}}),
        );
        assert_eq!(containers(&out), &json!([{"name": "c"}]));
        let out = patched(
            &original,
            json!({"spec": {"strategy": {"$patch": "replace", "type": "Recreate"}}}),
        );
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn primitive_lists_merge_as_sets_and_delete_from_primitive_list() {
        let cm = builtin_root("", "configmaps");
        let original = json!({"metadata": {"finalizers": ["a", "b"]}});
        let out = apply(&original, &json!({"metadata": {"finalizers": ["b", "c"]}}), cm).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
        let out = apply(
            &original,
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
            cm,
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        // Lists without a merge strategy are replaced.
        let role = builtin_root("rbac.authorization.k8s.io", "roles");
        let out = apply(
            &json!({"rules": [{"verbs": ["get"]}]}),
            &json!({"rules": [{"verbs": ["list"]}]}),
            role,
        )
        .unwrap();
        assert_eq!(out["rules"], json!([{"verbs": ["list"]}]));
    }

    #[test]
    fn errors_name_the_problem() {
        let err = apply(
            &deployment(),
            &json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
            builtin_root("apps", "deployments"),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "map: map[image:x] does not contain declared merge key: name"
        );
        assert!(apply(&deployment(), &json!({"$patch": "bogus"}), None).is_err());
        let mismatch = first_type_mismatch(
            &json!({"spec": {"replicas": "three"}}),
            builtin_root("apps", "deployments").unwrap(),
        );
        assert_eq!(mismatch.as_deref(), Some("int32"));
        assert_eq!(
            go_print(&json!({"spec": {"replicas": "three"}})),
            "map[spec:map[replicas:three]]"
        );
    }
}
