//! Group commit: the thread that makes writes durable in batches, and the durable revision that
//! reads, watches and write acknowledgements follow.
//!
//! With persistence, a write is applied in memory under the storage's lock and queued (in
//! revision order) for this thread; it is acknowledged, and becomes visible to reads and watches,
//! once the thread has committed it. Each round takes every write queued so far (up to
//! [`MAX_BATCH`]) and commits them in one redb transaction, so concurrent writers share one
//! durable commit (one `fsync`) instead of waiting for one each, and no async worker thread blocks
//! on the disk. A write alone is committed at once: there is no batching delay.
//!
//! Watchers are woken per resource type: a landed change wakes the watchers of its own resource
//! (`/group/resource/` of its key) only, not every watcher of the server — a thousand agents
//! watching their CertificateSigningRequest are not woken by every Lease renewal.

use std::collections::HashMap;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use tokio::sync::watch;

use super::persist::Persist;
use super::{Result, StorageError};

/// The most writes one durable commit takes.
pub const MAX_BATCH: usize = 4096;

/// A write waiting for the flush thread: key, the object's bytes (`None` deletes) and revision.
pub(super) struct Queued {
    pub(super) key: Arc<str>,
    pub(super) bytes: Option<Arc<[u8]>>,
    pub(super) rv: u64,
}

#[derive(Debug)]
struct DurableState {
    durable: u64,
    failed: Option<String>,
}

/// The durable revision: every change up to it is on disk (every change at all without
/// persistence), so reads, watches and acknowledgements may show it. Published on a `watch`
/// channel, which is what reads and writes waiting for it wait on, and on one channel per
/// resource type, which the watchers of that type wait on.
#[derive(Debug)]
pub(super) struct Durability {
    state: Mutex<DurableState>,
    notify: watch::Sender<u64>,
    /// Per resource key prefix (`/group/resource/`): sent the durable revision when a change
    /// under it lands. One per resource type ever watched: a bounded set.
    resources: Mutex<HashMap<String, watch::Sender<u64>>>,
}

/// The resource type's key prefix (`/group/resource/`) of a storage key or of a longer prefix;
/// `None` for a prefix spanning several types (such as `/`).
pub(super) fn resource_of(key: &str) -> Option<&str> {
    let rest = key.strip_prefix('/')?;
    let group_end = rest.find('/')?;
    let resource_end = rest[group_end + 1..].find('/')?;
    Some(&key[..1 + group_end + 1 + resource_end + 1])
}

impl Durability {
    /// Starts at revision `rv`.
    pub(super) fn new(rv: u64) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(DurableState {
                durable: rv,
                failed: None,
            }),
            notify: watch::channel(rv).0,
            resources: Mutex::new(HashMap::new()),
        })
    }

    fn resources(&self) -> MutexGuard<'_, HashMap<String, watch::Sender<u64>>> {
        self.resources.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn state(&self) -> MutexGuard<'_, DurableState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The durable revision.
    pub(super) fn durable(&self) -> u64 {
        self.state().durable
    }

    /// Why the durable commit failed, if it did (the storage then takes no more writes).
    pub(super) fn failed(&self) -> Option<String> {
        self.state().failed.clone()
    }

    /// Revision `rv`, the last of the changes of `keys`, is durable, or its commit failed. Wakes
    /// the watchers of the resources of `keys` (all of them after a failure).
    pub(super) fn land<'k>(&self, rv: u64, result: Result<()>, keys: impl IntoIterator<Item = &'k str>) {
        let failed = result.is_err();
        let durable = {
            let mut state = self.state();
            match result {
                Ok(()) => state.durable = state.durable.max(rv),
                Err(error) => {
                    tracing::error!(%error, rv, "the durable commit failed; the storage takes no more writes");
                    state.failed = Some(error.to_string());
                }
            }
            state.durable
        };
        self.notify.send_replace(durable);
        let resources = self.resources();
        if failed {
            for sender in resources.values() {
                sender.send_replace(durable);
            }
            return;
        }
        let mut last: Option<&str> = None;
        for resource in keys.into_iter().filter_map(resource_of) {
            // Batches often hold runs of one type: skip the repeats cheaply.
            if last == Some(resource) {
                continue;
            }
            last = Some(resource);
            if let Some(sender) = resources.get(resource) {
                sender.send_replace(durable);
            }
        }
    }

    /// Wakes every watcher without a new revision.
    pub(super) fn poke(&self) {
        self.notify.send_modify(|_| {});
        for sender in self.resources().values() {
            sender.send_modify(|_| {});
        }
    }

    /// A receiver of the durable revision: woken whenever it moves.
    pub(super) fn subscribe(&self) -> watch::Receiver<u64> {
        self.notify.subscribe()
    }

    /// A receiver for a watcher of the keys under `prefix`: woken when a change of its resource
    /// type lands (or at every landing, for a prefix spanning several types).
    pub(super) fn subscribe_watcher(&self, prefix: &str) -> watch::Receiver<u64> {
        let Some(resource) = resource_of(prefix) else {
            return self.subscribe();
        };
        let mut resources = self.resources();
        if let Some(sender) = resources.get(resource) {
            return sender.subscribe();
        }
        let (sender, receiver) = watch::channel(self.durable());
        resources.insert(resource.to_string(), sender);
        receiver
    }

    /// Waits until revision `rv` is durable.
    pub(super) async fn wait(&self, rv: u64) -> Result<()> {
        let mut published = self.notify.subscribe();
        loop {
            {
                let state = self.state();
                if state.durable >= rv {
                    return Ok(());
                }
                if let Some(failed) = &state.failed {
                    return Err(StorageError::Persist(failed.clone()));
                }
            }
            if published.changed().await.is_err() {
                return Err(StorageError::Persist("the storage was closed".to_string()));
            }
        }
    }
}

/// Starts the flush thread: it commits what arrives on `queue` until the queue closes (the
/// storage is dropped).
pub(super) fn spawn(
    persist: Persist,
    queue: Receiver<Queued>,
    durability: Arc<Durability>,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("storage-flush".to_string())
        .spawn(move || {
            while let Ok(first) = queue.recv() {
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH {
                    match queue.try_recv() {
                        Ok(next) => batch.push(next),
                        Err(_) => break,
                    }
                }
                let rv = batch.last().map_or(0, |q| q.rv);
                let result = persist.write_batch(&batch, rv);
                durability.land(rv, result, batch.iter().map(|q| &*q.key));
            }
        })
        .map_err(|e| StorageError::Persist(format!("starting the flush thread: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_of_a_key_is_its_group_and_resource() {
        assert_eq!(
            resource_of("/coordination.k8s.io/leases/ns/name"),
            Some("/coordination.k8s.io/leases/")
        );
        assert_eq!(resource_of("/core/namespaces/a"), Some("/core/namespaces/"));
        assert_eq!(resource_of("/core/configmaps/"), Some("/core/configmaps/"));
        assert_eq!(resource_of("/core/"), None);
        assert_eq!(resource_of("/"), None);
        assert_eq!(resource_of("relative/x/y"), None);
    }
}
