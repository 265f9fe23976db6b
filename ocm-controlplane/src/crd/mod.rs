//! CustomResourceDefinitions: serving custom resources while their CRD exists.
//!
//! A CRD is created with an empty status (`conditions: null`, empty `acceptedNames`,
//! `storedVersions` = the storage version). The CRD controller ([`run_controller`]) watches CRDs,
//! registers every served version in the registry, and sets `NamesAccepted` and `Established`
//! right after (and `KubernetesAPIApprovalPolicyConformant` in protected groups, see
//! [`approval`]). Deleting a CRD goes through its cleanup finalizer
//! ([`crate::controllers::crd_deletion`]): its custom resources are deleted first; when the CRD
//! itself is gone its types are unregistered.

pub mod approval;
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

/// Kube's admission for the resources of a terminating CRD: no creates (403).
///
/// # Errors
/// When `info` is a custom resource type whose CRD is being deleted.
pub fn refuse_create_while_terminating(
    info: &ResourceInfo,
    object: &Value,
) -> Result<(), crate::status::ApiError> {
    if !info.custom.as_ref().is_some_and(|c| c.terminating) {
        return Ok(());
    }
    let subject = info.subject();
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let who = if name.is_empty() {
        subject.qualified_resource()
    } else {
        format!("{} \"{name}\"", subject.qualified_resource())
    };
    Err(crate::status::ApiError::forbidden(
        &subject,
        name,
        format!("{who} is forbidden: create not allowed while custom resource definition is terminating"),
    ))
}

/// After a CRD is deleted: unregister its types and delete what is left of its objects (the CRD
/// finalizer deleted them before, unless its finalizer was removed by hand).
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
    let terminating = condition_true(crd, "Terminating");
    registry.remove_custom(&group, &plural);
    let Some(versions) = crd.pointer("/spec/versions").and_then(Value::as_array) else {
        return;
    };
    let schemas: Arc<std::collections::BTreeMap<String, Value>> = Arc::new(
        versions
            .iter()
            .filter_map(|v| {
                let name = v.get("name").and_then(Value::as_str)?;
                let schema = v.pointer("/schema/openAPIV3Schema").cloned()?;
                Some((name.to_string(), schema))
            })
            .collect(),
    );
    // A terminating CRD's resources accept no creates; discovery says so (as kube's does).
    let verbs: &[&str] = if terminating {
        &["delete", "deletecollection", "get", "list", "watch"]
    } else {
        &[
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch",
        ]
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
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
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
                schemas: schemas.clone(),
                terminating,
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

/// Whether the CRD's condition `kind` has status `True`.
pub(crate) fn condition_true(crd: &Value, kind: &str) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(kind)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// Sets condition `new` (without `lastTransitionTime`) in `conditions` as kube's `SetCRDCondition`
/// does: the transition time changes with the status only. Returns whether anything changed.
pub(crate) fn set_condition(conditions: &mut Vec<Value>, mut new: Value, now: &str) -> bool {
    let kind = new.get("type").cloned();
    match conditions.iter_mut().find(|c| c.get("type") == kind.as_ref()) {
        None => {
            new["lastTransitionTime"] = json!(now);
            conditions.push(new);
            true
        }
        Some(old) => {
            let same = |f: &str| old.get(f) == new.get(f);
            if same("status") && same("reason") && same("message") {
                return false;
            }
            new["lastTransitionTime"] = if same("status") {
                old.get("lastTransitionTime").cloned().unwrap_or(json!(now))
            } else {
                json!(now)
            };
            *old = new;
            true
        }
    }
}

/// The conditions of `crd` as its controllers leave them while it is not being deleted:
/// `NamesAccepted` and `Established` once, and `KubernetesAPIApprovalPolicyConformant` for
/// protected groups. `None` when nothing changes.
fn served_conditions(crd: &Value, now: &str) -> Option<Vec<Value>> {
    let mut conditions = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut changed = false;
    if !established(crd) {
        for c in [
            json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"}),
            json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}),
        ] {
            changed |= set_condition(&mut conditions, c, now);
        }
    }
    if let Some(c) = approval::condition(crd) {
        changed |= set_condition(&mut conditions, c, now);
    }
    changed.then_some(conditions)
}

/// Stores `new` in place of `current` (the CRD at `key`) as kube-apiserver's CRD controllers
/// write: an Update of `/status` by manager `kube-apiserver`.
pub(crate) async fn write_status(
    api: &Api,
    key: &str,
    current: &storage::Stored,
    mut new: Value,
) -> Result<storage::Stored, storage::StorageError> {
    let manager = crate::fieldmanager::Manager {
        name: "kube-apiserver",
        api_version: "apiextensions.k8s.io/v1",
        subresource: "status",
    };
    let schema = crate::fieldmanager::Schema::builtin("apiextensions.k8s.io", "customresourcedefinitions");
    let managed = crate::fieldmanager::update_managed_fields(
        Some(current.object.as_ref()),
        &new,
        schema,
        &["spec"],
        &manager,
    );
    crate::rest::meta_mut(&mut new).insert("managedFields".into(), Value::Array(managed));
    api.storage.update(key, new, Some(current.rv)).await
}

