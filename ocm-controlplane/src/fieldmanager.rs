//! `metadata.managedFields`: which manager owns which fields, for Update operations.
//!
//! A [`FieldSet`] is the tree of field paths of an object in the `FieldsV1` encoding (`f:name`,
//! `k:{"name":"x"}` for items of map-lists, `v:"x"` for items of set-lists, `.` for a node that is
//! itself a member). How an object's JSON maps onto paths depends on its schema: the OpenAPI v3
//! schema of a custom resource, or a small built-in description of ObjectMeta and the map fields of
//! built-in kinds (other built-in lists are atomic). Server-side apply (issue 5) builds on the same
//! set type: it needs union, difference and intersection, which are here.
//!
//! For an Update by manager `M` the fields that were added or changed become `M`'s (and are taken
//! from other `Update` managers), removed fields disappear from every manager, and `M`'s entry gets
//! the current time only when its set changed.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// A set of field paths in the `FieldsV1` tree shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    /// This node itself is a member (`.`).
    pub member: bool,
    /// Children by path element (`f:x`, `k:{..}`, `v:..`).
    pub children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.values().all(FieldSet::is_empty)
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.member |= other.member;
        for (k, v) in &other.children {
            let merged = match out.children.get(k) {
                Some(mine) => mine.union(v),
                None => v.clone(),
            };
            out.children.insert(k.clone(), merged);
        }
        out
    }

    /// `self ∖ other` (paths of `self` that are not members of `other`).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && !other.member,
            children: BTreeMap::new(),
        };
        for (k, v) in &self.children {
            let d = match other.children.get(k) {
                Some(o) => v.difference(o),
                None => v.clone(),
            };
            if !d.is_empty() {
                out.children.insert(k.clone(), d);
            }
        }
        out
    }

    /// `self ∩ other`.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (k, v) in &self.children {
            if let Some(o) = other.children.get(k) {
                let i = v.intersection(o);
                if !i.is_empty() {
                    out.children.insert(k.clone(), i);
                }
            }
        }
        out
    }

    /// The `fieldsV1` JSON.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), json!({}));
        }
        for (k, v) in &self.children {
            if !v.is_empty() {
                m.insert(k.clone(), v.to_json());
            }
        }
        Value::Object(m)
    }

    /// Parses `fieldsV1` JSON.
    pub fn from_json(v: &Value) -> FieldSet {
        let mut out = FieldSet::default();
        if let Some(m) = v.as_object() {
            if m.is_empty() {
                out.member = true;
            }
            for (k, child) in m {
                if k == "." {
                    out.member = true;
                } else {
                    out.children.insert(k.clone(), FieldSet::from_json(child));
                }
            }
        }
        out
    }
}

/// How an object maps onto field paths.
#[derive(Debug, Clone, Copy)]
pub struct Schema<'a> {
    /// OpenAPI v3 schema of the node, if known.
    pub openapi: Option<&'a Value>,
    /// The object is a custom resource (unknown objects are members themselves).
    pub custom: bool,
}

fn metadata_schema() -> &'static Value {
    static META: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    META.get_or_init(|| {
        json!({"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ownerReferences": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["uid"], "items": {"type": "object", "properties": {
                    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "name": {"type": "string"},
                    "uid": {"type": "string"}, "controller": {"type": "boolean"},
                    "blockOwnerDeletion": {"type": "boolean"}}}}
        }})
    })
}

fn builtin_map_fields() -> &'static Value {
    static MAPS: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    MAPS.get_or_init(|| {
        let map = json!({"type": "object", "additionalProperties": {"type": "string"}});
        json!({"type": "object", "properties": {
            "data": map, "binaryData": map, "stringData": map,
        }})
    })
}

/// Paths of `metadata` the field manager never tracks.
const UNTRACKED_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// The field set of a whole object (`apiVersion`, `kind` and server-owned metadata excluded).
/// `ignore_top` lists top-level fields to leave out (`status` for writes of the main resource of a
/// type with a status subresource, everything but `status` for writes of `/status`).
pub fn object_fields(object: &Value, schema: Schema<'_>, ignore_top: &dyn Fn(&str) -> bool) -> FieldSet {
    let mut out = FieldSet::default();
    let Some(map) = object.as_object() else { return out };
    for (k, v) in map {
        if k == "apiVersion" || k == "kind" || ignore_top(k) {
            continue;
        }
        let set = if k == "metadata" {
            let mut meta = v.clone();
            if let Some(m) = meta.as_object_mut() {
                for f in UNTRACKED_META {
                    m.remove(*f);
                }
            }
            let s = Schema {
                openapi: Some(metadata_schema()),
                custom: false,
            };
            let mut set = value_fields(&meta, s);
            set.member = false;
            set
        } else {
            let child = match schema.openapi {
                Some(o) => o.pointer(&format!("/properties/{}", escape_pointer(k))),
                None if !schema.custom => builtin_map_fields().pointer(&format!("/properties/{k}")),
                None => None,
            };
            value_fields(
                v,
                Schema {
                    openapi: child,
                    custom: schema.custom,
                },
            )
        };
        if !set.is_empty() {
            out.children.insert(format!("f:{k}"), set);
        }
    }
    out
}

fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn value_fields(v: &Value, schema: Schema<'_>) -> FieldSet {
    let o = schema.openapi;
    match v {
        Value::Object(map) => {
            let has_props = o.and_then(|o| o.get("properties")).is_some();
            let is_map = o.and_then(|o| o.get("additionalProperties")).is_some()
                || o.and_then(|o| o.get("x-kubernetes-preserve-unknown-fields"))
                    .and_then(Value::as_bool)
                    == Some(true);
            let atomic = o
                .and_then(|o| o.get("x-kubernetes-map-type"))
                .and_then(Value::as_str)
                == Some("atomic")
                || (schema.custom && o.is_some() && !has_props && !is_map);
            if atomic {
                return FieldSet {
                    member: true,
                    children: BTreeMap::new(),
                };
            }
            let mut out = FieldSet {
                member: schema.custom || is_map || map.is_empty(),
                ..Default::default()
            };
            if o.and_then(|o| o.get("x-kubernetes-embedded-resource"))
                .and_then(Value::as_bool)
                == Some(true)
            {
                out.member = true;
            }
            for (k, child) in map {
                let child_schema = o.and_then(|o| {
                    o.get("properties")
                        .and_then(|p| p.get(k))
                        .or_else(|| o.get("additionalProperties").filter(|a| a.is_object()))
                });
                let set = value_fields(
                    child,
                    Schema {
                        openapi: child_schema,
                        custom: schema.custom,
                    },
                );
                out.children.insert(format!("f:{k}"), set);
            }
            out
        }
        Value::Array(items) => {
            let list_type = o
                .and_then(|o| o.get("x-kubernetes-list-type"))
                .and_then(Value::as_str);
            let item_schema = o.and_then(|o| o.get("items"));
            match list_type {
                Some("set") => {
                    let mut out = FieldSet {
                        member: true,
                        ..Default::default()
                    };
                    for item in items {
                        out.children.insert(
                            format!("v:{item}"),
                            FieldSet {
                                member: true,
                                ..Default::default()
                            },
                        );
                    }
                    out
                }
                Some("map") => {
                    let keys: Vec<String> = o
                        .and_then(|o| o.get("x-kubernetes-list-map-keys"))
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                        .unwrap_or_default();
                    let mut out = FieldSet {
                        member: true,
                        ..Default::default()
                    };
                    for item in items {
                        let mut key = Map::new();
                        let mut sorted = keys.clone();
                        sorted.sort();
                        for k in &sorted {
                            if let Some(kv) = item.get(k) {
                                key.insert(k.clone(), kv.clone());
                            }
                        }
                        let mut set = value_fields(
                            item,
                            Schema {
                                openapi: item_schema,
                                custom: schema.custom,
                            },
                        );
                        set.member = true;
                        out.children.insert(format!("k:{}", Value::Object(key)), set);
                    }
                    out
                }
                _ => FieldSet {
                    member: true,
                    ..Default::default()
                },
            }
        }
        _ => FieldSet {
            member: true,
            ..Default::default()
        },
    }
}

/// The leaves (and list items) whose values differ between `old` and `new`, plus new paths.
fn changed_paths(old: &FieldSet, new: &FieldSet, old_v: Option<&Value>, new_v: Option<&Value>) -> FieldSet {
    let mut out = FieldSet::default();
    if new.member && (!old.member || (new.children.is_empty() && old_v != new_v)) {
        out.member = true;
    }
    for (k, child) in &new.children {
        let ov = old_v.and_then(|v| lookup(v, k));
        let nv = new_v.and_then(|v| lookup(v, k));
        let c = match old.children.get(k) {
            Some(o) => changed_paths(o, child, ov, nv),
            None => child.clone(),
        };
        if !c.is_empty() {
            out.children.insert(k.clone(), c);
        }
    }
    out
}

fn lookup<'v>(v: &'v Value, element: &str) -> Option<&'v Value> {
    if let Some(f) = element.strip_prefix("f:") {
        return v.get(f);
    }
    let items = v.as_array()?;
    if let Some(val) = element.strip_prefix("v:") {
        let want: Value = serde_json::from_str(val).ok()?;
        return items.iter().find(|i| **i == want);
    }
    if let Some(key) = element.strip_prefix("k:") {
        let want: Map<String, Value> = serde_json::from_str(key).ok()?;
        return items
            .iter()
            .find(|i| want.iter().all(|(k, kv)| i.get(k) == Some(kv)));
    }
    None
}

