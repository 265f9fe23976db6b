//! Which placements a change of another kind can affect (ocm-core.md §4.2), so that only those are
//! scheduled again:
//! - a ManagedCluster → the sets selecting it (with its labels now, and before when they changed)
//!   → those sets' bindings → the placements in each binding's namespace using the set (naming it
//!   in `spec.clusterSets`, or naming none);
//! - a ManagedClusterSet → its bindings → their placements, likewise;
//! - a ManagedClusterSetBinding → the placements of its namespace using its set;
//! - an AddOnPlacementScore (namespace = cluster) → the placements prioritizing by that score name
//!   whose namespace has a binding of a set holding the cluster;
//! - a PlacementDecision → the placement of its label.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision, ScoreCoordinateType};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_api::names::labels::PLACEMENT;
use ocm_api::selector::Selector;

/// The stores the mapping reads.
#[derive(Clone)]
pub struct Stores {
    /// Every Placement.
    pub placements: Store<Placement>,
    /// Every ManagedClusterSet.
    pub sets: Store<ManagedClusterSet>,
    /// Every ManagedClusterSetBinding.
    pub bindings: Store<ManagedClusterSetBinding>,
    /// Every ManagedCluster.
    pub clusters: Store<ManagedCluster>,
}

/// The names of the sets selecting a cluster with `labels`.
fn sets_selecting(sets: &[Arc<ManagedClusterSet>], labels: &BTreeMap<String, String>) -> BTreeSet<String> {
    sets.iter()
        .filter(|s| {
            s.member_selector()
                .and_then(|sel| Selector::from_label_selector(&sel).ok())
                .is_some_and(|sel| sel.matches(labels))
        })
        .map(|s| s.name_any())
        .collect()
}

/// Whether `placement` uses set `set` when it is bound to its namespace.
fn uses_set(placement: &Placement, set: &str) -> bool {
    let wanted = placement.spec.cluster_sets.as_deref().unwrap_or_default();
    wanted.is_empty() || wanted.iter().any(|s| s == set)
}

/// The placements of `namespace` using the set a binding named `binding` binds.
fn placements_of_binding(
    placements: &[Arc<Placement>],
    namespace: &str,
    binding: &str,
) -> Vec<ObjectRef<Placement>> {
    placements
        .iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace) && uses_set(p, binding))
        .map(|p| ObjectRef::from_obj(p.as_ref()))
        .collect()
}

/// The placements affected through the bindings of `sets`.
fn placements_of_sets(stores: &Stores, sets: &BTreeSet<String>) -> Vec<ObjectRef<Placement>> {
    if sets.is_empty() {
        return Vec::new();
    }
    let placements = stores.placements.state();
    let mut refs: Vec<ObjectRef<Placement>> = stores
        .bindings
        .state()
        .iter()
        .filter(|b| b.spec.cluster_set.as_ref().is_some_and(|s| sets.contains(s)))
        .flat_map(|b| placements_of_binding(&placements, &b.namespace().unwrap_or_default(), &b.name_any()))
        .collect();
    refs.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    refs.dedup();
    refs
}

/// The placements a cluster event affects. `last_labels` remembers each cluster's labels so that
/// a label change also reaches the sets the cluster leaves.
pub fn for_cluster(
    stores: &Stores,
    last_labels: &Mutex<HashMap<String, BTreeMap<String, String>>>,
    event: &watcher::Event<ManagedCluster>,
) -> Vec<ObjectRef<Placement>> {
    let mut labels_seen = last_labels
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (cluster, deleted) = match event {
        watcher::Event::Apply(c) => (c, false),
        watcher::Event::Delete(c) => (c, true),
        watcher::Event::InitApply(c) => {
            labels_seen.insert(c.name_any(), c.labels().clone());
            return Vec::new();
        }
        watcher::Event::Init | watcher::Event::InitDone => return Vec::new(),
    };
    let sets = stores.sets.state();
    let mut affected = sets_selecting(&sets, cluster.labels());
    let previous = if deleted {
        labels_seen.remove(&cluster.name_any())
    } else {
        labels_seen.insert(cluster.name_any(), cluster.labels().clone())
    };
    if let Some(previous) = previous
        && &previous != cluster.labels()
    {
        affected.extend(sets_selecting(&sets, &previous));
    }
    drop(labels_seen);
    placements_of_sets(stores, &affected)
}

/// The placements a set event affects.
pub fn for_set(stores: &Stores, set: &ManagedClusterSet) -> Vec<ObjectRef<Placement>> {
    placements_of_sets(stores, &BTreeSet::from([set.name_any()]))
}

/// The placements a binding event affects.
pub fn for_binding(stores: &Stores, binding: &ManagedClusterSetBinding) -> Vec<ObjectRef<Placement>> {
    placements_of_binding(
        &stores.placements.state(),
        &binding.namespace().unwrap_or_default(),
        &binding.name_any(),
    )
}

/// The placements a score event affects.
pub fn for_score(stores: &Stores, score: &AddOnPlacementScore) -> Vec<ObjectRef<Placement>> {
    let cluster_name = score.namespace().unwrap_or_default();
    let name = score.name_any();
    let Some(cluster) = stores.clusters.get(&ObjectRef::new(&cluster_name)) else {
        return Vec::new();
    };
    let sets = sets_selecting(&stores.sets.state(), cluster.labels());
    let namespaces: BTreeSet<String> = stores
        .bindings
        .state()
        .iter()
        .filter(|b| b.spec.cluster_set.as_ref().is_some_and(|s| sets.contains(s)))
        .filter_map(|b| b.namespace())
        .collect();
    stores
        .placements
        .state()
        .iter()
        .filter(|p| p.namespace().is_some_and(|ns| namespaces.contains(&ns)))
        .filter(|p| {
            p.spec
                .prioritizer_policy
                .iter()
                .flat_map(|policy| policy.configurations.iter().flatten())
                .any(|c| {
                    c.score_coordinate.type_ == Some(ScoreCoordinateType::AddOn)
                        && c.score_coordinate
                            .add_on
                            .as_ref()
                            .is_some_and(|a| a.resource_name == name)
                })
        })
        .map(|p| ObjectRef::from_obj(p.as_ref()))
        .collect()
}

