//! How the work agent writes to ManifestWorks and AppliedManifestWorks, as upstream's patcher
//! does (ocm-core.md §0.4): JSON merge patches computed from the old and new document, carrying
//! `metadata.uid` and `metadata.resourceVersion` so that a write based on a stale read fails
//! with 409 Conflict (and the reconcile retries from a fresh read) instead of overwriting what
//! another writer — the other status controller — wrote in between. Nothing is sent when old and
//! new are equal.

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// The JSON merge patch (RFC 7386) turning `old` into `new`, or `None` when they are equal.
/// Objects are diffed key by key (a removed key becomes `null`); anything else is replaced.
#[must_use]
pub fn merge_diff(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, old_value) in old {
                match new.get(key) {
                    None => {
                        patch.insert(key.clone(), Value::Null);
                    }
                    Some(new_value) => {
                        if let Some(diff) = merge_diff(old_value, new_value) {
                            patch.insert(key.clone(), diff);
                        }
                    }
                }
            }
            for (key, new_value) in new {
                if !old.contains_key(key) {
                    patch.insert(key.clone(), new_value.clone());
                }
            }
            Some(Value::Object(patch))
        }
        _ => Some(new.clone()),
    }
}

/// Patches the status of `object` from `old` to `new` (any serializable status) on its status
/// subresource; returns whether a patch was sent.
///
/// # Errors
/// The status did not serialize, or the API server refused the patch (409 when `object` is stale).
pub async fn patch_status<K, S>(api: &Api<K>, object: &K, old: &S, new: &S) -> Result<bool, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize,
{
    let old = serde_json::to_value(old).map_err(kube::Error::SerdeError)?;
    let new = serde_json::to_value(new).map_err(kube::Error::SerdeError)?;
    let Some(diff) = merge_diff(&old, &new) else {
        return Ok(false);
    };
    let patch = json!({
        "metadata": {"uid": object.meta().uid, "resourceVersion": object.meta().resource_version},
        "status": diff,
    });
    api.patch_status(&object.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(true)
}

/// Patches `spec` of `object` from `old` to `new`; returns whether a patch was sent.
///
/// # Errors
/// The spec did not serialize, or the API server refused the patch.
pub async fn patch_spec<K, S>(api: &Api<K>, object: &K, old: &S, new: &S) -> Result<bool, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize,
{
    let old = serde_json::to_value(old).map_err(kube::Error::SerdeError)?;
    let new = serde_json::to_value(new).map_err(kube::Error::SerdeError)?;
    let Some(diff) = merge_diff(&old, &new) else {
        return Ok(false);
    };
    let patch = json!({
        "metadata": {"uid": object.meta().uid, "resourceVersion": object.meta().resource_version},
        "spec": diff,
    });
    api.patch(&object.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(true)
}

/// Adds `finalizer` to `object` unless present; returns whether a patch was sent.
///
/// # Errors
/// The API server refused the patch.
pub async fn add_finalizer<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<bool, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    if object.finalizers().iter().any(|f| f == finalizer) {
        return Ok(false);
    }
    let mut finalizers = object.finalizers().to_vec();
    finalizers.push(finalizer.to_string());
    patch_finalizers(api, object, finalizers).await
}

/// Removes `finalizer` from `object` if present (NotFound is success); returns whether a patch
/// was sent.
///
/// # Errors
/// The API server refused the patch.
pub async fn remove_finalizer<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<bool, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    if !object.finalizers().iter().any(|f| f == finalizer) {
        return Ok(false);
    }
    let finalizers: Vec<String> = object
        .finalizers()
        .iter()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    match patch_finalizers(api, object, finalizers).await {
        Err(error) if super::is_status(&error, 404) => Ok(false),
        other => other,
    }
}

async fn patch_finalizers<K>(api: &Api<K>, object: &K, finalizers: Vec<String>) -> Result<bool, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let patch = json!({"metadata": {
        "uid": object.meta().uid,
        "resourceVersion": object.meta().resource_version,
        "finalizers": finalizers,
    }});
    api.patch(&object.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_of_equal_documents_is_none() {
        let doc = json!({"a": 1, "b": {"c": [1, 2]}});
        assert_eq!(merge_diff(&doc, &doc), None);
    }

    #[test]
    fn diff_sets_changed_adds_new_and_nulls_removed_keys() {
        let old = json!({"a": 1, "b": {"c": 1, "d": 2}, "gone": true, "list": [1, 2]});
        let new = json!({"a": 1, "b": {"c": 3, "d": 2}, "added": "x", "list": [1]});
        assert_eq!(
            merge_diff(&old, &new),
            Some(json!({"b": {"c": 3}, "gone": null, "added": "x", "list": [1]}))
        );
    }

    #[test]
    fn non_objects_are_replaced() {
        assert_eq!(merge_diff(&json!(null), &json!({"a": 1})), Some(json!({"a": 1})));
        assert_eq!(merge_diff(&json!({"a": 1}), &json!(null)), Some(json!(null)));
    }
}
