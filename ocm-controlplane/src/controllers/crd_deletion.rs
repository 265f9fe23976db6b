//! CRD deletion, as kube-apiserver's CRD store and its CRD finalizer controller do it.
//!
//! The first DELETE of a CRD (`start_deletion`) does not remove it: it sets
//! `deletionTimestamp`, adds the finalizer [`CLEANUP_FINALIZER`] and the condition `Terminating`
//! (`True`, `InstanceDeletionPending`), and answers the CRD (200). From then on the CRD's
//! resources refuse creates with 403 ("create not allowed while custom resource definition is
//! terminating") and discovery lists them without `create`, `update` and `patch`.
//!
//! This controller ([`run`]) then marks the deletion in progress (`InstanceDeletionInProgress`),
//! deletes every custom resource of the CRD namespace by namespace (each with its own finalizers
//! honoured: objects that keep finalizers stay until they are removed), waits up to a minute for
//! them to be gone (`InstanceDeletionCheck` and a retry when they are not), sets `Terminating`
//! to `False` (`InstanceDeletionCompleted`, or `NeverEstablished` for a CRD that never served)
//! and removes its finalizer, upon which the CRD is deleted when no other finalizer holds it.
//! Every status write is an Update of `/status` by `kube-apiserver`, as kube's controller writes.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{controller_context, stored_types};
use crate::fieldmanager::now_rfc3339;
use crate::registry::{ResourceInfo, Special};
use crate::rest::{Api, Reply, RequestContext, finalizers, to_version};
use crate::status::ApiError;
use crate::storage::{self, EventType, StorageError, WatchItem};

/// The finalizer a CRD carries from its first DELETE until its custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// How long the controller waits for the custom resources to go before it reports
/// `InstanceDeletionCheck` and starts over (kube's finalizer waits one minute).
const INSTANCES_TIMEOUT: Duration = Duration::from_secs(60);

/// How often the remaining custom resources are counted while waiting.
const POLL: Duration = Duration::from_secs(1);

/// How soon a failed pass is tried again.
const RETRY: Duration = Duration::from_secs(2);

/// How often terminating CRDs are looked at again without a change.
const RESYNC: Duration = Duration::from_secs(10);

