//! Namespace deletion, as kube-controller-manager's namespace controller and kube-apiserver's
//! namespace store do it.
//!
//! DELETE of a namespace ([`crate::rest`]) sets `deletionTimestamp` and phase `Terminating`;
//! creates inside it are refused from then on. This controller then deletes every object of every
//! namespaced stored type in it (custom resources included; objects with finalizers stay until
//! their finalizers are removed), reports progress in the namespace's `status.conditions` (the
//! five condition types with kube's reasons and messages), and once nothing is left removes the
//! `kubernetes` finalizer through the `finalize` subresource, upon which the namespace is deleted.
//!
//! `default`, `kube-system` and `kube-public` cannot be deleted ([`IMMORTAL_NAMESPACES`]);
//! `kube-node-lease` can, and is created again right after, as kube-apiserver's system-namespaces
//! controller does.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use tokio::time::Instant;

use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};

use super::{KeyParts, controller_context, stored_types};
use crate::registry::{ResourceInfo, Special};
use crate::rest::{Api, RequestContext, finalizers};
use crate::status::ApiError;
use crate::storage::{self, EventType, WatchItem};

/// Namespaces kube-apiserver's NamespaceLifecycle admission refuses to delete.
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The finalizer in `spec.finalizers` this controller owns.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";

/// How often terminating namespaces are looked at again even without a change in them.
const RESYNC: Duration = Duration::from_secs(5);

/// How long after a namespace starts terminating its content is first deleted (kube's namespace
/// controller waits the same, so that creations racing with the DELETE are seen).
const DELETION_GRACE: Duration = Duration::from_secs(5);

/// How soon a pass that failed is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// kube-controller-manager's User-Agent prefix (its manager name in managedFields).
const MANAGER: &str = "kube-controller-manager";

/// The condition types the controller maintains, in kube's order.
const CONDITION_TYPES: [&str; 5] = [
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
];

fn is_namespace(info: &ResourceInfo) -> bool {
    info.behavior.as_ref().map(|b| b.special) == Some(Special::Namespace)
}

/// A namespace's `spec.finalizers`.
fn spec_finalizers(object: &Value) -> Vec<String> {
    object
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The namespace store's update rule: an update of the namespace itself keeps `spec.finalizers`
/// (only the `finalize` subresource changes them).
pub(crate) fn prepare_update(info: &ResourceInfo, subresource: &str, old: &Value, new: &mut Value) {
    if !is_namespace(info) || !subresource.is_empty() {
        return;
    }
    let kept = old.pointer("/spec/finalizers").cloned();
    let spec = crate::rest::ensure_object(
        crate::rest::ensure_object(new)
            .entry("spec")
            .or_insert(Value::Null),
    );
    match kept {
        Some(f) => spec.insert("finalizers".into(), f),
        None => spec.remove("finalizers"),
    };
}

/// Whether `object` is a namespace that still waits for `spec.finalizers` (and so is not deleted
/// when its last `metadata.finalizers` entry goes).
pub(crate) fn awaits_finalizers(info: &ResourceInfo, object: &Value) -> bool {
    is_namespace(info) && !spec_finalizers(object).is_empty()
}

/// What deleting the content of one namespace left.
#[derive(Debug, Default, PartialEq)]
struct ContentTotals {
    /// `resource.group` -> objects remaining.
    remaining: BTreeMap<String, usize>,
    /// finalizer -> objects carrying it.
    finalizers: BTreeMap<String, usize>,
    /// Failed deletions, as messages.
    errors: Vec<String>,
}

fn condition(kind: &str, status: &str, reason: &str, message: String) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message})
}

/// The five conditions for `totals`, as kube's namespace controller words them.
fn conditions_for(totals: &ContentTotals) -> Vec<Value> {
    let mut out = vec![
        condition(
            CONDITION_TYPES[0],
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered".into(),
        ),
        condition(
            CONDITION_TYPES[1],
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed".into(),
        ),
    ];
    out.push(if totals.errors.is_empty() {
        condition(
            CONDITION_TYPES[2],
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization".into(),
        )
    } else {
        let mut errors = totals.errors.clone();
        errors.sort();
        condition(
            CONDITION_TYPES[2],
            "True",
            "ContentDeletionFailed",
            format!(
                "Failed to delete all resource types, {} remaining: {}",
                errors.len(),
                errors.join(", ")
            ),
        )
    });
    out.push(if totals.remaining.is_empty() {
        condition(
            CONDITION_TYPES[3],
            "False",
            "ContentRemoved",
            "All content successfully removed".into(),
        )
    } else {
        let list: Vec<String> = totals
            .remaining
            .iter()
            .map(|(resource, n)| format!("{resource} has {n} resource instances"))
            .collect();
        condition(
            CONDITION_TYPES[3],
            "True",
            "SomeResourcesRemain",
            format!("Some resources are remaining: {}", list.join(", ")),
        )
    });
    out.push(if totals.finalizers.is_empty() {
        condition(
            CONDITION_TYPES[4],
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished".into(),
        )
    } else {
        let list: Vec<String> = totals
            .finalizers
            .iter()
            .map(|(f, n)| format!("{f} in {n} resource instances"))
            .collect();
        condition(
            CONDITION_TYPES[4],
            "True",
            "SomeFinalizersRemain",
            format!(
                "Some content in the namespace has finalizers remaining: {}",
                list.join(", ")
            ),
        )
    });
    out
}

