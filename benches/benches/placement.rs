//! Criterion benchmarks of the placement scheduling core (`ocm_core::placement::schedule`) without
//! an API server, at 10 000 and 100 000 clusters.
//!
//! - `upstream_template`: upstream's placement benchmark shape: one set of N clusters bound to the
//!   namespace, each cluster with an AddOnPlacementScore `demo` and cpu resources, the placement
//!   choosing 10 clusters with mode Exact and weights AddOn(demo/demo) 1, ResourceAllocatableCPU 1,
//!   Balance 1; 1 000 other placements' decisions spread over the clusters.
//! - `label_predicate`: the same fleet, a label-selector predicate matching half the clusters and a
//!   taint on every tenth cluster tolerated by the placement, default prioritizers.
//!
//! `cargo bench -p ocm-benches --bench placement`; numbers in docs/performance.md.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use ocm_api::cluster::v1::{ManagedCluster, ManagedClusterStatus, Taint, TaintEffect};
use ocm_api::cluster::v1alpha1::{AddOnPlacementScore, AddOnPlacementScoreItem, AddOnPlacementScoreStatus};
use ocm_api::cluster::v1beta1::{
    AddOnScore, ClusterDecision, ClusterPredicate, ClusterSelector, Placement, PlacementDecision,
    PlacementDecisionStatus, PrioritizerConfig, PrioritizerPolicy, ScoreCoordinate, ScoreCoordinateType,
    Toleration,
};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding, ManagedClusterSetBindingSpec};
use ocm_api::meta::LabelSelector;
use ocm_core::placement::schedule::{DecisionCounts, Fleet, ScoreMap, ScoreSource, schedule};

const SET: &str = "benchmark";
const NS: &str = "benchmark";

struct World {
    clusters: Vec<Arc<ManagedCluster>>,
    sets: Vec<Arc<ManagedClusterSet>>,
    bindings: Vec<Arc<ManagedClusterSetBinding>>,
    scores: Arc<dyn ScoreSource>,
    counts: DecisionCounts,
}

fn world(n: usize) -> World {
    let now = Timestamp::now();
    let until = now.checked_add(SignedDuration::from_secs(60_000)).unwrap();
    let mut clusters = Vec::with_capacity(n);
    let mut scores = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("cluster{i}");
        let mut c = ManagedCluster::new(&name, Default::default());
        c.metadata.labels = Some(BTreeMap::from([
            (
                "cluster.open-cluster-management.io/clusterset".to_string(),
                SET.to_string(),
            ),
            ("half".to_string(), (i % 2).to_string()),
        ]));
        if i % 10 == 0 {
            c.spec.taints = Some(vec![Taint {
                effect: TaintEffect::NoSelect,
                key: "maintenance".into(),
                time_added: Some(Time(now)),
                value: None,
            }]);
        }
        c.status = Some(ManagedClusterStatus {
            allocatable: Some(BTreeMap::from([(
                "cpu".to_string(),
                Quantity(format!("{}", 4 + i % 60)),
            )])),
            capacity: Some(BTreeMap::from([("cpu".to_string(), Quantity("64".into()))])),
            ..Default::default()
        });
        clusters.push(Arc::new(c));
        scores.push(Arc::new(AddOnPlacementScore {
            metadata: ObjectMeta {
                name: Some("demo".into()),
                namespace: Some(name),
                ..Default::default()
            },
            status: Some(AddOnPlacementScoreStatus {
                conditions: None,
                scores: Some(vec![AddOnPlacementScoreItem {
                    name: "demo".into(),
                    value: i32::try_from(i % 100).unwrap(),
                }]),
                valid_until: Some(Time(until)),
            }),
        }));
    }
    let mut binding = ManagedClusterSetBinding::new(
        SET,
        ManagedClusterSetBindingSpec {
            cluster_set: Some(SET.into()),
        },
    );
    binding.metadata.namespace = Some(NS.into());
    // 1 000 other placements with 10 decisions each.
    let decisions: Vec<PlacementDecision> = (0..1000)
        .map(|p| PlacementDecision {
            metadata: ObjectMeta {
                name: Some(format!("other{p}-decision-1")),
                namespace: Some(NS.into()),
                ..Default::default()
            },
            status: Some(PlacementDecisionStatus {
                decisions: (0..10)
                    .map(|k| ClusterDecision {
                        cluster_name: format!("cluster{}", (p * 7 + k * 13) % n),
                        reason: String::new(),
                        score: None,
                    })
                    .collect(),
            }),
        })
        .collect();
    World {
        clusters,
        sets: vec![Arc::new(ManagedClusterSet::new(SET, Default::default()))],
        bindings: vec![Arc::new(binding)],
        scores: Arc::new(ScoreMap::from_scores(scores)),
        counts: DecisionCounts::from_decisions(&decisions),
    }
}

fn builtin(name: &str) -> PrioritizerConfig {
    PrioritizerConfig {
        score_coordinate: ScoreCoordinate {
            add_on: None,
            built_in: Some(name.into()),
            type_: Some(ScoreCoordinateType::BuiltIn),
        },
        weight: Some(1),
    }
}

fn upstream_template() -> Placement {
    let mut p = Placement::new("benchmark-0", Default::default());
    p.metadata.namespace = Some(NS.into());
    p.spec.number_of_clusters = Some(10);
    p.spec.prioritizer_policy = Some(PrioritizerPolicy {
        configurations: Some(vec![
            PrioritizerConfig {
                score_coordinate: ScoreCoordinate {
                    add_on: Some(AddOnScore {
                        resource_name: "demo".into(),
                        score_name: "demo".into(),
                    }),
                    built_in: None,
                    type_: Some(ScoreCoordinateType::AddOn),
                },
                weight: Some(1),
            },
            builtin("ResourceAllocatableCPU"),
            builtin("Balance"),
        ]),
        mode: Some("Exact".into()),
    });
    p
}

fn label_predicate() -> Placement {
    let mut p = Placement::new("benchmark-1", Default::default());
    p.metadata.namespace = Some(NS.into());
    p.spec.number_of_clusters = Some(10);
    p.spec.predicates = Some(vec![ClusterPredicate {
        required_cluster_selector: Some(ClusterSelector {
            label_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("half".to_string(), "0".to_string())])),
                match_expressions: None,
            }),
            ..Default::default()
        }),
    }]);
    p.spec.tolerations = Some(vec![Toleration {
        key: Some("maintenance".into()),
        operator: Some("Exists".into()),
        ..Default::default()
    }]);
    p
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("placement_schedule");
    group.sample_size(10);
    for n in [10_000, 100_000] {
        let w = world(n);
        let fleet = Fleet {
            clusters: &w.clusters,
            sets: &w.sets,
            bindings: &w.bindings,
            scores: &w.scores,
            decision_counts: &w.counts,
        };
        for (name, placement) in [
            ("upstream_template", upstream_template()),
            ("label_predicate", label_predicate()),
        ] {
            let check = schedule(&placement, &[], fleet, Timestamp::now())
                .unwrap()
                .unwrap();
            assert_eq!(check.selected.len(), 10);
            group.bench_with_input(BenchmarkId::new(name, n), &placement, |b, p| {
                b.iter(|| black_box(schedule(p, &[], fleet, Timestamp::now()).unwrap()));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
