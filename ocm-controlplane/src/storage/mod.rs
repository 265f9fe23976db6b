//! Object storage behind a trait: JSON objects under string keys with one global resourceVersion.
//!
//! Keys have the form `/<group>/<resource>/<namespace>/<name>` (the core group is spelled `core`,
//! cluster-scoped objects use an empty namespace segment). Every write gets the next value of a
//! single, monotonically increasing `u64` revision which is written into the stored object's
//! `metadata.resourceVersion`. Watches deliver every change after a given revision, in order.
//!
//! [`MemoryStorage`] is the implementation: an in-memory index of serialized objects with a
//! bounded event history and optional durable persistence in a redb database. Other backends (etcd) can implement
//! [`Storage`] later; the trait is object safe and its methods return boxed futures.

mod encoded;
mod flush;
mod memory;
mod persist;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

pub use encoded::EncodedCache;
pub use memory::{MemoryStorage, MemoryStorageOptions, SHARED_TAIL};

/// A failed storage operation.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A create found an object already stored under the key.
    #[error("create of {key}: already exists")]
    CreateAlreadyExists {
        /// The key written.
        key: String,
    },
    /// An update or delete found no object under the key.
    #[error("write of {key}: not found")]
    WriteNotFound {
        /// The key written.
        key: String,
    },
    /// An update or delete expected a revision that is not the stored one.
    #[error("write of {key}: expected resourceVersion {expected}, stored {actual}")]
    WriteConflict {
        /// The key written.
        key: String,
        /// The revision the caller expected.
        expected: u64,
        /// The revision stored.
        actual: u64,
    },
    /// A read or watch asked for a revision older than the retained history.
    #[error("read at resourceVersion {requested}: too old, oldest retained is {oldest}")]
    ReadExpired {
        /// The revision requested.
        requested: u64,
        /// The oldest revision still served.
        oldest: u64,
    },
    /// A read asked for a revision newer than the current one.
    #[error("read at resourceVersion {requested}: newer than current {current}")]
    ReadTooLarge {
        /// The revision requested.
        requested: u64,
        /// The current revision.
        current: u64,
    },
    /// An object could not be encoded or decoded.
    #[error("encoding of {key}: {source}")]
    Encode {
        /// The key concerned.
        key: String,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// A version the history keeps deflated did not inflate.
    #[error("inflating the stored version of {key}: {reason}")]
    Inflate {
        /// The key concerned.
        key: String,
        /// What the decompressor reported.
        reason: String,
    },
    /// The persistence backend failed.
    #[error("persistence: {0}")]
    Persist(String),
}

/// The result of storage operations.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// An object as stored, with its revision.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// The revision of the last write of this object.
    pub rv: u64,
    /// The object, with `metadata.resourceVersion` set to `rv`.
    pub object: Arc<Value>,
}

/// An object as the store keeps it: serialized (compact JSON), with its revision.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredBytes {
    /// The revision of the last write of this object.
    pub rv: u64,
    /// The object's JSON, with `metadata.resourceVersion` set to `rv`.
    pub bytes: Arc<[u8]>,
}

/// What [`Storage::list_encoded`] returned.
#[derive(Debug, Clone)]
pub struct EncodedList {
    /// `(key, object)` in key order.
    pub items: Vec<(Arc<str>, StoredBytes)>,
    /// The revision the list reflects.
    pub rv: u64,
}

/// What a list returned.
#[derive(Debug, Clone)]
pub struct ListResult {
    /// `(key, object)` in key order.
    pub items: Vec<(String, Stored)>,
    /// The revision the list reflects.
    pub rv: u64,
}

/// The kind of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The key was created.
    Added,
    /// The key was updated.
    Modified,
    /// The key was deleted.
    Deleted,
}