/// Merges `wanted` into `current` as kube does: a condition whose status, reason or message
/// changed is replaced (its `lastTransitionTime` moves only when the status changes); missing
/// ones are appended. Returns whether anything changed.
fn merge_conditions(current: &mut Vec<Value>, wanted: Vec<Value>) -> bool {
    let now = crate::fieldmanager::now_rfc3339();
    let mut changed = false;
    for mut new in wanted {
        let kind = new.get("type").cloned();
        match current.iter_mut().find(|c| c.get("type") == kind.as_ref()) {
            None => {
                new["lastTransitionTime"] = json!(now);
                current.push(new);
                changed = true;
            }
            Some(old) => {
                let same = |f: &str| old.get(f) == new.get(f);
                if same("status") && same("reason") && same("message") {
                    continue;
                }
                let time = if same("status") {
                    old.get("lastTransitionTime").cloned().unwrap_or(json!(now))
                } else {
                    json!(now)
                };
                new["lastTransitionTime"] = time;
                *old = new;
                changed = true;
            }
        }
    }
    changed
}

/// Deletes what is in `namespace` (in the background, each object's finalizers honoured) and
/// counts what is left.
async fn delete_content(api: &Api, namespace: &str) -> ContentTotals {
    let mut totals = ContentTotals::default();
    let options = json!({"propagationPolicy": "Background"});
    for info in stored_types(api).into_iter().filter(|i| i.namespaced) {
        let prefix = storage::resource_prefix(&info.storage_group, &info.storage_resource, Some(namespace));
        let label = format!("{}.{}", info.storage_resource, info.storage_group);
        let list = match api.storage.list(&prefix, None).await {
            Ok(list) => list,
            Err(error) => {
                totals.errors.push(format!("listing {label}: {error}"));
                continue;
            }
        };
        for (_, stored) in &list.items {
            if stored.object.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            let name = stored
                .object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let ctx = RequestContext {
                name: Some(name.to_string()),
                ..controller_context(MANAGER, Some(namespace))
            };
            if let Err(error) = api.delete(&info, &ctx, &options).await
                && error.code != 404
            {
                totals
                    .errors
                    .push(format!("deleting {label} {name}: {}", error.message));
            }
        }
        let Ok(left) = api.storage.list(&prefix, None).await else {
            continue;
        };
        if left.items.is_empty() {
            continue;
        }
        totals.remaining.insert(label, left.items.len());
        for (_, stored) in &left.items {
            for f in finalizers(&stored.object) {
                *totals.finalizers.entry(f).or_default() += 1;
            }
        }
    }
    totals
}

/// One pass over a terminating namespace. `Ok(true)` when it is finished (finalized or gone).
async fn sync(api: &Api, name: &str) -> Result<bool, ApiError> {
    let Some(info) = api.registry.get("", "v1", "namespaces") else {
        return Ok(true);
    };
    let key = storage::object_key("", "namespaces", None, name);
    let Some(current) = api.storage.get(&key).await.map_err(ApiError::internal)? else {
        return Ok(true);
    };
    if current.object.pointer("/metadata/deletionTimestamp").is_none() {
        return Ok(true);
    }
    if !spec_finalizers(&current.object)
        .iter()
        .any(|f| f == KUBERNETES_FINALIZER)
    {
        return Ok(true);
    }
    let totals = delete_content(api, name).await;
    write_conditions(api, &info, name, &totals).await?;
    if !totals.errors.is_empty() {
        return Err(ApiError::internal(totals.errors.join(", ")));
    }
    if !totals.remaining.is_empty() {
        return Ok(false);
    }
    finalize(api, &info, name).await?;
    if name == "kube-node-lease" {
        // kube-apiserver keeps its system namespaces: this one comes back at once.
        super::bootstrap(api).await?;
    }
    Ok(true)
}

