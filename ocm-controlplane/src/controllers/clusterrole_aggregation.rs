//! ClusterRole aggregation, as kube-controller-manager's `clusterrole-aggregation-controller`:
//! a ClusterRole with an `aggregationRule` gets as `rules` the rules of every other ClusterRole
//! its selectors match (selector by selector, roles by name, each distinct rule once).
//!
//! kube's controller writes `rules` with a forced server-side apply as manager
//! `clusterrole-aggregation-controller`. This controller writes the same result directly: the
//! rules, an `Apply` entry of that manager owning `f:rules` (taken from every other manager), and
//! when nothing is aggregated any more the entry and the rules are dropped, as such an apply
//! without rules does.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use ocm_api::meta::LabelSelector;
use serde_json::{Map, Value, json};

use crate::rest::Api;
use crate::storage::{self, StorageError, WatchItem};

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

fn labels_of(role: &Value) -> BTreeMap<String, String> {
    crate::selector::labels_of(role)
}

/// The rules an aggregating role should have, given every ClusterRole by name.
fn aggregate(role: &Value, roles: &BTreeMap<String, Value>) -> Option<Vec<Value>> {
    let selectors = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)?;
    let own_name = role.pointer("/metadata/name").and_then(Value::as_str);
    let mut rules: Vec<Value> = Vec::new();
    let mut seen: Vec<Value> = Vec::new();
    for selector in selectors {
        let Ok(selector) = serde_json::from_value::<LabelSelector>(selector.clone()) else {
            continue;
        };
        for (name, other) in roles {
            if Some(name.as_str()) == own_name {
                continue;
            }
            if !ocm_api::selector::matches(&selector, &labels_of(other)).unwrap_or(false) {
                continue;
            }
            for rule in rules_of(other) {
                let normal = normalized_rule(&rule);
                if !seen.contains(&normal) {
                    seen.push(normal);
                    rules.push(rule);
                }
            }
        }
    }
    Some(rules)
}

/// Whether two rule lists are the same for kube (empty fields and lists count as absent).
fn same_rules(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| normalized_rule(x) == normalized_rule(y))
}

/// The managedFields after the controller's forced apply of `rules` (`None` = an apply without
/// rules), and whether the role keeps its rules.
fn applied_managed_fields(current: &[Value], rules_applied: bool, now: &str) -> (Vec<Value>, bool) {
    let mut others_own_rules = false;
    let mut out: Vec<Value> = Vec::new();
    for entry in current {
        let is_ours = entry.get("manager").and_then(Value::as_str) == Some(MANAGER)
            && entry.get("operation").and_then(Value::as_str) == Some("Apply");
        if is_ours {
            continue;
        }
        let mut entry = entry.clone();
        let owns = entry.pointer("/fieldsV1/f:rules").is_some();
        if owns && rules_applied {
            // A forced apply takes the field from every other manager.
            if let Some(fields) = entry.get_mut("fieldsV1").and_then(Value::as_object_mut) {
                fields.remove("f:rules");
                if fields.is_empty() {
                    continue;
                }
            }
        } else if owns {
            others_own_rules = true;
        }
        out.push(entry);
    }
    if rules_applied {
        let ours = json!({"apiVersion": API_VERSION, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:rules": {}}, "manager": MANAGER, "operation": "Apply", "time": now});
        let at = out
            .iter()
            .position(|e| e.get("operation").and_then(Value::as_str) != Some("Apply"))
            .unwrap_or(out.len());
        out.insert(at, ours);
    }
    (out, rules_applied || others_own_rules)
}

/// Brings one aggregating role up to date; `Ok(false)` when it changed meanwhile.
async fn sync_role(api: &Api, key: &str, roles: &BTreeMap<String, Value>) -> Result<bool, StorageError> {
    let Some(current) = api.storage.get(key).await? else {
        return Ok(true);
    };
    let Some(wanted) = aggregate(&current.object, roles) else {
        return Ok(true);
    };
    if same_rules(&wanted, &rules_of(&current.object)) {
        return Ok(true);
    }
    let mut role = (*current.object).clone();
    let managed: Vec<Value> = role
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let now = crate::fieldmanager::now_rfc3339();
    let (managed, keeps_rules) = applied_managed_fields(&managed, !wanted.is_empty(), &now);
    let Some(map) = role.as_object_mut() else {
        return Ok(true);
    };
    if wanted.is_empty() && !keeps_rules {
        map.insert("rules".into(), Value::Null);
    } else {
        map.insert("rules".into(), Value::Array(wanted));
    }
    let meta = crate::rest::ensure_object(map.entry("metadata").or_insert_with(|| Value::Object(Map::new())));
    if managed.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(managed));
    }
    match api.storage.update(key, role, Some(current.rv)).await {
        Ok(_) => Ok(true),
        Err(StorageError::WriteConflict { .. } | StorageError::WriteNotFound { .. }) => Ok(false),
        Err(error) => Err(error),
    }
}

