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
                    "blockOwnerDeletion": {"type": "boolean"}}, "x-kubernetes-map-type": "atomic"}}
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
            let child = schema
                .openapi
                .and_then(|o| o.pointer(&format!("/properties/{}", escape_pointer(k))));
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

/// The paths of a value: every node present is a member (structs, maps, lists, list items and
/// leaves); atomic values (scalars, lists without a list type, `x-kubernetes-map-type: atomic`)
/// have no paths below them.
fn value_fields(v: &Value, schema: Schema<'_>) -> FieldSet {
    let o = schema.openapi;
    let leaf = FieldSet {
        member: true,
        children: BTreeMap::new(),
    };
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
                return leaf;
            }
            let mut out = leaf;
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
            let item_schema = Schema {
                openapi: o.and_then(|o| o.get("items")),
                custom: schema.custom,
            };
            let mut out = leaf;
            match list_type {
                Some("set") => {
                    for item in items {
                        out.children
                            .insert(format!("v:{item}"), value_fields(item, item_schema));
                    }
                }
                Some("map") => {
                    let mut keys: Vec<String> = o
                        .and_then(|o| o.get("x-kubernetes-list-map-keys"))
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                        .unwrap_or_default();
                    keys.sort();
                    for item in items {
                        let key: Map<String, Value> = keys
                            .iter()
                            .filter_map(|k| item.get(k).map(|kv| (k.clone(), kv.clone())))
                            .collect();
                        out.children.insert(
                            format!("k:{}", Value::Object(key)),
                            value_fields(item, item_schema),
                        );
                    }
                }
                _ => {}
            }
            out
        }
        _ => leaf,
    }
}

