//! ManagedClusterSets and ManagedClusterSetBindings (ocm-core.md §2.6, §2.7).
//!
//! [`run`] keeps caches of clusters and sets and drives four loops:
//! - set status: `ClusterSetEmpty` of every set, recomputed when a set changes or a cluster
//!   comes, goes or changes its labels;
//! - default sets (when [`ClusterSetOptions::default_sets`]): the `default` set
//!   (`ExclusiveClusterSetLabel`) and the `global` set (`LabelSelector {}`) exist, their
//!   `spec.clusterSelector` is reverted when edited unless the set is annotated
//!   `cluster.open-cluster-management.io/autoupdate: "false"`, and clusters without a cluster-set
//!   label (or with an empty one) get `cluster.open-cluster-management.io/clusterset=default`
//!   (upstream's mutating webhook does this; we have none);
//! - managed namespaces: each cluster's `status.managedNamespaces` from the sets that select it,
//!   for a changed cluster, and for every cluster when a set's spec changes or a set comes or
//!   goes (not when only a set's status changes: see `changes`);
//! - bindings: `Bound` of every ManagedClusterSetBinding, re-evaluated when sets come and go.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, watcher};
use kube::{Api, ResourceExt};
use ocm_api::cluster::v1::{ClusterSetManagedNamespace, ManagedCluster};
use ocm_api::cluster::v1beta2::{
    ManagedClusterSelector, ManagedClusterSet, ManagedClusterSetBinding, ManagedClusterSetSpec, SelectorType,
};
use ocm_api::conditions::{ConditionList, Status};
use ocm_api::meta::{Condition, LabelSelector};
use ocm_api::names::annotations::CLUSTER_SET_AUTO_UPDATE;
use ocm_api::names::conditions::cluster::{managed_cluster_set, managed_cluster_set_binding};
use ocm_api::names::labels::CLUSTER_SET as CLUSTER_SET_LABEL;
use ocm_api::names::objects::{DEFAULT_CLUSTER_SET, GLOBAL_CLUSTER_SET};
use ocm_api::selector;
use serde_json::json;

use super::informers::{HubInformers, run_alone};
use crate::metrics::ControllerMetrics;

mod binding;
mod changes;
mod cluster;
mod sets;

use binding::{binding_error_policy, reconcile_binding};
use cluster::{cluster_error_policy, reconcile_cluster};
use sets::{default_sets_loop, error_policy, reconcile_set};

/// How the cluster-set controllers behave.
#[derive(Debug, Clone)]
pub struct ClusterSetOptions {
    /// Whether the `default` and `global` sets are maintained and clusters without a set label
    /// join `default` (upstream's gate `DefaultClusterSet`, on by default).
    pub default_sets: bool,
    /// How often the default sets are checked even without a change (upstream: 10 s), and how
    /// long a failed reconciliation waits.
    pub resync: Duration,
}

impl Default for ClusterSetOptions {
    fn default() -> Self {
        Self {
            default_sets: true,
            resync: Duration::from_secs(10),
        }
    }
}

