//! The garbage collector, as kube-controller-manager's: objects whose owners are all gone are
//! deleted, across every stored kind (custom resources included) and across scopes.
//!
//! It keeps an index of every object's `ownerReferences` (the `graph` module), built from a list of the
//! whole store and kept current from the storage watch, and works through a queue of objects to
//! look at:
//!
//! - an object with owner references (when it appears or its references change) or whose owner
//!   was deleted: each owner is looked up where kube looks it up (a namespaced owner in the
//!   dependent's namespace, a cluster-scoped one in the cluster scope) and compared by uid. An
//!   owner that is missing, or has another uid, is *dangling*; one being deleted in the
//!   foreground is *waiting*; others are *solid*. With a solid owner, dangling and waiting
//!   references are removed from the object; without one, the object is deleted (in the
//!   foreground when a waiting owner needs it and it has dependents itself, else with the policy
//!   its own finalizers ask for, else in the background). A namespaced owner named from another
//!   namespace is therefore absent; a cluster-scoped object naming a namespaced owner is never
//!   collected; an owner of a type not served (yet) is looked at again later.
//! - an object being deleted with the `orphan` finalizer: the references to it are removed from
//!   its dependents, then the finalizer.
//! - an object being deleted with the `foregroundDeletion` finalizer: its dependents are deleted,
//!   and the finalizer is removed once no dependent with `blockOwnerDeletion` is left.
//!
//! Writes go through the [`Api`] as kube-controller-manager's, with uid and resourceVersion
//! preconditions on deletes; a conflict puts the object back into the queue.

mod graph;

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};

use self::graph::{Graph, Node, OwnerRef, owner_refs, uid_of};
use super::{KeyParts, controller_context, type_of};
use crate::registry::ResourceInfo;
use crate::rest::{Api, RequestContext, finalizers, key_of, to_version};
use crate::status::ApiError;
use crate::storage::{self, EventType, Stored, WatchItem};

/// The finalizer of `propagationPolicy=Orphan`.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer of `propagationPolicy=Foreground`.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// kube-controller-manager's User-Agent prefix (its manager name in managedFields).
const MANAGER: &str = "kube-controller-manager";

/// How soon objects that could not be handled (an owner type not served yet, a failed write) are
/// looked at again.
const RETRY: Duration = Duration::from_secs(1);

/// A failed step of the collector.
#[derive(Debug, thiserror::Error)]
enum CollectError {
    /// An owner reference names a type the server does not serve (yet).
    #[error("owner {api_version}/{kind} {name}: type not served")]
    ResolveOwner {
        /// The owner's apiVersion.
        api_version: String,
        /// The owner's kind.
        kind: String,
        /// The owner's name.
        name: String,
    },
    /// A cluster-scoped object names a namespaced owner: it is never collected.
    #[error("cluster-scoped object with the namespaced owner {kind} {name}")]
    NamespacedOwnerOfClusterScoped {
        /// The owner's kind.
        kind: String,
        /// The owner's name.
        name: String,
    },
    /// A read or write through the API failed.
    #[error("{operation}: {source}")]
    Write {
        /// What was attempted.
        operation: &'static str,
        /// The answer.
        source: ApiError,
    },
}

/// What an owner reference points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnerState {
    /// The owner exists and is not deleting its dependents in the foreground.
    Solid,
    /// No such owner (absent, or another object under its name).
    Dangling,
    /// The owner is being deleted in the foreground.
    Waiting,
}

/// A FIFO of storage keys without duplicates.
#[derive(Debug, Default)]
struct Queue {
    order: VecDeque<String>,
    queued: HashSet<String>,
}

impl Queue {
    fn push(&mut self, key: &str) {
        if self.queued.insert(key.to_string()) {
            self.order.push_back(key.to_string());
        }
    }

    fn pop(&mut self) -> Option<String> {
        let key = self.order.pop_front()?;
        self.queued.remove(&key);
        Some(key)
    }
}

fn is_deleting(object: &Value) -> bool {
    object.pointer("/metadata/deletionTimestamp").is_some()
}

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `group` and `version` of an `apiVersion`.
fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

struct Collector {
    api: Api,
    graph: Graph,
    queue: Queue,
    /// Objects to look at again after [`RETRY`].
    retry: BTreeSet<String>,
}

impl Collector {
    fn new(api: Api) -> Self {
        Self {
            api,
            graph: Graph::default(),
            queue: Queue::default(),
            retry: BTreeSet::new(),
        }
    }

