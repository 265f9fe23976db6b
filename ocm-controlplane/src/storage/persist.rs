//! Durable persistence of the in-memory storage in a redb database.
//!
//! One table maps keys to JSON bytes, another holds the revision counter. Every write is one redb
//! transaction committed (durably) before the in-memory commit is acknowledged, so a process killed
//! after acknowledging a write finds it again on the next start.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::Value;

use super::{Result, StorageError};

const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const RV_KEY: &str = "resourceVersion";

fn persist_err(e: impl std::fmt::Display) -> StorageError {
    StorageError::Persist(e.to_string())
}

/// An open database, the objects it held and its revision counter.
pub(super) type Loaded = (Persist, Vec<(String, Value)>, u64);

/// An open database.
pub(super) struct Persist {
    db: Database,
}

impl Persist {
    /// Opens (or creates) the database and loads every object and the revision counter.
    pub(super) fn open(path: &Path) -> Result<Loaded> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(persist_err)?;
        }
        let db = Database::create(path).map_err(persist_err)?;
        {
            let txn = db.begin_write().map_err(persist_err)?;
            txn.open_table(OBJECTS).map_err(persist_err)?;
            txn.open_table(META).map_err(persist_err)?;
            txn.commit().map_err(persist_err)?;
        }
        let mut objects = Vec::new();
        let rv;
        {
            let txn = db.begin_read().map_err(persist_err)?;
            let table = txn.open_table(OBJECTS).map_err(persist_err)?;
            for entry in table.iter().map_err(persist_err)? {
                let (key, value) = entry.map_err(persist_err)?;
                let key = key.value().to_string();
                let object: Value =
                    serde_json::from_slice(value.value()).map_err(|source| StorageError::Encode {
                        key: key.clone(),
                        source,
                    })?;
                objects.push((key, object));
            }
            let meta = txn.open_table(META).map_err(persist_err)?;
            rv = meta
                .get(RV_KEY)
                .map_err(persist_err)?
                .map(|v| v.value())
                .unwrap_or(0);
        }
        Ok((Self { db }, objects, rv))
    }

    /// Durably stores `bytes` under `key` and the revision counter.
    pub(super) fn put(&self, key: &str, bytes: &[u8], rv: u64) -> Result<()> {
        let txn = self.db.begin_write().map_err(persist_err)?;
        {
            let mut objects = txn.open_table(OBJECTS).map_err(persist_err)?;
            objects.insert(key, bytes).map_err(persist_err)?;
            let mut meta = txn.open_table(META).map_err(persist_err)?;
            meta.insert(RV_KEY, rv).map_err(persist_err)?;
        }
        txn.commit().map_err(persist_err)
    }

    /// Durably removes `key` and stores the revision counter.
    pub(super) fn delete(&self, key: &str, rv: u64) -> Result<()> {
        let txn = self.db.begin_write().map_err(persist_err)?;
        {
            let mut objects = txn.open_table(OBJECTS).map_err(persist_err)?;
            objects.remove(key).map_err(persist_err)?;
            let mut meta = txn.open_table(META).map_err(persist_err)?;
            meta.insert(RV_KEY, rv).map_err(persist_err)?;
        }
        txn.commit().map_err(persist_err)
    }
}
