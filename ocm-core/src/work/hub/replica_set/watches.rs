//! Which ManifestWorkReplicaSets an event of another kind concerns:
//! - a ManifestWork → the replica set its owner label names (`<namespace>.<name>`);
//! - a Placement → the replica sets of its namespace referring to it;
//! - a PlacementDecision → the replica sets of its namespace referring to the Placement of its
//!   `cluster.open-cluster-management.io/placement` label.

use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use ocm_api::names::labels::{MANIFEST_WORK_REPLICA_SET, PLACEMENT};
use ocm_api::work::v1::ManifestWork;
use ocm_api::work::v1alpha1::ManifestWorkReplicaSet;

use super::works::owner_of;

/// The object an event added, changed or deleted (`None` for the events of a (re)list, which
/// the replica sets' own initial list covers).
pub fn touched<K>(event: &watcher::Event<K>) -> Option<&K> {
    match event {
        watcher::Event::Apply(object) | watcher::Event::Delete(object) => Some(object),
        watcher::Event::InitApply(_) | watcher::Event::Init | watcher::Event::InitDone => None,
    }
}

/// The replica set that owns `work`.
#[must_use]
pub fn for_work(work: &ManifestWork) -> Option<ObjectRef<ManifestWorkReplicaSet>> {
    let (namespace, name) = owner_of(work.labels().get(MANIFEST_WORK_REPLICA_SET)?)?;
    Some(ObjectRef::new(name).within(namespace))
}

/// The replica sets among `sets` referring to the Placement `namespace/placement`.
#[must_use]
pub fn for_placement(
    sets: &[Arc<ManifestWorkReplicaSet>],
    namespace: &str,
    placement: &str,
) -> Vec<ObjectRef<ManifestWorkReplicaSet>> {
    sets.iter()
        .filter(|s| {
            s.namespace().as_deref() == Some(namespace)
                && s.spec.placement_refs.iter().any(|r| r.name == placement)
        })
        .map(|s| ObjectRef::from_obj(s.as_ref()))
        .collect()
}

/// The replica sets among `sets` referring to the Placement a decision belongs to.
#[must_use]
pub fn for_decision<K: ResourceExt>(
    sets: &[Arc<ManifestWorkReplicaSet>],
    decision: &K,
) -> Vec<ObjectRef<ManifestWorkReplicaSet>> {
    let Some(placement) = decision.labels().get(PLACEMENT) else {
        return Vec::new();
    };
    for_placement(sets, &decision.namespace().unwrap_or_default(), placement)
}

#[cfg(test)]
mod tests {
    use ocm_api::cluster::v1beta1::PlacementDecision;
    use ocm_api::work::v1::ManifestWorkSpec;
    use ocm_api::work::v1alpha1::{LocalPlacementReference, ManifestWorkReplicaSetSpec};

    use super::*;

    fn set(namespace: &str, name: &str, placements: &[&str]) -> Arc<ManifestWorkReplicaSet> {
        let mut s = ManifestWorkReplicaSet::new(
            name,
            ManifestWorkReplicaSetSpec {
                placement_refs: placements
                    .iter()
                    .map(|p| LocalPlacementReference {
                        name: (*p).into(),
                        rollout_strategy: None,
                    })
                    .collect(),
                ..ManifestWorkReplicaSetSpec::default()
            },
        );
        s.metadata.namespace = Some(namespace.into());
        Arc::new(s)
    }

    #[test]
    fn events_map_to_the_replica_sets_concerned() {
        let sets = [
            set("ns", "a", &["p1"]),
            set("ns", "b", &["p1", "p2"]),
            set("other", "c", &["p1"]),
        ];
        let names = |refs: Vec<ObjectRef<ManifestWorkReplicaSet>>| {
            refs.into_iter().map(|r| r.name).collect::<Vec<_>>()
        };
        assert_eq!(names(for_placement(&sets, "ns", "p1")), vec!["a", "b"]);
        assert_eq!(names(for_placement(&sets, "ns", "p2")), vec!["b"]);
        let mut decision = PlacementDecision {
            metadata: Default::default(),
            status: None,
        };
        decision.metadata.namespace = Some("ns".into());
        assert!(for_decision(&sets, &decision).is_empty());
        decision.labels_mut().insert(PLACEMENT.into(), "p2".into());
        assert_eq!(names(for_decision(&sets, &decision)), vec!["b"]);
        let mut work = ManifestWork::new("w", ManifestWorkSpec::default());
        assert_eq!(for_work(&work), None);
        work.labels_mut()
            .insert(MANIFEST_WORK_REPLICA_SET.into(), "ns.b".into());
        assert_eq!(for_work(&work), Some(ObjectRef::new("b").within("ns")));
    }
}
