//! The ManifestWorks of a ManifestWorkReplicaSet: finding them (by the owner label), grouping
//! them by Placement, telling whether one carries the current template, building the work a
//! cluster should have, and reading a work's rollout status from its conditions.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use ocm_api::conditions::{self, Status};
use ocm_api::meta::Condition;
use ocm_api::names::conditions::work::manifest_work as work_conditions;
use ocm_api::names::labels::{
    MANIFEST_WORK_REPLICA_SET, MANIFEST_WORK_REPLICA_SET_PLACEMENT, manifest_work_replica_set_key,
};
use ocm_api::rollout::{ClusterRolloutStatus, GroupKey, RolloutStatus};
use ocm_api::work::v1::{ManifestWork, ManifestWorkSpec};
use ocm_api::work::v1alpha1::ManifestWorkReplicaSet;
use serde_json::Value;

/// The value of the owner label on the works of `replica_set`: `<namespace>.<name>`.
#[must_use]
pub fn owner_key(replica_set: &ManifestWorkReplicaSet) -> String {
    manifest_work_replica_set_key(
        &replica_set.namespace().unwrap_or_default(),
        &replica_set.name_any(),
    )
}

/// The `(namespace, name)` of the replica set an owner label value names. Namespaces hold no
/// dot, so everything after the first dot is the name (which may hold dots).
#[must_use]
pub fn owner_of(label_value: &str) -> Option<(&str, &str)> {
    label_value
        .split_once('.')
        .filter(|(namespace, name)| !namespace.is_empty() && !name.is_empty())
}

/// The works of one replica set, by Placement.
#[derive(Debug, Default, Clone)]
pub struct ReplicaSetWorks {
    all: Vec<Arc<ManifestWork>>,
    by_placement: BTreeMap<String, Vec<Arc<ManifestWork>>>,
}

impl ReplicaSetWorks {
    /// The works among `works` whose owner label is `key`.
    pub fn collect<'a>(key: &str, works: impl IntoIterator<Item = &'a Arc<ManifestWork>>) -> Self {
        let mut found = Self::default();
        for work in works {
            if work.labels().get(MANIFEST_WORK_REPLICA_SET).map(String::as_str) != Some(key) {
                continue;
            }
            if let Some(placement) = work.labels().get(MANIFEST_WORK_REPLICA_SET_PLACEMENT) {
                found
                    .by_placement
                    .entry(placement.clone())
                    .or_default()
                    .push(work.clone());
            }
            found.all.push(work.clone());
        }
        found
    }

    /// Every work of the replica set.
    #[must_use]
    pub fn all(&self) -> &[Arc<ManifestWork>] {
        &self.all
    }

    /// The works created for the Placement `placement`.
    #[must_use]
    pub fn of_placement(&self, placement: &str) -> &[Arc<ManifestWork>] {
        self.by_placement.get(placement).map_or(&[], Vec::as_slice)
    }

    /// The work created for `placement` in the namespace of `cluster`, if any.
    #[must_use]
    pub fn find(&self, placement: &str, cluster: &str) -> Option<&Arc<ManifestWork>> {
        self.of_placement(placement)
            .iter()
            .find(|w| w.namespace().as_deref() == Some(cluster))
    }

    /// The works whose Placement is not among `placements` (or that name none): they belong to
    /// a Placement reference that was removed.
    #[must_use]
    pub fn orphaned(&self, placements: &BTreeSet<&str>) -> Vec<&Arc<ManifestWork>> {
        self.all
            .iter()
            .filter(|w| {
                w.labels()
                    .get(MANIFEST_WORK_REPLICA_SET_PLACEMENT)
                    .is_none_or(|p| !placements.contains(p.as_str()))
            })
            .collect()
    }
}

