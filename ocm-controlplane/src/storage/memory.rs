//! The in-memory storage: a `BTreeMap` index of serialized objects, a bounded event history and
//! optional persistence.
//!
//! Objects are kept as their compact JSON serialization (`Arc<[u8]>`), not as `serde_json::Value`
//! trees: a small ConfigMap takes well under a kilobyte this way instead of several kilobytes of
//! maps, strings and vectors. Reads parse on demand ([`Storage::get`], [`Storage::list`]);
//! [`Storage::list_encoded`] hands the bytes out unparsed, which is what LIST responses are
//! written from. A write is serialized once, under the lock: the same bytes go to redb (when
//! configured), into the index and into the history.
//!
//! Writers take one mutex, commit in memory and append the change to the history in the same
//! critical section, and publish the new revision on a `watch` channel. With persistence, the
//! change is also queued for the flush thread (`super::flush`), and the revision is published,
//! and the write acknowledged, once the thread has committed it durably with the others queued
//! beside it (group commit). Until then the write is invisible: watches stop at the durable
//! revision, and a read that would return it waits for it (a failed durable commit fails those
//! writes and reads and every later write: the storage must be reopened, as etcd stops on a
//! failed backend commit).
//! Watchers never hold a queue of their own: each keeps a cursor into the shared history and reads
//! forward when the revision moves, so a writer never waits for a watcher. A watcher that falls
//! behind the retained history (the history is bounded) gets `ReadExpired` and is closed.
//!
//! The history keeps each change as bytes too, and hands watchers an [`Event`] of those bytes: no
//! change is parsed for the watchers, nor is a tree kept with it (a watcher that needs one parses
//! it and drops it). While a change is among the newest [`SHARED_TAIL`], its event is kept and
//! shared by every watcher that reaches it, with its [`super::EncodedCache`]: a change converted
//! for one version of its resource is encoded once for all of that version's watchers. Older
//! changes get a fresh event per watcher that replays them.
//!
//! A version of an object that only the history still holds (superseded by a change that has
//! left the shared tail, or the last state of a deleted object) is kept deflated: only watchers
//! that replay old changes and reads at an old revision read it, and it takes about half the
//! bytes (a hub's ManagedClusters and CertificateSigningRequests, rewritten while clusters join,
//! were 40 % of the store's memory as superseded versions). Each version is one shared
//! [`Version`]: the change that wrote it and the change that superseded it (as its `prev`) hold
//! the same one, so deflating it frees the plain bytes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use futures::future::BoxFuture;
use futures::stream::{self, StreamExt};
use serde_json::Value;
use tokio::sync::watch;

use super::flush::{self, Durability, Queued};
use super::persist::Persist;
use super::{
    EncodedList, Event, EventType, ListResult, Result, Storage, StorageError, Stored, StoredBytes, WatchItem,
    WatchStream, set_resource_version,
};

/// How many of the newest changes keep their [`Event`] (and its encodings) for the watchers still
/// to come.
pub const SHARED_TAIL: usize = 1024;

/// Options of a [`MemoryStorage`].
#[derive(Debug, Clone)]
pub struct MemoryStorageOptions {
    /// How many changes the history keeps for watches and exact reads.
    pub history_capacity: usize,
    /// A redb database file to persist into and load from; `None` keeps everything in memory.
    pub database: Option<PathBuf>,
}

impl Default for MemoryStorageOptions {
    fn default() -> Self {
        Self {
            history_capacity: 20_000,
            database: None,
        }
    }
}

/// One version of an object in the history: plain, or deflated once only the history holds it.
#[derive(Debug)]
struct Version(Mutex<VersionBytes>);

#[derive(Debug)]
enum VersionBytes {
    Plain(Arc<[u8]>),
    Deflated(Box<[u8]>),
}

/// The compression level of superseded versions: miniz's fastest, which already halves them.
const DEFLATE_LEVEL: u8 = 1;

impl Version {
    fn plain(bytes: Arc<[u8]>) -> Arc<Self> {
        Arc::new(Self(Mutex::new(VersionBytes::Plain(bytes))))
    }