/// The placement a decision belongs to.
#[must_use]
pub fn for_decision(decision: &PlacementDecision) -> Option<ObjectRef<Placement>> {
    let placement = decision.labels().get(PLACEMENT)?;
    Some(ObjectRef::new(placement).within(&decision.namespace().unwrap_or_default()))
}

/// The object of an applied or deleted watch event.
pub fn touched<K>(event: &watcher::Event<K>) -> Option<&K> {
    match event {
        watcher::Event::Apply(o) | watcher::Event::Delete(o) => Some(o),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::schedule::testing::*;
    use kube::runtime::reflector::store;

    fn stores(world: &World, placements: Vec<Placement>) -> Stores {
        fn fill<K>(items: Vec<K>) -> Store<K>
        where
            K: kube::Resource + Clone + 'static,
            K::DynamicType: Default + Eq + std::hash::Hash + Clone,
        {
            let (reader, mut writer) = store::<K>();
            writer.apply_watcher_event(&watcher::Event::Init);
            for item in items {
                writer.apply_watcher_event(&watcher::Event::InitApply(item));
            }
            writer.apply_watcher_event(&watcher::Event::InitDone);
            reader
        }
        Stores {
            placements: fill(placements),
            sets: fill(world.sets.iter().map(|s| (**s).clone()).collect()),
            bindings: fill(world.bindings.iter().map(|s| (**s).clone()).collect()),
            clusters: fill(world.clusters.iter().map(|s| (**s).clone()).collect()),
        }
    }

    fn names(refs: &[ObjectRef<Placement>]) -> Vec<String> {
        refs.iter()
            .map(|r| format!("{}/{}", r.namespace.clone().unwrap_or_default(), r.name))
            .collect()
    }

    fn world() -> World {
        World::new()
            .cluster(cluster("c1").label(CLUSTER_SET, "a"))
            .set(set("a"))
            .set(set("b"))
            .set(label_set("prod", &[("env", "prod")]))
            .binding("ns1", "a")
            .binding("ns2", "b")
            .binding("ns2", "prod")
    }

    fn placements() -> Vec<Placement> {
        let any = placement("ns1", "any");
        let mut only_b = placement("ns2", "only-b");
        only_b.spec.cluster_sets = Some(vec!["b".into()]);
        let mut only_prod = placement("ns2", "only-prod");
        only_prod.spec.cluster_sets = Some(vec!["prod".into()]);
        vec![any, only_b, only_prod]
    }

    #[test]
    fn a_cluster_reaches_the_placements_of_the_sets_it_leaves_and_joins() {
        let w = world();
        let s = stores(&w, placements());
        let seen = Mutex::new(HashMap::new());
        let c1 = cluster("c1").label(CLUSTER_SET, "a");
        assert!(for_cluster(&s, &seen, &watcher::Event::InitApply(c1.clone())).is_empty());
        assert_eq!(
            names(&for_cluster(&s, &seen, &watcher::Event::Apply(c1.clone()))),
            ["ns1/any"]
        );
        let moved = cluster("c1").label(CLUSTER_SET, "b").label("env", "prod");
        assert_eq!(
            names(&for_cluster(&s, &seen, &watcher::Event::Apply(moved.clone()))),
            ["ns1/any", "ns2/only-b", "ns2/only-prod"]
        );
        assert_eq!(
            names(&for_cluster(&s, &seen, &watcher::Event::Delete(moved))),
            ["ns2/only-b", "ns2/only-prod"]
        );
    }

    #[test]
    fn sets_and_bindings_reach_their_placements() {
        let w = world();
        let s = stores(&w, placements());
        assert_eq!(names(&for_set(&s, &set("b"))), ["ns2/only-b"]);
        assert_eq!(names(&for_binding(&s, &w.bindings[0])), ["ns1/any"]);
        assert_eq!(names(&for_binding(&s, &w.bindings[2])), ["ns2/only-prod"]);
    }

    #[test]
    fn scores_reach_placements_using_them_where_the_cluster_is_bound() {
        use ocm_api::cluster::v1beta1::{AddOnScore, PrioritizerConfig, PrioritizerPolicy, ScoreCoordinate};
        let w = world();
        let mut ps = placements();
        for p in &mut ps {
            p.spec.prioritizer_policy = Some(PrioritizerPolicy {
                configurations: Some(vec![PrioritizerConfig {
                    score_coordinate: ScoreCoordinate {
                        add_on: Some(AddOnScore {
                            resource_name: "demo".into(),
                            score_name: "x".into(),
                        }),
                        built_in: None,
                        type_: Some(ScoreCoordinateType::AddOn),
                    },
                    weight: None,
                }]),
                mode: None,
            });
        }
        let s = stores(&w, ps);
        assert_eq!(
            names(&for_score(&s, &score("c1", "demo", &[], None))),
            ["ns1/any"]
        );
        assert!(for_score(&s, &score("c1", "other", &[], None)).is_empty());
        assert!(for_score(&s, &score("gone", "demo", &[], None)).is_empty());
    }

    #[test]
    fn decisions_reach_their_placement() {
        let r = for_decision(&decision("ns", "web", 1, &[])).unwrap();
        assert_eq!((r.name.as_str(), r.namespace.as_deref()), ("web", Some("ns")));
    }
}