/// The current time at second precision, as managedFields and timestamps carry it.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A request's manager identity.
#[derive(Debug, Clone)]
pub struct Manager<'a> {
    /// The manager name (`fieldManager` or the User-Agent prefix).
    pub name: &'a str,
    /// The request's `apiVersion`.
    pub api_version: &'a str,
    /// `status` for writes of the status subresource, else empty.
    pub subresource: &'a str,
}

/// Computes the `managedFields` of `new` after an Update by `manager`, given the previous object
/// (`None` on create) and the object's field sets.
pub fn update_managed_fields(
    old: Option<&Value>,
    new: &Value,
    old_fields: &FieldSet,
    new_fields: &FieldSet,
    manager: &Manager<'_>,
) -> Vec<Value> {
    let mut entries: Vec<Value> = old
        .and_then(|o| o.pointer("/metadata/managedFields"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let changed = changed_paths(old_fields, new_fields, old, Some(new));
    let same_entry = |e: &Value| {
        e.get("manager").and_then(Value::as_str) == Some(manager.name)
            && e.get("operation").and_then(Value::as_str) == Some("Update")
            && e.get("subresource").and_then(Value::as_str).unwrap_or("") == manager.subresource
    };
    let now = now_rfc3339();
    let mut found = false;
    let mut out = Vec::new();
    for mut e in entries.drain(..) {
        let set = FieldSet::from_json(e.get("fieldsV1").unwrap_or(&Value::Null));
        let mine = same_entry(&e);
        let updated = if mine {
            found = true;
            set.union(&changed).intersection(new_fields)
        } else if e.get("operation").and_then(Value::as_str) == Some("Update") {
            set.difference(&changed).intersection(new_fields)
        } else {
            set.intersection(new_fields)
        };
        if updated.is_empty() {
            continue;
        }
        if updated != set
            && let Some(m) = e.as_object_mut()
        {
            m.insert("fieldsV1".into(), updated.to_json());
            if mine {
                m.insert("time".into(), json!(now));
                m.insert("apiVersion".into(), json!(manager.api_version));
            }
        }
        out.push(e);
    }
    if !found && !changed.is_empty() {
        let mut e = Map::new();
        e.insert("manager".into(), json!(manager.name));
        e.insert("operation".into(), json!("Update"));
        e.insert("apiVersion".into(), json!(manager.api_version));
        e.insert("time".into(), json!(now));
        e.insert("fieldsType".into(), json!("FieldsV1"));
        e.insert("fieldsV1".into(), changed.to_json());
        if !manager.subresource.is_empty() {
            e.insert("subresource".into(), json!(manager.subresource));
        }
        out.push(Value::Object(e));
    }
    out
}

/// The default manager name of a request: the User-Agent up to the first `/`.
pub fn default_manager(user_agent: Option<&str>) -> String {
    match user_agent {
        Some(ua) if !ua.is_empty() => ua.split('/').next().unwrap_or(ua).to_string(),
        _ => "unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(v: &Value) -> FieldSet {
        object_fields(
            v,
            Schema {
                openapi: None,
                custom: false,
            },
            &|_| false,
        )
    }

    #[test]
    fn configmap_fields_match_kube() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"},
            "metadata": {"name": "c", "labels": {"app": "demo"}, "finalizers": ["x/y"]}});
        assert_eq!(
            fields(&cm).to_json(),
            json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}},
                "f:finalizers": {".": {}, "v:\"x/y\"": {}}}})
        );
    }

    #[test]
    fn update_transfers_changed_fields() {
        let m1 = Manager {
            name: "one",
            api_version: "v1",
            subresource: "",
        };
        let m2 = Manager {
            name: "two",
            api_version: "v1",
            subresource: "",
        };
        let v1 = json!({"data": {"a": "1", "b": "1"}, "metadata": {}});
        let f1 = fields(&v1);
        let mf = update_managed_fields(None, &v1, &FieldSet::default(), &f1, &m1);
        let mut v1m = v1.clone();
        v1m["metadata"]["managedFields"] = Value::Array(mf);
        let v2 = json!({"data": {"a": "2", "b": "1"}, "metadata": {}});
        let f2 = fields(&v2);
        let mf2 = update_managed_fields(Some(&v1m), &v2, &f1, &f2, &m2);
        assert_eq!(mf2.len(), 2);
        assert_eq!(mf2[0]["fieldsV1"], json!({"f:data": {".": {}, "f:b": {}}}));
        assert_eq!(mf2[1]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    }
}