    fn lock(&self) -> MutexGuard<'_, VersionBytes> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The version's JSON (inflated when it is deflated).
    fn bytes(&self, key: &str) -> Result<Arc<[u8]>> {
        match &*self.lock() {
            VersionBytes::Plain(bytes) => Ok(bytes.clone()),
            VersionBytes::Deflated(deflated) => miniz_oxide::inflate::decompress_to_vec(deflated)
                .map(Arc::from)
                .map_err(|e| StorageError::Inflate {
                    key: key.to_string(),
                    reason: e.to_string(),
                }),
        }
    }

    /// The plain bytes, when the version is not deflated.
    #[cfg(test)]
    fn plain_bytes(&self) -> Option<Arc<[u8]>> {
        match &*self.lock() {
            VersionBytes::Plain(bytes) => Some(bytes.clone()),
            VersionBytes::Deflated(_) => None,
        }
    }

    /// Keeps the version deflated from now on (unless that would not make it smaller).
    fn deflate(&self) {
        let mut bytes = self.lock();
        if let VersionBytes::Plain(plain) = &*bytes {
            let deflated = miniz_oxide::deflate::compress_to_vec(plain, DEFLATE_LEVEL);
            if deflated.len() < plain.len() {
                *bytes = VersionBytes::Deflated(deflated.into_boxed_slice());
            }
        }
    }
}

/// One change in the history.
struct Change {
    kind: EventType,
    /// The same allocation as the object's key in the index (and its other changes' keys).
    key: Arc<str>,
    rv: u64,
    object: Arc<Version>,
    prev: Option<Arc<Version>>,
    /// Whether the change is among the newest [`SHARED_TAIL`], and its shared event if so.
    shared: Mutex<(bool, Option<Arc<Event>>)>,
}

impl Change {
    /// The change as an [`Event`]: the shared one when there is one, else a new one (kept while
    /// the change is among the newest).
    ///
    /// # Errors
    /// `Inflate` when a deflated version does not inflate (the storage never writes such bytes).
    fn event(&self) -> Result<Arc<Event>> {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(event) = shared.1.as_ref() {
            return Ok(event.clone());
        }
        let event = Arc::new(Event {
            kind: self.kind,
            key: self.key.clone(),
            rv: self.rv,
            object_json: self.object.bytes(&self.key)?,
            prev_json: self.prev.as_ref().map(|prev| prev.bytes(&self.key)).transpose()?,
            encoded: Default::default(),
        });
        if shared.0 {
            shared.1 = Some(event.clone());
        }
        Ok(event)
    }

    /// The change left the newest [`SHARED_TAIL`]: its event is dropped and not kept again, and
    /// the versions only the history holds from now on are deflated — the one it superseded,
    /// and a deleted object's last state.
    fn leave_tail(&self) {
        *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = (false, None);
        if let Some(prev) = &self.prev {
            prev.deflate();
        }
        if self.kind == EventType::Deleted {
            self.object.deflate();
        }
    }
}

struct Inner {
    /// Keyed by `Arc<str>`: the history's changes of an object share its key.
    objects: BTreeMap<Arc<str>, StoredBytes>,
    history: VecDeque<Arc<Change>>,
    rv: u64,
    /// Every change with a revision greater than this is in `history`.
    horizon: u64,
    /// Reads at revisions up to this one expire even where the history still has them.
    read_horizon: u64,
    /// Per resource type (`/group/resource/`), the newest revision of its changes dropped from
    /// the history: a watcher of that type behind it missed a change and expires, while one
    /// behind only other types' dropped changes goes on (as kube-apiserver's watch cache is per
    /// resource, a quiet type's watchers are not expired by another type's churn).
    dropped: HashMap<String, u64>,
}

impl Inner {
    /// The change of revision `rv`, while the history has it.
    fn change_at(&self, rv: u64) -> Option<&Arc<Change>> {
        let at = self.history.partition_point(|c| c.rv < rv);
        self.history.get(at).filter(|c| c.rv == rv)
    }

