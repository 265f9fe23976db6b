//! The `kube-system/extension-apiserver-authentication` ConfigMap, as kube-apiserver's cluster
//! authentication trust controller publishes it: the CA bundle that signs client certificates
//! (`client-ca-file`), for extension API servers and webhooks that authenticate callers
//! themselves. kube-apiserver adds the `requestheader-*` keys only when it is configured with a
//! front proxy (`--requestheader-client-ca-file`); this server has none, so it writes none.
//!
//! As kube's controller, it keeps what others added: certificates already in `client-ca-file`
//! stay (ours is appended when missing) and other keys are left alone. [`sync`] runs at start;
//! [`run`] restores the ConfigMap when it is changed or deleted.

use futures::StreamExt;
use serde_json::{Value, json};

use super::controller_context;
use crate::rest::Api;
use crate::status::ApiError;
use crate::storage::{self, WatchItem};

/// The namespace of the ConfigMap.
pub const NAMESPACE: &str = "kube-system";
/// The ConfigMap's name.
pub const NAME: &str = "extension-apiserver-authentication";
/// The manager name kube-apiserver writes it with.
const MANAGER: &str = "kube-apiserver";

/// `bundle` with `ca` appended unless it already holds it.
fn combined(bundle: &str, ca: &str) -> String {
    if bundle.contains(ca.trim()) {
        return bundle.to_string();
    }
    let mut out = bundle.trim_end().to_string();
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(ca.trim());
    out.push('\n');
    out
}

/// Creates or repairs the ConfigMap so that its `client-ca-file` holds `client_ca`.
///
/// # Errors
/// The failed read or write.
pub async fn sync(api: &Api, client_ca: &str) -> Result<(), ApiError> {
    let Some(info) = api.registry.get("", "v1", "configmaps") else {
        return Ok(());
    };
    let key = storage::object_key("", "configmaps", Some(NAMESPACE), NAME);
    let ctx = controller_context(MANAGER, Some(NAMESPACE));
    match api.storage.get(&key).await.map_err(ApiError::internal)? {
        None => {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": NAMESPACE},
                "data": {"client-ca-file": combined("", client_ca)}});
            match api.create_object(&info, &ctx, body.to_string().as_bytes()).await {
                Err(e) if e.code != 409 => Err(e),
                _ => Ok(()),
            }
        }
        Some(current) => {
            let bundle = current
                .object
                .pointer("/data/client-ca-file")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let wanted = combined(bundle, client_ca);
            if wanted == bundle {
                return Ok(());
            }
            let mut updated = (*current.object).clone();
            let data = crate::rest::ensure_object(
                crate::rest::ensure_object(&mut updated)
                    .entry("data")
                    .or_insert(Value::Null),
            );
            data.insert("client-ca-file".into(), json!(wanted));
            let ctx = crate::rest::RequestContext {
                name: Some(NAME.into()),
                ..ctx
            };
            match api.update(&info, &ctx, updated.to_string().as_bytes()).await {
                Err(e) if e.code != 409 => Err(e),
                _ => Ok(()),
            }
        }
    }
}

/// Follows the ConfigMap and restores it after every change or deletion.
pub async fn run(api: Api, client_ca: String) {
    let key = storage::object_key("", "configmaps", Some(NAMESPACE), NAME);
    let prefix = storage::resource_prefix("", "configmaps", Some(NAMESPACE));
    loop {
        let from = api.storage.current_rv();
        if let Err(error) = sync(&api, &client_ca).await {
            tracing::warn!(%error, "could not publish {NAMESPACE}/{NAME}");
        }
        let mut events = match api.storage.watch(&prefix, from).await {
            Ok(stream) => stream,
            Err(error) => {
                tracing::warn!(%error, "authentication trust: cannot watch configmaps");
                return;
            }
        };
        while let Some(item) = events.next().await {
            match item {
                Ok(WatchItem::Event(event)) if *event.key == *key => {
                    if let Err(error) = sync(&api, &client_ca).await {
                        tracing::warn!(%error, "could not publish {NAMESPACE}/{NAME}");
                    }
                }
                Ok(_) => {}
                // Fell behind the history: start over from the current revision.
                Err(_) => break,
            }
        }
        if api.storage.current_rv() == from {
            // The stream ended without anything happening: the store is closing.
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::combined;

    #[test]
    fn bundles_keep_other_certificates() {
        let ours = "-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n";
        let other = "-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----\n";
        assert_eq!(combined("", ours), ours);
        assert_eq!(combined(ours, ours), ours);
        assert_eq!(combined(other, ours), format!("{other}{ours}"));
    }
}
