//! The collector's index of every stored object's owner references: who owns what, by uid.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use crate::rest::finalizers;

/// One entry of `metadata.ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct OwnerRef {
    /// `apiVersion` of the owner.
    pub api_version: String,
    /// `kind` of the owner.
    pub kind: String,
    /// `name` of the owner.
    pub name: String,
    /// `uid` of the owner.
    pub uid: String,
    /// `blockOwnerDeletion`.
    pub block: bool,
}

/// The owner references of an object.
pub(super) fn owner_refs(object: &Value) -> Vec<OwnerRef> {
    let text = |r: &Value, f: &str| r.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .map(|r| OwnerRef {
                    api_version: text(r, "apiVersion"),
                    kind: text(r, "kind"),
                    name: text(r, "name"),
                    uid: text(r, "uid"),
                    block: r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// An object's uid.
pub(super) fn uid_of(object: &Value) -> &str {
    object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// What the collector remembers of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Node {
    /// The object's uid (the same allocation as its entry in the uid index).
    pub uid: Arc<str>,
    /// Its owner references.
    pub owners: Vec<OwnerRef>,
    /// It has a `deletionTimestamp`.
    pub deleting: bool,
    /// It is being deleted in the foreground (`foregroundDeletion` finalizer).
    pub deleting_dependents: bool,
    /// It is being deleted and waits for its dependents to be orphaned (`orphan` finalizer).
    pub orphaning: bool,
}

impl Node {
    /// The node of a stored object.
    pub fn of(object: &Value) -> Self {
        let deleting = object.pointer("/metadata/deletionTimestamp").is_some();
        let fins = finalizers(object);
        Self {
            uid: Arc::from(uid_of(object)),
            owners: owner_refs(object),
            deleting,
            deleting_dependents: deleting && fins.iter().any(|f| f == FOREGROUND_FINALIZER),
            orphaning: deleting && fins.iter().any(|f| f == ORPHAN_FINALIZER),
        }
    }
}

/// Storage key -> node, uid -> key, owner uid -> dependents' keys. An object's key and uid are
/// each allocated once and shared by the indexes (a hub holds tens of thousands of objects).
#[derive(Debug, Default)]
pub(super) struct Graph {
    nodes: HashMap<Arc<str>, Node>,
    by_uid: HashMap<Arc<str>, Arc<str>>,
    dependents: HashMap<Arc<str>, BTreeSet<Arc<str>>>,
}

impl Graph {
    /// The node stored under `key`.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.nodes.get(key)
    }

    /// The key of the object with `uid`, if it is known.
    pub fn key_of(&self, uid: &str) -> Option<&str> {
        self.by_uid.get(uid).map(|key| &**key)
    }

    /// The keys of the objects naming `uid` as an owner.
    pub fn dependents_of(&self, uid: &str) -> Vec<String> {
        self.dependents
            .get(uid)
            .map(|d| d.iter().map(|key| key.to_string()).collect())
            .unwrap_or_default()
    }

    /// Records `node` under `key`; returns what was there before.
    pub fn upsert(&mut self, key: &str, node: Node) -> Option<Node> {
        let (shared_key, previous) = match self.nodes.get_key_value(key) {
            Some((shared_key, _)) => (shared_key.clone(), self.remove(key)),
            None => (Arc::from(key), None),
        };
        for owner in &node.owners {
            match self.dependents.get_mut(owner.uid.as_str()) {
                Some(set) => {
                    set.insert(shared_key.clone());
                }
                None => {
                    self.dependents.insert(
                        Arc::from(owner.uid.as_str()),
                        BTreeSet::from([shared_key.clone()]),
                    );
                }
            }
        }
        self.by_uid.insert(node.uid.clone(), shared_key.clone());
        self.nodes.insert(shared_key, node);
        previous
    }

    /// Forgets the object under `key`; returns its node.
    pub fn remove(&mut self, key: &str) -> Option<Node> {
        let node = self.nodes.remove(key)?;
        for owner in &node.owners {
            if let Some(set) = self.dependents.get_mut(owner.uid.as_str()) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(owner.uid.as_str());
                }
            }
        }
        if self
            .by_uid
            .get(&node.uid)
            .is_some_and(|indexed| &**indexed == key)
        {
            self.by_uid.remove(&node.uid);
        }
        Some(node)
    }

    /// The number of objects known.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(uid: &str, owners: &[&str]) -> Value {
        let refs: Vec<Value> = owners
            .iter()
            .map(|o| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o, "uid": o, "blockOwnerDeletion": true}))
            .collect();
        json!({"metadata": {"uid": uid, "ownerReferences": refs}})
    }

    #[test]
    fn dependents_follow_owner_references() {
        let mut g = Graph::default();
        g.upsert("/core/configmaps/ns/a", Node::of(&object("a", &[])));
        g.upsert("/core/configmaps/ns/b", Node::of(&object("b", &["a"])));
        g.upsert("/core/configmaps/ns/c", Node::of(&object("c", &["a", "b"])));
        assert_eq!(g.dependents_of("a").len(), 2);
        assert_eq!(g.key_of("b"), Some("/core/configmaps/ns/b"));
        assert!(g.get("/core/configmaps/ns/c").unwrap().owners[0].block);
        // Dropping a reference and removing an object keep the index consistent.
        g.upsert("/core/configmaps/ns/c", Node::of(&object("c", &["b"])));
        assert_eq!(g.dependents_of("a"), vec!["/core/configmaps/ns/b".to_string()]);
        g.remove("/core/configmaps/ns/b");
        assert!(g.dependents_of("a").is_empty());
        assert_eq!(g.key_of("b"), None);
        assert_eq!(g.len(), 2);
    }

    #[test]
    fn an_objects_key_and_uid_are_shared_by_the_indexes() {
        let mut g = Graph::default();
        g.upsert("/core/configmaps/ns/a", Node::of(&object("a", &[])));
        g.upsert("/core/configmaps/ns/b", Node::of(&object("b", &["a"])));
        let first = g.nodes.get_key_value("/core/configmaps/ns/b").unwrap().0.clone();
        // An update keeps the key's allocation.
        g.upsert("/core/configmaps/ns/b", Node::of(&object("b", &["a"])));
        let (key, node) = g.nodes.get_key_value("/core/configmaps/ns/b").unwrap();
        assert!(Arc::ptr_eq(key, &first));
        let (uid, indexed_key) = g.by_uid.get_key_value("b").unwrap();
        assert!(Arc::ptr_eq(key, indexed_key));
        assert!(Arc::ptr_eq(&node.uid, uid));
        let dependents = &g.dependents["a"];
        assert_eq!(dependents.len(), 1);
        assert!(dependents.iter().all(|d| Arc::ptr_eq(d, key)));
    }

    #[test]
    fn deletion_states_come_from_finalizers() {
        let o = json!({"metadata": {"uid": "u", "deletionTimestamp": "2026-01-01T00:00:00Z",
            "finalizers": ["foregroundDeletion"]}});
        let n = Node::of(&o);
        assert!(n.deleting && n.deleting_dependents && !n.orphaning);
    }
}
