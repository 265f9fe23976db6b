//! Sets of field paths in the `FieldsV1` encoding, and their algebra.
//!
//! A path is a sequence of elements: `f:<name>` (a field of a struct or a key of a map),
//! `k:<json>` (the item of a map-list with these key field values, keys sorted by name), `v:<json>`
//! (the item of a set-list with this value) and `i:<n>` (a list index, only ever read). A
//! [`FieldSet`] is a tree of such elements where a node can itself be a member (`.` in the JSON
//! encoding, or an empty object for a member without members below it).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::registry::shapes::sorted;

/// A malformed `fieldsV1` document.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FieldsError {
    /// A node of the document is not a JSON object.
    #[error("expected an object for the fields of {0:?}")]
    DecodeNotObject(String),
    /// A key is not one of `.`, `f:`, `k:`, `v:`, `i:`.
    #[error("unknown path element prefix in {0:?}")]
    DecodeElement(String),
}

/// A set of field paths in the `FieldsV1` tree shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    /// This node itself is a member (`.`).
    pub member: bool,
    /// Children by path element (`f:x`, `k:{..}`, `v:..`).
    pub children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    /// A set holding only this node.
    pub fn leaf() -> FieldSet {
        FieldSet {
            member: true,
            children: BTreeMap::new(),
        }
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.values().all(FieldSet::is_empty)
    }

    /// Adds `child` under `element` (merging with what is there); empty sets are not kept.
    pub fn insert_child(&mut self, element: String, child: FieldSet) {
        if child.is_empty() {
            return;
        }
        match self.children.get_mut(&element) {
            Some(mine) => *mine = mine.union(&child),
            None => {
                self.children.insert(element, child);
            }
        }
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.member |= other.member;
        for (k, v) in &other.children {
            out.insert_child(k.clone(), v.clone());
        }
        out
    }

    /// `self ∖ other`: the members of `self` that are not members of `other` (a member of
    /// `other` does not take the paths below it away).
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
            out.insert_child(k.clone(), d);
        }
        out
    }

    /// `self ∖ other` where a member of `other` also takes away every path below it.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && !other.member,
            children: BTreeMap::new(),
        };
        for (k, v) in &self.children {
            let d = match other.children.get(k) {
                Some(o) if o.member => continue,
                Some(o) => v.recursive_difference(o),
                None => v.clone(),
            };
            out.insert_child(k.clone(), d);
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
                out.insert_child(k.clone(), v.intersection(o));
            }
        }
        out
    }

    /// The set without the top-level fields `names` and everything below them.
    pub fn without_top(&self, names: &[&str]) -> FieldSet {
        let mut out = self.clone();
        for name in names {
            out.children.remove(&format!("f:{name}"));
        }
        out
    }

    /// Whether the path is a member.
    pub fn has(&self, path: &[String]) -> bool {
        match path.split_first() {
            None => self.member,
            Some((first, rest)) => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Every member path, in the order structured-merge-diff iterates them: the members of a
    /// node (fields, then keyed items, then set values, then indexes) before the paths below.
    pub fn paths(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut ordered: Vec<(&String, &FieldSet)> = self.children.iter().collect();
        ordered.sort_by_key(|(k, _)| element_rank(k));
        for (k, child) in &ordered {
            if child.member {
                let mut p = prefix.clone();
                p.push((*k).clone());
                out.push(p);
            }
        }
        for (k, child) in ordered {
            prefix.push(k.clone());
            let mut below = child.clone();
            below.member = false;
            below.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The `fieldsV1` JSON.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), Value::Object(Map::new()));
        }
        for (k, v) in &self.children {
            if !v.is_empty() {
                m.insert(k.clone(), v.to_json());
            }
        }
        Value::Object(m)
    }

    /// Parses `fieldsV1` JSON (the document itself is the root, never a member).
    pub fn from_json(v: &Value) -> Result<FieldSet, FieldsError> {
        let mut root = Self::node_from_json(v, "")?;
        root.member = false;
        Ok(root)
    }

    fn node_from_json(v: &Value, at: &str) -> Result<FieldSet, FieldsError> {
        let Some(m) = v.as_object() else {
            return Err(FieldsError::DecodeNotObject(at.to_string()));
        };
        let mut out = FieldSet {
            member: m.is_empty(),
            children: BTreeMap::new(),
        };
        for (k, child) in m {
            if k == "." {
                out.member = true;
                continue;
            }
            let element = canonical_element(k).ok_or_else(|| FieldsError::DecodeElement(k.clone()))?;
            let set = Self::node_from_json(child, k)?;
            out.insert_child(element, set);
        }
        Ok(out)
    }
}

/// The rank of an element kind in structured-merge-diff's ordering.
fn element_rank(element: &str) -> (u8, &str) {
    let rank = match element.get(..2) {
        Some("f:") => 0,
        Some("k:") => 1,
        Some("v:") => 2,
        _ => 3,
    };
    (rank, element)
}