/// `spec` as JSON with what a round trip through an API server adds to manifests left out: the
/// `creationTimestamp` of a manifest and of a pod template, as upstream compares them.
fn comparable(spec: &ManifestWorkSpec) -> Value {
    let mut value = serde_json::to_value(spec).unwrap_or(Value::Null);
    if let Some(manifests) = value
        .pointer_mut("/workload/manifests")
        .and_then(Value::as_array_mut)
    {
        for manifest in manifests {
            for path in ["/metadata", "/spec/template/metadata"] {
                if let Some(Value::Object(meta)) = manifest.pointer_mut(path) {
                    meta.remove("creationTimestamp");
                }
            }
        }
    }
    value
}

/// The template of `replica_set` (the empty spec when it has none).
#[must_use]
pub fn template(replica_set: &ManifestWorkReplicaSet) -> ManifestWorkSpec {
    replica_set
        .spec
        .manifest_work_template
        .clone()
        .unwrap_or_default()
}

/// Whether `work` carries `template` as its spec.
#[must_use]
pub fn has_template(work: &ManifestWork, template: &ManifestWorkSpec) -> bool {
    work.spec == *template || comparable(&work.spec) == comparable(template)
}

/// The work `replica_set` wants in the namespace of `cluster` for `placement`: the replica
/// set's labels plus the owner and Placement labels, the template as spec; named `name` when
/// it exists already, else generated from the replica set's name.
#[must_use]
pub fn desired(
    replica_set: &ManifestWorkReplicaSet,
    cluster: &str,
    placement: &str,
    name: Option<&str>,
) -> ManifestWork {
    let mut labels = replica_set.labels().clone();
    labels.insert(MANIFEST_WORK_REPLICA_SET.to_owned(), owner_key(replica_set));
    labels.insert(
        MANIFEST_WORK_REPLICA_SET_PLACEMENT.to_owned(),
        placement.to_owned(),
    );
    let metadata = ObjectMeta {
        name: name.map(str::to_owned),
        generate_name: name.is_none().then(|| replica_set.name_any()),
        namespace: Some(cluster.to_owned()),
        labels: Some(labels),
        ..ObjectMeta::default()
    };
    let mut work = ManifestWork::new("", template(replica_set));
    work.metadata = metadata;
    work
}

/// Whether `existing` differs from `desired` in what the replica set owns: the spec, the
/// labels (exactly), annotations and owner references (none).
#[must_use]
pub fn needs_update(existing: &ManifestWork, desired: &ManifestWork) -> bool {
    let empty = |o: &Option<BTreeMap<String, String>>| o.as_ref().is_none_or(BTreeMap::is_empty);
    !has_template(existing, &desired.spec)
        || existing.metadata.labels.clone().unwrap_or_default()
            != desired.metadata.labels.clone().unwrap_or_default()
        || !empty(&existing.metadata.annotations)
        || existing
            .metadata
            .owner_references
            .as_ref()
            .is_some_and(|o| !o.is_empty())
}

/// Whether `condition` is present, observed at `generation` and, when `must_be_true`, True.
fn observed(condition: Option<&Condition>, generation: i64, must_be_true: bool) -> bool {
    condition.is_some_and(|c| {
        c.observed_generation.unwrap_or_default() == generation
            && (!must_be_true || c.status() == Some(Status::True))
    })
}

