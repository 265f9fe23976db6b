//! The update strategies (ocm-core.md §3.4): how one manifest is written to the managed cluster.
//!
//! - **Update** (default): create if missing (label/annotation keys and owner references marked
//!   for removal with a trailing `-` left out); otherwise merge labels, annotations and owner
//!   references into the live object, keep its finalizers, and replace it only if that merge
//!   changed something or the object without metadata and status differs from the manifest. A
//!   cache of (manifest hash, resourceVersion written) skips objects nobody touched since. Upstream
//!   first tries library-go's typed appliers for well-known kinds and falls back to exactly this
//!   for the others; we use it for every kind (a decision documented in docs/work.md).
//! - **CreateOnly**: create if missing, never update; the owner reference is reconciled.
//! - **ServerSideApply**: server-side apply with the configured field manager (`work-agent`) and
//!   force flag, `ignoreFields` ([`super::ignore_fields`]); a conflict is its own error kind.
//! - **ReadOnly**: nothing is written; the manifest itself is the result.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use ocm_api::names::annotations;
use ocm_api::work::v1::{IgnoreFieldsCondition, ManifestConfigOption, UpdateStrategyType};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::ignore_fields::{self, IgnoreFieldError};
use crate::work::agent::{FIELD_MANAGER, is_status};

