//! End-to-end tests of [`schedule`]: the scenarios of upstream's scheduler tests.

use super::testing::*;
use super::*;
use ocm_api::cluster::v1::TaintEffect;
use ocm_api::cluster::v1beta1::{
    PrioritizerConfig, PrioritizerPolicy, ScoreCoordinate, ScoreCoordinateType, Toleration,
};

fn run(p: &Placement, world: &World) -> Schedule {
    schedule(p, &world.own(p), world.fleet(), now()).unwrap().unwrap()
}

fn condition<'a>(s: &'a Schedule, type_: &str) -> (&'a str, &'a str, &'a str) {
    let c = s.conditions.iter().find(|c| c.type_ == type_).unwrap();
    (c.status.as_str(), c.reason.as_str(), c.message.as_str())
}

fn exact(configs: &[(&str, i32)]) -> Option<PrioritizerPolicy> {
    Some(PrioritizerPolicy {
        configurations: Some(
            configs
                .iter()
                .map(|(b, w)| PrioritizerConfig {
                    score_coordinate: ScoreCoordinate {
                        add_on: None,
                        built_in: Some((*b).into()),
                        type_: Some(ScoreCoordinateType::BuiltIn),
                    },
                    weight: Some(*w),
                })
                .collect(),
        ),
        mode: Some("Exact".into()),
    })
}

#[test]
fn default_policy_takes_the_first_clusters_by_name() {
    let world = World::with_clusters(&["c3", "c1", "c2"]);
    let mut p = placement("ns", "p");
    p.spec.number_of_clusters = Some(2);
    let s = run(&p, &world);
    assert_eq!(s.selected, ["c1", "c2"]);
    assert_eq!(s.unscheduled, 0);
    assert_eq!(condition(&s, "PlacementSatisfied").1, "AllDecisionsScheduled");
    assert_eq!(condition(&s, "PlacementMisconfigured").0, "False");
    assert_eq!(s.groups.len(), 1);
    assert_eq!(s.groups[0].pages[0].name, "p-decision-1");
    assert_eq!(s.groups[0].clusters, ["c1", "c2"]);
}

#[test]
fn more_wanted_than_available_is_not_satisfied() {
    let world = World::with_clusters(&["c1", "c2"]);
    let mut p = placement("ns", "p");
    p.spec.number_of_clusters = Some(5);
    let s = run(&p, &world);
    assert_eq!(s.selected.len(), 2);
    assert_eq!(
        condition(&s, "PlacementSatisfied"),
        (
            "False",
            "NotAllDecisionsScheduled",
            "3 cluster decisions unscheduled"
        )
    );
}

#[test]
fn exact_cpu_and_memory() {
    let world = World::with_clusters(&[])
        .cluster(
            cluster("cluster0")
                .label(CLUSTER_SET, "dev")
                .resource("cpu", "10", "10")
                .resource("memory", "50Gi", "100Gi"),
        )
        .cluster(
            cluster("cluster1")
                .label(CLUSTER_SET, "dev")
                .resource("cpu", "7", "10")
                .resource("memory", "10Gi", "100Gi"),
        )
        .cluster(
            cluster("cluster2")
                .label(CLUSTER_SET, "dev")
                .resource("cpu", "9", "10")
                .resource("memory", "90Gi", "100Gi"),
        );
    let mut p = placement("ns", "p");
    p.spec.number_of_clusters = Some(2);
    p.spec.prioritizer_policy = exact(&[("ResourceAllocatableCPU", 1), ("ResourceAllocatableMemory", 1)]);
    let s = run(&p, &world);
    // cpu: 100, −100, 33; memory: 0, −100, 100 → cluster2 133, cluster0 100.
    assert_eq!(s.selected, ["cluster2", "cluster0"]);
    assert_eq!(s.score_of("cluster1"), Some(-200));
    // Groups and pages are sorted by name.
    assert_eq!(s.groups[0].clusters, ["cluster0", "cluster2"]);
}

#[test]
fn steady_keeps_existing_decisions() {
    let world = World::with_clusters(&["c1", "c2", "c3"]).decision(decision("ns", "p", 1, &["c3"]));
    let mut p = placement("ns", "p");
    p.spec.number_of_clusters = Some(1);
    assert_eq!(run(&p, &world).selected, ["c3"]);
}