    /// Drops the oldest change of the history.
    fn drop_oldest(&mut self) {
        let Some(dropped) = self.history.pop_front() else {
            return;
        };
        self.horizon = self.horizon.max(dropped.rv);
        if let Some(resource) = flush::resource_of(&dropped.key) {
            match self.dropped.get_mut(resource) {
                Some(rv) => *rv = (*rv).max(dropped.rv),
                None => {
                    self.dropped.insert(resource.to_string(), dropped.rv);
                }
            }
        }
    }

    /// Whether a watcher of `prefix` whose cursor is `cursor` missed a change that the history
    /// no longer has.
    fn missed(&self, prefix: &str, cursor: u64) -> bool {
        if cursor >= self.horizon {
            return false;
        }
        match flush::resource_of(prefix) {
            Some(resource) => self.dropped.get(resource).is_some_and(|rv| *rv > cursor),
            None => true,
        }
    }
}

struct Shared {
    inner: Mutex<Inner>,
    /// What reads, watches and acknowledgements may show.
    durability: Arc<Durability>,
    capacity: usize,
    /// The flush thread's queue (`None` without persistence); written under `inner`, so in
    /// revision order.
    flush: Option<Sender<Queued>>,
    flusher: Option<JoinHandle<()>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Close the queue, then wait for the thread, so that the database is closed when the
        // storage is gone (it may be reopened at once). The thread holds no `Shared`.
        self.flush.take();
        if let Some(flusher) = self.flusher.take() {
            flusher.join().ok();
        }
    }
}

/// In-memory [`Storage`] with bounded history and optional redb persistence.
#[derive(Clone)]
pub struct MemoryStorage {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for MemoryStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStorage")
            .field("rv", &self.current_rv())
            .finish()
    }
}

/// The revision written in an object's `metadata.resourceVersion` (0 when absent or invalid).
pub(crate) fn rv_of(object: &Value) -> u64 {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The revision in the `metadata.resourceVersion` of a serialized object, read without building
/// its tree (0 when absent or invalid).
fn rv_of_bytes(key: &str, bytes: &[u8]) -> Result<u64> {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "resourceVersion")]
        resource_version: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Object {
        metadata: Option<Meta>,
    }
    match serde_json::from_slice::<Object>(bytes) {
        Ok(object) => Ok(object
            .metadata
            .and_then(|m| m.resource_version)
            .and_then(|rv| rv.parse().ok())
            .unwrap_or(0)),
        // Not an object with an object `metadata`: read it whole.
        Err(_) => super::parse_json(key, bytes).map(|object| rv_of(&object)),
    }
}

/// `object` serialized as it is stored.
fn serialize(key: &str, object: &Value) -> Result<Arc<[u8]>> {
    serde_json::to_vec(object)
        .map(Arc::from)
        .map_err(|source| StorageError::Encode {
            key: key.to_string(),
            source,
        })
}

