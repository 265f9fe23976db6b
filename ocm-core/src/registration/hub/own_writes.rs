//! The versions of objects the hub controllers of this process wrote, kept until the shared store
//! ([`super::informers`]) holds them: a reconcile of an older cached copy is skipped.
//!
//! While a thousand clusters join, the store lags the server by seconds, and every controller
//! watching ManagedClusters is woken by every change of one. A controller that reconciles a copy
//! older than a write another controller (or itself) already made acts on what that write changed:
//! its own guarded write comes back `409` (a `resourceVersion` precondition) or `422` (a `test`),
//! and its error policy retries it later — a third of the hub's requests in `join-load` were such
//! refusals (docs/performance.md). controller-runtime's "expectations" answer the same waste.
//! Here a controller notes the server's answer to each of its writes ([`OwnWrites::wrote`]) and,
//! before reconciling, asks whether the cached copy is older ([`OwnWrites::behind`]); if so, it
//! waits for the change, which the watch delivers and which triggers the reconcile again.
//!
//! Comparing versions assumes the `resourceVersion`s of one resource are increasing integers,
//! as kube-apiserver's (etcd revisions) and ocm-controlplane's are; a version that does not parse
//! as one is never called behind, so on any other server nothing is skipped.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use kube::Resource;

/// The newest written `resourceVersion` of each object, by namespace and name.
#[derive(Debug, Default)]
pub(crate) struct OwnWrites {
    newest: Mutex<HashMap<(Option<String>, String), u64>>,
}

/// The object's key and its `resourceVersion` as an integer.
fn key_and_version<K: Resource>(object: &K) -> Option<((Option<String>, String), u64)> {
    let meta = object.meta();
    let version = meta.resource_version.as_deref()?.parse().ok()?;
    Some(((meta.namespace.clone(), meta.name.clone()?), version))
}

impl OwnWrites {
    /// Notes the server's answer to a write of this process: copies older than it are behind.
    pub(crate) fn wrote<K: Resource>(&self, answer: &K) {
        let Some((key, version)) = key_and_version(answer) else {
            return;
        };
        let mut newest = self.newest.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = newest.entry(key).or_insert(version);
        *entry = (*entry).max(version);
    }

    /// Awaits `write` and notes its answer when it succeeded ([`OwnWrites::wrote`]).
    pub(crate) async fn noting<K: Resource>(
        &self,
        write: impl Future<Output = Result<K, kube::Error>>,
    ) -> Result<K, kube::Error> {
        let answer = write.await;
        if let Ok(object) = &answer {
            self.wrote(object);
        }
        answer
    }

    /// Whether `cached` is older than a write of this process to the same object.
    pub(crate) fn behind<K: Resource>(&self, cached: &K) -> bool {
        let Some((key, version)) = key_and_version(cached) else {
            return false;
        };
        let newest = self.newest.lock().unwrap_or_else(PoisonError::into_inner);
        newest.get(&key).is_some_and(|&written| version < written)
    }

    /// The store took `stored` (a watch event): forgets the writes it caught up with.
    pub(crate) fn stored<K: Resource>(&self, stored: &K) {
        let Some((key, version)) = key_and_version(stored) else {
            return;
        };
        let mut newest = self.newest.lock().unwrap_or_else(PoisonError::into_inner);
        if newest.get(&key).is_some_and(|&written| written <= version) {
            newest.remove(&key);
        }
    }

    /// The object is gone from the store: forgets its writes (a new object of the same name has
    /// newer versions than any of them).
    pub(crate) fn deleted<K: Resource>(&self, object: &K) {
        let meta = object.meta();
        if let Some(name) = meta.name.clone() {
            let mut newest = self.newest.lock().unwrap_or_else(PoisonError::into_inner);
            newest.remove(&(meta.namespace.clone(), name));
        }
    }

    /// How many objects have writes the store has not caught up with.
    #[cfg(test)]
    fn pending(&self) -> usize {
        self.newest.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;
    use ocm_api::cluster::v1::ManagedCluster;

    fn cluster(name: &str, version: &str) -> ManagedCluster {
        ManagedCluster {
            metadata: ObjectMeta {
                name: Some(name.into()),
                resource_version: Some(version.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_copy_older_than_an_own_write_is_behind_until_the_store_catches_up() {
        let writes = OwnWrites::default();
        assert!(!writes.behind(&cluster("c1", "5")));
        writes.wrote(&cluster("c1", "9"));
        assert!(writes.behind(&cluster("c1", "5")));
        assert!(writes.behind(&cluster("c1", "8")));
        assert!(!writes.behind(&cluster("c1", "9")));
        assert!(
            !writes.behind(&cluster("c1", "12")),
            "a newer copy (another writer) is not behind"
        );
        assert!(
            !writes.behind(&cluster("c2", "1")),
            "other objects are not concerned"
        );
        // An older answer arriving late does not lower the mark.
        writes.wrote(&cluster("c1", "7"));
        assert!(writes.behind(&cluster("c1", "8")));
        // The store takes an older version: still pending; then the written one: forgotten.
        writes.stored(&cluster("c1", "8"));
        assert_eq!(writes.pending(), 1);
        writes.stored(&cluster("c1", "9"));
        assert_eq!(writes.pending(), 0);
        assert!(!writes.behind(&cluster("c1", "5")));
    }

    #[test]
    fn versions_that_are_not_integers_are_never_behind() {
        let writes = OwnWrites::default();
        writes.wrote(&cluster("c1", "abc"));
        assert_eq!(writes.pending(), 0);
        writes.wrote(&cluster("c1", "9"));
        assert!(!writes.behind(&cluster("c1", "x7")));
    }

    #[test]
    fn a_deleted_object_forgets_its_writes() {
        let writes = OwnWrites::default();
        writes.wrote(&cluster("c1", "9"));
        writes.deleted(&cluster("c1", "3"));
        assert_eq!(writes.pending(), 0);
        assert!(!writes.behind(&cluster("c1", "3")));
    }
}