/// Resources whose CRD may not delete instances: their storage belongs to a built-in type.
const OVERLAPPING_BUILT_IN: [(&str, &str); 2] = [
    ("apiregistration.k8s.io", "apiservices"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
];

const CRD_GROUP: &str = "apiextensions.k8s.io";
const CRD_RESOURCE: &str = "customresourcedefinitions";

fn is_crd(info: &ResourceInfo) -> bool {
    info.behavior.as_ref().map(|b| b.special) == Some(Special::Crd)
}

fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn condition(status: &str, reason: &str, message: impl Into<String>) -> Value {
    json!({"type": "Terminating", "status": status, "reason": reason, "message": message.into()})
}

/// `crd` with condition `Terminating` set to `terminating` (see [`crate::crd::set_condition`]).
fn with_condition(crd: &Value, terminating: Value) -> Value {
    let mut new = crd.clone();
    let status = crate::rest::ensure_object(
        crate::rest::ensure_object(&mut new)
            .entry("status")
            .or_insert(Value::Null),
    );
    let mut conditions = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    crate::crd::set_condition(&mut conditions, terminating, &now_rfc3339());
    status.insert("conditions".into(), Value::Array(conditions));
    new
}

/// The first DELETE of a CRD: `deletionTimestamp`, the cleanup finalizer and `Terminating`
/// (`InstanceDeletionPending`), answered with the CRD. `None` when the CRD is already being
/// deleted: the DELETE is then handled like any other (finalizers wait, options apply).
///
/// # Errors
/// 404 when the CRD does not exist; 409 when a precondition fails (kube's CRD store words).
pub(crate) async fn start_deletion(
    api: &Api,
    info: &ResourceInfo,
    ctx: &RequestContext,
    options: &Value,
) -> Result<Option<Reply>, ApiError> {
    if !is_crd(info) {
        return Ok(None);
    }
    let name = ctx.name.clone().unwrap_or_default();
    let subject = info.subject();
    let key = storage::object_key(CRD_GROUP, CRD_RESOURCE, None, &name);
    for _attempt in 0..64 {
        let Some(current) = api.storage.get(&key).await.map_err(ApiError::internal)? else {
            return Err(ApiError::not_found(&subject, &name));
        };
        let old = current.object.as_ref();
        crate::rest::delete::check_update_preconditions(options, &subject, &name, old, current.rv)?;
        if !meta_str(old, "deletionTimestamp").is_empty() {
            return Ok(None);
        }
        let mut new = with_condition(
            old,
            condition(
                "True",
                "InstanceDeletionPending",
                "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
            ),
        );
        let mut fins = finalizers(old);
        if !fins.iter().any(|f| f == CLEANUP_FINALIZER) {
            fins.push(CLEANUP_FINALIZER.into());
        }
        let m = crate::rest::meta_mut(&mut new);
        m.insert("deletionTimestamp".into(), json!(now_rfc3339()));
        m.insert("finalizers".into(), json!(fins));
        if ctx.dry_run {
            return Ok(Some(reply(info, &new)?));
        }
        match api.storage.update(&key, new, Some(current.rv)).await {
            Ok(stored) => return Ok(Some(reply(info, &stored.object)?)),
            Err(StorageError::WriteConflict { .. }) => continue,
            Err(e) => return Err(crate::rest::storage_error(info, &name, e)),
        }
    }
    Err(ApiError::conflict(&subject, &name))
}

fn reply(info: &ResourceInfo, object: &Value) -> Result<Reply, ApiError> {
    Ok(Reply {
        code: 200,
        body: to_version(info, object)?,
        warnings: Vec::new(),
    })
}

/// Why a pass over a terminating CRD did not finish.
#[derive(Debug, thiserror::Error)]
enum CleanupError {
    /// Reading or writing the CRD failed.
    #[error("updating the CRD {name}: {message}")]
    UpdateCrd { name: String, message: String },
    /// Some custom resources could not be listed or deleted, or did not go in time.
    #[error("deleting the custom resources of {name}: {message}")]
    DeleteInstances { name: String, message: String },
}

/// The served type the custom resources of `crd` are deleted through.
fn instance_type(api: &Api, crd: &Value) -> Option<Arc<ResourceInfo>> {
    let group = crd.pointer("/spec/group").and_then(Value::as_str)?;
    let plural = crd.pointer("/spec/names/plural").and_then(Value::as_str)?;
    stored_types(api)
        .into_iter()
        .find(|i| i.is_custom() && i.group == group && i.resource == plural)
}

/// Deletes every custom resource of `crd` and waits for them to be gone; the `Terminating`
/// condition to report, and the error when they are not all gone.
async fn delete_instances(api: &Api, crd: &Value) -> (Value, Result<(), String>) {
    let failed = |reason: &str, message: String| (condition("True", reason, message.clone()), Err(message));
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let plural = crd
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(info) = instance_type(api, crd) else {
        return failed(
            "InstanceDeletionFailed",
            format!("could not list instances: unable to find a custom resource client for {plural}.{group}"),
        );
    };
    let prefix = storage::resource_prefix(group, plural, None);
    let list = match api.storage.list(&prefix, None).await {
        Ok(list) => list,
        Err(error) => {
            return failed(
                "InstanceDeletionFailed",
                format!("could not list instances: {error}"),
            );
        }
    };
    let mut errors = Vec::new();
    let options = json!({});
    for (_, stored) in &list.items {
        if !meta_str(&stored.object, "deletionTimestamp").is_empty() {
            continue;
        }
        let namespace = meta_str(&stored.object, "namespace");
        let ctx = RequestContext {
            name: Some(meta_str(&stored.object, "name").to_string()),
            ..controller_context("kube-apiserver", (!namespace.is_empty()).then_some(namespace))
        };
        if let Err(error) = api.delete(&info, &ctx, &options).await
            && error.code != 404
        {
            errors.push(error.message);
        }
    }
    if !errors.is_empty() {
        return failed(
            "InstanceDeletionFailed",
            format!("could not issue all deletes: {}", join_errors(&errors)),
        );
    }
    let deadline = Instant::now() + INSTANCES_TIMEOUT;
    loop {
        match api.storage.list(&prefix, None).await {
            Ok(left) if left.items.is_empty() => break,
            Ok(_) if Instant::now() < deadline => tokio::time::sleep(POLL).await,
            Ok(_) => {
                return failed(
                    "InstanceDeletionCheck",
                    "could not confirm zero CustomResources remaining: context deadline exceeded".into(),
                );
            }
            Err(error) => {
                return failed(
                    "InstanceDeletionCheck",
                    format!("could not confirm zero CustomResources remaining: {error}"),
                );
            }
        }
    }
    (
        condition("False", "InstanceDeletionCompleted", "removed all instances"),
        Ok(()),
    )
}

/// Several errors as kube's error aggregate prints them.
fn join_errors(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Writes `new` over `current` (an Update of `/status`); with no finalizer left on a deleted
/// CRD, deletes it instead, as kube-apiserver's store does on such an update.
async fn store(
    api: &Api,
    key: &str,
    current: &storage::Stored,
    new: Value,
) -> Result<Option<storage::Stored>, StorageError> {
    if finalizers(&new).is_empty() {
        api.storage.delete(key, Some(current.rv)).await?;
        if let Some(info) = api.registry.get(CRD_GROUP, "v1", CRD_RESOURCE) {
            crate::crd::on_delete(api, &info, &new).await;
        }
        return Ok(None);
    }
    crate::crd::write_status(api, key, current, new).await.map(Some)
}

/// One pass over the CRD `name`: done (`Ok`) when it is gone, no longer terminating, or its
/// finalizer has been removed.
async fn sync(api: &Api, name: &str) -> Result<(), CleanupError> {
    let key = storage::object_key(CRD_GROUP, CRD_RESOURCE, None, name);
    let update_error = |e: StorageError| CleanupError::UpdateCrd {
        name: name.to_string(),
        message: e.to_string(),
    };
    let Some(current) = api.storage.get(&key).await.map_err(update_error)? else {
        return Ok(());
    };
    let crd = current.object.as_ref();
    if meta_str(crd, "deletionTimestamp").is_empty()
        || !finalizers(crd).iter().any(|f| f == CLEANUP_FINALIZER)
    {
        return Ok(());
    }
    let in_progress = with_condition(
        crd,
        condition(
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        ),
    );
    let Some(current) = store(api, &key, &current, in_progress)
        .await
        .map_err(update_error)?
    else {
        return Ok(());
    };
    let crd = current.object.as_ref();
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let plural = crd
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (terminating, outcome) = if OVERLAPPING_BUILT_IN.contains(&(group, plural)) {
        (
            condition(
                "False",
                "OverlappingBuiltInResource",
                "instances overlap with built-in resources in storage",
            ),
            Ok(()),
        )
    } else if crate::crd::condition_true(crd, "Established") {
        delete_instances(api, crd).await
    } else {
        (
            condition("False", "NeverEstablished", "resource was never established"),
            Ok(()),
        )
    };
    if let Err(message) = outcome {
        // Report why, then start over later (kube's controller requeues the CRD).
        if let Ok(Some(latest)) = api.storage.get(&key).await {
            let _ = store(api, &key, &latest, with_condition(&latest.object, terminating)).await;
        }
        return Err(CleanupError::DeleteInstances {
            name: name.to_string(),
            message,
        });
    }
    for _attempt in 0..16 {
        let Some(latest) = api.storage.get(&key).await.map_err(update_error)? else {
            return Ok(());
        };
        let mut done = with_condition(&latest.object, terminating.clone());
        let left: Vec<String> = finalizers(&done)
            .into_iter()
            .filter(|f| f != CLEANUP_FINALIZER)
            .collect();
        let m = crate::rest::meta_mut(&mut done);
        if left.is_empty() {
            m.remove("finalizers");
        } else {
            m.insert("finalizers".into(), json!(left));
        }
        match store(api, &key, &latest, done).await {
            Ok(_) => return Ok(()),
            Err(StorageError::WriteConflict { .. }) => continue,
            Err(e) => return Err(update_error(e)),
        }
    }
    Err(CleanupError::UpdateCrd {
        name: name.to_string(),
        message: "kept conflicting with other writers".into(),
    })
}

/// Whether a stored CRD waits for this controller.
fn awaits_cleanup(object: &Value) -> bool {
    !meta_str(object, "deletionTimestamp").is_empty()
        && finalizers(object).iter().any(|f| f == CLEANUP_FINALIZER)
}

/// Runs [`sync`] for `name` until it finishes, unless a pass for it already runs.
fn spawn_cleanup(api: &Api, running: &Arc<Mutex<HashSet<String>>>, name: String) {
    {
        let Ok(mut set) = running.lock() else {
            return;
        };
        if !set.insert(name.clone()) {
            return;
        }
    }
    let api = api.clone();
    let running = running.clone();
    tokio::spawn(async move {
        while let Err(error) = sync(&api, &name).await {
            tracing::debug!(crd = %name, %error, "CRD cleanup will be retried");
            tokio::time::sleep(RETRY).await;
        }
        if let Ok(mut set) = running.lock() {
            set.remove(&name);
        }
    });
}

/// The CRD finalizer controller: follows the CRDs and cleans up every one being deleted.
pub async fn run(api: Api) {
    let prefix = storage::resource_prefix(CRD_GROUP, CRD_RESOURCE, None);
    let running: Arc<Mutex<HashSet<String>>> = Arc::default();
    loop {
        let Ok(list) = api.storage.list(&prefix, None).await else {
            return;
        };
        for (_, stored) in &list.items {
            if awaits_cleanup(&stored.object) {
                spawn_cleanup(&api, &running, meta_str(&stored.object, "name").to_string());
            }
        }
        let Ok(mut events) = api.storage.watch(&prefix, list.rv).await else {
            return;
        };
        let mut resync = tokio::time::interval(RESYNC);
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        resync.tick().await;
        loop {
            tokio::select! {
                item = events.next() => match item {
                    None => return,
                    Some(Ok(WatchItem::Event(event))) if event.kind != EventType::Deleted => match event.object() {
                        Ok(object) if awaits_cleanup(&object) => {
                            spawn_cleanup(&api, &running, meta_str(&object, "name").to_string());
                        }
                        Ok(_) => {}
                        // Unreadable: list again.
                        Err(_) => break,
                    },
                    Some(Ok(WatchItem::Event(_))) => {}
                    Some(Ok(WatchItem::Progress(_))) => {}
                    // Fell behind the history: list again.
                    Some(Err(_)) => break,
                },
                _ = resync.tick() => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_their_transition_time_while_the_status_holds() {
        let crd = json!({"status": {"conditions": [
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": "2020-01-01T00:00:00Z"}]}});
        let pending = with_condition(&crd, condition("True", "InstanceDeletionPending", "pending"));
        let conditions = pending["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions.len(), 2);
        assert_eq!(conditions[1]["type"], "Terminating");
        let mut stamped = pending.clone();
        stamped["status"]["conditions"][1]["lastTransitionTime"] = json!("2020-01-02T00:00:00Z");
        let progress = with_condition(
            &stamped,
            condition(
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
            ),
        );
        let t = &progress["status"]["conditions"][1];
        assert_eq!(t["reason"], "InstanceDeletionInProgress");
        assert_eq!(t["lastTransitionTime"], "2020-01-02T00:00:00Z");
        let done = with_condition(
            &stamped,
            condition("False", "InstanceDeletionCompleted", "removed all instances"),
        );
        assert_ne!(
            done["status"]["conditions"][1]["lastTransitionTime"],
            "2020-01-02T00:00:00Z"
        );
        assert_eq!(done["status"]["conditions"][0], crd["status"]["conditions"][0]);
    }

    #[test]
    fn only_deleted_crds_with_the_finalizer_await_cleanup() {
        let deleted = json!({"metadata": {"name": "a", "deletionTimestamp": "2020-01-01T00:00:00Z",
            "finalizers": [CLEANUP_FINALIZER]}});
        assert!(awaits_cleanup(&deleted));
        let other = json!({"metadata": {"name": "a", "deletionTimestamp": "2020-01-01T00:00:00Z",
            "finalizers": ["example.com/x"]}});
        assert!(!awaits_cleanup(&other));
        let live = json!({"metadata": {"name": "a", "finalizers": [CLEANUP_FINALIZER]}});
        assert!(!awaits_cleanup(&live));
    }

    #[test]
    fn errors_are_joined_like_kubes_aggregate() {
        assert_eq!(join_errors(&["a".into()]), "a");
        assert_eq!(join_errors(&["a".into(), "b".into()]), "[a, b]");
    }
}
