//! What the ManagedCluster controller ([`super::accept`]) knows of each cluster's namespace and
//! RBAC without asking the API server: the shared stores ([`super::informers`]) of the objects
//! carrying the cluster-name label, fed by the same watches whose events trigger its reconciles.
//!
//! A store is updated before the event that triggers a reconcile is delivered, so a reconcile
//! never sees an object older than the change that woke it. The controller applies an object
//! only when the store has no copy of it, or a copy that does not already hold every field the
//! controller wants: while a cluster joins it is reconciled about ten times, and re-applying its
//! namespace and four RBAC objects each time was most of the hub's requests (docs/performance.md).

use std::hash::Hash;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde_json::Value;

/// The cached namespaces and RBAC objects of the clusters.
#[derive(Clone)]
pub(crate) struct ClusterCache {
    /// The cluster namespaces.
    pub(crate) namespaces: Store<Namespace>,
    /// The per-cluster ClusterRoles.
    pub(crate) cluster_roles: Store<ClusterRole>,
    /// The per-cluster ClusterRoleBindings.
    pub(crate) cluster_role_bindings: Store<ClusterRoleBinding>,
    /// The registration and work RoleBindings.
    pub(crate) role_bindings: Store<RoleBinding>,
}

/// The cached copy of `desired`'s object (same name and namespace), if the store has one.
pub(crate) fn cached<K>(store: &Store<K>, desired: &K) -> Option<std::sync::Arc<K>>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let mut key = ObjectRef::<K>::new(&desired.name_any());
    if let Some(namespace) = desired.namespace() {
        key = key.within(&namespace);
    }
    store.get(&key)
}

/// Whether the store holds `desired`'s object, not being deleted, with every field `desired`
/// sets at the value it sets: applying it again would change nothing.
pub(crate) fn up_to_date<K>(store: &Store<K>, desired: &K) -> bool
where
    K: Resource + Clone + Serialize,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let Some(current) = cached(store, desired) else {
        return false;
    };
    if current.meta().deletion_timestamp.is_some() {
        return false;
    }
    match (serde_json::to_value(desired), serde_json::to_value(&*current)) {
        (Ok(desired), Ok(current)) => holds(&current, &desired),
        _ => false,
    }
}

/// Whether `current` holds `desired`: every member of a `desired` object is in `current` and
/// holds its value, arrays hold element by element in the same order, other values are equal.
fn holds(current: &Value, desired: &Value) -> bool {
    match (current, desired) {
        (Value::Object(current), Value::Object(desired)) => desired
            .iter()
            .all(|(key, want)| current.get(key).is_some_and(|have| holds(have, want))),
        (Value::Array(current), Value::Array(desired)) => {
            current.len() == desired.len()
                && current.iter().zip(desired).all(|(have, want)| holds(have, want))
        }
        (current, desired) => current == desired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::{reflector, watcher};
    use serde_json::json;

    #[test]
    fn server_added_fields_still_hold() {
        let desired = json!({"metadata": {"name": "a", "labels": {"x": "1"}},
            "subjects": [{"kind": "Group", "name": "g"}]});
        let current = json!({"metadata": {"name": "a", "uid": "u", "resourceVersion": "7",
            "labels": {"x": "1", "y": "2"}},
            "subjects": [{"kind": "Group", "name": "g", "apiGroup": "rbac.authorization.k8s.io"}]});
        assert!(holds(&current, &desired));
    }

    #[test]
    fn a_changed_missing_or_reordered_field_does_not_hold() {
        let desired =
            json!({"metadata": {"labels": {"x": "1"}}, "rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]});
        for current in [
            json!({"metadata": {"labels": {"x": "2"}}, "rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]}),
            json!({"metadata": {}, "rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]}),
            json!({"metadata": {"labels": {"x": "1"}}, "rules": [{"verbs": ["list"]}, {"verbs": ["get"]}]}),
            json!({"metadata": {"labels": {"x": "1"}}, "rules": [{"verbs": ["get"]}]}),
            json!({"metadata": {"labels": {"x": "1"}}, "rules": [{"verbs": ["get", "watch"]}, {"verbs": ["list"]}]}),
        ] {
            assert!(!holds(&current, &desired), "{current}");
        }
    }

    #[test]
    fn an_empty_store_or_a_deleting_copy_is_not_up_to_date() {
        let desired = ClusterRole {
            metadata: kube::api::ObjectMeta {
                name: Some("r".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let (store, mut writer) = reflector::store::<ClusterRole>();
        assert!(!up_to_date(&store, &desired));
        writer.apply_watcher_event(&watcher::Event::Apply(desired.clone()));
        assert!(up_to_date(&store, &desired));
        let mut deleting = desired.clone();
        deleting.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        ));
        writer.apply_watcher_event(&watcher::Event::Apply(deleting));
        assert!(!up_to_date(&store, &desired));
    }
}