/// Why applying one manifest failed.
#[derive(Debug, thiserror::Error)]
pub enum StrategyError {
    /// The API server refused a read or write (its message is what the condition shows).
    #[error("{0}")]
    Api(#[source] kube::Error),
    /// Server-side apply met a field owned by another manager.
    #[error("{0}")]
    ServerSideApplyConflict(#[source] kube::Error),
    /// ignoreFields could not be processed.
    #[error(transparent)]
    IgnoreFields(#[from] IgnoreFieldError),
    /// The object could not be (de)serialized.
    #[error("encoding the object: {0}")]
    Encode(#[source] serde_json::Error),
}

impl StrategyError {
    /// Whether the API server answered 409 Conflict (the whole pass is retried).
    pub(crate) fn is_conflict(&self) -> bool {
        matches!(self, Self::Api(error) if is_status(error, 409))
    }
}

/// What the Update strategy remembers of objects it wrote: `(manifest hash, resourceVersion)`.
#[derive(Debug, Default)]
pub(crate) struct ResourceCache {
    written: Mutex<HashMap<String, (String, String)>>,
}

impl ResourceCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, String)>> {
        self.written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn cache_key(api: &Api<DynamicObject>, name: &str) -> String {
    format!("{}/{name}", api.resource_url())
}

/// SHA-256 (hex) of a JSON value.
pub(crate) fn hash(value: &Value) -> String {
    Sha256::digest(value.to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Create/update parameters naming the agent's field manager (upstream's requests carry the
/// `work-agent` user agent, which the API server records as the manager).
fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PostParams::default()
    }
}

/// Merge patch parameters naming the agent's field manager.
pub(crate) fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PatchParams::default()
    }
}

fn to_object(object: Map<String, Value>) -> Result<DynamicObject, StrategyError> {
    serde_json::from_value(Value::Object(object)).map_err(StrategyError::Encode)
}

/// `metadata` of an object, made an object if it was missing or something else.
fn metadata_mut(object: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    let slot = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Merges `required` into `existing` (keys ending in `-` remove that key); tells whether
/// anything changed.
pub(crate) fn merge_map(
    existing: &mut BTreeMap<String, String>,
    required: &BTreeMap<String, String>,
) -> bool {
    let mut modified = false;
    for (key, value) in required {
        if let Some(removed) = key.strip_suffix('-') {
            let removed = removed.trim_end_matches('-');
            modified |= existing.remove(removed).is_some();
        } else if existing.get(key) != Some(value) {
            existing.insert(key.clone(), value.clone());
            modified = true;
        }
    }
    modified
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Merges `required` owner references into `existing` (matched by name, kind and group; a UID
/// ending in `-` removes the match); tells whether anything changed.
pub(crate) fn merge_owner_refs(existing: &mut Vec<OwnerReference>, required: &[OwnerReference]) -> bool {
    let mut modified = false;
    for owner in required {
        let remove = owner.uid.ends_with('-');
        let found = existing.iter().position(|e| {
            e.name == owner.name
                && e.kind == owner.kind
                && group_of(&e.api_version) == group_of(&owner.api_version)
        });
        match (found, remove) {
            (None, true) => {}
            (None, false) => {
                existing.push(owner.clone());
                modified = true;
            }
            (Some(index), true) => {
                existing.remove(index);
                modified = true;
            }
            (Some(index), false) => {
                if existing[index] != *owner {
                    existing[index] = owner.clone();
                    modified = true;
                }
            }
        }
    }
    modified
}

/// The object as created: label/annotation keys and owner references marked for removal left out.
fn clean_for_create(mut object: Map<String, Value>) -> Map<String, Value> {
    if let Some(metadata) = metadata_mut(&mut object) {
        for field in ["labels", "annotations"] {
            if let Some(Value::Object(map)) = metadata.get_mut(field) {
                map.retain(|key, _| !key.ends_with('-'));
            }
        }
        if let Some(Value::Array(owners)) = metadata.get_mut("ownerReferences") {
            owners.retain(|o| {
                !o.get("uid")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .ends_with('-')
            });
        }
    }
    object
}

fn set_owner_refs(object: &mut Map<String, Value>, owners: &[OwnerReference]) -> Result<(), StrategyError> {
    let owners = serde_json::to_value(owners).map_err(StrategyError::Encode)?;
    if let Some(metadata) = metadata_mut(object) {
        metadata.insert("ownerReferences".into(), owners);
    }
    Ok(())
}

async fn create(
    api: &Api<DynamicObject>,
    object: Map<String, Value>,
) -> Result<DynamicObject, StrategyError> {
    let object = to_object(clean_for_create(object))?;
    api.create(&post_params(), &object)
        .await
        .map_err(StrategyError::Api)
}

/// Reconciles `owner` on a live object with a merge patch (upstream `ApplyOwnerReferences`).
pub(crate) async fn apply_owner_ref(
    api: &Api<DynamicObject>,
    live: DynamicObject,
    owner: &OwnerReference,
) -> Result<DynamicObject, StrategyError> {
    let mut owners = live.metadata.owner_references.clone().unwrap_or_default();
    if !merge_owner_refs(&mut owners, std::slice::from_ref(owner)) {
        return Ok(live);
    }
    let name = live.metadata.name.clone().unwrap_or_default();
    let patch = json!({"metadata": {
        "uid": live.metadata.uid,
        "resourceVersion": live.metadata.resource_version,
        "ownerReferences": owners,
    }});
    api.patch(&name, &patch_params(), &Patch::Merge(&patch))
        .await
        .map_err(StrategyError::Api)
}

/// Everything but metadata and status.
fn content(object: &Map<String, Value>) -> Map<String, Value> {
    object
        .iter()
        .filter(|(k, _)| *k != "metadata" && *k != "status")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Applies `required` with the Update strategy.
pub(crate) async fn update(
    api: &Api<DynamicObject>,
    name: &str,
    mut required: Map<String, Value>,
    owner: &OwnerReference,
    cache: &ResourceCache,
) -> Result<DynamicObject, StrategyError> {
    set_owner_refs(&mut required, std::slice::from_ref(owner))?;
    let required_hash = hash(&Value::Object(required.clone()));
    let key = cache_key(api, name);
    let Some(existing) = api.get_opt(name).await.map_err(StrategyError::Api)? else {
        let created = create(api, required).await?;
        if let Some(version) = &created.metadata.resource_version {
            cache.lock().insert(key, (required_hash, version.clone()));
        }
        return Ok(created);
    };
    let existing_version = existing.metadata.resource_version.clone().unwrap_or_default();
    if cache.lock().get(&key) == Some(&(required_hash.clone(), existing_version.clone())) {
        return Ok(existing);
    }
    let existing_json = serde_json::to_value(&existing).map_err(StrategyError::Encode)?;
    let existing_object = existing_json.as_object().cloned().unwrap_or_default();
    let existing_meta = existing_object
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required_meta = required
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut labels = string_map(existing_meta.get("labels"));
    let mut annotations = string_map(existing_meta.get("annotations"));
    let mut owners = existing.metadata.owner_references.clone().unwrap_or_default();
    let mut modified = merge_map(&mut labels, &string_map(required_meta.get("labels")));
    modified |= merge_map(&mut annotations, &string_map(required_meta.get("annotations")));
    modified |= merge_owner_refs(&mut owners, std::slice::from_ref(owner));
    if !modified && content(&required) == content(&existing_object) {
        return Ok(existing);
    }
    set_owner_refs(&mut required, &owners)?;
    if let Some(metadata) = metadata_mut(&mut required) {
        metadata.insert("labels".into(), json!(labels));
        metadata.insert("annotations".into(), json!(annotations));
        match existing_meta.get("finalizers") {
            Some(finalizers) => metadata.insert("finalizers".into(), finalizers.clone()),
            None => metadata.remove("finalizers"),
        };
        metadata.insert("resourceVersion".into(), json!(existing_version));
    }
    let updated = api
        .replace(name, &post_params(), &to_object(required)?)
        .await
        .map_err(StrategyError::Api)?;
    if let Some(version) = &updated.metadata.resource_version {
        cache.lock().insert(key, (required_hash, version.clone()));
    }
    Ok(updated)
}

/// Applies `required` with the CreateOnly strategy.
pub(crate) async fn create_only(
    api: &Api<DynamicObject>,
    name: &str,
    mut required: Map<String, Value>,
    owner: &OwnerReference,
) -> Result<DynamicObject, StrategyError> {
    let live = match api.get_opt(name).await.map_err(StrategyError::Api)? {
        Some(live) => live,
        None => {
            set_owner_refs(&mut required, std::slice::from_ref(owner))?;
            create(api, required).await?
        }
    };
    apply_owner_ref(api, live, owner).await
}

/// Removes every `metadata.creationTimestamp: null`, at any depth (templates carry one too).
fn remove_null_creation_timestamps(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(metadata)) = map.get_mut("metadata")
                && metadata.get("creationTimestamp") == Some(&Value::Null)
            {
                metadata.remove("creationTimestamp");
            }
            map.values_mut().for_each(remove_null_creation_timestamps);
        }
        Value::Array(items) => items.iter_mut().for_each(remove_null_creation_timestamps),
        _ => {}
    }
}

/// Applies `required` with the ServerSideApply strategy.
pub(crate) async fn server_side_apply(
    api: &Api<DynamicObject>,
    name: &str,
    required: Map<String, Value>,
    owner: &OwnerReference,
    config: &ManifestConfigOption,
) -> Result<DynamicObject, StrategyError> {
    let mut original = Value::Object(required);
    remove_null_creation_timestamps(&mut original);
    let ssa = config
        .update_strategy
        .as_ref()
        .and_then(|s| s.server_side_apply.as_ref());
    let force = ssa.and_then(|s| s.force).unwrap_or(false);
    let field_manager = ssa
        .and_then(|s| s.field_manager.clone())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| FIELD_MANAGER.to_string());
    let ignore = ssa
        .and_then(|s| s.ignore_fields.as_ref())
        .filter(|f| !f.is_empty());
    let mut required = original.clone();
    if let Some(ignore) = ignore {
        for field in ignore {
            if field.condition == Some(IgnoreFieldsCondition::OnSpokeChange) {
                continue;
            }
            ignore_fields::remove(&mut required, field).await?;
        }
        let required_hash: String = hash(&required).chars().take(32).collect();
        for object in [&mut required, &mut original] {
            if let Some(metadata) = object.as_object_mut().and_then(metadata_mut) {
                let annotations = metadata
                    .entry("annotations")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(annotations_map) = annotations {
                    annotations_map.insert(annotations::CONFIG_SPEC_HASH.into(), json!(required_hash));
                }
            }
        }
        match api.get_opt(name).await.map_err(StrategyError::Api)? {
            None => required = original,
            Some(live) => {
                if live
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(annotations::CONFIG_SPEC_HASH))
                    == Some(&required_hash)
                {
                    return apply_owner_ref(api, live, owner).await;
                }
            }
        }
    }
    let mut params = PatchParams::apply(&field_manager);
    params.force = force;
    let applied = match api.patch(name, &params, &Patch::Apply(&required)).await {
        Ok(applied) => applied,
        Err(error) if is_status(&error, 409) => return Err(StrategyError::ServerSideApplyConflict(error)),
        Err(error) => return Err(StrategyError::Api(error)),
    };
    apply_owner_ref(api, applied, owner).await
}

/// Which strategy a manifest configuration selects (Update by default).
pub(crate) fn strategy_of(config: Option<&ManifestConfigOption>) -> UpdateStrategyType {
    config
        .and_then(|c| c.update_strategy.as_ref())
        .and_then(|s| s.type_)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(name: &str, uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "work.open-cluster-management.io/v1".into(),
            kind: "AppliedManifestWork".into(),
            name: name.into(),
            uid: uid.into(),
            ..OwnerReference::default()
        }
    }