/// Added and modified paths of an update (`Added ∪ Modified` of a structured comparison): paths
/// of `new` that `old` lacks, and leaves (nodes without members below them in both sets, i.e.
/// scalars and atomic values) whose value differs.
fn changed_paths(old: &FieldSet, new: &FieldSet, old_v: Option<&Value>, new_v: Option<&Value>) -> FieldSet {
    let mut out = FieldSet::default();
    let leaf = new.children.is_empty() && old.children.is_empty();
    if new.member && (!old.member || (leaf && old_v != new_v)) {
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

/// The managedFields entries of an object, if it has any.
fn entries_of(object: Option<&Value>) -> Vec<Value> {
    object
        .and_then(|o| o.pointer("/metadata/managedFields"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The set with the top-level fields `reset` names left out.
fn without_top(set: &FieldSet, reset: &[&str]) -> FieldSet {
    let mut out = set.clone();
    for field in reset {
        out.children.remove(&format!("f:{field}"));
    }
    out
}

/// Whether an entry belongs to the manager of the request (same name, Update, same subresource).
fn is_entry_of(entry: &Value, manager: &Manager<'_>) -> bool {
    entry.get("manager").and_then(Value::as_str) == Some(manager.name)
        && entry.get("operation").and_then(Value::as_str) == Some("Update")
        && entry.get("subresource").and_then(Value::as_str).unwrap_or("") == manager.subresource
}

/// Sorts entries as kube-apiserver encodes them: by operation, time (seconds), manager,
/// apiVersion, subresource.
pub fn sort_entries(entries: &mut [Value]) {
    fn key(e: &Value) -> (String, i64, String, String, String) {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let seconds = e
            .get("time")
            .and_then(Value::as_str)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map_or(0, |t| t.timestamp());
        (
            s("operation"),
            seconds,
            s("manager"),
            s("apiVersion"),
            s("subresource"),
        )
    }
    entries.sort_by_key(key);
}

/// Computes the `managedFields` of an object after an Update operation by `manager`, as
/// kube-apiserver's field manager does.
///
/// `live` is the stored object (`None` on create) and `new` the object the request produced
/// (decoded and defaulted, before the strategy resets fields). `reset` names the top-level fields
/// the strategy resets (`status` for writes of the main resource of a type with a status
/// subresource, `spec` for writes of `/status`): changes to them are attributed to nobody.
///
/// The previous entries are those `new` carries when it has any (a client may rewrite
/// managedFields; for subresources they are ignored), else the live object's. Added and modified
/// fields move from every other manager to the requester, removed fields leave every manager,
/// and the requester's entry gets the current time whenever it gained fields.
pub fn update_managed_fields(
    live: Option<&Value>,
    new: &Value,
    schema: Schema<'_>,
    reset: &[&str],
    manager: &Manager<'_>,
) -> Vec<Value> {
    let sent = entries_of(Some(new));
    let mut entries = if sent.is_empty() || !manager.subresource.is_empty() || !valid_entries(&sent) {
        entries_of(live)
    } else {
        sent
    };
    // An update of an object that has no managedFields is not tracked (kube-apiserver's
    // "skip non-applied manager": only creates and applies start tracking an object's fields).
    let is_update = live.is_some_and(|l| {
        l.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .is_some_and(|u| !u.is_empty())
    });
    if entries.is_empty() && is_update {
        return Vec::new();
    }
    let keep_all = |_: &str| false;
    let live_fields = live.map_or_else(FieldSet::default, |l| object_fields(l, schema, &keep_all));
    let new_fields = object_fields(new, schema, &keep_all);
    let changed = changed_paths(&live_fields, &new_fields, live, Some(new));
    let removed = live_fields.difference(&new_fields);
    let taken = without_top(&changed.union(&removed), reset);
    let gained = without_top(&changed, reset);
    let now = now_rfc3339();
    let mut own = None;
    let mut out = Vec::new();
    for mut entry in entries.drain(..) {
        let set = FieldSet::from_json(entry.get("fieldsV1").unwrap_or(&Value::Null));
        let left = set.difference(&taken);
        if left != set
            && let Some(m) = entry.as_object_mut()
        {
            m.insert("fieldsV1".into(), left.to_json());
        }
        if own.is_none() && is_entry_of(&entry, manager) {
            own = Some((entry, left));
            continue;
        }
        if !left.is_empty() {
            out.push(entry);
        }
    }
    match own {
        Some((mut entry, left)) if !gained.is_empty() => {
            if let Some(m) = entry.as_object_mut() {
                m.insert("fieldsV1".into(), left.union(&gained).to_json());
                m.insert("time".into(), json!(now));
                m.insert("apiVersion".into(), json!(manager.api_version));
            }
            out.push(entry);
        }
        Some((entry, left)) if !left.is_empty() => out.push(entry),
        Some(_) => {}
        None if !gained.is_empty() => {
            let mut e = Map::new();
            e.insert("manager".into(), json!(manager.name));
            e.insert("operation".into(), json!("Update"));
            e.insert("apiVersion".into(), json!(manager.api_version));
            e.insert("time".into(), json!(now));
            e.insert("fieldsType".into(), json!("FieldsV1"));
            e.insert("fieldsV1".into(), gained.to_json());
            if !manager.subresource.is_empty() {
                e.insert("subresource".into(), json!(manager.subresource));
            }
            out.push(Value::Object(e));
        }
        None => {}
    }
    sort_entries(&mut out);
    out
}

/// Whether client-sent entries can be used as the previous state (each names a manager and an
/// operation and carries a `fieldsV1` object).
fn valid_entries(entries: &[Value]) -> bool {
    entries.iter().all(|e| {
        e.get("manager").is_some_and(Value::is_string)
            && e.get("operation").is_some_and(Value::is_string)
            && e.get("fieldsV1").is_none_or(Value::is_object)
    })
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

    #[test]
    fn updates_of_untracked_objects_stay_untracked() {
        let schema = Schema {
            openapi: None,
            custom: false,
        };
        let manager = Manager {
            name: "m",
            api_version: "v1",
            subresource: "",
        };
        let live = json!({"metadata": {"name": "x", "uid": "u"}, "data": {"a": "1"}});
        let new = json!({"metadata": {"name": "x", "uid": "u"}, "data": {"a": "2"}});
        assert!(update_managed_fields(Some(&live), &new, schema, &[], &manager).is_empty());
        // A create (no uid yet) starts tracking.
        let zero = json!({"metadata": {}});
        assert_eq!(
            update_managed_fields(Some(&zero), &new, schema, &[], &manager).len(),
            1
        );
    }

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

    const CUSTOM: Schema<'static> = Schema {
        openapi: None,
        custom: false,
    };

    fn manager(name: &'static str, subresource: &'static str) -> Manager<'static> {
        Manager {
            name,
            api_version: "v1",
            subresource,
        }
    }

    fn with_entries(mut object: Value, entries: Vec<Value>) -> Value {
        object["metadata"]["managedFields"] = Value::Array(entries);
        object
    }

    #[test]
    fn update_transfers_changed_fields() {
        let v1 = json!({"data": {"a": "1", "b": "1"}, "metadata": {}});
        let mf = update_managed_fields(None, &v1, CUSTOM, &[], &manager("one", ""));
        let v1m = with_entries(v1, mf);
        let v2 = json!({"data": {"a": "2", "b": "1"}, "metadata": {}});
        let mf2 = update_managed_fields(Some(&v1m), &v2, CUSTOM, &[], &manager("two", ""));
        assert_eq!(mf2.len(), 2);
        let by = |name: &str| {
            mf2.iter()
                .find(|e| e["manager"] == name)
                .map(|e| e["fieldsV1"].clone())
        };
        assert_eq!(by("one"), Some(json!({"f:data": {".": {}, "f:b": {}}})));
        assert_eq!(by("two"), Some(json!({"f:data": {"f:a": {}}})));
    }

    #[test]
    fn reset_fields_stay_with_their_owner() {
        // A /status write that also sends another spec keeps the spec with its owner.
        let live = json!({"spec": {"x": 1}, "metadata": {}});
        let mf = update_managed_fields(None, &live, CUSTOM, &["status"], &manager("m", ""));
        let live = with_entries(live, mf);
        let new = json!({"spec": {"x": 2}, "status": {"s": "ok"}, "metadata": {}});
        let mf = update_managed_fields(Some(&live), &new, CUSTOM, &["spec"], &manager("m", "status"));
        assert_eq!(mf.len(), 2);
        assert_eq!(mf[0]["fieldsV1"], json!({"f:spec": {".": {}, "f:x": {}}}));
        assert_eq!(mf[1]["fieldsV1"], json!({"f:status": {".": {}, "f:s": {}}}));
        assert_eq!(mf[1]["subresource"], "status");
    }

    #[test]
    fn removed_fields_leave_every_manager_and_no_op_keeps_entries() {
        let v1 = json!({"data": {"a": "1"}, "metadata": {}});
        let mf = update_managed_fields(None, &v1, CUSTOM, &[], &manager("one", ""));
        let v1m = with_entries(v1.clone(), mf.clone());
        assert_eq!(
            update_managed_fields(Some(&v1m), &v1, CUSTOM, &[], &manager("two", "")),
            mf
        );
        let v2 = json!({"data": {}, "metadata": {}});
        let mf2 = update_managed_fields(Some(&v1m), &v2, CUSTOM, &[], &manager("two", ""));
        assert_eq!(mf2.len(), 1);
        assert_eq!(mf2[0]["manager"], "one");
        assert_eq!(mf2[0]["fieldsV1"], json!({"f:data": {}}));
    }

    #[test]
    fn entries_sent_by_the_client_replace_the_live_ones() {
        let live = with_entries(
            json!({"data": {"a": "1"}, "metadata": {}}),
            vec![json!({"manager": "old", "operation": "Update", "fieldsV1": {"f:data": {"f:a": {}}}})],
        );
        let sent = with_entries(
            json!({"data": {"a": "1"}, "metadata": {}}),
            vec![json!({"manager": "other", "operation": "Update", "fieldsV1": {"f:data": {"f:a": {}}}})],
        );
        let mf = update_managed_fields(Some(&live), &sent, CUSTOM, &[], &manager("me", ""));
        assert_eq!(mf.len(), 1);
        assert_eq!(mf[0]["manager"], "other");
    }

    #[test]
    fn entries_sort_like_kube() {
        let mut entries = vec![
            json!({"manager": "b", "operation": "Update", "time": "2026-01-01T00:00:02Z"}),
            json!({"manager": "a", "operation": "Update", "time": "2026-01-01T00:00:02Z"}),
            json!({"manager": "z", "operation": "Update", "time": "2026-01-01T00:00:01Z"}),
            json!({"manager": "c", "operation": "Apply", "time": "2026-01-01T00:00:09Z"}),
        ];
        sort_entries(&mut entries);
        let names: Vec<&str> = entries.iter().filter_map(|e| e["manager"].as_str()).collect();
        assert_eq!(names, ["c", "z", "a", "b"]);
    }
}
