//! ClusterRole aggregation, as kube-controller-manager's `clusterrole-aggregation-controller`:
//! a ClusterRole with an `aggregationRule` gets as `rules` the rules of every other ClusterRole
//! its selectors match (selector by selector, roles by name, each distinct rule once).
//!
//! Like kube's controller, it writes `rules` with a forced server-side apply as manager
//! `clusterrole-aggregation-controller`: the manager takes `f:rules` from every other manager, and
//! when nothing is aggregated any more it applies no rules, which drops them unless another
//! manager owns them.
//!
//! The controller keeps an index of every ClusterRole's labels and aggregation selectors (not its
//! rules), fed by a watch, and after a change brings up to date only the aggregating roles the
//! change concerns: the changed role itself when it aggregates, and every aggregating role whose
//! selectors match the changed role's labels before or after the change. A hub holding one
//! ClusterRole per managed cluster thus pays a few map lookups per change, not a list and parse
//! of every ClusterRole.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use ocm_api::meta::LabelSelector;
use serde_json::{Value, json};

use crate::rest::{Api, RequestContext};
use crate::storage::{self, Event, EventType, StorageError, WatchItem};

/// The manager name kube's controller applies as.
pub const MANAGER: &str = "clusterrole-aggregation-controller";

const GROUP: &str = "rbac.authorization.k8s.io";
const API_VERSION: &str = "rbac.authorization.k8s.io/v1";

/// A rule without empty fields, so that rules compare as kube's semantic equality does (a
/// missing list equals an empty one).
fn normalized_rule(rule: &Value) -> Value {
    match rule.as_object() {
        Some(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        None => rule.clone(),
    }
}

fn rules_of(role: &Value) -> Vec<Value> {
    role.get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn name_of(role: &Value) -> Option<&str> {
    role.pointer("/metadata/name").and_then(Value::as_str)
}

/// The aggregation selectors of a role (`None` when it does not aggregate). A selector that
/// does not parse selects nothing, as before.
fn selectors_of(role: &Value) -> Option<Vec<LabelSelector>> {
    let selectors = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)?;
    Some(
        selectors
            .iter()
            .filter_map(|s| serde_json::from_value::<LabelSelector>(s.clone()).ok())
            .collect(),
    )
}

fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    ocm_api::selector::matches(selector, labels).unwrap_or(false)
}

/// What the controller remembers of one ClusterRole.
#[derive(Debug, Clone, PartialEq)]
struct IndexedRole {
    /// The role's storage key.
    key: String,
    labels: BTreeMap<String, String>,
    /// The aggregation selectors, when the role aggregates.
    selectors: Option<Vec<LabelSelector>>,
}

impl IndexedRole {
    fn of(key: &str, role: &Value) -> Self {
        Self {
            key: key.to_string(),
            labels: crate::selector::labels_of(role),
            selectors: selectors_of(role),
        }
    }
}

/// Every ClusterRole's labels and selectors by name, and the aggregating roles still to sync.
#[derive(Debug, Default)]
struct RoleIndex {
    roles: BTreeMap<String, IndexedRole>,
    dirty: BTreeSet<String>,
}

impl RoleIndex {
    /// An index of `roles` (key, object) with every aggregating role to sync.
    fn of<'a>(roles: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Self {
        let mut index = Self::default();
        for (key, role) in roles {
            if let Some(name) = name_of(role) {
                index.roles.insert(name.to_string(), IndexedRole::of(key, role));
            }
        }
        index.dirty = index
            .roles
            .iter()
            .filter(|(_, r)| r.selectors.is_some())
            .map(|(name, _)| name.clone())
            .collect();
        index
    }

    /// Takes a watch event: updates the index and marks the aggregating roles it concerns.
    fn apply(&mut self, event: &Event) -> Result<(), storage::StorageError> {
        let object = event.object()?;
        let Some(name) = name_of(&object).map(str::to_string) else {
            return Ok(());
        };
        let before = self.roles.remove(&name);
        let after = (event.kind != EventType::Deleted).then(|| IndexedRole::of(&event.key, &object));
        let changed_labels: Vec<&BTreeMap<String, String>> = [before.as_ref(), after.as_ref()]
            .into_iter()
            .flatten()
            .map(|r| &r.labels)
            .collect();
        for (other, indexed) in &self.roles {
            let Some(selectors) = &indexed.selectors else {
                continue;
            };
            if changed_labels
                .iter()
                .any(|labels| selectors.iter().any(|s| selects(s, labels)))
            {
                self.dirty.insert(other.clone());
            }
        }
        match after {
            Some(after) => {
                if after.selectors.is_some() {
                    self.dirty.insert(name.clone());
                } else {
                    self.dirty.remove(&name);
                }
                self.roles.insert(name, after);
            }
            None => {
                self.dirty.remove(&name);
            }
        }
        Ok(())
    }

    /// The roles (name, key) that an aggregating role's selectors pick, selector by selector,
    /// roles by name, without itself; a role picked twice is listed twice (its rules are
    /// deduplicated later).
    fn selected_by(&self, name: &str, selectors: &[LabelSelector]) -> Vec<&str> {
        let mut keys = Vec::new();
        for selector in selectors {
            for (other, indexed) in &self.roles {
                if other != name && selects(selector, &indexed.labels) {
                    keys.push(indexed.key.as_str());
                }
            }
        }
        keys
    }
}