/// Where `cluster` stands in the rollout, from its work's conditions (upstream's rules):
///
/// - `ToApply` until the agent reported, for the work's current generation, `Applied` True and
///   a `Progressing` condition (and `Degraded`, when that condition exists);
/// - then `Failed` while Progressing and Degraded are True (since Degraded's transition),
///   `Progressing` while Progressing is True, `Succeeded` once Progressing is False (both since
///   Progressing's transition); any other Progressing status counts as `Progressing`.
#[must_use]
pub fn rollout_status(cluster: &str, group: GroupKey, work: &ManifestWork) -> ClusterRolloutStatus {
    let generation = work.metadata.generation.unwrap_or_default();
    let list = work
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let applied = conditions::find(list, work_conditions::APPLIED);
    let progressing = conditions::find(list, work_conditions::PROGRESSING);
    let degraded = conditions::find(list, work_conditions::DEGRADED);
    let to_apply = ClusterRolloutStatus::new(cluster, group.clone(), RolloutStatus::ToApply);
    if !observed(applied, generation, true)
        || !observed(progressing, generation, false)
        || degraded.is_some_and(|d| d.observed_generation.unwrap_or_default() != generation)
    {
        return to_apply;
    }
    let Some(progressing) = progressing else {
        return to_apply;
    };
    let (status, since) = match (progressing.status(), degraded.map(Condition::status)) {
        (Some(Status::True), Some(Some(Status::True))) => {
            let since = degraded.map_or(progressing.last_transition_time.0, |d| d.last_transition_time.0);
            (RolloutStatus::Failed, since)
        }
        (Some(Status::False), _) => (RolloutStatus::Succeeded, progressing.last_transition_time.0),
        _ => (RolloutStatus::Progressing, progressing.last_transition_time.0),
    };
    ClusterRolloutStatus::new(cluster, group, status).since(since)
}

/// How many works of `works` count for each state in a summary: only works not being deleted
/// and carrying `template`; a work counts as Applied, Progressing, Available, Degraded when that
/// condition is True.
#[must_use]
pub fn count(works: &[Arc<ManifestWork>], template: &ManifestWorkSpec) -> Counts {
    let mut counts = Counts::default();
    for work in works {
        if work.metadata.deletion_timestamp.is_some() || !has_template(work, template) {
            continue;
        }
        let list = work
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        let is = |t: &str| usize::from(conditions::is_true(list, t));
        counts.applied += is(work_conditions::APPLIED);
        counts.progressing += is(work_conditions::PROGRESSING);
        counts.available += is(work_conditions::AVAILABLE);
        counts.degraded += is(work_conditions::DEGRADED);
    }
    counts
}