    #[test]
    fn owner_refs_merge_and_remove_by_marker() {
        let mut existing = vec![owner("other", "u2")];
        assert!(merge_owner_refs(&mut existing, &[owner("mine", "u1")]));
        assert_eq!(existing.len(), 2);
        assert!(!merge_owner_refs(&mut existing, &[owner("mine", "u1")]));
        assert!(merge_owner_refs(&mut existing, &[owner("mine", "u1-")]));
        assert_eq!(existing, vec![owner("other", "u2")]);
        assert!(!merge_owner_refs(&mut existing, &[owner("mine", "u1-")]));
    }

    #[test]
    fn maps_merge_and_remove_by_marker() {
        let mut existing: BTreeMap<String, String> =
            [("a".into(), "1".into()), ("b".into(), "2".into())].into();
        let required: BTreeMap<String, String> = [
            ("a".into(), "1".into()),
            ("b-".into(), String::new()),
            ("c".into(), "3".into()),
        ]
        .into();
        assert!(merge_map(&mut existing, &required));
        assert_eq!(
            existing,
            [("a".into(), "1".into()), ("c".into(), "3".into())].into()
        );
        assert!(!merge_map(&mut existing, &required));
    }

    #[test]
    fn creation_drops_removal_markers() {
        let object = json!({"metadata": {"name": "x", "labels": {"a": "1", "b-": ""},
            "annotations": {"c-": ""}, "ownerReferences": [{"uid": "u1-"}, {"uid": "u2"}]}})
        .as_object()
        .cloned()
        .unwrap();
        let cleaned = clean_for_create(object);
        assert_eq!(
            Value::Object(cleaned),
            json!({"metadata": {"name": "x", "labels": {"a": "1"}, "annotations": {}, "ownerReferences": [{"uid": "u2"}]}})
        );
    }

    #[test]
    fn null_creation_timestamps_go_at_any_depth() {
        let mut object = json!({"metadata": {"name": "d", "creationTimestamp": null},
            "spec": {"template": {"metadata": {"creationTimestamp": null, "labels": {"a": "b"}}},
                     "list": [{"metadata": {"creationTimestamp": null}}]}});
        remove_null_creation_timestamps(&mut object);
        assert_eq!(
            object,
            json!({"metadata": {"name": "d"}, "spec": {"template": {"metadata": {"labels": {"a": "b"}}},
                "list": [{"metadata": {}}]}})
        );
    }
}
