//! The controller's index of PlacementDecisions: every decision by placement, and how many
//! decisions of all placements name each cluster (Balance needs it on every scheduling; counting
//! it from scratch each time costs the whole hub's decisions per placement).
//!
//! It is fed by the decisions' watch events after the reflector has stored them: applied and
//! deleted decisions update it incrementally, and a finished (re)list rebuilds it from the store.
//! It is also fed by the controller's own writes, as soon as the API server answers them, so that
//! a placement scheduled again before the watch event of its last write arrives sees what it wrote
//! (not a 409 on a stale resourceVersion, nor a second create); a watch event older than what the
//! index holds is then ignored (resourceVersions compared as integers, see [`is_older`]).
//!
//! Placements scheduled in parallel see each other: the scheduling of a placement *reserves* the
//! clusters it chose in the counts (and frees those it dropped) until its writes are in the index,
//! so that Balance does not send two placements scheduled at the same moment to the same clusters.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use ocm_api::cluster::v1beta1::PlacementDecision;
use ocm_api::names::labels::PLACEMENT;

use crate::placement::schedule::DecisionCounts;

/// A placement's key: namespace and name.
pub type PlacementKey = (String, String);

/// A decision's key: namespace and name.
type DecisionKey = (String, String);

/// What one decision adds to the counts.
#[derive(Debug)]
struct Counted {
    /// The clusters it names.
    clusters: Vec<String>,
    /// The resourceVersion it was counted at.
    resource_version: Option<String>,
}

/// The change a placement being written makes to the counts.
#[derive(Debug, Default)]
struct Reservation {
    /// Clusters it chose that its decisions do not name yet.
    added: Vec<String>,
    /// Clusters its decisions name that it no longer chose.
    removed: Vec<String>,
}

/// PlacementDecisions by placement, and decision counts per cluster.
#[derive(Debug, Default)]
pub struct DecisionIndex {
    /// What each decision counted.
    counted: HashMap<DecisionKey, Counted>,
    /// The decisions of each placement, by name.
    by_placement: HashMap<PlacementKey, BTreeMap<String, Arc<PlacementDecision>>>,
    /// Decisions per cluster over all placements.
    base: HashMap<String, u32>,
    /// What the reservations add to (or take from) `base`, per cluster.
    reserved: HashMap<String, i64>,
    /// `base` with the reservations: what scheduling reads.
    counts: DecisionCounts,
    /// The reservations of the placements being written.
    reservations: HashMap<PlacementKey, Reservation>,
    /// Decisions this controller deleted, with the resourceVersion they had: watch events of them
    /// up to that version are older than the deletion.
    deleted: HashMap<DecisionKey, Option<String>>,
}

fn owner(decision: &PlacementDecision) -> Option<PlacementKey> {
    let placement = decision.labels().get(PLACEMENT)?;
    Some((decision.namespace().unwrap_or_default(), placement.clone()))
}

fn key_of(decision: &PlacementDecision) -> DecisionKey {
    (decision.namespace().unwrap_or_default(), decision.name_any())
}

