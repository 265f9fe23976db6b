//! Durable persistence of the in-memory storage in a redb database.
//!
//! One table maps keys to JSON bytes (the same bytes the in-memory index keeps), another holds
//! the revision counter. Writes are committed (durably) in batches by the flush thread
//! (`super::flush`) before they are acknowledged, so a process killed after acknowledging a write
//! finds it again on the next start.

use std::path::Path;

use super::flush::Queued;
use super::{Result, StorageError};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const RV_KEY: &str = "resourceVersion";

fn persist_err(e: impl std::fmt::Display) -> StorageError {
    StorageError::Persist(e.to_string())
}

/// An open database.
pub(super) struct Persist {
    db: Database,
}

/// The page cache redb keeps in memory. Reads are answered from the in-memory index, so redb's
/// cache only serves the load at start and the pages a commit rewrites; redb's default (1 GiB)
/// would let it grow to a copy of the whole database in the process's memory. 1 MiB holds the
/// b-tree's upper pages, which every commit rewrites; the leaves a commit touches are read from
/// the OS page cache (100 000 creates ran as fast as with 4 MiB, docs/performance.md).
const CACHE_BYTES: usize = 1024 * 1024;

impl Persist {
    /// Opens (or creates) the database, hands every stored object to `load` (key and JSON bytes,
    /// in key order) and returns the revision counter.
    pub(super) fn open(path: &Path, mut load: impl FnMut(&str, &[u8]) -> Result<()>) -> Result<(Self, u64)> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(persist_err)?;
        }
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(path)
            .map_err(persist_err)?;
        {
            let txn = db.begin_write().map_err(persist_err)?;
            txn.open_table(OBJECTS).map_err(persist_err)?;
            txn.open_table(META).map_err(persist_err)?;
            txn.commit().map_err(persist_err)?;
        }
        let rv;
        {
            let txn = db.begin_read().map_err(persist_err)?;
            let table = txn.open_table(OBJECTS).map_err(persist_err)?;
            for entry in table.iter().map_err(persist_err)? {
                let (key, value) = entry.map_err(persist_err)?;
                load(key.value(), value.value())?;
            }
            let meta = txn.open_table(META).map_err(persist_err)?;
            rv = meta
                .get(RV_KEY)
                .map_err(persist_err)?
                .map(|v| v.value())
                .unwrap_or(0);
        }
        Ok((Self { db }, rv))
    }

    /// Durably stores a batch of writes (`None` removes the key) and the revision counter, in
    /// one transaction.
    pub(super) fn write_batch(&self, batch: &[Queued], rv: u64) -> Result<()> {
        let txn = self.db.begin_write().map_err(persist_err)?;
        {
            let mut objects = txn.open_table(OBJECTS).map_err(persist_err)?;
            for write in batch {
                match &write.bytes {
                    Some(bytes) => objects.insert(&*write.key, &bytes[..]).map_err(persist_err)?,
                    None => objects.remove(&*write.key).map_err(persist_err)?,
                };
            }
            let mut meta = txn.open_table(META).map_err(persist_err)?;
            meta.insert(RV_KEY, rv).map_err(persist_err)?;
        }
        txn.commit().map_err(persist_err)
    }
}