/// The rules an aggregating role should have: the rules of `selected` (roles' objects in
/// selection order), each distinct rule once.
fn aggregate(selected: &[std::sync::Arc<Value>]) -> Vec<Value> {
    let mut rules: Vec<Value> = Vec::new();
    let mut seen: Vec<Value> = Vec::new();
    for other in selected {
        for rule in rules_of(other) {
            let normal = normalized_rule(&rule);
            if !seen.contains(&normal) {
                seen.push(normal);
                rules.push(rule);
            }
        }
    }
    rules
}

/// Whether two rule lists are the same for kube (empty fields and lists count as absent).
fn same_rules(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| normalized_rule(x) == normalized_rule(y))
}

/// Brings one aggregating role up to date with a forced server-side apply of its rules, as
/// kube's controller does; `Ok(false)` when it must be looked at again.
async fn sync_role(api: &Api, index: &RoleIndex, name: &str) -> Result<bool, StorageError> {
    let Some(indexed) = index.roles.get(name) else {
        return Ok(true);
    };
    let Some(current) = api.storage.get(&indexed.key).await? else {
        return Ok(true);
    };
    let Some(selectors) = selectors_of(&current.object) else {
        return Ok(true);
    };
    let mut selected = Vec::new();
    for key in index.selected_by(name, &selectors) {
        if let Some(stored) = api.storage.get(key).await? {
            selected.push(stored.object);
        }
    }
    let wanted = aggregate(&selected);
    if same_rules(&wanted, &rules_of(&current.object)) {
        return Ok(true);
    }
    let Some(info) = api.registry.get(GROUP, "v1", "clusterroles") else {
        return Ok(true);
    };
    // An apply without rules gives up the rules this manager owned.
    let mut configuration =
        json!({"apiVersion": API_VERSION, "kind": "ClusterRole", "metadata": {"name": name}});
    if !wanted.is_empty() {
        configuration["rules"] = Value::Array(wanted);
    }
    let ctx = RequestContext {
        name: Some(name.to_string()),
        field_manager: Some(MANAGER.to_string()),
        ..super::controller_context(MANAGER, None)
    };
    match api
        .apply(&info, &ctx, configuration.to_string().as_bytes(), true)
        .await
    {
        Ok(_) => Ok(true),
        Err(error) if error.code == 404 || error.code == 409 => Ok(false),
        Err(error) => {
            tracing::debug!(%name, error = %error.message, "could not apply the aggregated rules");
            Ok(false)
        }
    }
}

/// Brings the dirty aggregating roles up to date; those that must be looked at again stay dirty.
async fn sync_dirty(api: &Api, index: &mut RoleIndex) {
    let dirty = std::mem::take(&mut index.dirty);
    for name in dirty {
        match sync_role(api, index, &name).await {
            Ok(true) => {}
            Ok(false) => {
                index.dirty.insert(name);
            }
            Err(error) => {
                tracing::debug!(%name, %error, "could not aggregate the ClusterRole");
                index.dirty.insert(name);
            }
        }
    }
}

/// Every ClusterRole at the current revision, indexed, and that revision.
async fn list_index(api: &Api, prefix: &str) -> Result<(RoleIndex, u64), StorageError> {
    let listed = api.storage.list(prefix, None).await?;
    let index = RoleIndex::of(listed.items.iter().map(|(key, s)| (key.as_str(), &*s.object)));
    Ok((index, listed.rv))
}

