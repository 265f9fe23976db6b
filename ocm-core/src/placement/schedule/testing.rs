//! Builders of clusters, sets, bindings, scores and placements for the scheduler's unit tests.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use ocm_api::cluster::v1::{ManagedCluster, ManagedClusterClaim, ManagedClusterStatus, Taint, TaintEffect};
use ocm_api::cluster::v1alpha1::{AddOnPlacementScore, AddOnPlacementScoreItem, AddOnPlacementScoreStatus};
use ocm_api::cluster::v1beta1::{ClusterDecision, Placement, PlacementDecision, PlacementDecisionStatus};
use ocm_api::cluster::v1beta2::{
    ManagedClusterSelector, ManagedClusterSet, ManagedClusterSetBinding, ManagedClusterSetBindingSpec,
    ManagedClusterSetSpec, SelectorType,
};
use ocm_api::meta::LabelSelector;

use super::{DecisionCounts, Fleet, ScoreMap, ScoreSource};

pub use ocm_api::names::labels::CLUSTER_SET;

/// A fixed "now" for tests: 2026-01-01T00:00:00Z.
pub fn now() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

/// `now()` moved by `seconds`.
pub fn at(seconds: i64) -> Timestamp {
    now()
        .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(seconds))
        .unwrap()
}

pub fn names(clusters: &[Arc<ManagedCluster>]) -> Vec<String> {
    clusters.iter().map(|c| c.name_any()).collect()
}

pub fn cluster(name: &str) -> ManagedCluster {
    let mut c = ManagedCluster::new(name, Default::default());
    c.metadata.labels = Some(BTreeMap::new());
    c
}

/// Builder methods on clusters.
pub trait ClusterExt: Sized {
    fn label(self, key: &str, value: &str) -> Self;
    fn claim(self, name: &str, value: &str) -> Self;
    fn taint(self, key: &str, value: &str, effect: TaintEffect, added: Timestamp) -> Self;
    fn resource(self, name: &str, allocatable: &str, capacity: &str) -> Self;
    fn deleting(self) -> Self;
}

impl ClusterExt for ManagedCluster {
    fn label(mut self, key: &str, value: &str) -> Self {
        self.labels_mut().insert(key.into(), value.into());
        self
    }

    fn claim(mut self, name: &str, value: &str) -> Self {
        let status = self.status.get_or_insert_with(ManagedClusterStatus::default);
        status
            .cluster_claims
            .get_or_insert_with(Vec::new)
            .push(ManagedClusterClaim {
                name: Some(name.into()),
                value: Some(value.into()),
            });
        self
    }

    fn taint(mut self, key: &str, value: &str, effect: TaintEffect, added: Timestamp) -> Self {
        self.spec.taints.get_or_insert_with(Vec::new).push(Taint {
            effect,
            key: key.into(),
            time_added: Some(Time(added)),
            value: (!value.is_empty()).then(|| value.to_string()),
        });
        self
    }

    fn resource(mut self, name: &str, allocatable: &str, capacity: &str) -> Self {
        let status = self.status.get_or_insert_with(ManagedClusterStatus::default);
        if !allocatable.is_empty() {
            status
                .allocatable
                .get_or_insert_with(BTreeMap::new)
                .insert(name.into(), Quantity(allocatable.into()));
        }
        if !capacity.is_empty() {
            status
                .capacity
                .get_or_insert_with(BTreeMap::new)
                .insert(name.into(), Quantity(capacity.into()));
        }
        self
    }

    fn deleting(mut self) -> Self {
        self.metadata.deletion_timestamp = Some(Time(now()));
        self
    }
}

pub fn set(name: &str) -> ManagedClusterSet {
    ManagedClusterSet::new(name, ManagedClusterSetSpec::default())
}

pub fn label_set(name: &str, labels: &[(&str, &str)]) -> ManagedClusterSet {
    ManagedClusterSet::new(
        name,
        ManagedClusterSetSpec {
            cluster_selector: Some(ManagedClusterSelector {
                label_selector: Some(LabelSelector {
                    match_labels: Some(
                        labels
                            .iter()
                            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                            .collect(),
                    ),
                    match_expressions: None,
                }),
                selector_type: Some(SelectorType::LabelSelector),
            }),
            managed_namespaces: None,
        },
    )
}

pub fn global_set(name: &str) -> ManagedClusterSet {
    let mut s = label_set(name, &[]);
    if let Some(sel) = s.spec.cluster_selector.as_mut() {
        sel.label_selector = Some(LabelSelector::default());
    }
    s
}