/// Whether resourceVersion `candidate` is older than `held`. resourceVersions are opaque to
/// clients, but etcd's (kube-apiserver's) and the embedded control plane's are increasing
/// integers: when both parse as integers they are compared; otherwise nothing is older.
///
/// ```
/// use ocm_core::placement::controller::is_older;
/// assert!(is_older(Some("9"), Some("10")));
/// assert!(!is_older(Some("10"), Some("10")));
/// assert!(!is_older(Some("a"), Some("10")));
/// assert!(!is_older(None, Some("10")));
/// ```
#[must_use]
pub fn is_older(candidate: Option<&str>, held: Option<&str>) -> bool {
    let parse = |rv: Option<&str>| rv.and_then(|v| v.parse::<u64>().ok());
    matches!(
        (parse(candidate), parse(held)),
        (Some(c), Some(h)) if c.cmp(&h) == Ordering::Less
    )
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
        let key = key_of(&decision);
        let clusters: Vec<String> = decision.cluster_names().map(str::to_string).collect();
        for cluster in &clusters {
            self.count(cluster, 1, 0);
        }
        self.counted.insert(
            key.clone(),
            Counted {
                clusters,
                resource_version: decision.resource_version(),
            },
        );
        if let Some(placement) = owner(&decision) {
            self.by_placement
                .entry(placement)
                .or_default()
                .insert(key.1, decision);
        }
    }

    /// Forgets a deleted decision.
    pub fn delete(&mut self, decision: &PlacementDecision) {
        let key = key_of(decision);
        let counted = self.counted.remove(&key);
        if let Some(counted) = &counted {
            for cluster in &counted.clusters {
                self.count(cluster, -1, 0);
            }
        }
        // The placement label may have changed since it was counted: then look in every placement
        // of the namespace (a decision never counted is in none).
        if counted.is_none() {
            return;
        }
        let labelled = owner(decision);
        if let Some(placement) = &labelled
            && self.forget(placement, &key.1)
        {
            return;
        }
        let others: Vec<PlacementKey> = self
            .by_placement
            .iter()
            .filter(|(p, m)| p.0 == key.0 && m.contains_key(&key.1))
            .map(|(p, _)| p.clone())
            .collect();
        for placement in others {
            self.forget(&placement, &key.1);
        }
    }

    /// Removes decision `name` from `placement`'s, and the placement when it has none left;
    /// whether it was there.
    fn forget(&mut self, placement: &PlacementKey, name: &str) -> bool {
        let Some(decisions) = self.by_placement.get_mut(placement) else {
            return false;
        };
        let removed = decisions.remove(name).is_some();
        if decisions.is_empty() {
            self.by_placement.remove(placement);
        }
        removed
    }

    /// Records a decision as the API server returned it from this controller's write, unless the
    /// index already holds a newer version of it.
    pub fn wrote(&mut self, decision: Arc<PlacementDecision>) {
        let key = key_of(&decision);
        let held = self.counted.get(&key).and_then(|c| c.resource_version.as_deref());
        if is_older(decision.metadata.resource_version.as_deref(), held) {
            return;
        }
        self.deleted.remove(&key);
        self.apply(decision);
    }

    /// Forgets a decision this controller deleted; `decision` is the version it deleted.
    pub fn deleted(&mut self, decision: &PlacementDecision) {
        self.deleted.insert(key_of(decision), decision.resource_version());
        self.delete(decision);
    }

    /// Follows a watch event of the decisions, once the reflector has applied it to `store`, and
    /// tells whether it is news: `false` for an event the index already holds (the echo of this
    /// controller's own write, or of its own deletion) or an older one, which need not schedule the
    /// placement again.
    pub fn on_event(
        &mut self,
        event: &watcher::Event<PlacementDecision>,
        store: &Store<PlacementDecision>,
    ) -> bool {
        match event {
            watcher::Event::Apply(d) => {
                let key = key_of(d);
                let rv = d.metadata.resource_version.as_deref();
                let held = self.counted.get(&key).and_then(|c| c.resource_version.as_deref());
                let deleted = self.deleted.get(&key).map(Option::as_deref);
                if is_older(rv, held) || deleted.is_some_and(|at| !is_older(at, rv)) {
                    return false;
                }
                if rv.is_some() && rv == held {
                    return false;
                }
                self.deleted.remove(&key);
                // The reflector's copy of this version, rather than a second one.
                let stored = store
                    .get(&ObjectRef::from_obj(d))
                    .filter(|s| s.metadata.resource_version == d.metadata.resource_version);
                self.apply(stored.unwrap_or_else(|| Arc::new(d.clone())));
                true
            }
            watcher::Event::Delete(d) => {
                let ours = self.deleted.remove(&key_of(d)).is_some();
                self.delete(d);
                !ours
            }
            watcher::Event::InitDone => {
                let reservations = std::mem::take(&mut self.reservations);
                *self = Self::from_decisions(store.state());
                for (key, reservation) in reservations {
                    self.hold(&reservation, 1);
                    self.reservations.insert(key, reservation);
                }
                false
            }
            watcher::Event::Init | watcher::Event::InitApply(_) => false,
        }
    }

    /// Reserves in the counts the clusters `placement` was scheduled to, against what its
    /// decisions name now, until [`Self::release`].
    pub fn reserve(&mut self, placement: &PlacementKey, chosen: &[&str]) {
        self.release(placement);
        let now: Vec<String> = self
            .by_placement
            .get(placement)
            .into_iter()
            .flat_map(|m| m.values())
            .flat_map(|d| d.cluster_names().map(str::to_string).collect::<Vec<_>>())
            .collect();
        let reservation = Reservation {
            added: chosen
                .iter()
                .filter(|c| !now.iter().any(|n| n == *c))
                .map(|c| (*c).to_string())
                .collect(),
            removed: now
                .iter()
                .filter(|n| !chosen.contains(&n.as_str()))
                .cloned()
                .collect(),
        };
        if reservation.added.is_empty() && reservation.removed.is_empty() {
            return;
        }
        self.hold(&reservation, 1);
        self.reservations.insert(placement.clone(), reservation);
    }

    /// Ends the reservation of `placement`.
    pub fn release(&mut self, placement: &PlacementKey) {
        if let Some(reservation) = self.reservations.remove(placement) {
            self.hold(&reservation, -1);
        }
    }

    /// Adds (`sign` 1) or takes back (-1) a reservation's changes.
    fn hold(&mut self, reservation: &Reservation, sign: i64) {
        for cluster in &reservation.added {
            self.count(cluster, 0, sign);
        }
        for cluster in &reservation.removed {
            self.count(cluster, 0, -sign);
        }
    }

    /// Changes a cluster's count of decisions by `decided` and of reservations by `reserved`.
    fn count(&mut self, cluster: &str, decided: i64, reserved: i64) {
        let base = self.base.get(cluster).map_or(0, |n| i64::from(*n)) + decided;
        match u32::try_from(base) {
            Ok(n) if n > 0 => {
                self.base.insert(cluster.to_string(), n);
            }
            _ => {
                self.base.remove(cluster);
            }
        }
        let held = self.reserved.get(cluster).copied().unwrap_or(0) + reserved;
        if held == 0 {
            self.reserved.remove(cluster);
        } else {
            self.reserved.insert(cluster.to_string(), held);
        }
        let effective = base.max(0) + held;
        match u32::try_from(effective) {
            Ok(n) if n > 0 => {
                self.counts.0.insert(cluster.to_string(), n);
            }
            _ => {
                self.counts.0.remove(cluster);
            }
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

    fn at_version(mut d: PlacementDecision, rv: u64) -> PlacementDecision {
        d.metadata.resource_version = Some(rv.to_string());
        d
    }

    fn count(index: &DecisionIndex, cluster: &str) -> Option<u32> {
        index.counts().0.get(cluster).copied()
    }

    fn key(placement: &str) -> PlacementKey {
        ("ns".to_string(), placement.to_string())
    }

    #[test]
    fn a_reservation_counts_until_it_is_released() {
        let mut index = DecisionIndex::default();
        index.apply(Arc::new(decision("ns", "a", 1, &["c1"])));
        index.reserve(&key("b"), &["c1", "c2"]);
        assert_eq!(count(&index, "c1"), Some(2));
        assert_eq!(count(&index, "c2"), Some(1));
        index.release(&key("b"));
        assert_eq!(count(&index, "c1"), Some(1));
        assert_eq!(count(&index, "c2"), None);
    }

    #[test]
    fn a_reservation_is_the_change_against_the_placements_own_decisions() {
        let mut index = DecisionIndex::default();
        index.apply(Arc::new(decision("ns", "a", 1, &["c1", "c2"])));
        index.reserve(&key("a"), &["c2", "c3"]);
        assert_eq!(
            (count(&index, "c1"), count(&index, "c2"), count(&index, "c3")),
            (None, Some(1), Some(1))
        );
        // Reserving again replaces the reservation.
        index.reserve(&key("a"), &["c1", "c2"]);
        assert_eq!(
            (count(&index, "c1"), count(&index, "c2"), count(&index, "c3")),
            (Some(1), Some(1), None)
        );
        index.release(&key("a"));
        assert_eq!((count(&index, "c1"), count(&index, "c2")), (Some(1), Some(1)));
    }

    #[test]
    fn counts_stay_exact_when_decisions_change_under_a_reservation() {
        let mut index = DecisionIndex::default();
        index.apply(Arc::new(at_version(decision("ns", "a", 1, &["c1"]), 1)));
        index.reserve(&key("a"), &["c2"]);
        assert_eq!((count(&index, "c1"), count(&index, "c2")), (None, Some(1)));
        // The placement's write lands (as its watch event) before the reservation is released.
        index.apply(Arc::new(at_version(decision("ns", "a", 1, &["c2"]), 2)));
        index.release(&key("a"));
        assert_eq!((count(&index, "c1"), count(&index, "c2")), (None, Some(1)));
    }

    #[test]
    fn own_writes_are_not_undone_by_older_watch_events() {
        let mut index = DecisionIndex::default();
        let store = kube::runtime::reflector::store::<PlacementDecision>().0;
        index.wrote(Arc::new(at_version(decision("ns", "a", 1, &["c1"]), 5)));
        let older = at_version(decision("ns", "a", 1, &[]), 4);
        index.on_event(&watcher::Event::Apply(older.clone()), &store);
        assert_eq!(count(&index, "c1"), Some(1));
        // A write answered after a newer watch event does not go back either.
        index.on_event(
            &watcher::Event::Apply(at_version(decision("ns", "a", 1, &["c2"]), 6)),
            &store,
        );
        index.wrote(Arc::new(older));
        assert_eq!((count(&index, "c1"), count(&index, "c2")), (None, Some(1)));
    }

    #[test]
    fn a_deleted_decision_is_not_brought_back_by_an_older_watch_event() {
        let mut index = DecisionIndex::default();
        let store = kube::runtime::reflector::store::<PlacementDecision>().0;
        let d = at_version(decision("ns", "a", 1, &["c1"]), 7);
        index.apply(Arc::new(d.clone()));
        index.deleted(&d);
        assert!(index.of("ns", "a").is_empty());
        index.on_event(
            &watcher::Event::Apply(at_version(decision("ns", "a", 1, &["c1"]), 7)),
            &store,
        );
        assert!(index.of("ns", "a").is_empty());
        index.on_event(&watcher::Event::Delete(d), &store);
        // A new decision of that name is taken.
        index.on_event(
            &watcher::Event::Apply(at_version(decision("ns", "a", 1, &["c3"]), 9)),
            &store,
        );
        assert_eq!(count(&index, "c3"), Some(1));
    }

    #[test]
    fn echoes_of_own_writes_and_deletions_are_not_news() {
        let mut index = DecisionIndex::default();
        let store = kube::runtime::reflector::store::<PlacementDecision>().0;
        let created = at_version(decision("ns", "a", 1, &["c1"]), 3);
        let patched = at_version(decision("ns", "a", 1, &["c1", "c2"]), 4);
        index.wrote(Arc::new(created.clone()));
        index.wrote(Arc::new(patched.clone()));
        assert!(!index.on_event(&watcher::Event::Apply(created), &store));
        assert!(!index.on_event(&watcher::Event::Apply(patched.clone()), &store));
        // Someone else's change is news, and so is its deletion.
        let theirs = at_version(decision("ns", "a", 1, &["c3"]), 5);
        assert!(index.on_event(&watcher::Event::Apply(theirs.clone()), &store));
        assert_eq!((count(&index, "c1"), count(&index, "c3")), (None, Some(1)));
        assert!(index.on_event(&watcher::Event::Delete(theirs.clone()), &store));
        // The deletion this controller made is not.
        index.on_event(
            &watcher::Event::Apply(at_version(decision("ns", "b", 1, &["c1"]), 6)),
            &store,
        );
        let b = at_version(decision("ns", "b", 1, &["c1"]), 6);
        index.deleted(&b);
        assert!(!index.on_event(&watcher::Event::Delete(b), &store));
        assert_eq!(count(&index, "c1"), None);
    }
}