/// Writes the conditions through the status subresource when they changed.
async fn write_conditions(
    api: &Api,
    info: &ResourceInfo,
    name: &str,
    totals: &ContentTotals,
) -> Result<(), ApiError> {
    let key = storage::object_key("", "namespaces", None, name);
    for _attempt in 0..16 {
        let Some(current) = api.storage.get(&key).await.map_err(ApiError::internal)? else {
            return Ok(());
        };
        let mut namespace = (*current.object).clone();
        let status = crate::rest::ensure_object(
            crate::rest::ensure_object(&mut namespace)
                .entry("status")
                .or_insert(Value::Null),
        );
        let mut conditions = status
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !merge_conditions(&mut conditions, conditions_for(totals)) {
            return Ok(());
        }
        status.insert("conditions".into(), Value::Array(conditions));
        let ctx = RequestContext {
            name: Some(name.to_string()),
            subresource: Some("status".into()),
            ..controller_context(MANAGER, None)
        };
        match api.update(info, &ctx, namespace.to_string().as_bytes()).await {
            Ok(_) => return Ok(()),
            Err(error) if error.code == 409 => continue,
            Err(error) if error.code == 404 => return Ok(()),
            Err(error) => return Err(error),
        }
    }
    Err(ApiError::conflict(&info.subject(), name))
}

/// Removes the `kubernetes` finalizer through `namespaces/<name>/finalize`; the namespace is
/// deleted by that update when nothing else holds it.
async fn finalize(api: &Api, info: &ResourceInfo, name: &str) -> Result<(), ApiError> {
    let key = storage::object_key("", "namespaces", None, name);
    for _attempt in 0..16 {
        let Some(current) = api.storage.get(&key).await.map_err(ApiError::internal)? else {
            return Ok(());
        };
        let mut namespace = (*current.object).clone();
        let left: Vec<String> = spec_finalizers(&namespace)
            .into_iter()
            .filter(|f| f != KUBERNETES_FINALIZER)
            .collect();
        let spec = crate::rest::ensure_object(
            crate::rest::ensure_object(&mut namespace)
                .entry("spec")
                .or_insert(Value::Null),
        );
        if left.is_empty() {
            spec.remove("finalizers");
        } else {
            spec.insert("finalizers".into(), json!(left));
        }
        let ctx = RequestContext {
            name: Some(name.to_string()),
            subresource: Some("finalize".into()),
            ..controller_context(MANAGER, None)
        };
        match api.update(info, &ctx, namespace.to_string().as_bytes()).await {
            Ok(_) => return Ok(()),
            Err(error) if error.code == 409 => continue,
            Err(error) if error.code == 404 => return Ok(()),
            Err(error) => return Err(error),
        }
    }
    Err(ApiError::conflict(&info.subject(), name))
}

/// Terminating namespaces and when each is due for its next pass.
#[derive(Debug, Default)]
struct Schedule {
    /// Terminating namespace -> the end of its deletion grace period.
    terminating: HashMap<String, Instant>,
    /// Namespace -> when to sync it next.
    due: BTreeMap<String, Instant>,
}

impl Schedule {
    /// Syncs `namespace` at `at`, not before its grace period ends, keeping an earlier time.
    fn wake(&mut self, namespace: &str, at: Instant) {
        let Some(grace) = self.terminating.get(namespace) else {
            return;
        };
        let at = at.max(*grace);
        let slot = self.due.entry(namespace.to_string()).or_insert(at);
        *slot = (*slot).min(at);
    }

    /// Takes in one change: a namespace starting or ending termination, or content of a
    /// terminating namespace changing.
    fn observe(&mut self, event: &storage::Event, now: Instant) {
        let Some(parts) = KeyParts::parse(&event.key) else {
            return;
        };
        if parts.group == "core" && parts.resource == "namespaces" && parts.namespace.is_none() {
            // Unreadable metadata (which the store never writes) counts as not terminating.
            let deleting = event.kind != EventType::Deleted
                && event
                    .metadata()
                    .is_ok_and(|object| object.pointer("/metadata/deletionTimestamp").is_some());
            if !deleting {
                self.terminating.remove(parts.name);
                self.due.remove(parts.name);
                return;
            }
            self.terminating
                .entry(parts.name.to_string())
                .or_insert(now + DELETION_GRACE);
            self.wake(parts.name, now);
            return;
        }
        if let Some(namespace) = parts.namespace {
            self.wake(namespace, now);
        }
    }

    /// The first namespace due at `now`.
    fn next_due(&mut self, now: Instant) -> Option<String> {
        let name = self
            .due
            .iter()
            .find(|(_, at)| **at <= now)
            .map(|(name, _)| name.clone())?;
        self.due.remove(&name);
        Some(name)
    }