    /// Takes in an object that exists (listed at start, created or changed).
    fn observe_object(&mut self, key: &str, object: &Value) {
        let node = Node::of(object);
        let wants_attention = node.orphaning || node.deleting_dependents;
        let owners = node.owners.clone();
        let previous = self.graph.upsert(key, node);
        let changed = previous.as_ref().is_none_or(|p| p.owners != owners);
        if changed && !owners.is_empty() {
            self.queue.push(key);
        }
        if wants_attention {
            self.queue.push(key);
        }
        // Owners waiting for this object may go on when a blocking reference went away.
        if let Some(previous) = previous {
            for old in previous.owners.iter().filter(|o| o.block) {
                let still_blocks = owners.iter().any(|n| n.uid == old.uid && n.block);
                if !still_blocks {
                    self.wake_waiting_owner(&old.uid);
                }
            }
        }
    }

    /// Queues the owner with `uid` if it is being deleted in the foreground.
    fn wake_waiting_owner(&mut self, uid: &str) {
        if let Some(owner_key) = self.graph.key_of(uid).map(str::to_string)
            && self.graph.get(&owner_key).is_some_and(|n| n.deleting_dependents)
        {
            self.queue.push(&owner_key);
        }
    }

    /// Takes in one change from the watch (only the object's metadata is read).
    fn observe(&mut self, event: &storage::Event) -> Result<(), storage::StorageError> {
        match event.kind {
            EventType::Added | EventType::Modified => {
                let object = event.metadata()?;
                if let Some(node) = self.graph.get(&event.key)
                    && &*node.uid != uid_of(&object)
                {
                    self.forget(&event.key);
                }
                self.observe_object(&event.key, &object);
            }
            EventType::Deleted => self.forget(&event.key),
        }
        Ok(())
    }

    /// Forgets a deleted object: its dependents lost an owner, its waiting owners a dependent.
    fn forget(&mut self, key: &str) {
        let Some(node) = self.graph.remove(key) else {
            return;
        };
        for dependent in self.graph.dependents_of(&node.uid) {
            self.queue.push(&dependent);
        }
        for owner in &node.owners {
            self.wake_waiting_owner(&owner.uid);
        }
    }

    /// Looks at one object.
    async fn process(&mut self, key: &str) {
        let result = self.process_inner(key).await;
        match result {
            Ok(()) => {}
            Err(CollectError::NamespacedOwnerOfClusterScoped { .. }) => {
                tracing::debug!(%key, "cluster-scoped object names a namespaced owner; not collected");
            }
            Err(error) => {
                tracing::debug!(%key, %error, "garbage collection will be retried");
                self.retry.insert(key.to_string());
            }
        }
    }

    async fn process_inner(&mut self, key: &str) -> Result<(), CollectError> {
        let Some(parts) = KeyParts::parse(key) else {
            return Ok(());
        };
        let Some(stored) = self.read(key).await? else {
            return Ok(());
        };
        let Some(info) = type_of(&self.api, &parts, &stored.object) else {
            return Ok(());
        };
        if is_deleting(&stored.object) {
            let fins = finalizers(&stored.object);
            if fins.iter().any(|f| f == ORPHAN_FINALIZER) {
                return self.orphan_dependents(&info, &parts, &stored).await;
            }
            if fins.iter().any(|f| f == FOREGROUND_FINALIZER) {
                return self.delete_dependents_first(&info, &parts, &stored).await;
            }
            return Ok(());
        }
        self.collect(&info, &parts, &stored).await
    }

    async fn read(&self, key: &str) -> Result<Option<Stored>, CollectError> {
        self.api.storage.get(key).await.map_err(|e| CollectError::Write {
            operation: "reading an object",
            source: ApiError::internal(e),
        })
    }

    /// Where an owner reference of an object in `namespace` points.
    async fn owner_state(
        &self,
        owner: &OwnerRef,
        namespace: Option<&str>,
    ) -> Result<OwnerState, CollectError> {
        let (group, version) = split_api_version(&owner.api_version);
        let Some(info) = self.api.registry.by_kind(group, version, &owner.kind) else {
            return Err(CollectError::ResolveOwner {
                api_version: owner.api_version.clone(),
                kind: owner.kind.clone(),
                name: owner.name.clone(),
            });
        };
        let key = match (info.namespaced, namespace) {
            (false, _) => key_of(&info, None, &owner.name),
            (true, Some(ns)) => key_of(&info, Some(ns), &owner.name),
            (true, None) => {
                return Err(CollectError::NamespacedOwnerOfClusterScoped {
                    kind: owner.kind.clone(),
                    name: owner.name.clone(),
                });
            }
        };
        let Some(found) = self.read(&key).await? else {
            return Ok(OwnerState::Dangling);
        };
        if uid_of(&found.object) != owner.uid {
            return Ok(OwnerState::Dangling);
        }
        let waiting = is_deleting(&found.object)
            && finalizers(&found.object)
                .iter()
                .any(|f| f == FOREGROUND_FINALIZER);
        Ok(if waiting {
            OwnerState::Waiting
        } else {
            OwnerState::Solid
        })
    }

