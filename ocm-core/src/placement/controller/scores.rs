//! The add-on scores the scheduler reads: a [`ScoreMap`] built from the reflector store's copy
//! and rebuilt only after a watch event of the store, so that a prioritizer's lookup of every
//! cluster's score neither allocates a key nor takes the store's lock (at 1 000 clusters those
//! lookups were a seventh of the controller's CPU, docs/performance.md), and a reconcile with
//! nothing new does not copy the store.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use kube::runtime::reflector::Store;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;

use crate::placement::schedule::ScoreMap;

/// The store's scores, indexed once per change of the store.
pub(super) struct ScoreIndex {
    store: Store<AddOnPlacementScore>,
    /// How many watch events the store has taken (each counted after the store has it).
    changes: AtomicU64,
    /// The index, and the count of changes it was built after (`None`: not built yet).
    indexed: Mutex<(Option<u64>, Arc<ScoreMap>)>,
}

impl ScoreIndex {
    pub(super) fn new(store: Store<AddOnPlacementScore>) -> Self {
        Self {
            store,
            changes: AtomicU64::new(0),
            indexed: Mutex::new((None, Arc::default())),
        }
    }

    /// Notes that the store took a watch event; call it after the store applied the event.
    pub(super) fn changed(&self) {
        self.changes.fetch_add(1, Ordering::AcqRel);
    }

    /// The scores as the store holds them now: the last index when no change was noted since it
    /// was built, else a new one. The count is read before the store, so a change that lands
    /// meanwhile is in the new index or makes the next call build again.
    pub(super) fn current(&self) -> Arc<ScoreMap> {
        let changes = self.changes.load(Ordering::Acquire);
        let mut indexed = self.indexed.lock().unwrap_or_else(PoisonError::into_inner);
        if indexed.0 != Some(changes) {
            *indexed = (Some(changes), Arc::new(ScoreMap::from_scores(self.store.state())));
        }
        indexed.1.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::schedule::ScoreSource;
    use kube::runtime::reflector::store;
    use kube::runtime::watcher::Event;

    fn score(cluster: &str, name: &str, value: i32) -> AddOnPlacementScore {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
            "kind": "AddOnPlacementScore",
            "metadata": {"name": name, "namespace": cluster},
            "status": {"scores": [{"name": "s", "value": value}]}
        }))
        .unwrap()
    }

    fn value(map: &ScoreMap, cluster: &str, name: &str) -> Option<i32> {
        let score = map.score(cluster, name)?;
        Some(score.status.as_ref()?.scores.as_ref()?[0].value)
    }

    #[test]
    fn the_index_follows_the_store_after_each_noted_change() {
        let (reader, mut writer) = store::<AddOnPlacementScore>();
        let index = ScoreIndex::new(reader);
        writer.apply_watcher_event(&Event::Apply(score("c1", "demo", 1)));
        index.changed();
        let first = index.current();
        assert_eq!(value(&first, "c1", "demo"), Some(1));
        assert_eq!(value(&first, "c2", "demo"), None);
        assert!(Arc::ptr_eq(&first, &index.current()), "no change, same index");

        writer.apply_watcher_event(&Event::Apply(score("c1", "demo", 2)));
        writer.apply_watcher_event(&Event::Apply(score("c2", "demo", 3)));
        index.changed();
        let second = index.current();
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(value(&second, "c1", "demo"), Some(2));
        assert_eq!(value(&second, "c2", "demo"), Some(3));
        assert_eq!(value(&second, "c2", "other"), None);

        writer.apply_watcher_event(&Event::Delete(score("c1", "demo", 2)));
        index.changed();
        assert_eq!(value(&index.current(), "c1", "demo"), None);
    }
}