/// One change, as delivered to watchers.
///
/// The objects stay as the store keeps them (serialized): a watcher that sends them as they are
/// stored never builds a tree, and a parsed tree is never kept with the change. Those that need
/// one parse it ([`Event::object`], [`Event::metadata`], [`Event::prev`]) and drop it when done.
#[derive(Debug, Clone)]
pub struct Event {
    /// The kind of change.
    pub kind: EventType,
    /// The key changed.
    pub key: Arc<str>,
    /// The revision of this change.
    pub rv: u64,
    /// The object after the change, as stored; for deletes the last state with
    /// `resourceVersion` = `rv`.
    pub object_json: Arc<[u8]>,
    /// The object before the change, as stored (absent for creates).
    pub prev_json: Option<Arc<[u8]>>,
    /// The object serialized per representation, by the first watcher that sent it.
    pub encoded: EncodedCache,
}

impl Event {
    /// The object after the change, parsed.
    ///
    /// # Errors
    /// `Encode` when the stored bytes are not JSON (the storage never writes such bytes).
    pub fn object(&self) -> Result<Value> {
        parse_json(&self.key, &self.object_json)
    }

    /// The object after the change with only its `metadata` parsed: `{"metadata": {...}}` (an
    /// empty object when it has none). Everything else is skipped by the parser, for watchers of
    /// every type that look only at owners, finalizers and uids.
    ///
    /// # Errors
    /// As [`Event::object`].
    pub fn metadata(&self) -> Result<Value> {
        #[derive(serde::Deserialize)]
        struct OnlyMetadata {
            #[serde(default)]
            metadata: Option<Value>,
        }
        let only: OnlyMetadata = parse_json(&self.key, &self.object_json)?;
        let mut object = serde_json::Map::new();
        if let Some(metadata) = only.metadata {
            object.insert("metadata".into(), metadata);
        }
        Ok(Value::Object(object))
    }

    /// The object before the change, parsed (`None` for a create).
    ///
    /// # Errors
    /// As [`Event::object`].
    pub fn prev(&self) -> Option<Result<Value>> {
        self.prev_json.as_ref().map(|bytes| parse_json(&self.key, bytes))
    }
}

/// Stored bytes of `key` decoded (as a tree, or only the parts a type names).
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(key: &str, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|source| StorageError::Encode {
        key: key.to_string(),
        source,
    })
}

/// What a watch stream yields.
#[derive(Debug, Clone)]
pub enum WatchItem {
    /// A change under the watched prefix.
    Event(Arc<Event>),
    /// The store moved to this revision (events may have been outside the prefix).
    Progress(u64),
}

/// A live watch: yields changes after the start revision, in order.
pub type WatchStream = futures::stream::BoxStream<'static, Result<WatchItem>>;

