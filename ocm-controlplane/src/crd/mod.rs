//! CustomResourceDefinitions: serving custom resources while their CRD exists.
//!
//! A CRD is created with an empty status (`conditions: null`, empty `acceptedNames`,
//! `storedVersions` = the storage version). The CRD controller ([`run_controller`]) watches CRDs,
//! registers every served version in the registry, and sets `NamesAccepted` and `Established`
//! right after. Deleting a CRD unregisters its types and removes all its objects.

pub mod cel;
pub mod schema;

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{Value, json};

use crate::conversion::Conversion;
use crate::fieldmanager::now_rfc3339;
use crate::registry::{CustomVersion, Registry, ResourceInfo, Special};
use crate::rest::Api;
use crate::storage::{self, EventType, WatchItem};

fn is_crd(info: &ResourceInfo) -> bool {
    info.behavior.as_ref().map(|b| b.special) == Some(Special::Crd)
}

fn storage_version(crd: &Value) -> String {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .unwrap_or_default()
        .to_string()
}

/// Sets the initial status of a CRD being created.
pub fn on_create(info: &ResourceInfo, object: &mut Value) {
    if !is_crd(info) {
        return;
    }
    let sv = storage_version(object);
    if let Some(m) = object.as_object_mut() {
        m.insert(
            "status".into(),
            json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": [sv]}),
        );
    }
}

/// Keeps `storedVersions` of a CRD up to date on update.
pub fn on_update(info: &ResourceInfo, _old: &Value, new: &mut Value) {
    if !is_crd(info) {
        return;
    }
    let sv = storage_version(new);
    if let Some(stored) = new
        .pointer_mut("/status/storedVersions")
        .and_then(Value::as_array_mut)
        && !sv.is_empty()
        && !stored.iter().any(|v| v.as_str() == Some(&sv))
    {
        stored.push(json!(sv));
    }
}

/// After a CRD is deleted: unregister its types and delete its objects.
pub async fn on_delete(api: &Api, info: &ResourceInfo, object: &Value) {
    if !is_crd(info) {
        return;
    }
    let group = object
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let plural = object
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or_default();
    api.registry.remove_custom(group, plural);
    let prefix = storage::resource_prefix(group, plural, None);
    if let Ok(list) = api.storage.list(&prefix, None).await {
        for (key, _) in list.items {
            let _ = api.storage.delete(&key, None).await;
        }
    }
}

fn str_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// `base64(sha256("group/version/kind")[..8])`, the storage version hash of discovery.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// Registers every served version of a CRD.
pub fn register(registry: &Registry, crd: &Value) {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let names = crd.pointer("/spec/names").cloned().unwrap_or(Value::Null);
    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let namespaced = crd.pointer("/spec/scope").and_then(Value::as_str) == Some("Namespaced");
    let crd_name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let sv = storage_version(crd);
    let conversion = match crd.pointer("/spec/conversion/strategy").and_then(Value::as_str) {
        Some("Webhook") => match registry.converters().get(&group, &kind) {
            Some(converter) => Conversion::Convert(converter),
            None => Conversion::Unavailable,
        },
        _ => Conversion::Relabel,
    };
    registry.remove_custom(&group, &plural);
    let Some(versions) = crd.pointer("/spec/versions").and_then(Value::as_array) else {
        return;
    };
    for v in versions {
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let version = v
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let has_status = v.pointer("/subresources/status").is_some();
        let has_scale = v.pointer("/subresources/scale").is_some();
        let mut subresources = Vec::new();
        if has_status {
            subresources.push(json!({"kind": kind, "name": format!("{plural}/status"), "namespaced": namespaced, "singularName": "", "verbs": ["get", "patch", "update"]}));
        }
        if has_scale {
            subresources.push(json!({"group": "autoscaling", "kind": "Scale", "name": format!("{plural}/scale"), "namespaced": namespaced, "singularName": "", "verbs": ["get", "patch", "update"], "version": "v1"}));
        }
        let schema = v
            .pointer("/schema/openAPIV3Schema")
            .cloned()
            .unwrap_or(Value::Null);
        let printer_columns = v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        registry.add(ResourceInfo {
            group: group.clone(),
            version: version.clone(),
            resource: plural.clone(),
            kind: kind.clone(),
            singular: singular.clone(),
            namespaced,
            short_names: str_list(names.get("shortNames")),
            categories: str_list(names.get("categories")),
            verbs: [
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            storage_version_hash: Some(storage_version_hash(&group, &sv, &kind)),
            subresources,
            behavior: Some(crate::registry::Behavior {
                has_status,
                tracks_generation: true,
                allow_unconditional_update: false,
                special: Special::None,
            }),
            custom: Some(Arc::new(CustomVersion {
                cel: cel::compile(&schema).map(Arc::new),
                crd_name: crd_name.clone(),
                schema,
                printer_columns,
                storage_version: sv.clone(),
                conversion: conversion.clone(),
            })),
            storage_group: group.clone(),
            storage_resource: plural.clone(),
        });
    }
}

fn established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.get("type").and_then(Value::as_str) == Some("Established"))
        })
}

async fn establish(api: &Api, key: &str) {
    for _ in 0..16 {
        let Ok(Some(current)) = api.storage.get(key).await else {
            return;
        };
        let crd = current.object.as_ref();
        register(&api.registry, crd);
        if established(crd) || crd.pointer("/metadata/deletionTimestamp").is_some() {
            return;
        }
        let now = now_rfc3339();
        let mut new = crd.clone();
        let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
        if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("acceptedNames".into(), names);
            status.insert(
                "conditions".into(),
                json!([
                    {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts", "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
                ]),
            );
        }
        // kube-apiserver's CRD controllers write the status as an Update of `/status`.
        let manager = crate::fieldmanager::Manager {
            name: "kube-apiserver",
            api_version: "apiextensions.k8s.io/v1",
            subresource: "status",
        };
        let schema =
            crate::fieldmanager::Schema::builtin("apiextensions.k8s.io", "customresourcedefinitions");
        let managed =
            crate::fieldmanager::update_managed_fields(Some(crd), &new, schema, &["spec"], &manager);
        crate::rest::meta_mut(&mut new).insert("managedFields".into(), Value::Array(managed));
        match api.storage.update(key, new, Some(current.rv)).await {
            Ok(_) => return,
            Err(storage::StorageError::WriteConflict { .. }) => continue,
            Err(e) => {
                tracing::warn!(%key, error = %e, "could not establish CRD");
                return;
            }
        }
    }
}

/// The CRD controller: registers existing and new CRDs and establishes them.
pub async fn run_controller(api: Api) {
    let prefix = storage::resource_prefix("apiextensions.k8s.io", "customresourcedefinitions", None);
    let Ok(list) = api.storage.list(&prefix, None).await else {
        return;
    };
    for (key, _) in &list.items {
        establish(&api, key).await;
    }
    let Ok(mut events) = api.storage.watch(&prefix, list.rv).await else {
        return;
    };
    while let Some(item) = events.next().await {
        match item {
            Ok(WatchItem::Event(e)) => match e.kind {
                EventType::Added | EventType::Modified => establish(&api, &e.key).await,
                EventType::Deleted => {}
            },
            Ok(WatchItem::Progress(_)) => {}
            Err(_) => {
                // Fell behind the history: re-register everything.
                if let Ok(list) = api.storage.list(&prefix, None).await {
                    for (key, _) in &list.items {
                        establish(&api, key).await;
                    }
                }
                return Box::pin(run_controller(api)).await;
            }
        }
    }
}
