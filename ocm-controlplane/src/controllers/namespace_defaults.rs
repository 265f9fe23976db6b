//! What kube-controller-manager puts into every namespace: the `kube-root-ca.crt` ConfigMap (the
//! serving CA, for clients inside the cluster) and the `default` ServiceAccount.
//!
//! [`publish`] runs right after a namespace is created (so the objects exist before the client's
//! next request, as they practically always do on a real cluster); [`run`] repairs them when they
//! are deleted or the ConfigMap is changed, as kube-controller-manager's publishers do.

use futures::StreamExt;
use serde_json::{Value, json};

use super::controller_context;
use crate::rest::Api;
use crate::storage::{self, EventType, WatchItem};

/// The ConfigMap's name.
pub const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";

/// The description kube-controller-manager annotates the ConfigMap with.
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// kube-controller-manager's User-Agent prefix (its manager name in managedFields).
const MANAGER: &str = "kube-controller-manager";

fn root_ca_configmap(ca: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA_CONFIGMAP, "annotations": {"kubernetes.io/description": DESCRIPTION}},
        "data": {"ca.crt": ca}})
}

/// Whether the namespace exists and is not being deleted.
async fn active(api: &Api, namespace: &str) -> bool {
    let key = storage::object_key("", "namespaces", None, namespace);
    matches!(api.storage.get(&key).await, Ok(Some(ns))
        if ns.object.pointer("/metadata/deletionTimestamp").is_none())
}

/// Creates the namespace's `kube-root-ca.crt` and `default` ServiceAccount where missing (and
/// restores the ConfigMap's CA bundle).
pub async fn publish(api: &Api, namespace: &str) {
    if !active(api, namespace).await {
        return;
    }
    if let Some(ca) = api.root_ca.as_deref() {
        ensure_root_ca(api, namespace, ca).await;
    }
    ensure_default_service_account(api, namespace).await;
}

async fn ensure_root_ca(api: &Api, namespace: &str, ca: &str) {
    let Some(info) = api.registry.get("", "v1", "configmaps") else {
        return;
    };
    let key = storage::object_key("", "configmaps", Some(namespace), ROOT_CA_CONFIGMAP);
    let ctx = controller_context(MANAGER, Some(namespace));
    let wanted = root_ca_configmap(ca);
    let result = match api.storage.get(&key).await {
        Ok(None) => api
            .create_object(&info, &ctx, wanted.to_string().as_bytes())
            .await
            .map(|_| ()),
        Ok(Some(current)) if current.object.pointer("/data/ca.crt").and_then(Value::as_str) != Some(ca) => {
            let mut updated = (*current.object).clone();
            crate::rest::ensure_object(&mut updated).insert("data".into(), json!({"ca.crt": ca}));
            let ctx = crate::rest::RequestContext {
                name: Some(ROOT_CA_CONFIGMAP.into()),
                ..ctx
            };
            api.update(&info, &ctx, updated.to_string().as_bytes())
                .await
                .map(|_| ())
        }
        Ok(Some(_)) => Ok(()),
        Err(e) => Err(crate::status::ApiError::internal(e)),
    };
    if let Err(error) = result
        && error.code != 409
    {
        tracing::warn!(%namespace, %error, "could not publish {ROOT_CA_CONFIGMAP}");
    }
}

async fn ensure_default_service_account(api: &Api, namespace: &str) {
    let Some(info) = api.registry.get("", "v1", "serviceaccounts") else {
        return;
    };
    let key = storage::object_key("", "serviceaccounts", Some(namespace), "default");
    if !matches!(api.storage.get(&key).await, Ok(None)) {
        return;
    }
    let ctx = controller_context(MANAGER, Some(namespace));
    let body = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
    if let Err(error) = api.create_object(&info, &ctx, body.to_string().as_bytes()).await
        && error.code != 409
    {
        tracing::warn!(%namespace, %error, "could not create the default ServiceAccount");
    }
}

/// The namespace a `kube-root-ca.crt` / `default` event is about, if it is about one of them.
fn repaired_namespace(key: &str) -> Option<&str> {
    let configmaps = storage::resource_prefix("", "configmaps", None);
    let accounts = storage::resource_prefix("", "serviceaccounts", None);
    let (rest, name) = if let Some(rest) = key.strip_prefix(&configmaps) {
        (rest, ROOT_CA_CONFIGMAP)
    } else {
        (key.strip_prefix(&accounts)?, "default")
    };
    let (namespace, object) = rest.split_once('/')?;
    (object == name).then_some(namespace)
}

/// Watches namespaces, ConfigMaps and ServiceAccounts and restores each namespace's defaults.
pub async fn run(api: Api) {
    loop {
        let from = api.storage.current_rv();
        let mut streams = Vec::new();
        for (resource, wanted) in [
            ("namespaces", true),
            ("configmaps", false),
            ("serviceaccounts", false),
        ] {
            let prefix = storage::resource_prefix("", resource, None);
            match api.storage.watch(&prefix, from).await {
                Ok(stream) => streams.push(stream.map(move |item| (wanted, item)).boxed()),
                Err(error) => {
                    tracing::warn!(%error, "namespace defaults: cannot watch {resource}");
                    return;
                }
            }
        }
        let mut events = futures::stream::select_all(streams);
        while let Some((is_namespace, item)) = events.next().await {
            match item {
                Ok(WatchItem::Event(event)) => {
                    let namespace = if is_namespace {
                        // A namespace's key ends with its name.
                        (event.kind == EventType::Added)
                            .then(|| event.key.rsplit('/').next())
                            .flatten()
                    } else {
                        repaired_namespace(&event.key)
                    };
                    if let Some(namespace) = namespace {
                        publish(&api, namespace).await;
                    }
                }
                Ok(WatchItem::Progress(_)) => {}
                // Fell behind the history: start over from the current revision.
                Err(_) => break,
            }
        }
        if api.storage.current_rv() == from {
            // The streams ended without anything happening: the store is closing.
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repair_keys() {
        let cm = storage::object_key("", "configmaps", Some("ns"), ROOT_CA_CONFIGMAP);
        assert_eq!(repaired_namespace(&cm), Some("ns"));
        let other = storage::object_key("", "configmaps", Some("ns"), "x");
        assert_eq!(repaired_namespace(&other), None);
        let sa = storage::object_key("", "serviceaccounts", Some("ns"), "default");
        assert_eq!(repaired_namespace(&sa), Some("ns"));
    }
}