/// What failed in the cluster-set controllers.
#[derive(Debug, thiserror::Error)]
pub enum ClusterSetError {
    /// Listing objects failed.
    #[error("listing {what}: {source}")]
    List {
        /// What was listed.
        what: &'static str,
        /// The API error.
        source: kube::Error,
    },
    /// A set's selector cannot be evaluated.
    #[error("evaluating the selector of cluster set {set}: {message}")]
    Selector {
        /// The set.
        set: String,
        /// Why.
        message: String,
    },
    /// Writing an object's status failed.
    #[error("patching the status of {kind} {name}: {source}")]
    PatchStatus {
        /// The kind.
        kind: &'static str,
        /// The object's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Creating or updating a default set failed.
    #[error("applying the {set} cluster set: {source}")]
    DefaultSet {
        /// The set.
        set: String,
        /// The API error.
        source: kube::Error,
    },
    /// Labelling a cluster with the default set failed.
    #[error("labelling cluster {cluster}: {source}")]
    LabelCluster {
        /// The cluster.
        cluster: String,
        /// The API error.
        source: kube::Error,
    },
    /// The cache of clusters or sets was dropped before it filled.
    #[error("the {0} cache is gone")]
    Cache(&'static str),
    /// A controller or watch ended.
    #[error("the {0} loop ended")]
    Stopped(&'static str),
}

/// The `clusterSelector` the `default` (`ExclusiveClusterSetLabel`) or `global`
/// (`LabelSelector {}`) set must have; `None` for other sets.
#[must_use]
pub fn default_set_selector(name: &str) -> Option<ManagedClusterSelector> {
    match name {
        DEFAULT_CLUSTER_SET => Some(ManagedClusterSelector {
            label_selector: None,
            selector_type: Some(SelectorType::ExclusiveClusterSetLabel),
        }),
        GLOBAL_CLUSTER_SET => Some(ManagedClusterSelector {
            label_selector: Some(LabelSelector::default()),
            selector_type: Some(SelectorType::LabelSelector),
        }),
        _ => None,
    }
}

/// The `ClusterSetEmpty` condition (status, reason, message) for `selected` member clusters.
#[must_use]
pub fn empty_condition(selected: usize) -> (Status, &'static str, String) {
    if selected == 0 {
        (
            Status::True,
            managed_cluster_set::reasons::NO_CLUSTER_MATCHED,
            "No ManagedCluster selected".to_string(),
        )
    } else {
        (
            Status::False,
            managed_cluster_set::reasons::CLUSTERS_SELECTED,
            format!("{selected} ManagedClusters selected"),
        )
    }
}

/// Whether `set` selects a cluster with `labels`.
///
/// # Errors
/// When the set's label selector is invalid.
pub fn selects(set: &ManagedClusterSet, labels: &BTreeMap<String, String>) -> Result<bool, ClusterSetError> {
    let Some(member_selector) = set.member_selector() else {
        return Ok(false);
    };
    selector::matches(&member_selector, labels).map_err(|e| ClusterSetError::Selector {
        set: set.name_any(),
        message: e.to_string(),
    })
}

/// Whether a cluster with `labels` lacks a cluster-set label (or has an empty one).
#[must_use]
pub fn needs_default_label(labels: &BTreeMap<String, String>) -> bool {
    labels.get(CLUSTER_SET_LABEL).is_none_or(String::is_empty)
}

/// The JSON patch operations that give `cluster` the default set label, if it lacks one: they
/// test the label as the cached copy has it (absent or empty), so a cluster labelled after the
/// copy was taken is not written again (the server refuses the patch), while changes of its other
/// fields by other controllers meanwhile do not stand in the way (see `hub::guarded`).
#[must_use]
pub fn default_label_patch(cluster: &ManagedCluster) -> Option<serde_json::Value> {
    if !needs_default_label(cluster.labels()) {
        return None;
    }
    Some(super::guarded::set_label(
        &cluster.metadata,
        CLUSTER_SET_LABEL,
        DEFAULT_CLUSTER_SET,
    ))
}

/// The managed namespaces of a cluster with `labels`: the `spec.managedNamespaces` of every
/// non-deleting set selecting it, sorted by set then namespace. Conditions of entries already in
/// `current` are kept. Sets whose selector is invalid are skipped.
#[must_use]
pub fn managed_namespaces(
    labels: &BTreeMap<String, String>,
    sets: &[Arc<ManagedClusterSet>],
    current: &[ClusterSetManagedNamespace],
) -> Vec<ClusterSetManagedNamespace> {
    let mut wanted: Vec<(String, String)> = Vec::new();
    for set in sets {
        if set.metadata.deletion_timestamp.is_some() || !selects(set, labels).unwrap_or(false) {
            continue;
        }
        for ns in set.spec.managed_namespaces.as_deref().unwrap_or_default() {
            wanted.push((set.name_any(), ns.name.clone()));
        }
    }
    wanted.sort();
    wanted.dedup();
    wanted
        .into_iter()
        .map(|(cluster_set, name)| {
            let conditions = current
                .iter()
                .find(|c| c.cluster_set == cluster_set && c.name == name)
                .and_then(|c| c.conditions.clone());
            ClusterSetManagedNamespace {
                cluster_set,
                conditions,
                name,
            }
        })
        .collect()
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

struct Context {
    client: kube::Client,
    recorder: crate::events::EventRecorder,
    /// Every ManagedCluster, as last seen.
    clusters: Store<ManagedCluster>,
    /// Every ManagedClusterSet, as last seen.
    sets: Store<ManagedClusterSet>,
    options: ClusterSetOptions,
    metrics: ControllerMetrics,
    /// The hub controllers' writes of ManagedClusters the shared store has yet to show.
    own_writes: Arc<super::own_writes::OwnWrites>,
}

/// Runs the cluster-set controllers until one of them stops.
///
/// # Errors
/// [`ClusterSetError::Stopped`] when a controller or watch ends.
pub async fn run(
    client: kube::Client,
    options: ClusterSetOptions,
    metrics: ControllerMetrics,
) -> Result<(), ClusterSetError> {
    let informers = HubInformers::new(&client);
    let controllers = controllers(client, options, metrics, &informers);
    run_alone(informers, controllers, |_| ClusterSetError::Stopped("watch")).await
}

/// The cluster-set controllers over the shared informers of clusters and sets.
pub(crate) fn controllers(
    client: kube::Client,
    options: ClusterSetOptions,
    metrics: ControllerMetrics,
    informers: &HubInformers,
) -> impl Future<Output = Result<(), ClusterSetError>> + Send + 'static {
    let bindings: Api<ManagedClusterSetBinding> = Api::all(client.clone());

    // A change of one kind re-evaluates every object of the other kind (a label change may move
    // a cluster between any two sets) only when it can matter: a cluster's labels or a set's
    // spec changed, or an object came or went (see `changes`).
    let mut cluster_filter = changes::ChangeFilter::default();
    let cluster_changes = informers
        .clusters
        .changes()
        .filter_map(move |change| futures::future::ready(cluster_filter.matters(&change).then_some(())));
    let mut set_filter = changes::ChangeFilter::default();
    let set_changes = informers
        .sets
        .changes()
        .filter_map(move |change| futures::future::ready(set_filter.matters(&change).then_some(())));

    let ctx = Arc::new(Context {
        recorder: crate::events::EventRecorder::new(
            client.clone(),
            kube::runtime::events::Reporter {
                controller: "registration-controller".to_string(),
                instance: None,
            },
        ),
        client,
        clusters: informers.clusters.store(),
        sets: informers.sets.store(),
        options,
        metrics,
        own_writes: informers.clusters.own_writes(),
    });

    let set_status = Controller::for_shared_stream(informers.sets.applied(), informers.sets.store())
        .reconcile_all_on(cluster_changes)
        .run(reconcile_set, error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));

    let namespaces = Controller::for_shared_stream(informers.clusters.applied(), informers.clusters.store())
        .reconcile_all_on(set_changes)
        .run(reconcile_cluster, cluster_error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));

    let binding_controller = Controller::new(bindings, watcher::Config::default());
    let binding_store = binding_controller.store();
    let binding_status = binding_controller
        .watches_shared_stream(informers.sets.touched(), move |set: Arc<ManagedClusterSet>| {
            let name = set.name_any();
            binding_store
                .state()
                .into_iter()
                .filter(move |b| b.spec.cluster_set.as_deref() == Some(name.as_str()))
                .map(|b| ObjectRef::from_obj(b.as_ref()))
        })
        .run(reconcile_binding, binding_error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));

