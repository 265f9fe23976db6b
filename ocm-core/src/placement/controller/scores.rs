//! The add-on scores the scheduler reads: a [`ScoreMap`] built from the reflector store's copy
//! and rebuilt only when the store changed since, so that a prioritizer's lookup of every
//! cluster's score neither allocates a key nor takes the store's lock (at 1 000 clusters those
//! lookups were a seventh of the controller's CPU, docs/performance.md).

use std::sync::{Arc, Mutex, PoisonError};

use kube::runtime::reflector::Store;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;

use crate::placement::schedule::ScoreMap;

/// The store's scores, indexed once per change of the store.
pub(super) struct ScoreIndex {
    store: Store<AddOnPlacementScore>,
    indexed: Mutex<Indexed>,
}

/// The objects an index was built from, and the index.
#[derive(Default)]
struct Indexed {
    objects: Vec<Arc<AddOnPlacementScore>>,
    map: Arc<ScoreMap>,
}

impl ScoreIndex {
    pub(super) fn new(store: Store<AddOnPlacementScore>) -> Self {
        Self {
            store,
            indexed: Mutex::new(Indexed::default()),
        }
    }

    /// The scores as the store holds them now: the index of the last call when the store holds
    /// the very same objects (an unchanged store lists them in the same order), else a new one.
    pub(super) fn current(&self) -> Arc<ScoreMap> {
        let objects = self.store.state();
        let mut indexed = self.indexed.lock().unwrap_or_else(PoisonError::into_inner);
        let unchanged = objects.len() == indexed.objects.len()
            && objects
                .iter()
                .zip(&indexed.objects)
                .all(|(a, b)| Arc::ptr_eq(a, b));
        if !unchanged {
            indexed.map = Arc::new(ScoreMap::from_scores(objects.iter().cloned()));
            indexed.objects = objects;
        }
        indexed.map.clone()
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
    fn the_index_follows_the_store_and_is_kept_while_it_does_not_change() {
        let (reader, mut writer) = store::<AddOnPlacementScore>();
        writer.apply_watcher_event(&Event::Apply(score("c1", "demo", 1)));
        let index = ScoreIndex::new(reader);
        let first = index.current();
        assert_eq!(value(&first, "c1", "demo"), Some(1));
        assert_eq!(value(&first, "c2", "demo"), None);
        assert!(
            Arc::ptr_eq(&first, &index.current()),
            "unchanged store, same index"
        );

        writer.apply_watcher_event(&Event::Apply(score("c1", "demo", 2)));
        writer.apply_watcher_event(&Event::Apply(score("c2", "demo", 3)));
        let second = index.current();
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(value(&second, "c1", "demo"), Some(2));
        assert_eq!(value(&second, "c2", "demo"), Some(3));
        assert_eq!(value(&second, "c2", "other"), None);

        writer.apply_watcher_event(&Event::Delete(score("c1", "demo", 2)));
        assert_eq!(value(&index.current(), "c1", "demo"), None);
    }
}
