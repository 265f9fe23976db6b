//! Group commit: the thread that makes writes durable in batches, and the durable revision that
//! reads, watches and write acknowledgements follow.
//!
//! With persistence, a write is applied in memory under the storage's lock and queued (in
//! revision order) for this thread; it is acknowledged, and becomes visible to reads and watches,
//! once the thread has committed it. Each round takes every write queued so far (up to
//! [`MAX_BATCH`]) and commits them in one redb transaction, so concurrent writers share one
//! durable commit (one `fsync`) instead of waiting for one each, and no async worker thread blocks
//! on the disk. A write alone is committed at once: there is no batching delay.

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
    pub(super) key: String,
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
/// channel, which is what watchers wait on.
#[derive(Debug)]
pub(super) struct Durability {
    state: Mutex<DurableState>,
    notify: watch::Sender<u64>,
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
        })
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

    /// Revision `rv` is durable, or its commit failed.
    pub(super) fn land(&self, rv: u64, result: Result<()>) {
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
    }

    /// Wakes the watchers without a new revision.
    pub(super) fn poke(&self) {
        self.notify.send_modify(|_| {});
    }

    /// A receiver of the durable revision.
    pub(super) fn subscribe(&self) -> watch::Receiver<u64> {
        self.notify.subscribe()
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
                durability.land(rv, persist.write_batch(&batch, rv));
            }
        })
        .map_err(|e| StorageError::Persist(format!("starting the flush thread: {e}")))
}