impl MemoryStorage {
    /// A storage with the given options; loads the database when one is configured.
    pub fn open(options: MemoryStorageOptions) -> Result<Self> {
        let mut objects = BTreeMap::new();
        let mut rv = 0;
        let persist: Option<Persist> = match &options.database {
            Some(path) => {
                let (persist, loaded_rv) = Persist::open(path, |key, bytes| {
                    let object_rv = rv_of_bytes(key, bytes)?;
                    objects.insert(
                        Arc::from(key),
                        StoredBytes {
                            rv: object_rv,
                            bytes: Arc::from(bytes),
                        },
                    );
                    Ok(())
                })?;
                rv = loaded_rv;
                Some(persist)
            }
            None => None,
        };
        let durability = Durability::new(rv);
        let (flush, flusher) = match persist {
            Some(persist) => {
                let (queue, queued) = mpsc::channel();
                let flusher = flush::spawn(persist, queued, durability.clone())?;
                (Some(queue), Some(flusher))
            }
            None => (None, None),
        };
        Ok(Self {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    objects,
                    history: VecDeque::new(),
                    rv,
                    horizon: rv,
                    read_horizon: 0,
                    dropped: HashMap::new(),
                }),
                durability,
                capacity: options.history_capacity.max(1),
                flush,
                flusher,
            }),
        })
    }

    /// A purely in-memory storage with default options.
    pub fn in_memory() -> Self {
        Self {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    objects: BTreeMap::new(),
                    history: VecDeque::new(),
                    rv: 0,
                    horizon: 0,
                    read_horizon: 0,
                    dropped: HashMap::new(),
                }),
                durability: Durability::new(0),
                capacity: MemoryStorageOptions::default().history_capacity,
                flush: None,
                flusher: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.shared)
    }

    fn commit(
        &self,
        key: &str,
        kind: EventType,
        object: Option<Value>,
        expected: Option<u64>,
    ) -> Result<Stored> {
        let mut inner = self.lock();
        if let Some(failed) = self.shared.durability.failed() {
            return Err(StorageError::Persist(failed));
        }
        let (shared_key, current) = match inner.objects.get_key_value(key) {
            Some((k, v)) => (k.clone(), Some(v.clone())),
            None => (Arc::from(key), None),
        };
        match (&kind, &current) {
            (EventType::Added, Some(_)) => {
                return Err(StorageError::CreateAlreadyExists { key: key.to_string() });
            }
            (EventType::Modified | EventType::Deleted, None) => {
                return Err(StorageError::WriteNotFound { key: key.to_string() });
            }
            _ => {}
        }
        if let (Some(expected), Some(current)) = (expected, &current)
            && expected != current.rv
        {
            return Err(StorageError::WriteConflict {
                key: key.to_string(),
                expected,
                actual: current.rv,
            });
        }
        let rv = inner.rv + 1;
        let mut object = match (object, &current) {
            (Some(object), _) => object,
            (None, Some(current)) => super::parse_json(key, &current.bytes)?,
            (None, None) => Value::Null,
        };
        // The version superseded: the same `Version` as the object of the change that wrote it
        // when the history still has that change, so that deflating it later frees its bytes.
        let prev = current.map(|c| {
            inner
                .change_at(c.rv)
                .filter(|change| &*change.key == key)
                .map(|change| change.object.clone())
                .unwrap_or_else(|| Version::plain(c.bytes))
        });
        set_resource_version(&mut object, rv);
        let bytes = serialize(key, &object)?;
        if let Some(queue) = &self.shared.flush {
            let queued = Queued {
                key: shared_key.clone(),
                bytes: (kind != EventType::Deleted).then(|| bytes.clone()),
                rv,
            };
            if queue.send(queued).is_err() {
                return Err(StorageError::Persist("the flush thread stopped".to_string()));
            }
        }
        inner.rv = rv;
        match kind {
            EventType::Deleted => {
                inner.objects.remove(key);
            }
            _ => {
                inner.objects.insert(
                    shared_key.clone(),
                    StoredBytes {
                        rv,
                        bytes: bytes.clone(),
                    },
                );
            }
        }
        inner.history.push_back(Arc::new(Change {
            kind,
            key: shared_key,
            rv,
            object: Version::plain(bytes),
            prev,
            shared: Mutex::new((true, None)),
        }));
        let len = inner.history.len();
        let left_tail = len
            .checked_sub(SHARED_TAIL + 1)
            .and_then(|at| inner.history.get(at).cloned());
        while inner.history.len() > self.shared.capacity {
            inner.drop_oldest();
        }
        drop(inner);
        // Deflating what the change leaving the tail superseded is done outside the storage's
        // lock: each version has its own, and writers need not wait for the compression.
        if let Some(change) = left_tail {
            change.leave_tail();
        }
        if self.shared.flush.is_none() {
            self.shared.durability.land(rv, Ok(()), [key]);
        }
        Ok(Stored {
            rv,
            object: Arc::new(object),
        })
    }

    /// A write's (or a read's) result once revision `rv` is durable.
    fn when_durable<T: Send + 'static>(&self, rv: u64, result: Result<T>) -> BoxFuture<'static, Result<T>> {
        let durability = self.shared.durability.clone();
        Box::pin(async move {
            let value = result?;
            durability.wait(rv).await?;
            Ok(value)
        })
    }

    /// The serialized objects under `prefix` at the current revision or at `at`.
    fn list_bytes(&self, prefix: &str, at: Option<u64>) -> Result<EncodedList> {
        let inner = self.lock();
        let current = || {
            inner
                .objects
                .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (k.clone(), v.clone()))
        };
        let Some(at) = at else {
            return Ok(EncodedList {
                items: current().collect(),
                rv: inner.rv,
            });
        };
        if at > inner.rv {
            return Err(StorageError::ReadTooLarge {
                requested: at,
                current: inner.rv,
            });
        }
        if at < inner.horizon || at < inner.read_horizon {
            return Err(StorageError::ReadExpired {
                requested: at,
                oldest: inner.horizon.max(inner.read_horizon),
            });
        }
        let mut items: BTreeMap<Arc<str>, StoredBytes> = current().collect();
        for change in inner.history.iter().rev().take_while(|c| c.rv > at) {
            if !change.key.starts_with(prefix) {
                continue;
            }
            match (&change.kind, &change.prev) {
                (EventType::Added, _) => {
                    items.remove(&*change.key);
                }
                (_, Some(prev)) => {
                    let prev = prev.bytes(&change.key)?;
                    let prev_rv = rv_of_bytes(&change.key, &prev)?;
                    items.insert(
                        change.key.clone(),
                        StoredBytes {
                            rv: prev_rv,
                            bytes: prev,
                        },
                    );
                }
                (_, None) => {}
            }
        }
        Ok(EncodedList {
            items: items.into_iter().collect(),
            rv: at,
        })
    }

    fn list_now(&self, prefix: &str, at: Option<u64>) -> Result<ListResult> {
        let listed = self.list_bytes(prefix, at)?;
        let items = listed
            .items
            .into_iter()
            .map(|(key, stored)| {
                let object = super::parse_json(&key, &stored.bytes)?;
                Ok((
                    key.to_string(),
                    Stored {
                        rv: stored.rv,
                        object: Arc::new(object),
                    },
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ListResult { items, rv: listed.rv })
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, Inner> {
    // A poisoned lock only means a writer panicked between statements that keep the maps
    // consistent; the data is still usable.
    shared.inner.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a watcher has still to send: a change or a progress notice.
enum Pending {
    Change(Arc<Change>),
    Progress(u64),
}

struct WatchState {
    shared: Arc<Shared>,
    prefix: String,
    cursor: u64,
    pending: VecDeque<Pending>,
    rx: watch::Receiver<u64>,
    done: bool,
}

/// How many history entries a watcher examines per lock acquisition.
const SCAN_BATCH: usize = 512;

async fn next_item(mut st: WatchState) -> Option<(Result<WatchItem>, WatchState)> {
    loop {
        match st.pending.pop_front() {
            Some(Pending::Progress(rv)) => return Some((Ok(WatchItem::Progress(rv)), st)),
            Some(Pending::Change(change)) => {
                let item = change.event().map(WatchItem::Event);
                if item.is_err() {
                    st.done = true;
                }
                return Some((item, st));
            }
            None => {}
        }
        if st.done {
            return None;
        }
        st.rx.borrow_and_update();
        {
            let shared = st.shared.clone();
            let inner = lock(&shared);
            if inner.missed(&st.prefix, st.cursor) {
                st.done = true;
                let err = StorageError::ReadExpired {
                    requested: st.cursor,
                    oldest: inner.horizon,
                };
                return Some((Err(err), st));
            }
            // Only other types' changes left the history since the cursor: none was this
            // watcher's.
            st.cursor = st.cursor.max(inner.horizon);
            let durable = shared.durability.durable();
            if durable > st.cursor {
                let start = inner.history.partition_point(|c| c.rv <= st.cursor);
                let mut last = st.cursor;
                let mut matched = false;
                for change in inner
                    .history
                    .range(start..)
                    .take_while(|c| c.rv <= durable)
                    .take(SCAN_BATCH)
                {
                    last = change.rv;
                    if change.key.starts_with(&st.prefix) {
                        matched = true;
                        st.pending.push_back(Pending::Change(change.clone()));
                    }
                }
                st.cursor = last;
                if !matched {
                    st.pending.push_back(Pending::Progress(last));
                }
                continue;
            }
        }
        if st.rx.changed().await.is_err() {
            return None;
        }
    }
}

impl Storage for MemoryStorage {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Stored>>> {
        let (found, rv) = {
            let inner = self.lock();
            let found = inner.objects.get(key).cloned();
            // Not found may be a deletion not yet durable: wait for everything applied.
            let rv = found.as_ref().map_or(inner.rv, |f| f.rv);
            (found, rv)
        };
        let result = found
            .map(|stored| {
                Ok(Stored {
                    rv: stored.rv,
                    object: Arc::new(super::parse_json(key, &stored.bytes)?),
                })
            })
            .transpose();
        self.when_durable(rv, result)
    }

    fn list<'a>(&'a self, prefix: &'a str, at: Option<u64>) -> BoxFuture<'a, Result<ListResult>> {
        let result = self.list_now(prefix, at);
        let rv = result.as_ref().map_or(0, |l| l.rv);
        self.when_durable(rv, result)
    }

    fn list_encoded<'a>(&'a self, prefix: &'a str, at: Option<u64>) -> BoxFuture<'a, Result<EncodedList>> {
        let result = self.list_bytes(prefix, at);
        let rv = result.as_ref().map_or(0, |l| l.rv);
        self.when_durable(rv, result)
    }

    fn create<'a>(&'a self, key: &'a str, object: Value) -> BoxFuture<'a, Result<Stored>> {
        let result = self.commit(key, EventType::Added, Some(object), None);
        let rv = result.as_ref().map_or(0, |s| s.rv);
        self.when_durable(rv, result)
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        object: Value,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<Stored>> {
        let result = self.commit(key, EventType::Modified, Some(object), expected);
        let rv = result.as_ref().map_or(0, |s| s.rv);
        self.when_durable(rv, result)
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<u64>) -> BoxFuture<'a, Result<Stored>> {
        let result = self.commit(key, EventType::Deleted, None, expected);
        let rv = result.as_ref().map_or(0, |s| s.rv);
        self.when_durable(rv, result)
    }

    fn watch<'a>(&'a self, prefix: &'a str, from: u64) -> BoxFuture<'a, Result<WatchStream>> {
        let inner = self.lock();
        let result = if from > inner.rv {
            Err(StorageError::ReadTooLarge {
                requested: from,
                current: inner.rv,
            })
        } else if from < inner.horizon {
            Err(StorageError::ReadExpired {
                requested: from,
                oldest: inner.horizon,
            })
        } else {
            let state = WatchState {
                shared: self.shared.clone(),
                prefix: prefix.to_string(),
                cursor: from,
                pending: VecDeque::new(),
                rx: self.shared.durability.subscribe_watcher(prefix),
                done: false,
            };
            Ok(stream::unfold(state, next_item).boxed())
        };
        drop(inner);
        Box::pin(async move { result })
    }

    fn current_rv(&self) -> u64 {
        self.shared.durability.durable()
    }

    fn oldest_rv(&self) -> u64 {
        self.lock().horizon
    }

    fn compact(&self, rv: u64) {
        let mut inner = self.lock();
        let rv = rv.min(inner.rv);
        while inner.history.front().is_some_and(|c| c.rv <= rv) {
            inner.drop_oldest();
        }
        inner.horizon = inner.horizon.max(rv);
        drop(inner);
        // Wake watchers so that those behind the new horizon notice.
        self.shared.durability.poke();
    }

    fn compact_reads(&self, rv: u64) {
        let mut inner = self.lock();
        let rv = rv.min(inner.rv);
        inner.read_horizon = inner.read_horizon.max(rv);
    }

    fn object_count(&self) -> usize {
        self.lock().objects.len()
    }

    fn object_counts(&self) -> Vec<(String, String, usize)> {
        let inner = self.lock();
        let mut out: Vec<(String, String, usize)> = Vec::new();
        for key in inner.objects.keys() {
            let mut parts = key.split('/').skip(1);
            let (Some(group), Some(resource)) = (parts.next(), parts.next()) else {
                continue;
            };
            match out.last_mut() {
                Some((g, r, n)) if g == group && r == resource => *n += 1,
                _ => out.push((group.to_string(), resource.to_string(), 1)),
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