    fn earliest(&self) -> Option<Instant> {
        self.due.values().min().copied()
    }
}

/// The namespace controller: follows every change and syncs terminating namespaces.
pub async fn run(api: Api) {
    loop {
        let Ok(namespaces) = api
            .storage
            .list(&storage::resource_prefix("", "namespaces", None), None)
            .await
        else {
            return;
        };
        let now = Instant::now();
        let mut schedule = Schedule::default();
        for (_, stored) in &namespaces.items {
            if stored.object.pointer("/metadata/deletionTimestamp").is_none() {
                continue;
            }
            if let Some(name) = stored.object.pointer("/metadata/name").and_then(Value::as_str) {
                schedule.terminating.insert(name.to_string(), now);
                schedule.wake(name, now);
            }
        }
        let Ok(mut events) = api.storage.watch("/", namespaces.rv).await else {
            return;
        };
        let mut resync = tokio::time::interval(RESYNC);
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        'follow: loop {
            // Take in every change already there before working, so one pass sees them all.
            loop {
                match events.next().now_or_never() {
                    Some(Some(Ok(WatchItem::Event(event)))) => schedule.observe(&event, Instant::now()),
                    Some(Some(Ok(WatchItem::Progress(_)))) => {}
                    Some(Some(Err(_))) => break 'follow,
                    Some(None) => return,
                    None => break,
                }
            }
            if let Some(namespace) = schedule.next_due(Instant::now()) {
                match sync(&api, &namespace).await {
                    Ok(true) => {
                        schedule.terminating.remove(&namespace);
                    }
                    Ok(false) => {}
                    Err(error) => {
                        tracing::debug!(%namespace, %error, "namespace deletion will be retried");
                        schedule.wake(&namespace, Instant::now() + RETRY);
                    }
                }
                continue;
            }
            let sleep_until = schedule.earliest().unwrap_or_else(|| Instant::now() + RESYNC);
            tokio::select! {
                item = events.next() => match item {
                    None => return,
                    Some(Ok(WatchItem::Event(event))) => schedule.observe(&event, Instant::now()),
                    Some(Ok(WatchItem::Progress(_))) => {}
                    Some(Err(_)) => break 'follow,
                },
                _ = tokio::time::sleep_until(sleep_until) => {}
                _ = resync.tick() => {
                    let now = Instant::now();
                    let names: Vec<String> = schedule.terminating.keys().cloned().collect();
                    for name in names {
                        schedule.wake(&name, now);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_are_worded_like_kube() {
        let mut totals = ContentTotals::default();
        totals.remaining.insert("configmaps.".into(), 1);
        totals.finalizers.insert("example.com/hold".into(), 1);
        let c = conditions_for(&totals);
        assert_eq!(
            c[3]["message"],
            "Some resources are remaining: configmaps. has 1 resource instances"
        );
        assert_eq!(c[4]["reason"], "SomeFinalizersRemain");
        assert_eq!(
            c[4]["message"],
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
        );
        let ok = conditions_for(&ContentTotals::default());
        assert_eq!(ok[2]["reason"], "ContentDeleted");
        assert_eq!(ok[4]["message"], "All content-preserving finalizers finished");
    }

    #[test]
    fn merging_keeps_unchanged_conditions() {
        let mut current = Vec::new();
        assert!(merge_conditions(
            &mut current,
            conditions_for(&ContentTotals::default())
        ));
        assert_eq!(current.len(), 5);
        assert!(!merge_conditions(
            &mut current,
            conditions_for(&ContentTotals::default())
        ));
        let mut totals = ContentTotals::default();
        totals.errors.push("boom".into());
        assert!(merge_conditions(&mut current, conditions_for(&totals)));
        assert_eq!(current[2]["status"], "True");
        assert_eq!(
            current[2]["message"],
            "Failed to delete all resource types, 1 remaining: boom"
        );
    }

    #[test]
    fn namespace_updates_keep_spec_finalizers() {
        let registry = crate::registry::Registry::with_builtins();
        let info = registry.get("", "v1", "namespaces").unwrap();
        let old = json!({"spec": {"finalizers": ["kubernetes"]}});
        let mut new = json!({"spec": {}});
        prepare_update(&info, "", &old, &mut new);
        assert_eq!(new["spec"]["finalizers"], json!(["kubernetes"]));
        let mut finalized = json!({"spec": {}});
        prepare_update(&info, "finalize", &old, &mut finalized);
        assert!(!awaits_finalizers(&info, &finalized));
        assert!(awaits_finalizers(&info, &old));
    }
}