/// Watches ClusterRoles and aggregates after every change that concerns an aggregating role.
pub async fn run(api: Api) {
    let prefix = storage::resource_prefix(GROUP, "clusterroles", None);
    loop {
        let (mut index, from) = match list_index(&api, &prefix).await {
            Ok(listed) => listed,
            Err(error) => {
                tracing::debug!(%error, "could not list the ClusterRoles");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(mut events) = api.storage.watch(&prefix, from).await else {
            return;
        };
        'watching: loop {
            while !index.dirty.is_empty() {
                sync_dirty(&api, &mut index).await;
                // Take what the syncs (and everyone else) changed meanwhile before the next
                // round, so a burst of changes costs one round.
                while let Some(item) = events.next().now_or_never() {
                    match item {
                        None => return,
                        Some(Ok(WatchItem::Event(event))) => {
                            if index.apply(&event).is_err() {
                                break 'watching;
                            }
                        }
                        Some(Ok(WatchItem::Progress(_))) => {}
                        Some(Err(_)) => break 'watching,
                    }
                }
                if !index.dirty.is_empty() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            match events.next().await {
                None => return,
                Some(Ok(WatchItem::Event(event))) => {
                    if index.apply(&event).is_err() {
                        break;
                    }
                }
                Some(Ok(WatchItem::Progress(_))) => {}
                Some(Err(_)) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn role(name: &str, labels: Value, rules: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "rules": rules})
    }

    fn aggregating(name: &str, label: &str) -> Value {
        json!({"metadata": {"name": name},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]}, "rules": null})
    }

    fn key(name: &str) -> String {
        storage::object_key(GROUP, "clusterroles", None, name)
    }

    fn event(kind: EventType, object: Value) -> Event {
        let name = name_of(&object).unwrap_or_default().to_string();
        Event {
            kind,
            key: key(&name).into(),
            rv: 1,
            object_json: Arc::from(serde_json::to_vec(&object).unwrap()),
            prev_json: None,
            encoded: Default::default(),
        }
    }

    fn index_of(roles: &[Value]) -> RoleIndex {
        let keyed: Vec<(String, &Value)> = roles.iter().map(|r| (key(name_of(r).unwrap()), r)).collect();
        RoleIndex::of(keyed.iter().map(|(k, r)| (k.as_str(), *r)))
    }

    #[test]
    fn rules_are_aggregated_once_in_name_order() {
        let rule_a = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]});
        let rule_b = json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]});
        let target = aggregating("agg", "x");
        let roles = [
            target.clone(),
            role("b", json!({"x": "true"}), json!([rule_b, rule_a])),
            role("a", json!({"x": "true"}), json!([rule_a])),
            role("c", json!({"x": "false"}), json!([{"verbs": ["*"]}])),
        ];
        let index = index_of(&roles);
        let selectors = selectors_of(&target).unwrap();
        let selected = index.selected_by("agg", &selectors);
        assert_eq!(selected, vec![key("a"), key("b")]);
        let objects: Vec<Arc<Value>> = ["a", "b"]
            .iter()
            .map(|n| Arc::new(roles.iter().find(|r| name_of(r) == Some(n)).unwrap().clone()))
            .collect();
        let rules = aggregate(&objects);
        assert_eq!(rules, vec![rule_a.clone(), rule_b]);
        assert!(same_rules(&[], &rules_of(&target)));
        assert!(selectors_of(&roles[2]).is_none());
    }

    #[test]
    fn the_index_starts_with_every_aggregating_role_to_sync() {
        let index = index_of(&[
            aggregating("admin", "to-admin"),
            aggregating("view", "to-view"),
            role("plain", json!({}), json!([])),
        ]);
        let dirty: Vec<&str> = index.dirty.iter().map(String::as_str).collect();
        assert_eq!(dirty, vec!["admin", "view"]);
    }

    #[test]
    fn a_change_marks_only_the_aggregating_roles_it_concerns() {
        let mut index = index_of(&[
            aggregating("admin", "to-admin"),
            aggregating("view", "to-view"),
            role("cluster-1", json!({"cluster": "1"}), json!([])),
        ]);
        index.dirty.clear();

        // A role no aggregating role selects: nothing to sync.
        index
            .apply(&event(
                EventType::Modified,
                role("cluster-1", json!({"cluster": "1"}), json!([{"verbs": ["get"]}])),
            ))
            .unwrap();
        index
            .apply(&event(EventType::Added, role("cluster-2", json!({}), json!([]))))
            .unwrap();
        assert!(index.dirty.is_empty());

        // Gaining a selected label concerns the aggregating role selecting it.
        index
            .apply(&event(
                EventType::Modified,
                role("cluster-1", json!({"to-view": "true"}), json!([])),
            ))
            .unwrap();
        assert_eq!(index.dirty.iter().collect::<Vec<_>>(), vec!["view"]);
        index.dirty.clear();

        // Losing it (the labels before the change) too, and so does deleting a selected role.
        index
            .apply(&event(
                EventType::Modified,
                role("cluster-1", json!({"to-admin": "true"}), json!([])),
            ))
            .unwrap();
        assert_eq!(index.dirty.iter().collect::<Vec<_>>(), vec!["admin", "view"]);
        index.dirty.clear();
        index
            .apply(&event(
                EventType::Deleted,
                role("cluster-1", json!({"to-admin": "true"}), json!([])),
            ))
            .unwrap();
        assert_eq!(index.dirty.iter().collect::<Vec<_>>(), vec!["admin"]);
        assert!(!index.roles.contains_key("cluster-1"));
        index.dirty.clear();

        // An aggregating role that changes is synced itself; a deleted one is not.
        index
            .apply(&event(EventType::Modified, aggregating("view", "to-other")))
            .unwrap();
        assert_eq!(index.dirty.iter().collect::<Vec<_>>(), vec!["view"]);
        index
            .apply(&event(EventType::Deleted, aggregating("view", "to-other")))
            .unwrap();
        assert!(index.dirty.is_empty());
    }
}