    /// An object not being deleted: delete it when no owner is solid, else drop the references
    /// to absent and waiting owners.
    async fn collect(
        &mut self,
        info: &ResourceInfo,
        parts: &KeyParts<'_>,
        stored: &Stored,
    ) -> Result<(), CollectError> {
        let owners = owner_refs(&stored.object);
        if owners.is_empty() {
            return Ok(());
        }
        let mut solid = false;
        let mut gone: Vec<String> = Vec::new();
        let mut waiting = false;
        for owner in &owners {
            match self.owner_state(owner, parts.namespace).await? {
                OwnerState::Solid => solid = true,
                OwnerState::Dangling => gone.push(owner.uid.clone()),
                OwnerState::Waiting => {
                    waiting = true;
                    gone.push(owner.uid.clone());
                }
            }
        }
        if solid {
            if gone.is_empty() {
                return Ok(());
            }
            return self
                .edit(info, parts, stored, |object| {
                    retain_owner_refs(object, |r| {
                        !gone
                            .iter()
                            .any(|u| Some(u.as_str()) == r.get("uid").and_then(Value::as_str))
                    });
                })
                .await;
        }
        let uid = uid_of(&stored.object).to_string();
        let has_dependents = !self.graph.dependents_of(&uid).is_empty();
        let fins = finalizers(&stored.object);
        let policy = if waiting && has_dependents {
            // Break a cycle of foreground deletions: a dependent that is itself deleting its
            // dependents must not wait for this object.
            let cycle = self
                .graph
                .dependents_of(&uid)
                .iter()
                .any(|d| self.graph.get(d).is_some_and(|n| n.deleting_dependents));
            if cycle {
                self.edit(info, parts, stored, |object| {
                    unblock_owner_refs(object);
                })
                .await?;
                return Ok(());
            }
            "Foreground"
        } else if fins.iter().any(|f| f == ORPHAN_FINALIZER) {
            "Orphan"
        } else if fins.iter().any(|f| f == FOREGROUND_FINALIZER) {
            "Foreground"
        } else {
            "Background"
        };
        let options = json!({"propagationPolicy": policy,
            "preconditions": {"uid": uid, "resourceVersion": stored.rv.to_string()}});
        let ctx = self.context(parts, name_of(&stored.object));
        match self.api.delete(info, &ctx, &options).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(source) => Err(CollectError::Write {
                operation: "deleting a dependent",
                source,
            }),
        }
    }

    /// An owner deleted with `propagationPolicy=Orphan`: its dependents lose the reference to it,
    /// then it loses the `orphan` finalizer.
    async fn orphan_dependents(
        &mut self,
        info: &ResourceInfo,
        parts: &KeyParts<'_>,
        stored: &Stored,
    ) -> Result<(), CollectError> {
        let uid = uid_of(&stored.object).to_string();
        for dependent_key in self.graph.dependents_of(&uid) {
            let Some(dependent_parts) = KeyParts::parse(&dependent_key) else {
                continue;
            };
            let Some(dependent) = self.read(&dependent_key).await? else {
                continue;
            };
            let Some(dependent_info) = type_of(&self.api, &dependent_parts, &dependent.object) else {
                continue;
            };
            self.edit(&dependent_info, &dependent_parts, &dependent, |object| {
                retain_owner_refs(object, |r| {
                    r.get("uid").and_then(Value::as_str) != Some(uid.as_str())
                });
            })
            .await?;
        }
        self.remove_finalizer(info, parts, stored, ORPHAN_FINALIZER).await
    }

    /// An owner deleted with `propagationPolicy=Foreground`: its dependents are deleted, and the
    /// `foregroundDeletion` finalizer goes once no dependent with `blockOwnerDeletion` is left.
    async fn delete_dependents_first(
        &mut self,
        info: &ResourceInfo,
        parts: &KeyParts<'_>,
        stored: &Stored,
    ) -> Result<(), CollectError> {
        let uid = uid_of(&stored.object).to_string();
        let mut blocking = false;
        for dependent_key in self.graph.dependents_of(&uid) {
            let Some(dependent_parts) = KeyParts::parse(&dependent_key) else {
                continue;
            };
            let Some(dependent) = self.read(&dependent_key).await? else {
                continue;
            };
            let blocks = owner_refs(&dependent.object)
                .iter()
                .any(|r| r.uid == uid && r.block);
            if is_deleting(&dependent.object) {
                blocking |= blocks;
                if self
                    .graph
                    .get(&dependent_key)
                    .is_some_and(|n| n.deleting_dependents || n.orphaning)
                {
                    self.queue.push(&dependent_key);
                }
                continue;
            }
            let Some(dependent_info) = type_of(&self.api, &dependent_parts, &dependent.object) else {
                continue;
            };
            self.collect(&dependent_info, &dependent_parts, &dependent)
                .await?;
            if blocks && self.read(&dependent_key).await?.is_some() {
                blocking = true;
            }
        }
        if blocking {
            return Ok(());
        }
        self.remove_finalizer(info, parts, stored, FOREGROUND_FINALIZER)
            .await
    }

    async fn remove_finalizer(
        &mut self,
        info: &ResourceInfo,
        parts: &KeyParts<'_>,
        stored: &Stored,
        finalizer: &str,
    ) -> Result<(), CollectError> {
        self.edit(info, parts, stored, |object| {
            let kept: Vec<String> = finalizers(object)
                .into_iter()
                .filter(|f| f != finalizer)
                .collect();
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                if kept.is_empty() {
                    meta.remove("finalizers");
                } else {
                    meta.insert("finalizers".into(), json!(kept));
                }
            }
        })
        .await
    }

    fn context(&self, parts: &KeyParts<'_>, name: &str) -> RequestContext {
        RequestContext {
            name: Some(name.to_string()),
            ..controller_context(MANAGER, parts.namespace)
        }
    }

    /// Updates an object as read (its resourceVersion as the precondition); a conflict is
    /// retried through the queue.
    async fn edit(
        &mut self,
        info: &ResourceInfo,
        parts: &KeyParts<'_>,
        stored: &Stored,
        change: impl FnOnce(&mut Value),
    ) -> Result<(), CollectError> {
        let mut object = to_version(info, &stored.object).map_err(|source| CollectError::Write {
            operation: "reading an object in its served version",
            source,
        })?;
        change(&mut object);
        let ctx = self.context(parts, name_of(&stored.object));
        match self.api.update(info, &ctx, object.to_string().as_bytes()).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(source) => Err(CollectError::Write {
                operation: "updating an object",
                source,
            }),
        }
    }
}

