//! The server's authorizer: `system:masters` first, then RBAC from a [`Policy`] kept current by
//! watching the four RBAC kinds in storage (an in-process informer).

use std::sync::{Arc, RwLock};

use futures::StreamExt;

use super::rbac::{GrantedRule, Policy};
use super::{Attributes, Decision, privileged};
use crate::auth::UserInfo;
use crate::storage::{self, EventType, Storage, WatchItem};

/// The RBAC kinds with their storage resource names.
const KINDS: [(&str, &str); 4] = [
    ("ClusterRole", "clusterroles"),
    ("Role", "roles"),
    ("ClusterRoleBinding", "clusterrolebindings"),
    ("RoleBinding", "rolebindings"),
];
const GROUP: &str = "rbac.authorization.k8s.io";

/// Answers whether a user may do something.
#[derive(Debug, Default)]
pub struct Authorizer {
    policy: RwLock<Policy>,
}

impl Authorizer {
    /// An authorizer with an empty policy (only `system:masters` allowed).
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Policy> {
        self.policy
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Policy> {
        self.policy
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The decision for `user` doing `attributes`.
    pub fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        privileged(user).unwrap_or_else(|| self.read().authorize(user, attributes))
    }

    /// The RBAC rules granted to `user` in `namespace` (cluster-wide ones included).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> Vec<GrantedRule> {
        self.read().rules_for(user, namespace)
    }

    /// The rules of a role (`kind` Role or ClusterRole), `None` if it does not exist.
    pub fn role_rules(&self, kind: &str, namespace: &str, name: &str) -> Option<Vec<super::rbac::Rule>> {
        self.read().role(kind, namespace, name)
    }

    /// Applies one stored RBAC object (or its deletion) to the policy.
    pub fn apply(&self, kind: &str, object: &serde_json::Value, deleted: bool) {
        let mut policy = self.write();
        if deleted {
            let meta = |k: &str| {
                object
                    .pointer(&format!("/metadata/{k}"))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            policy.remove(kind, &meta("namespace"), &meta("name"));
        } else {
            policy.upsert(kind, object);
        }
    }

    /// Loads every RBAC object from `storage` (replacing the policy at once) and returns the
    /// revision to watch from.
    pub async fn load(&self, storage: &dyn Storage) -> Result<u64, storage::StorageError> {
        let mut rv = storage.current_rv();
        let mut policy = Policy::new();
        for (kind, resource) in KINDS {
            let listed = storage
                .list(&storage::resource_prefix(GROUP, resource, None), None)
                .await?;
            rv = rv.min(listed.rv);
            for (_, stored) in listed.items {
                policy.upsert(kind, &stored.object);
            }
        }
        *self.write() = policy;
        Ok(rv)
    }

    /// Keeps the policy current: watches the RBAC kinds from revision `from` until the watch
    /// ends, then lists and watches again.
    pub async fn run(self: Arc<Self>, storage: Arc<dyn Storage>, mut from: u64) {
        loop {
            let streams = futures::future::join_all(KINDS.iter().map(|(kind, resource)| {
                let storage = storage.clone();
                let prefix = storage::resource_prefix(GROUP, resource, None);
                async move { (*kind, storage.watch(&prefix, from).await) }
            }))
            .await;
            let mut merged = futures::stream::SelectAll::new();
            for (kind, stream) in streams {
                match stream {
                    Ok(s) => merged.push(s.map(move |item| (kind, item)).boxed()),
                    Err(error) => tracing::warn!(%error, "authorizer: cannot watch {kind}"),
                }
            }
            while let Some((kind, item)) = merged.next().await {
                match item {
                    Ok(WatchItem::Event(event)) => match event.object() {
                        Ok(object) => self.apply(kind, &object, event.kind == EventType::Deleted),
                        Err(error) => {
                            tracing::warn!(%error, "authorizer: watch of {kind} ended");
                            break;
                        }
                    },
                    Ok(WatchItem::Progress(_)) => {}
                    Err(error) => {
                        tracing::warn!(%error, "authorizer: watch of {kind} ended");
                        break;
                    }
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            from = match self.load(storage.as_ref()).await {
                Ok(rv) => rv,
                Err(error) => {
                    tracing::warn!(%error, "authorizer: cannot list the RBAC objects");
                    continue;
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::authorization::Target;
    use crate::storage::MemoryStorage;

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            groups: vec!["system:authenticated".into()],
        }
    }

    fn get_cm() -> Attributes {
        Attributes {
            verb: "get".into(),
            target: Target::Resource {
                namespace: Some("a".into()),
                group: String::new(),
                resource: "configmaps".into(),
                subresource: String::new(),
                name: "x".into(),
            },
        }
    }

    #[tokio::test]
    async fn the_policy_follows_storage() {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::in_memory());
        let role_key = storage::object_key(GROUP, "clusterroles", None, "reader");
        storage
            .create(
                &role_key,
                json!({"metadata": {"name": "reader"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
            )
            .await
            .unwrap();
        let authorizer = Arc::new(Authorizer::new());
        let rv = authorizer.load(storage.as_ref()).await.unwrap();
        assert!(!authorizer.authorize(&alice(), &get_cm()).allowed());
        let task = tokio::spawn(authorizer.clone().run(storage.clone(), rv));
        let binding_key = storage::object_key(GROUP, "clusterrolebindings", None, "alice-reads");
        storage
            .create(
                &binding_key,
                json!({"metadata": {"name": "alice-reads"},
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "reader"},
                "subjects": [{"apiGroup": GROUP, "kind": "User", "name": "alice"}]}),
            )
            .await
            .unwrap();
        let wait_for = |want: bool| {
            let authorizer = authorizer.clone();
            async move {
                let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
                while authorizer.authorize(&alice(), &get_cm()).allowed() != want {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "policy never became {want}"
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
        };
        wait_for(true).await;
        storage.delete(&binding_key, None).await.unwrap();
        wait_for(false).await;
        task.abort();
    }
}
