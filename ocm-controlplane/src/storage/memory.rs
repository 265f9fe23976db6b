//! The in-memory storage: a `BTreeMap` index, a bounded event history and optional persistence.
//!
//! Writers take one mutex, persist (when configured) and commit in memory in the same critical
//! section, append the change to the history and publish the new revision on a `watch` channel.
//! Watchers never hold a queue of their own: each keeps a cursor into the shared history and reads
//! forward when the revision moves, so a writer never waits for a watcher. A watcher that falls
//! behind the retained history (the history is bounded) gets `ReadExpired` and is closed.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;
use futures::stream::{self, StreamExt};
use serde_json::Value;
use tokio::sync::watch;

use super::persist::Persist;
use super::{
    Event, EventType, ListResult, Result, Storage, StorageError, Stored, WatchItem, WatchStream,
    set_resource_version,
};

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

struct Inner {
    objects: BTreeMap<String, Stored>,
    history: VecDeque<Arc<Event>>,
    rv: u64,
    /// Every change with a revision greater than this is in `history`.
    horizon: u64,
    /// Reads at revisions up to this one expire even where the history still has them.
    read_horizon: u64,
    persist: Option<Persist>,
}

struct Shared {
    inner: Mutex<Inner>,
    notify: watch::Sender<u64>,
    capacity: usize,
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

impl MemoryStorage {
    /// A storage with the given options; loads the database when one is configured.
    pub fn open(options: MemoryStorageOptions) -> Result<Self> {
        let mut objects = BTreeMap::new();
        let mut rv = 0;
        let persist = match &options.database {
            Some(path) => {
                let (persist, loaded, loaded_rv) = Persist::open(path)?;
                for (key, object) in loaded {
                    let object_rv = rv_of(&object);
                    objects.insert(
                        key,
                        Stored {
                            rv: object_rv,
                            object: Arc::new(object),
                        },
                    );
                }
                rv = loaded_rv;
                Some(persist)
            }
            None => None,
        };
        let (notify, _) = watch::channel(rv);
        Ok(Self {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    objects,
                    history: VecDeque::new(),
                    rv,
                    horizon: rv,
                    read_horizon: 0,
                    persist,
                }),
                notify,
                capacity: options.history_capacity.max(1),
            }),
        })
    }

    /// A purely in-memory storage with default options.
    pub fn in_memory() -> Self {
        let (notify, _) = watch::channel(0);
        Self {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    objects: BTreeMap::new(),
                    history: VecDeque::new(),
                    rv: 0,
                    horizon: 0,
                    read_horizon: 0,
                    persist: None,
                }),
                notify,
                capacity: MemoryStorageOptions::default().history_capacity,
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
        let current = inner.objects.get(key).cloned();
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
        let prev = current.as_ref().map(|c| c.object.clone());
        let mut object = match object {
            Some(object) => object,
            None => prev.as_deref().cloned().unwrap_or(Value::Null),
        };
        set_resource_version(&mut object, rv);
        if let Some(persist) = &inner.persist {
            match kind {
                EventType::Deleted => persist.delete(key, rv)?,
                _ => {
                    let bytes = serde_json::to_vec(&object).map_err(|source| StorageError::Encode {
                        key: key.to_string(),
                        source,
                    })?;
                    persist.put(key, &bytes, rv)?;
                }
            }
        }
        let object = Arc::new(object);
        let stored = Stored {
            rv,
            object: object.clone(),
        };
        inner.rv = rv;
        match kind {
            EventType::Deleted => {
                inner.objects.remove(key);
            }
            _ => {
                inner.objects.insert(key.to_string(), stored.clone());
            }
        }
        inner.history.push_back(Arc::new(Event {
            kind,
            key: key.to_string(),
            rv,
            object,
            prev,
            encoded: Default::default(),
        }));
        while inner.history.len() > self.shared.capacity {
            if let Some(dropped) = inner.history.pop_front() {
                inner.horizon = dropped.rv;
            }
        }
        drop(inner);
        self.shared.notify.send_replace(rv);
        Ok(stored)
    }

    fn list_now(&self, prefix: &str, at: Option<u64>) -> Result<ListResult> {
        let inner = self.lock();
        let mut items: BTreeMap<String, Stored> = inner
            .objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let Some(at) = at else {
            return Ok(ListResult {
                items: items.into_iter().collect(),
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
        for event in inner.history.iter().rev().take_while(|e| e.rv > at) {
            if !event.key.starts_with(prefix) {
                continue;
            }
            match (&event.kind, &event.prev) {
                (EventType::Added, _) => {
                    items.remove(&event.key);
                }
                (_, Some(prev)) => {
                    items.insert(
                        event.key.clone(),
                        Stored {
                            rv: rv_of(prev),
                            object: prev.clone(),
                        },
                    );
                }
                (_, None) => {}
            }
        }
        Ok(ListResult {
            items: items.into_iter().collect(),
            rv: at,
        })
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, Inner> {
    // A poisoned lock only means a writer panicked between statements that keep the maps
    // consistent; the data is still usable.
    shared.inner.lock().unwrap_or_else(|e| e.into_inner())
}

struct WatchState {
    shared: Arc<Shared>,
    prefix: String,
    cursor: u64,
    pending: VecDeque<WatchItem>,
    rx: watch::Receiver<u64>,
    done: bool,
}

/// How many history entries a watcher examines per lock acquisition.
const SCAN_BATCH: usize = 512;

async fn next_item(mut st: WatchState) -> Option<(Result<WatchItem>, WatchState)> {
    loop {
        if let Some(item) = st.pending.pop_front() {
            return Some((Ok(item), st));
        }
        if st.done {
            return None;
        }
        st.rx.borrow_and_update();
        {
            let shared = st.shared.clone();
            let inner = lock(&shared);
            if st.cursor < inner.horizon {
                st.done = true;
                let err = StorageError::ReadExpired {
                    requested: st.cursor,
                    oldest: inner.horizon,
                };
                return Some((Err(err), st));
            }
            if inner.rv > st.cursor {
                let start = inner.history.partition_point(|e| e.rv <= st.cursor);
                let mut last = st.cursor;
                let mut matched = false;
                for event in inner.history.range(start..).take(SCAN_BATCH) {
                    last = event.rv;
                    if event.key.starts_with(&st.prefix) {
                        matched = true;
                        st.pending.push_back(WatchItem::Event(event.clone()));
                    }
                }
                st.cursor = last;
                if !matched {
                    st.pending.push_back(WatchItem::Progress(last));
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
        let found = self.lock().objects.get(key).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn list<'a>(&'a self, prefix: &'a str, at: Option<u64>) -> BoxFuture<'a, Result<ListResult>> {
        let result = self.list_now(prefix, at);
        Box::pin(async move { result })
    }

    fn create<'a>(&'a self, key: &'a str, object: Value) -> BoxFuture<'a, Result<Stored>> {
        let result = self.commit(key, EventType::Added, Some(object), None);
        Box::pin(async move { result })
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        object: Value,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<Stored>> {
        let result = self.commit(key, EventType::Modified, Some(object), expected);
        Box::pin(async move { result })
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<u64>) -> BoxFuture<'a, Result<Stored>> {
        let result = self.commit(key, EventType::Deleted, None, expected);
        Box::pin(async move { result })
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
                rx: self.shared.notify.subscribe(),
                done: false,
            };
            Ok(stream::unfold(state, next_item).boxed())
        };
        drop(inner);
        Box::pin(async move { result })
    }

    fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    fn oldest_rv(&self) -> u64 {
        self.lock().horizon
    }

    fn compact(&self, rv: u64) {
        let mut inner = self.lock();
        let rv = rv.min(inner.rv);
        while inner.history.front().is_some_and(|e| e.rv <= rv) {
            inner.history.pop_front();
        }
        inner.horizon = inner.horizon.max(rv);
        drop(inner);
        // Wake watchers so that those behind the new horizon notice.
        self.shared.notify.send_modify(|_| {});
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
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(name: &str) -> Value {
        json!({"metadata": {"name": name}})
    }

    #[tokio::test]
    async fn compacted_reads_expire_while_watches_replay() {
        use futures::StreamExt;
        let s = MemoryStorage::in_memory();
        s.create("/core/configmaps/ns/a", obj("a")).await.unwrap();
        s.update("/core/configmaps/ns/a", obj("a"), None).await.unwrap();
        s.update("/core/configmaps/ns/a", obj("a"), None).await.unwrap();
        s.compact_reads(2);
        assert!(matches!(
            s.list("/core/configmaps/", Some(1)).await,
            Err(StorageError::ReadExpired { .. })
        ));
        assert!(s.list("/core/configmaps/", Some(2)).await.is_ok());
        let mut w = s.watch("/core/configmaps/", 1).await.unwrap();
        assert!(matches!(w.next().await, Some(Ok(WatchItem::Event(e))) if e.rv == 2));
    }

    #[tokio::test]
    async fn create_get_update_delete_with_conflicts() {
        let s = MemoryStorage::in_memory();
        let a = s.create("/core/configmaps/ns/a", obj("a")).await.unwrap();
        assert_eq!(a.rv, 1);
        assert_eq!(a.object["metadata"]["resourceVersion"], "1");
        assert!(matches!(
            s.create("/core/configmaps/ns/a", obj("a")).await,
            Err(StorageError::CreateAlreadyExists { .. })
        ));
        let b = s
            .update("/core/configmaps/ns/a", obj("a"), Some(1))
            .await
            .unwrap();
        assert_eq!(b.rv, 2);
        assert!(matches!(
            s.update("/core/configmaps/ns/a", obj("a"), Some(1)).await,
            Err(StorageError::WriteConflict {
                expected: 1,
                actual: 2,
                ..
            })
        ));
        assert!(matches!(
            s.update("/core/configmaps/ns/missing", obj("x"), None).await,
            Err(StorageError::WriteNotFound { .. })
        ));
        assert!(matches!(
            s.delete("/core/configmaps/ns/a", Some(1)).await,
            Err(StorageError::WriteConflict { .. })
        ));
        let d = s.delete("/core/configmaps/ns/a", Some(2)).await.unwrap();
        assert_eq!(d.rv, 3);
        assert_eq!(d.object["metadata"]["resourceVersion"], "3");
        assert!(s.get("/core/configmaps/ns/a").await.unwrap().is_none());
        assert_eq!(s.current_rv(), 3);
    }

    #[tokio::test]
    async fn rv_is_monotonic_and_list_is_prefix_scoped() {
        let s = MemoryStorage::in_memory();
        let mut last = 0;
        for i in 0..20 {
            let ns = if i % 2 == 0 { "a" } else { "b" };
            let st = s
                .create(&format!("/core/configmaps/{ns}/c{i:02}"), obj("x"))
                .await
                .unwrap();
            assert!(st.rv > last);
            last = st.rv;
        }
        let list = s.list("/core/configmaps/a/", None).await.unwrap();
        assert_eq!(list.items.len(), 10);
        assert_eq!(list.rv, 20);
        let keys: Vec<_> = list.items.iter().map(|(k, _)| k.clone()).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
    }

    #[tokio::test]
    async fn list_at_past_revision_rolls_back() {
        let s = MemoryStorage::in_memory();
        s.create("/g/r/ns/a", obj("a")).await.unwrap(); // 1
        s.create("/g/r/ns/b", obj("b")).await.unwrap(); // 2
        s.update("/g/r/ns/a", json!({"metadata": {"name": "a"}, "v": 2}), None)
            .await
            .unwrap(); // 3
        s.delete("/g/r/ns/b", None).await.unwrap(); // 4
        let at2 = s.list("/g/r/", Some(2)).await.unwrap();
        assert_eq!(at2.items.len(), 2);
        assert_eq!(at2.items[0].1.rv, 1);
        assert!(at2.items[0].1.object.get("v").is_none());
        let at4 = s.list("/g/r/", Some(4)).await.unwrap();
        assert_eq!(at4.items.len(), 1);
        assert!(matches!(
            s.list("/g/r/", Some(9)).await,
            Err(StorageError::ReadTooLarge { .. })
        ));
        s.compact(3);
        assert!(matches!(
            s.list("/g/r/", Some(2)).await,
            Err(StorageError::ReadExpired { .. })
        ));
        assert_eq!(s.list("/g/r/", Some(3)).await.unwrap().items.len(), 2);
    }

    #[tokio::test]
    async fn watch_replays_from_retained_rv_then_follows_live() {
        let s = MemoryStorage::in_memory();
        s.create("/g/r/ns/a", obj("a")).await.unwrap(); // 1
        s.create("/g/other/ns/x", obj("x")).await.unwrap(); // 2
        s.update("/g/r/ns/a", obj("a"), None).await.unwrap(); // 3
        let mut w = s.watch("/g/r/", 0).await.unwrap();
        let mut events = Vec::new();
        while events.len() < 2 {
            if let WatchItem::Event(e) = w.next().await.unwrap().unwrap() {
                events.push((e.kind, e.rv));
            }
        }
        assert_eq!(events, vec![(EventType::Added, 1), (EventType::Modified, 3)]);
        s.delete("/g/r/ns/a", None).await.unwrap(); // 4
        loop {
            if let WatchItem::Event(e) = w.next().await.unwrap().unwrap() {
                assert_eq!((e.kind, e.rv), (EventType::Deleted, 4));
                assert_eq!(e.prev.as_ref().unwrap()["metadata"]["resourceVersion"], "3");
                break;
            }
        }
    }

    #[tokio::test]
    async fn watch_from_too_old_rv_expires() {
        let s = MemoryStorage::open(MemoryStorageOptions {
            history_capacity: 3,
            database: None,
        })
        .unwrap();
        for i in 0..10 {
            s.create(&format!("/g/r/ns/{i}"), obj("x")).await.unwrap();
        }
        assert_eq!(s.oldest_rv(), 7);
        assert!(matches!(
            s.watch("/g/r/", 2).await.err(),
            Some(StorageError::ReadExpired {
                requested: 2,
                oldest: 7
            })
        ));
        let mut w = s.watch("/g/r/", 7).await.unwrap();
        let first = w.next().await.unwrap().unwrap();
        assert!(matches!(first, WatchItem::Event(e) if e.rv == 8));
        // A watcher that falls behind the retained history is told so and closed.
        for i in 10..20 {
            s.create(&format!("/g/r/ns/{i}"), obj("x")).await.unwrap();
        }
        let mut saw_expired = false;
        while let Some(item) = w.next().await {
            if item.is_err() {
                saw_expired = true;
            }
        }
        assert!(saw_expired);
    }

    #[tokio::test]
    async fn persistence_reloads_objects_and_revision() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.redb");
        let options = MemoryStorageOptions {
            history_capacity: 100,
            database: Some(db.clone()),
        };
        {
            let s = MemoryStorage::open(options.clone()).unwrap();
            s.create("/g/r/ns/a", obj("a")).await.unwrap();
            s.create("/g/r/ns/b", obj("b")).await.unwrap();
            s.update("/g/r/ns/a", json!({"metadata": {"name": "a"}, "v": 1}), None)
                .await
                .unwrap();
            s.delete("/g/r/ns/b", None).await.unwrap();
        }
        let s = MemoryStorage::open(options).unwrap();
        assert_eq!(s.current_rv(), 4);
        let a = s.get("/g/r/ns/a").await.unwrap().unwrap();
        assert_eq!(a.rv, 3);
        assert_eq!(a.object["v"], 1);
        assert!(s.get("/g/r/ns/b").await.unwrap().is_none());
        assert_eq!(s.create("/g/r/ns/c", obj("c")).await.unwrap().rv, 5);
        assert!(matches!(
            s.watch("/g/r/", 1).await.err(),
            Some(StorageError::ReadExpired { .. })
        ));
    }
}