pub fn placement(namespace: &str, name: &str) -> Placement {
    let mut p = Placement::new(name, Default::default());
    p.metadata.namespace = Some(namespace.into());
    p.metadata.uid = Some(format!("uid-{name}"));
    p
}

/// A PlacementDecision of placement `placement` in `namespace` holding `clusters`.
pub fn decision(namespace: &str, placement: &str, index: usize, clusters: &[&str]) -> PlacementDecision {
    PlacementDecision {
        metadata: ObjectMeta {
            name: Some(format!("{placement}-decision-{index}")),
            namespace: Some(namespace.into()),
            labels: Some(BTreeMap::from([(
                ocm_api::names::labels::PLACEMENT.to_string(),
                placement.to_string(),
            )])),
            ..ObjectMeta::default()
        },
        status: Some(PlacementDecisionStatus {
            decisions: clusters
                .iter()
                .map(|c| ClusterDecision {
                    cluster_name: (*c).into(),
                    reason: String::new(),
                    score: None,
                })
                .collect(),
        }),
    }
}

pub fn score(
    cluster: &str,
    name: &str,
    items: &[(&str, i32)],
    valid_until: Option<Timestamp>,
) -> AddOnPlacementScore {
    AddOnPlacementScore {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(cluster.into()),
            ..ObjectMeta::default()
        },
        status: Some(AddOnPlacementScoreStatus {
            conditions: None,
            scores: Some(
                items
                    .iter()
                    .map(|(n, v)| AddOnPlacementScoreItem {
                        name: (*n).into(),
                        value: *v,
                    })
                    .collect(),
            ),
            valid_until: valid_until.map(Time),
        }),
    }
}

/// A hub's state for tests.
pub struct World {
    pub clusters: Vec<Arc<ManagedCluster>>,
    pub sets: Vec<Arc<ManagedClusterSet>>,
    pub bindings: Vec<Arc<ManagedClusterSetBinding>>,
    pub scores: ScoreMap,
    pub score_source: Arc<dyn ScoreSource>,
    pub decisions: Vec<Arc<PlacementDecision>>,
    pub counts: DecisionCounts,
}

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}

impl World {
    pub fn new() -> Self {
        Self {
            clusters: Vec::new(),
            sets: Vec::new(),
            bindings: Vec::new(),
            scores: ScoreMap::default(),
            score_source: Arc::new(ScoreMap::default()),
            decisions: Vec::new(),
            counts: DecisionCounts::default(),
        }
    }

    /// A world with set `dev` bound to namespace `ns` and clusters `names` in it.
    pub fn with_clusters(names: &[&str]) -> Self {
        let mut w = Self::new().set(set("dev")).binding("ns", "dev");
        for n in names {
            w = w.cluster(cluster(n).label(CLUSTER_SET, "dev"));
        }
        w
    }

    pub fn cluster(mut self, c: ManagedCluster) -> Self {
        self.clusters.push(Arc::new(c));
        self
    }

    pub fn set(mut self, s: ManagedClusterSet) -> Self {
        self.sets.push(Arc::new(s));
        self
    }

    pub fn binding(mut self, namespace: &str, set: &str) -> Self {
        let mut b = ManagedClusterSetBinding::new(
            set,
            ManagedClusterSetBindingSpec {
                cluster_set: Some(set.into()),
            },
        );
        b.metadata.namespace = Some(namespace.into());
        self.bindings.push(Arc::new(b));
        self
    }

    pub fn score(mut self, s: AddOnPlacementScore) -> Self {
        self.scores.insert(Arc::new(s));
        self.score_source = Arc::new(self.scores.clone());
        self
    }

    /// Adds a PlacementDecision (of any placement) to the hub.
    pub fn decision(mut self, d: PlacementDecision) -> Self {
        self.counts.add(d.cluster_names());
        self.decisions.push(Arc::new(d));
        self
    }

    /// The decisions of `placement`.
    pub fn own(&self, placement: &Placement) -> Vec<Arc<PlacementDecision>> {
        self.decisions
            .iter()
            .filter(|d| {
                d.namespace() == placement.namespace()
                    && d.labels().get(ocm_api::names::labels::PLACEMENT) == Some(&placement.name_any())
            })
            .cloned()
            .collect()
    }

    pub fn fleet(&self) -> Fleet<'_> {
        Fleet {
            clusters: &self.clusters,
            sets: &self.sets,
            bindings: &self.bindings,
            scores: &self.score_source,
            decision_counts: &self.counts,
        }
    }
}
