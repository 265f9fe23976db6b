//! Which clusters a placement may choose from: the members of the cluster sets bound to its
//! namespace, narrowed to `spec.clusterSets`.
//!
//! A binding counts when its name names an existing ManagedClusterSet; its `Bound` condition is
//! not consulted (upstream's rule). Deleting clusters are never candidates.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube::ResourceExt;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::Placement;
use ocm_api::selector::Selector;

use super::{Fleet, ScheduleError};

/// The sets and clusters a placement may use.
#[derive(Debug, Clone, Default)]
pub struct Eligibility {
    /// How many bindings in the placement's namespace name an existing set.
    pub bindings: usize,
    /// The bound sets the placement may use, sorted.
    pub sets: Vec<String>,
    /// The members of those sets that are not deleting, in the fleet's order.
    pub candidates: Vec<Arc<ManagedCluster>>,
}

/// The eligible sets and candidate clusters of `placement`.
///
/// # Errors
/// [`ScheduleError::SetMembers`] when an eligible set's member selector is invalid.
pub fn eligibility(placement: &Placement, fleet: Fleet<'_>) -> Result<Eligibility, ScheduleError> {
    let namespace = placement.namespace().unwrap_or_default();
    let sets: BTreeMap<String, _> = fleet.sets.iter().map(|s| (s.name_any(), s)).collect();
    let bound: BTreeSet<String> = fleet
        .bindings
        .iter()
        .filter(|b| b.namespace().as_deref() == Some(namespace.as_str()))
        .map(|b| b.name_any())
        .filter(|name| sets.contains_key(name))
        .collect();
    let bindings = fleet
        .bindings
        .iter()
        .filter(|b| b.namespace().as_deref() == Some(namespace.as_str()) && sets.contains_key(&b.name_any()))
        .count();
    let wanted = placement.spec.cluster_sets.as_deref().unwrap_or_default();
    let eligible: Vec<String> = bound
        .into_iter()
        .filter(|name| wanted.is_empty() || wanted.contains(name))
        .collect();

    let mut selectors = Vec::new();
    for name in &eligible {
        let Some(set) = sets.get(name) else { continue };
        let Some(selector) = set.member_selector() else {
            continue;
        };
        let selector = Selector::from_label_selector(&selector).map_err(|e| ScheduleError::SetMembers {
            set: name.clone(),
            message: e.to_string(),
        })?;
        selectors.push(selector);
    }
    // In the fleet's order: the ranking sorts the filtered clusters by score and name, a total
    // order, so nothing decided depends on it (and a fleet holds each cluster once).
    let candidates: Vec<Arc<ManagedCluster>> = if selectors.is_empty() {
        Vec::new()
    } else {
        fleet
            .clusters
            .iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .filter(|c| selectors.iter().any(|s| s.matches(c.labels())))
            .cloned()
            .collect()
    };
    Ok(Eligibility {
        bindings,
        sets: eligible,
        candidates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::schedule::testing::*;

    #[test]
    fn bindings_must_name_an_existing_set() {
        let world = World::new()
            .cluster(cluster("c1").label(CLUSTER_SET, "dev"))
            .set(set("dev"))
            .binding("ns", "dev")
            .binding("ns", "missing")
            .binding("other", "dev");
        let e = eligibility(&placement("ns", "p"), world.fleet()).unwrap();
        assert_eq!(e.bindings, 1);
        assert_eq!(e.sets, ["dev"]);
        assert_eq!(names(&e.candidates), ["c1"]);
    }

    #[test]
    fn cluster_sets_narrow_the_bound_sets() {
        let world = World::new()
            .cluster(cluster("a1").label(CLUSTER_SET, "a"))
            .cluster(cluster("b1").label(CLUSTER_SET, "b"))
            .set(set("a"))
            .set(set("b"))
            .binding("ns", "a")
            .binding("ns", "b");
        let mut p = placement("ns", "p");
        p.spec.cluster_sets = Some(vec!["b".into(), "c".into()]);
        let e = eligibility(&p, world.fleet()).unwrap();
        assert_eq!(e.sets, ["b"]);
        assert_eq!(names(&e.candidates), ["b1"]);
        p.spec.cluster_sets = Some(vec!["c".into()]);
        let e = eligibility(&p, world.fleet()).unwrap();
        assert_eq!((e.bindings, e.sets.len(), e.candidates.len()), (2, 0, 0));
    }

    #[test]
    fn label_selector_sets_overlap_and_deleting_clusters_are_left_out() {
        let world = World::new()
            .cluster(cluster("c1").label("env", "prod").label(CLUSTER_SET, "dev"))
            .cluster(cluster("c2").label("env", "prod").deleting())
            .cluster(cluster("c3"))
            .set(set("dev"))
            .set(label_set("prod", &[("env", "prod")]))
            .set(global_set("global"))
            .binding("ns", "dev")
            .binding("ns", "prod");
        let e = eligibility(&placement("ns", "p"), world.fleet()).unwrap();
        assert_eq!(e.sets, ["dev", "prod"]);
        assert_eq!(names(&e.candidates), ["c1"]);
        let world = world.binding("ns", "global");
        let e = eligibility(&placement("ns", "p"), world.fleet()).unwrap();
        assert_eq!(names(&e.candidates), ["c1", "c3"]);
    }

    #[test]
    fn a_label_selector_set_without_selector_has_no_member() {
        let mut s = label_set("none", &[]);
        if let Some(sel) = s.spec.cluster_selector.as_mut() {
            sel.label_selector = None;
        }
        let world = World::new().cluster(cluster("c1")).set(s).binding("ns", "none");
        let e = eligibility(&placement("ns", "p"), world.fleet()).unwrap();
        assert!(e.candidates.is_empty());
    }

    #[test]
    fn an_invalid_set_selector_is_an_error() {
        let world = World::new()
            .cluster(cluster("c1"))
            .set(label_set("bad", &[("-bad key-", "x")]))
            .binding("ns", "bad");
        let err = eligibility(&placement("ns", "p"), world.fleet()).unwrap_err();
        assert!(
            matches!(err, ScheduleError::SetMembers { ref set, .. } if set == "bad"),
            "{err}"
        );
    }
}