/// Brings every aggregating role up to date; `false` when one must be looked at again.
async fn sync_all(api: &Api) -> bool {
    let prefix = storage::resource_prefix(GROUP, "clusterroles", None);
    let Ok(list) = api.storage.list(&prefix, None).await else {
        return false;
    };
    let roles: BTreeMap<String, Value> = list
        .items
        .iter()
        .filter_map(|(_, s)| {
            let name = s.object.pointer("/metadata/name").and_then(Value::as_str)?;
            Some((name.to_string(), (*s.object).clone()))
        })
        .collect();
    let mut done = true;
    for (key, stored) in &list.items {
        if stored.object.get("aggregationRule").is_none_or(Value::is_null) {
            continue;
        }
        match sync_role(api, key, &roles).await {
            Ok(true) => {}
            Ok(false) => done = false,
            Err(error) => {
                tracing::debug!(%key, %error, "could not aggregate the ClusterRole");
                done = false;
            }
        }
    }
    done
}

/// Watches ClusterRoles and aggregates after every change.
pub async fn run(api: Api) {
    let prefix = storage::resource_prefix(GROUP, "clusterroles", None);
    loop {
        let from = api.storage.current_rv();
        while !sync_all(&api).await {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let Ok(mut events) = api.storage.watch(&prefix, from).await else {
            return;
        };
        loop {
            match events.next().await {
                None => return,
                Some(Ok(WatchItem::Event(_))) => {
                    while !sync_all(&api).await {
                        tokio::time::sleep(Duration::from_millis(100)).await;
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
    use super::*;

    fn role(name: &str, labels: Value, rules: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "rules": rules})
    }

    #[test]
    fn rules_are_aggregated_once_in_name_order() {
        let rule_a = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]});
        let rule_b = json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]});
        let mut roles = BTreeMap::new();
        let target = json!({"metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "true"}}]}, "rules": null});
        roles.insert("agg".to_string(), target.clone());
        roles.insert(
            "b".to_string(),
            role("b", json!({"x": "true"}), json!([rule_b, rule_a])),
        );
        roles.insert("a".to_string(), role("a", json!({"x": "true"}), json!([rule_a])));
        roles.insert(
            "c".to_string(),
            role("c", json!({"x": "false"}), json!([{"verbs": ["*"]}])),
        );
        let rules = aggregate(&target, &roles).unwrap();
        assert_eq!(rules, vec![rule_a.clone(), rule_b]);
        assert!(same_rules(&[], &rules_of(&target)));
        assert!(aggregate(&roles["a"], &roles).is_none());
    }

    #[test]
    fn a_forced_apply_takes_the_rules_from_other_managers() {
        let recorder = json!({"manager": "rec", "operation": "Update",
            "fieldsV1": {"f:aggregationRule": {}, "f:rules": {}}});
        let (fields, keeps) = applied_managed_fields(&[recorder], true, "t");
        assert!(keeps);
        assert_eq!(fields[0]["manager"], MANAGER);
        assert_eq!(fields[0]["fieldsV1"], json!({"f:rules": {}}));
        assert_eq!(fields[1]["fieldsV1"], json!({"f:aggregationRule": {}}));
        let (fields, keeps) = applied_managed_fields(&fields, false, "t");
        assert!(!keeps);
        assert_eq!(fields.len(), 1);
    }
}