/// Works by condition.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// `Applied` True.
    pub applied: usize,
    /// `Progressing` True.
    pub progressing: usize,
    /// `Available` True.
    pub available: usize,
    /// `Degraded` True.
    pub degraded: usize,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, other: Self) {
        self.applied += other.applied;
        self.progressing += other.progressing;
        self.available += other.available;
        self.degraded += other.degraded;
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use ocm_api::work::v1::ManifestWorkStatus;
    use serde_json::json;

    use super::*;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap_or_default())
    }

    fn work(generation: i64, conditions: &[(&str, Status, i64, i64)]) -> ManifestWork {
        let mut work = ManifestWork::new("w", ManifestWorkSpec::default());
        work.metadata.generation = Some(generation);
        work.status = Some(ManifestWorkStatus {
            conditions: Some(
                conditions
                    .iter()
                    .map(|(t, s, g, when)| {
                        Condition::new(t, *s, "Test", "", at(*when)).with_observed_generation(*g)
                    })
                    .collect(),
            ),
            ..ManifestWorkStatus::default()
        });
        work
    }

    fn status_of(work: &ManifestWork) -> (RolloutStatus, Option<Timestamp>) {
        let s = rollout_status("c1", GroupKey::default(), work);
        (s.status, s.last_transition_time)
    }

    #[test]
    fn rollout_status_follows_conditions_at_the_current_generation() {
        use RolloutStatus::*;
        let t = |s| Some(Timestamp::from_second(s).unwrap_or_default());
        assert_eq!(status_of(&work(1, &[])).0, ToApply);
        // Applied but no Progressing yet, or Applied of an older generation.
        assert_eq!(
            status_of(&work(2, &[("Applied", Status::True, 2, 10)])).0,
            ToApply
        );
        assert_eq!(
            status_of(&work(
                2,
                &[
                    ("Applied", Status::True, 1, 10),
                    ("Progressing", Status::False, 2, 20)
                ]
            ))
            .0,
            ToApply
        );
        assert_eq!(
            status_of(&work(
                2,
                &[
                    ("Applied", Status::False, 2, 10),
                    ("Progressing", Status::False, 2, 20)
                ]
            ))
            .0,
            ToApply
        );
        assert_eq!(
            status_of(&work(
                2,
                &[
                    ("Applied", Status::True, 2, 10),
                    ("Progressing", Status::False, 2, 20)
                ]
            )),
            (Succeeded, t(20))
        );
        assert_eq!(
            status_of(&work(
                2,
                &[
                    ("Applied", Status::True, 2, 10),
                    ("Progressing", Status::True, 2, 20)
                ]
            )),
            (Progressing, t(20))
        );
        assert_eq!(
            status_of(&work(
                2,
                &[
                    ("Applied", Status::True, 2, 10),
                    ("Progressing", Status::True, 2, 20),
                    ("Degraded", Status::True, 2, 30)
                ]
            )),
            (Failed, t(30))
        );
        // A Degraded of an older generation: wait for it.
        assert_eq!(
            status_of(&work(
                2,
                &[
                    ("Applied", Status::True, 2, 10),
                    ("Progressing", Status::False, 2, 20),
                    ("Degraded", Status::True, 1, 30)
                ]
            ))
            .0,
            ToApply
        );
        assert_eq!(
            status_of(&work(
                2,
                &[
                    ("Applied", Status::True, 2, 10),
                    ("Progressing", Status::Unknown, 2, 20)
                ]
            ))
            .0,
            Progressing
        );
    }

    #[test]
    fn templates_compare_without_creation_timestamps() {
        let spec = |manifest: Value| -> ManifestWorkSpec {
            serde_json::from_value(json!({"workload": {"manifests": [manifest]}})).unwrap_or_default()
        };
        let plain = spec(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"metadata": {}}}}),
        );
        let stamped = spec(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "creationTimestamp": null},
            "spec": {"template": {"metadata": {"creationTimestamp": null}}}}));
        let other = spec(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "e"}}));
        let mut work = ManifestWork::new("w", stamped);
        assert!(has_template(&work, &plain));
        work.spec = other;
        assert!(!has_template(&work, &plain));
    }

    #[test]
    fn desired_work_is_labelled_and_generated() {
        let mut set = ManifestWorkReplicaSet::new("set", Default::default());
        set.metadata.namespace = Some("ns".into());
        set.labels_mut().insert("team".into(), "a".into());
        let work = desired(&set, "cluster1", "p1", None);
        assert_eq!(work.metadata.generate_name.as_deref(), Some("set"));
        assert_eq!(work.metadata.name, None);
        assert_eq!(work.namespace().as_deref(), Some("cluster1"));
        assert_eq!(
            work.labels().get(MANIFEST_WORK_REPLICA_SET).map(String::as_str),
            Some("ns.set")
        );
        assert_eq!(
            work.labels()
                .get(MANIFEST_WORK_REPLICA_SET_PLACEMENT)
                .map(String::as_str),
            Some("p1")
        );
        assert_eq!(work.labels().get("team").map(String::as_str), Some("a"));
        let named = desired(&set, "cluster1", "p1", Some("setabcde"));
        assert_eq!(named.metadata.name.as_deref(), Some("setabcde"));
        assert!(!needs_update(&named, &named));
        let mut annotated = named.clone();
        annotated.annotations_mut().insert("x".into(), "y".into());
        assert!(needs_update(&annotated, &named));
        let mut relabelled = named.clone();
        relabelled.labels_mut().remove("team");
        assert!(needs_update(&relabelled, &named));
    }

    #[test]
    fn owner_label_values_split_at_the_first_dot() {
        assert_eq!(owner_of("ns.set"), Some(("ns", "set")));
        assert_eq!(owner_of("ns.set.v2"), Some(("ns", "set.v2")));
        assert_eq!(owner_of("nodot"), None);
        assert_eq!(owner_of(".set"), None);
    }
}