async fn establish(api: &Api, key: &str) {
    for _ in 0..16 {
        let Ok(Some(current)) = api.storage.get(key).await else {
            return;
        };
        let crd = current.object.as_ref();
        register(&api.registry, crd);
        if crd.pointer("/metadata/deletionTimestamp").is_some() {
            return;
        }
        let now = now_rfc3339();
        let Some(conditions) = served_conditions(crd, &now) else {
            return;
        };
        let mut new = crd.clone();
        let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
        if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
            if !established(crd) {
                status.insert("acceptedNames".into(), names);
            }
            status.insert("conditions".into(), Value::Array(conditions));
        }
        match write_status(api, key, &current, new).await {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn addon_crd(strategy: &str) -> Value {
        let schema = |only: &str| {
            json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
                "properties": {"shared": {"type": "string"}, only: {"type": "string"}}}}}})
        };
        json!({"metadata": {"name": "clustermanagementaddons.addon.open-cluster-management.io"},
            "spec": {"group": "addon.open-cluster-management.io", "scope": "Cluster",
                "names": {"plural": "clustermanagementaddons", "kind": "ClusterManagementAddOn"},
                "conversion": {"strategy": strategy},
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": true, "schema": schema("onlyAlpha")},
                    {"name": "v1beta1", "served": true, "storage": false, "schema": schema("onlyBeta")}]}})
    }

    #[test]
    fn strategy_none_never_runs_a_registered_converter() {
        let registry = Registry::with_builtins();
        assert!(
            registry
                .converters()
                .get("addon.open-cluster-management.io", "ClusterManagementAddOn")
                .is_some()
        );
        register(&registry, &addon_crd("None"));
        let info = registry
            .get(
                "addon.open-cluster-management.io",
                "v1beta1",
                "clustermanagementaddons",
            )
            .unwrap();
        let custom = info.custom.as_ref().unwrap();
        assert!(matches!(custom.conversion, Conversion::Relabel));
        let stored = json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "ClusterManagementAddOn", "metadata": {"name": "a"},
            "spec": {"shared": "x", "onlyAlpha": "y", "supportedConfigs": [{"group": "g"}]}});
        let read = crate::rest::to_version(&info, &stored).unwrap();
        assert_eq!(
            read,
            json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ClusterManagementAddOn", "metadata": {"name": "a"}, "spec": {"shared": "x"}})
        );
        register(&registry, &addon_crd("Webhook"));
        let info = registry
            .get(
                "addon.open-cluster-management.io",
                "v1beta1",
                "clustermanagementaddons",
            )
            .unwrap();
        assert!(matches!(
            info.custom.as_ref().unwrap().conversion,
            Conversion::Convert(_)
        ));
    }

    #[test]
    fn terminating_crds_refuse_creates_and_list_fewer_verbs() {
        let registry = Registry::with_builtins();
        let mut crd = addon_crd("None");
        register(&registry, &crd);
        let info = registry
            .get(
                "addon.open-cluster-management.io",
                "v1alpha1",
                "clustermanagementaddons",
            )
            .unwrap();
        assert!(refuse_create_while_terminating(&info, &json!({"metadata": {"name": "a"}})).is_ok());
        assert!(info.verbs.iter().any(|v| v == "create"));
        crd["status"] = json!({"conditions": [{"type": "Terminating", "status": "True"}]});
        register(&registry, &crd);
        let info = registry
            .get(
                "addon.open-cluster-management.io",
                "v1alpha1",
                "clustermanagementaddons",
            )
            .unwrap();
        assert_eq!(info.verbs, ["delete", "deletecollection", "get", "list", "watch"]);
        let refused =
            refuse_create_while_terminating(&info, &json!({"metadata": {"name": "a"}})).unwrap_err();
        assert_eq!(refused.code, 403);
        assert_eq!(
            refused.message,
            "clustermanagementaddons.addon.open-cluster-management.io \"a\" is forbidden: create not allowed while custom resource definition is terminating"
        );
    }

    #[test]
    fn served_conditions_add_the_approval_condition_in_protected_groups() {
        let crd = json!({"metadata": {"annotations": {"api-approved.kubernetes.io": "unapproved"}},
            "spec": {"group": "about.k8s.io"}, "status": {"conditions": null}});
        let conditions = served_conditions(&crd, "2020-01-01T00:00:00Z").unwrap();
        let types: Vec<&str> = conditions.iter().filter_map(|c| c["type"].as_str()).collect();
        assert_eq!(
            types,
            [
                "NamesAccepted",
                "Established",
                "KubernetesAPIApprovalPolicyConformant"
            ]
        );
        let mut settled = crd.clone();
        settled["status"]["conditions"] = Value::Array(conditions);
        assert!(served_conditions(&settled, "2020-01-02T00:00:00Z").is_none());
        let plain = json!({"spec": {"group": "example.com"}, "status": {"conditions": null}});
        assert_eq!(served_conditions(&plain, "t").unwrap().len(), 2);
    }
}
