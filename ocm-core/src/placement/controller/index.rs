//! The controller's index of PlacementDecisions: every decision by placement, and how many
//! decisions of all placements name each cluster (Balance needs it on every scheduling; counting
//! it from scratch each time costs the whole hub's decisions per placement).
//!
//! It is fed by the decisions' watch events after the reflector has stored them: applied and
//! deleted decisions update it incrementally, and a finished (re)list rebuilds it from the store.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use ocm_api::cluster::v1beta1::PlacementDecision;
use ocm_api::names::labels::PLACEMENT;

use crate::placement::schedule::DecisionCounts;

/// A placement's key: namespace and name.
pub type PlacementKey = (String, String);

/// PlacementDecisions by placement, and decision counts per cluster.
#[derive(Debug, Default)]
pub struct DecisionIndex {
    /// The clusters each decision (namespace, name) counted.
    counted: HashMap<(String, String), Vec<String>>,
    /// The decisions of each placement, by name.
    by_placement: HashMap<PlacementKey, BTreeMap<String, Arc<PlacementDecision>>>,
    /// Decisions per cluster over all placements.
    counts: DecisionCounts,
}

fn owner(decision: &PlacementDecision) -> Option<PlacementKey> {
    let placement = decision.labels().get(PLACEMENT)?;
    Some((decision.namespace().unwrap_or_default(), placement.clone()))
}

impl DecisionIndex {
    /// An index of `decisions`.
    #[must_use]
    pub fn from_decisions(decisions: impl IntoIterator<Item = Arc<PlacementDecision>>) -> Self {
        let mut index = Self::default();
        for d in decisions {
            index.apply(d);
        }
        index
    }

    /// Records a created or changed decision.
    pub fn apply(&mut self, decision: Arc<PlacementDecision>) {
        self.delete(&decision);
        let key = (decision.namespace().unwrap_or_default(), decision.name_any());
        let clusters: Vec<String> = decision.cluster_names().map(str::to_string).collect();
        self.counts.add(clusters.iter().map(String::as_str));
        self.counted.insert(key.clone(), clusters);
        if let Some(placement) = owner(&decision) {
            self.by_placement
                .entry(placement)
                .or_default()
                .insert(key.1, decision);
        }
    }

    /// Forgets a deleted decision.
    pub fn delete(&mut self, decision: &PlacementDecision) {
        let key = (decision.namespace().unwrap_or_default(), decision.name_any());
        if let Some(clusters) = self.counted.remove(&key) {
            self.counts.remove(clusters.iter().map(String::as_str));
        }
        // The placement label may have changed since: look in every placement of the namespace
        // only when the labelled one does not hold it.
        let labelled = owner(decision).and_then(|p| self.by_placement.get_mut(&p));
        let removed = labelled.is_some_and(|m| m.remove(&key.1).is_some());
        if !removed {
            for (placement, decisions) in &mut self.by_placement {
                if placement.0 == key.0 {
                    decisions.remove(&key.1);
                }
            }
        }
        self.by_placement.retain(|_, m| !m.is_empty());
    }

    /// Follows a watch event of the decisions, once the reflector has applied it to `store`.
    pub fn on_event(&mut self, event: &watcher::Event<PlacementDecision>, store: &Store<PlacementDecision>) {
        match event {
            watcher::Event::Apply(d) => self.apply(Arc::new(d.clone())),
            watcher::Event::Delete(d) => self.delete(d),
            watcher::Event::InitDone => *self = Self::from_decisions(store.state()),
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
        }
    }

    /// The decisions of a placement, by name.
    #[must_use]
    pub fn of(&self, namespace: &str, placement: &str) -> Vec<Arc<PlacementDecision>> {
        self.by_placement
            .get(&(namespace.to_string(), placement.to_string()))
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Decisions per cluster over all placements.
    #[must_use]
    pub fn counts(&self) -> &DecisionCounts {
        &self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::schedule::testing::decision;

    #[test]
    fn counts_follow_applies_and_deletes() {
        let mut index = DecisionIndex::default();
        index.apply(Arc::new(decision("ns", "a", 1, &["c1", "c2"])));
        index.apply(Arc::new(decision("ns", "b", 1, &["c1"])));
        assert_eq!(index.counts().0.get("c1"), Some(&2));
        index.apply(Arc::new(decision("ns", "a", 1, &["c2"])));
        assert_eq!(index.counts().0.get("c1"), Some(&1));
        assert_eq!(index.of("ns", "a").len(), 1);
        index.delete(&decision("ns", "b", 1, &[]));
        assert_eq!(index.counts().0.get("c1"), None);
        assert!(index.of("ns", "b").is_empty());
        assert_eq!(index.counts().0.get("c2"), Some(&1));
    }

    #[test]
    fn a_relabelled_decision_moves_to_its_new_placement() {
        let mut index = DecisionIndex::default();
        index.apply(Arc::new(decision("ns", "a", 1, &["c1"])));
        let mut moved = decision("ns", "a", 1, &["c1"]);
        moved.labels_mut().insert(PLACEMENT.into(), "b".into());
        index.apply(Arc::new(moved));
        assert!(index.of("ns", "a").is_empty());
        assert_eq!(index.of("ns", "b").len(), 1);
        assert_eq!(index.counts().0.get("c1"), Some(&1));
    }
}