/// Keeps the owner references for which `keep` holds (removing the field when none is left).
fn retain_owner_refs(object: &mut Value, keep: impl Fn(&Value) -> bool) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let kept: Vec<Value> = meta
        .get("ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| refs.iter().filter(|r| keep(r)).cloned().collect())
        .unwrap_or_default();
    if kept.is_empty() {
        meta.remove("ownerReferences");
    } else {
        meta.insert("ownerReferences".into(), Value::Array(kept));
    }
}

/// Sets `blockOwnerDeletion: false` on every owner reference.
fn unblock_owner_refs(object: &mut Value) {
    if let Some(refs) = object
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        for r in refs {
            if let Some(r) = r.as_object_mut()
                && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
            {
                r.insert("blockOwnerDeletion".into(), json!(false));
            }
        }
    }
}

/// The garbage collector: indexes the whole store, then follows every change.
pub async fn run(api: Api) {
    loop {
        let Ok(list) = api.storage.list("/", None).await else {
            return;
        };
        let mut collector = Collector::new(api.clone());
        for (key, stored) in &list.items {
            collector.observe_object(key, &stored.object);
        }
        let Ok(mut events) = api.storage.watch("/", list.rv).await else {
            return;
        };
        let mut retry = tokio::time::interval(RETRY);
        retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        'follow: loop {
            // Take in every change already there before working, so the index is current.
            loop {
                match events.next().now_or_never() {
                    Some(Some(Ok(WatchItem::Event(event)))) => {
                        if collector.observe(&event).is_err() {
                            break 'follow;
                        }
                    }
                    Some(Some(Ok(WatchItem::Progress(_)))) => {}
                    Some(Some(Err(_))) => break 'follow,
                    Some(None) => return,
                    None => break,
                }
            }
            if let Some(key) = collector.queue.pop() {
                collector.process(&key).await;
                continue;
            }
            tokio::select! {
                item = events.next() => match item {
                    None => return,
                    Some(Ok(WatchItem::Event(event))) => {
                        if collector.observe(&event).is_err() {
                            break 'follow;
                        }
                    }
                    Some(Ok(WatchItem::Progress(_))) => {}
                    Some(Err(_)) => break 'follow,
                },
                _ = retry.tick() => {
                    for key in std::mem::take(&mut collector.retry) {
                        collector.queue.push(&key);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
