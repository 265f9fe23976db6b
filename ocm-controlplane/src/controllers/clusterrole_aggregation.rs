//! ClusterRole aggregation, as kube-controller-manager's `clusterrole-aggregation-controller`:
//! a ClusterRole with an `aggregationRule` gets as `rules` the rules of every other ClusterRole
//! its selectors match (selector by selector, roles by name, each distinct rule once).
//!
//! Like kube's controller, it writes `rules` with a forced server-side apply as manager
//! `clusterrole-aggregation-controller`: the manager takes `f:rules` from every other manager, and
//! when nothing is aggregated any more it applies no rules, which drops them unless another
//! manager owns them.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use ocm_api::meta::LabelSelector;
use serde_json::{Value, json};

use crate::rest::{Api, RequestContext};
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

/// Brings one aggregating role up to date with a forced server-side apply of its rules, as
/// kube's controller does; `Ok(false)` when it must be looked at again.
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
    let Some(name) = current.object.pointer("/metadata/name").and_then(Value::as_str) else {
        return Ok(true);
    };
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
}