/// An element as this module writes it (JSON of `k:`/`v:` re-encoded compactly, keys sorted).
fn canonical_element(element: &str) -> Option<String> {
    let (prefix, rest) = element.split_at_checked(2)?;
    match prefix {
        "f:" => Some(element.to_string()),
        "i:" => rest.parse::<u64>().ok().map(|_| element.to_string()),
        "v:" => {
            let v: Value = serde_json::from_str(rest).ok()?;
            Some(value_element(&v))
        }
        "k:" => {
            let v: Value = serde_json::from_str(rest).ok()?;
            let fields = v.as_object()?;
            Some(key_element(
                &fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            ))
        }
        _ => None,
    }
}

/// The element of a field or map key.
pub fn field_element(name: &str) -> String {
    format!("f:{name}")
}

/// The element of a set-list item.
pub fn value_element(value: &Value) -> String {
    format!("v:{}", crate::gojson::encode(&sorted(value)))
}

/// The element of a map-list item with these key fields.
pub fn key_element(fields: &BTreeMap<String, Value>) -> String {
    let m: Map<String, Value> = fields.iter().map(|(k, v)| (k.clone(), sorted(v))).collect();
    format!("k:{}", crate::gojson::encode(&Value::Object(m)))
}

/// A path as structured-merge-diff prints it: `.spec.containers[name="c"].image`,
/// `.metadata.finalizers[="x"]`.
pub fn path_string(path: &[String]) -> String {
    path.iter().map(|e| element_string(e)).collect()
}

fn element_string(element: &str) -> String {
    let Some((prefix, rest)) = element.split_at_checked(2) else {
        return element.to_string();
    };
    match prefix {
        "f:" => format!(".{rest}"),
        "i:" => format!("[{rest}]"),
        "v:" => match serde_json::from_str::<Value>(rest) {
            Ok(v) => format!("[={}]", value_string(&v)),
            Err(_) => format!("[={rest}]"),
        },
        "k:" => match serde_json::from_str::<Value>(rest) {
            Ok(Value::Object(fields)) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value_string(v)))
                    .collect();
                format!("[{}]", parts.join(","))
            }
            _ => format!("[{rest}]"),
        },
        _ => element.to_string(),
    }
}

/// A value as structured-merge-diff prints it in paths (strings Go-quoted).
fn value_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::String(s) => crate::gojson::quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(value_string).collect::<Vec<_>>().join(",")
        ),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", value_string(v)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(v: Value) -> FieldSet {
        FieldSet::from_json(&v).unwrap()
    }

    #[test]
    fn json_round_trip_and_members() {
        let doc = json!({"f:data": {".": {}, "f:a": {}}, "f:spec": {"f:x": {}}});
        let s = set(doc.clone());
        assert_eq!(s.to_json(), doc);
        assert!(s.has(&["f:data".into()]));
        assert!(!s.has(&["f:spec".into()]));
        assert!(s.has(&["f:spec".into(), "f:x".into()]));
        assert!(FieldSet::from_json(&json!({"x:y": {}})).is_err());
        assert!(FieldSet::from_json(&json!({"f:y": 1})).is_err());
    }

    #[test]
    fn algebra() {
        let a = set(json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}}));
        let b = set(json!({"f:data": {"f:a": {}}}));
        assert_eq!(
            a.difference(&b).to_json(),
            json!({"f:data": {".": {}, "f:b": {}}})
        );
        assert_eq!(a.intersection(&b).to_json(), json!({"f:data": {"f:a": {}}}));
        let c = set(json!({"f:data": {}}));
        assert_eq!(
            a.difference(&c).to_json(),
            json!({"f:data": {"f:a": {}, "f:b": {}}})
        );
        assert_eq!(a.recursive_difference(&c).to_json(), json!({}));
        assert_eq!(b.union(&c).to_json(), json!({"f:data": {".": {}, "f:a": {}}}));
    }

    #[test]
    fn paths_print_like_structured_merge_diff() {
        let s = set(
            json!({"f:spec": {"f:taints": {"k:{\"effect\":\"NoSelect\",\"key\":\"k1\"}": {".": {}, "f:value": {}}},
            "f:a": {}}, "f:metadata": {"f:finalizers": {"v:\"x\"": {}}}}),
        );
        let printed: Vec<String> = s.paths().iter().map(|p| path_string(p)).collect();
        assert_eq!(
            printed,
            [
                ".metadata.finalizers[=\"x\"]",
                ".spec.a",
                ".spec.taints[effect=\"NoSelect\",key=\"k1\"]",
                ".spec.taints[effect=\"NoSelect\",key=\"k1\"].value"
            ]
        );
    }

    #[test]
    fn elements_are_canonical() {
        let s = set(json!({"k:{\"b\": 1, \"a\":\"x\"}": {}}));
        assert!(s.children.contains_key("k:{\"a\":\"x\",\"b\":1}"));
        assert_eq!(value_element(&json!("<a>")), "v:\"\\u003ca\\u003e\"");
    }
}