/// Storage of JSON objects with one global revision (see the module docs).
///
/// A write (`create`, `update`, `delete`) is applied when the method is called, before its
/// future is first polled: the future only waits for the write to become durable (and visible to
/// reads and watches) and then hands out its outcome. A caller may therefore free what it computed
/// the write from between the call and the `await`.
pub trait Storage: Send + Sync + 'static {
    /// The object under `key`, if any.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Stored>>>;

    /// Objects whose keys start with `prefix`, at the current revision or, with `at`, at that exact
    /// past revision (`ReadExpired` when it is no longer retained).
    fn list<'a>(&'a self, prefix: &'a str, at: Option<u64>) -> BoxFuture<'a, Result<ListResult>>;

    /// As [`Storage::list`], with the objects serialized as JSON instead of parsed (a store that
    /// keeps bytes hands them out without building a tree; by default each object is serialized).
    fn list_encoded<'a>(&'a self, prefix: &'a str, at: Option<u64>) -> BoxFuture<'a, Result<EncodedList>> {
        Box::pin(async move {
            let listed = self.list(prefix, at).await?;
            let items = listed
                .items
                .into_iter()
                .map(|(key, stored)| {
                    let bytes =
                        serde_json::to_vec(&*stored.object).map_err(|source| StorageError::Encode {
                            key: key.clone(),
                            source,
                        })?;
                    Ok((
                        Arc::from(key),
                        StoredBytes {
                            rv: stored.rv,
                            bytes: Arc::from(bytes),
                        },
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(EncodedList { items, rv: listed.rv })
        })
    }

    /// Stores a new object; `CreateAlreadyExists` if the key is taken.
    fn create<'a>(&'a self, key: &'a str, object: Value) -> BoxFuture<'a, Result<Stored>>;

    /// Replaces the object under `key`; with `expected`, only if that is the stored revision.
    fn update<'a>(
        &'a self,
        key: &'a str,
        object: Value,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<Stored>>;

    /// Removes the object under `key`; with `expected`, only if that is the stored revision.
    /// Returns the last state, with the revision of the delete.
    fn delete<'a>(&'a self, key: &'a str, expected: Option<u64>) -> BoxFuture<'a, Result<Stored>>;

    /// Changes under `prefix` with revisions greater than `from`.
    fn watch<'a>(&'a self, prefix: &'a str, from: u64) -> BoxFuture<'a, Result<WatchStream>>;

    /// The current revision.
    fn current_rv(&self) -> u64;

    /// The oldest revision from which a watch or exact read is still served.
    fn oldest_rv(&self) -> u64;

    /// Forgets history up to and including `rv` (reads and watches from older revisions expire).
    fn compact(&self, rv: u64);

    /// Compaction as kube-apiserver's clients see etcd's: reads at a revision up to `rv` (exact
    /// lists, `continue` tokens) expire, while watches keep being served from the retained history
    /// (kube-apiserver's watch cache). By default the same as [`Storage::compact`].
    fn compact_reads(&self, rv: u64) {
        self.compact(rv);
    }

    /// The number of stored objects.
    fn object_count(&self) -> usize;

    /// The number of stored objects per `(group, resource)` of their keys (the core group is
    /// spelled `core`), in key order.
    fn object_counts(&self) -> Vec<(String, String, usize)>;
}

/// The storage key of an object.
pub fn object_key(group: &str, resource: &str, namespace: Option<&str>, name: &str) -> String {
    format!("{}{}", resource_prefix(group, resource, namespace), name)
}

/// The key prefix of a resource type, optionally within one namespace.
pub fn resource_prefix(group: &str, resource: &str, namespace: Option<&str>) -> String {
    let group = if group.is_empty() { "core" } else { group };
    match namespace {
        Some(ns) => format!("/{group}/{resource}/{ns}/"),
        None => format!("/{group}/{resource}/"),
    }
}

/// Writes `rv` into `metadata.resourceVersion` of `object` (creating `metadata` if needed).
pub fn set_resource_version(object: &mut Value, rv: u64) {
    if let Some(map) = object.as_object_mut() {
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(object: &[u8], prev: Option<&[u8]>) -> Event {
        Event {
            kind: EventType::Modified,
            key: "/core/configmaps/ns/a".into(),
            rv: 2,
            object_json: Arc::from(object),
            prev_json: prev.map(Arc::from),
            encoded: EncodedCache::default(),
        }
    }

    #[test]
    fn an_event_parses_its_objects_or_only_their_metadata_on_request() {
        let object = json!({"apiVersion": "v1", "metadata": {"name": "a", "uid": "u", "ownerReferences": [{"uid": "o"}]}, "data": {"k": "v"}});
        let e = event(
            &serde_json::to_vec(&object).unwrap(),
            Some(br#"{"metadata":{"name":"a"}}"#),
        );
        assert_eq!(e.object().unwrap(), object);
        assert_eq!(e.metadata().unwrap(), json!({"metadata": object["metadata"]}));
        assert_eq!(e.prev().unwrap().unwrap(), json!({"metadata": {"name": "a"}}));

        let bare = event(br#"{"data":{}}"#, None);
        assert_eq!(bare.metadata().unwrap(), json!({}));
        assert!(bare.prev().is_none());

        let broken = event(b"{", Some(b"["));
        assert!(matches!(broken.object(), Err(StorageError::Encode { .. })));
        assert!(broken.metadata().is_err());
        assert!(broken.prev().unwrap().is_err());
    }
}