    let defaults = default_sets_loop(informers.sets.applied(), ctx);
    async move {
        tokio::select! {
            () = set_status => Err(ClusterSetError::Stopped("cluster set status")),
            () = namespaces => Err(ClusterSetError::Stopped("managed namespaces")),
            () = binding_status => Err(ClusterSetError::Stopped("cluster set binding")),
            result = defaults => result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_api::cluster::v1beta2::ManagedNamespaceConfig;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    fn set(
        name: &str,
        selector: Option<ManagedClusterSelector>,
        namespaces: &[&str],
    ) -> Arc<ManagedClusterSet> {
        Arc::new(ManagedClusterSet::new(
            name,
            ManagedClusterSetSpec {
                cluster_selector: selector,
                managed_namespaces: Some(
                    namespaces
                        .iter()
                        .map(|n| ManagedNamespaceConfig {
                            name: (*n).to_string(),
                        })
                        .collect(),
                ),
            },
        ))
    }

    #[test]
    fn empty_condition_counts_selected_clusters() {
        assert_eq!(
            empty_condition(0),
            (
                Status::True,
                "NoClusterMatched",
                "No ManagedCluster selected".to_string()
            )
        );
        assert_eq!(
            empty_condition(2),
            (
                Status::False,
                "ClustersSelected",
                "2 ManagedClusters selected".to_string()
            )
        );
    }

    #[test]
    fn exclusive_label_and_label_selector_membership() {
        let dev = set("dev", None, &[]);
        assert!(selects(&dev, &labels(&[(CLUSTER_SET_LABEL, "dev")])).unwrap());
        assert!(!selects(&dev, &labels(&[(CLUSTER_SET_LABEL, "prod")])).unwrap());
        let global = set("global", default_set_selector(GLOBAL_CLUSTER_SET), &[]);
        assert!(selects(&global, &labels(&[])).unwrap());
        let by_label = set(
            "by-label",
            Some(ManagedClusterSelector {
                label_selector: Some(LabelSelector {
                    match_labels: Some(labels(&[("vendor", "OpenShift")])),
                    match_expressions: None,
                }),
                selector_type: Some(SelectorType::LabelSelector),
            }),
            &[],
        );
        assert!(selects(&by_label, &labels(&[("vendor", "OpenShift")])).unwrap());
        assert!(!selects(&by_label, &labels(&[("vendor", "EKS")])).unwrap());
    }

    #[test]
    fn the_default_label_patch_tests_the_cached_label() {
        let mut cluster = ManagedCluster::new("c1", Default::default());
        cluster.metadata.uid = Some("u1".into());
        cluster.labels_mut().insert("x".into(), "1".into());
        let patch = default_label_patch(&cluster).unwrap();
        let path = "/metadata/labels/cluster.open-cluster-management.io~1clusterset";
        assert_eq!(
            patch,
            json!([
                {"op": "test", "path": "/metadata/uid", "value": "u1"},
                {"op": "test", "path": path, "value": null},
                {"op": "add", "path": path, "value": DEFAULT_CLUSTER_SET},
            ])
        );
        cluster
            .labels_mut()
            .insert(CLUSTER_SET_LABEL.into(), "dev".into());
        assert_eq!(default_label_patch(&cluster), None);
    }

    #[test]
    fn default_label_only_when_missing_or_empty() {
        assert!(needs_default_label(&labels(&[])));
        assert!(needs_default_label(&labels(&[(CLUSTER_SET_LABEL, "")])));
        assert!(!needs_default_label(&labels(&[(CLUSTER_SET_LABEL, "dev")])));
    }

    #[test]
    fn managed_namespaces_sorted_by_set_then_namespace() {
        let sets = vec![
            set("zeta", default_set_selector(GLOBAL_CLUSTER_SET), &["b", "a"]),
            set("alpha", default_set_selector(GLOBAL_CLUSTER_SET), &["c"]),
            set("other", None, &["x"]),
        ];
        let got = managed_namespaces(&labels(&[]), &sets, &[]);
        let pairs: Vec<_> = got
            .iter()
            .map(|n| (n.cluster_set.as_str(), n.name.as_str()))
            .collect();
        assert_eq!(pairs, vec![("alpha", "c"), ("zeta", "a"), ("zeta", "b")]);
    }

    #[test]
    fn default_selectors() {
        assert_eq!(
            default_set_selector(DEFAULT_CLUSTER_SET).unwrap().selector_type,
            Some(SelectorType::ExclusiveClusterSetLabel)
        );
        assert_eq!(
            default_set_selector(GLOBAL_CLUSTER_SET).unwrap().label_selector,
            Some(LabelSelector::default())
        );
        assert!(default_set_selector("dev").is_none());
    }
}