#[test]
fn balance_avoids_clusters_other_placements_use() {
    let world = World::with_clusters(&["c1", "c2"]).decision(decision("ns", "other", 1, &["c1"]));
    let mut p = placement("ns", "p");
    p.spec.number_of_clusters = Some(1);
    assert_eq!(run(&p, &world).selected, ["c2"]);
}

#[test]
fn misconfigured_tolerations_give_no_decision() {
    let world = World::with_clusters(&["c1"]);
    let mut p = placement("ns", "p");
    p.spec.tolerations = Some(vec![Toleration {
        key: Some("k".into()),
        operator: Some("Exists".into()),
        value: Some("v".into()),
        ..Default::default()
    }]);
    let s = run(&p, &world);
    assert!(s.selected.is_empty());
    assert_eq!(
        condition(&s, "PlacementMisconfigured"),
        (
            "True",
            "Misconfigured",
            "TaintToleration:If the operator is Exists, the value should be empty."
        )
    );
    assert_eq!(condition(&s, "PlacementSatisfied").1, "NoManagedClusterMatched");
    // One empty decision.
    assert_eq!(s.pages().count(), 1);
    assert!(s.groups[0].clusters.is_empty());
    assert_eq!(s.requeue_after, None);
}

#[test]
fn no_binding_gives_one_empty_decision() {
    let world = World::new().cluster(cluster("c1"));
    let s = run(&placement("ns", "p"), &world);
    assert_eq!(
        condition(&s, "PlacementSatisfied").1,
        "NoManagedClusterSetBindings"
    );
    assert_eq!(
        s.pages().map(|(_, p)| p.name.as_str()).collect::<Vec<_>>(),
        ["p-decision-1"]
    );
}

#[test]
fn tolerated_taints_requeue_when_they_expire() {
    let world = World::with_clusters(&[])
        .cluster(
            cluster("c1")
                .label(CLUSTER_SET, "dev")
                .taint("k", "", TaintEffect::NoSelect, at(-10)),
        )
        .decision(decision("ns", "p", 1, &["c1"]));
    let mut p = placement("ns", "p");
    p.spec.tolerations = Some(vec![Toleration {
        key: Some("k".into()),
        operator: Some("Exists".into()),
        toleration_seconds: Some(30),
        ..Default::default()
    }]);
    let s = run(&p, &world);
    assert_eq!(s.selected, ["c1"]);
    assert_eq!(s.requeue_after, Some(Duration::from_secs(20)));
    // The first round (no decisions yet) requeues at the expiry of what it decides.
    let first = World::with_clusters(&[]).cluster(cluster("c1").label(CLUSTER_SET, "dev").taint(
        "k",
        "",
        TaintEffect::NoSelect,
        at(-10),
    ));
    let s = run(&p, &first);
    assert_eq!(s.selected, ["c1"]);
    assert_eq!(s.requeue_after, Some(Duration::from_secs(20)));
    let later = schedule(&p, &world.own(&p), world.fleet(), at(25))
        .unwrap()
        .unwrap();
    assert!(later.selected.is_empty());
}

#[test]
fn skipped_placements() {
    let world = World::with_clusters(&["c1"]);
    let mut p = placement("ns", "p");
    p.metadata.annotations = Some([(PLACEMENT_DISABLE.to_string(), "true".to_string())].into());
    assert!(schedule(&p, &[], world.fleet(), now()).unwrap().is_none());
    let mut p = placement("ns", "p");
    p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now()));
    assert!(schedule(&p, &[], world.fleet(), now()).unwrap().is_none());
}

#[test]
fn more_than_100_clusters_span_two_decisions() {
    let names: Vec<String> = (0..101).map(|i| format!("cluster{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let world = World::with_clusters(&refs);
    let s = run(&placement("ns", "p"), &world);
    let pages: Vec<_> = s.pages().map(|(g, p)| (g.index, p.clusters.len())).collect();
    assert_eq!(pages, [(0, 100), (0, 1)]);
    assert_eq!(condition(&s, "PlacementSatisfied").0, "True");
}
