//! ManagedClusterSets and ManagedClusterSetBindings (ocm-core.md §2.6, §2.7).
//!
//! [`run`] drives four loops:
//! - set status: `ClusterSetEmpty` of every set, recomputed when a set or any cluster changes;
//! - default sets (when [`ClusterSetOptions::default_sets`]): the `default` set
//!   (`ExclusiveClusterSetLabel`) and the `global` set (`LabelSelector {}`) exist, their
//!   `spec.clusterSelector` is reverted when edited unless the set is annotated
//!   `cluster.open-cluster-management.io/autoupdate: "false"`, and clusters without a cluster-set
//!   label (or with an empty one) get `cluster.open-cluster-management.io/clusterset=default`
//!   (upstream's mutating webhook does this; we have none);
//! - managed namespaces: each cluster's `status.managedNamespaces` from the sets that select it;
//! - bindings: `Bound` of every ManagedClusterSetBinding, re-evaluated when sets come and go.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, WatchStreamExt, watcher};
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

use crate::metrics::ControllerMetrics;

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
    options: ClusterSetOptions,
    metrics: ControllerMetrics,
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
    let ctx = Arc::new(Context {
        client: client.clone(),
        options,
        metrics,
    });
    let sets: Api<ManagedClusterSet> = Api::all(client.clone());
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let bindings: Api<ManagedClusterSetBinding> = Api::all(client.clone());

    let set_controller = Controller::new(sets.clone(), watcher::Config::default());
    let set_store = set_controller.store();
    let set_status = set_controller
        .watches(
            clusters.clone(),
            watcher::Config::default(),
            move |_: ManagedCluster| {
                set_store
                    .state()
                    .into_iter()
                    .map(|s| ObjectRef::from_obj(s.as_ref()))
            },
        )
        .run(reconcile_set, error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));

    let cluster_controller = Controller::new(clusters.clone(), watcher::Config::default());
    let cluster_store = cluster_controller.store();
    let namespaces = cluster_controller
        .watches(
            sets.clone(),
            watcher::Config::default(),
            move |_: ManagedClusterSet| {
                cluster_store
                    .state()
                    .into_iter()
                    .map(|c| ObjectRef::from_obj(c.as_ref()))
            },
        )
        .run(reconcile_cluster, cluster_error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));

    let binding_controller = Controller::new(bindings, watcher::Config::default());
    let binding_store = binding_controller.store();
    let binding_status = binding_controller
        .watches(
            sets.clone(),
            watcher::Config::default(),
            move |set: ManagedClusterSet| {
                let name = set.name_any();
                binding_store
                    .state()
                    .into_iter()
                    .filter(move |b| b.spec.cluster_set.as_deref() == Some(name.as_str()))
                    .map(|b| ObjectRef::from_obj(b.as_ref()))
            },
        )
        .run(reconcile_binding, binding_error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));

    let defaults = default_sets_loop(sets, ctx.clone());
    tokio::select! {
        () = set_status => Err(ClusterSetError::Stopped("cluster set status")),
        () = namespaces => Err(ClusterSetError::Stopped("managed namespaces")),
        () = binding_status => Err(ClusterSetError::Stopped("cluster set binding")),
        result = defaults => result,
    }
}

fn error_policy(set: Arc<ManagedClusterSet>, error: &ClusterSetError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled("managedclusterset", false);
    tracing::warn!(set = %set.name_any(), %error, "cluster set reconciliation failed");
    Action::requeue(ctx.options.resync)
}

#[tracing::instrument(skip_all, fields(set = %set.name_any()))]
async fn reconcile_set(set: Arc<ManagedClusterSet>, ctx: Arc<Context>) -> Result<Action, ClusterSetError> {
    let clusters = Api::<ManagedCluster>::all(ctx.client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|source| ClusterSetError::List {
            what: "ManagedClusters",
            source,
        })?;
    let mut selected = 0;
    for cluster in &clusters.items {
        if selects(&set, cluster.labels())? {
            selected += 1;
        }
    }
    let (status, reason, message) = empty_condition(selected);
    let mut conditions = set.status.as_ref().and_then(|s| s.conditions.clone());
    if conditions.set_condition(Condition::new(
        managed_cluster_set::EMPTY,
        status,
        reason,
        &message,
        now(),
    )) {
        let name = set.name_any();
        Api::<ManagedClusterSet>::all(ctx.client.clone())
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": {"conditions": conditions}})),
            )
            .await
            .map_err(|source| ClusterSetError::PatchStatus {
                kind: "ManagedClusterSet",
                name,
                source,
            })?;
    }
    ctx.metrics.reconciled("managedclusterset", true);
    Ok(Action::await_change())
}

fn binding_error_policy(
    binding: Arc<ManagedClusterSetBinding>,
    error: &ClusterSetError,
    ctx: Arc<Context>,
) -> Action {
    ctx.metrics.reconciled("managedclustersetbinding", false);
    tracing::warn!(binding = %binding.name_any(), %error, "cluster set binding reconciliation failed");
    Action::requeue(ctx.options.resync)
}

#[tracing::instrument(skip_all, fields(binding = %binding.name_any()))]
async fn reconcile_binding(
    binding: Arc<ManagedClusterSetBinding>,
    ctx: Arc<Context>,
) -> Result<Action, ClusterSetError> {
    let namespace = binding.namespace().unwrap_or_default();
    let name = binding.name_any();
    let set_name = binding.spec.cluster_set.clone().unwrap_or_default();
    let exists = !set_name.is_empty()
        && Api::<ManagedClusterSet>::all(ctx.client.clone())
            .get_opt(&set_name)
            .await
            .map_err(|source| ClusterSetError::List {
                what: "ManagedClusterSets",
                source,
            })?
            .is_some_and(|s| s.metadata.deletion_timestamp.is_none());
    let condition = if exists {
        Condition::new(
            managed_cluster_set_binding::BOUND,
            Status::True,
            managed_cluster_set_binding::reasons::CLUSTER_SET_BOUND,
            "",
            now(),
        )
    } else {
        Condition::new(
            managed_cluster_set_binding::BOUND,
            Status::False,
            managed_cluster_set_binding::reasons::CLUSTER_SET_NOT_FOUND,
            "",
            now(),
        )
    };
    let mut conditions = binding.status.as_ref().and_then(|s| s.conditions.clone());
    if conditions.set_condition(condition) {
        Api::<ManagedClusterSetBinding>::namespaced(ctx.client.clone(), &namespace)
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": {"conditions": conditions}})),
            )
            .await
            .map_err(|source| ClusterSetError::PatchStatus {
                kind: "ManagedClusterSetBinding",
                name,
                source,
            })?;
    }
    ctx.metrics.reconciled("managedclustersetbinding", true);
    Ok(Action::await_change())
}

fn cluster_error_policy(cluster: Arc<ManagedCluster>, error: &ClusterSetError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled("managednamespace", false);
    tracing::warn!(cluster = %cluster.name_any(), %error, "cluster set membership reconciliation failed");
    Action::requeue(ctx.options.resync)
}

#[tracing::instrument(skip_all, fields(cluster = %cluster.name_any()))]
async fn reconcile_cluster(
    cluster: Arc<ManagedCluster>,
    ctx: Arc<Context>,
) -> Result<Action, ClusterSetError> {
    let name = cluster.name_any();
    if cluster.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if ctx.options.default_sets && needs_default_label(cluster.labels()) {
        let patch = json!({"metadata": {"labels": {CLUSTER_SET_LABEL: DEFAULT_CLUSTER_SET}}});
        Api::<ManagedCluster>::all(ctx.client.clone())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| ClusterSetError::LabelCluster {
                cluster: name.clone(),
                source,
            })?;
        // The label change brings the cluster back with its new labels.
        return Ok(Action::await_change());
    }
    let sets: Vec<Arc<ManagedClusterSet>> = Api::<ManagedClusterSet>::all(ctx.client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|source| ClusterSetError::List {
            what: "ManagedClusterSets",
            source,
        })?
        .items
        .into_iter()
        .map(Arc::new)
        .collect();
    let current = cluster
        .status
        .as_ref()
        .and_then(|s| s.managed_namespaces.clone())
        .unwrap_or_default();
    let wanted = managed_namespaces(cluster.labels(), &sets, &current);
    if wanted != current {
        Api::<ManagedCluster>::all(ctx.client.clone())
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": {"managedNamespaces": wanted}})),
            )
            .await
            .map_err(|source| ClusterSetError::PatchStatus {
                kind: "ManagedCluster",
                name: name.clone(),
                source,
            })?;
    }
    ctx.metrics.reconciled("managednamespace", true);
    Ok(Action::await_change())
}

/// Keeps the `default` and `global` sets: on every change of either and every resync.
async fn default_sets_loop(sets: Api<ManagedClusterSet>, ctx: Arc<Context>) -> Result<(), ClusterSetError> {
    if !ctx.options.default_sets {
        return std::future::pending().await;
    }
    let mut events = std::pin::pin!(
        watcher(sets.clone(), watcher::Config::default())
            .default_backoff()
            .applied_objects()
    );
    let mut tick = tokio::time::interval(ctx.options.resync);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            event = events.next() => match event {
                None => return Err(ClusterSetError::Stopped("default cluster sets")),
                Some(Ok(set)) if default_set_selector(&set.name_any()).is_none() => continue,
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    tracing::warn!(%error, "watching cluster sets failed");
                    continue;
                }
            },
        }
        for name in [DEFAULT_CLUSTER_SET, GLOBAL_CLUSTER_SET] {
            let result = ensure_default_set(&sets, name).await;
            ctx.metrics.reconciled("defaultclusterset", result.is_ok());
            if let Err(error) = result {
                tracing::warn!(set = name, %error, "keeping a default cluster set failed");
            }
        }
    }
}

async fn ensure_default_set(sets: &Api<ManagedClusterSet>, name: &str) -> Result<(), ClusterSetError> {
    let Some(selector) = default_set_selector(name) else {
        return Ok(());
    };
    let error = |source| ClusterSetError::DefaultSet {
        set: name.to_string(),
        source,
    };
    match sets.get_opt(name).await.map_err(error)? {
        None => {
            let set = ManagedClusterSet::new(
                name,
                ManagedClusterSetSpec {
                    cluster_selector: Some(selector),
                    managed_namespaces: None,
                },
            );
            match sets.create(&PostParams::default(), &set).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                Err(source) => Err(error(source)),
            }
        }
        Some(existing) => {
            let auto_update = existing
                .annotations()
                .get(CLUSTER_SET_AUTO_UPDATE)
                .map(String::as_str)
                != Some("false");
            if !auto_update
                || existing.metadata.deletion_timestamp.is_some()
                || existing.spec.cluster_selector.as_ref() == Some(&selector)
            {
                return Ok(());
            }
            // A merge patch keeps keys it does not name: name every key, null where unwanted.
            let patch = json!({"metadata": {"resourceVersion": existing.resource_version()},
                "spec": {"clusterSelector": selector_merge_patch(name)}});
            sets.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(error)?;
            Ok(())
        }
    }
}

/// The merge-patch value that turns any `clusterSelector` into the one of default set `name`.
fn selector_merge_patch(name: &str) -> serde_json::Value {
    if name == GLOBAL_CLUSTER_SET {
        json!({"selectorType": "LabelSelector", "labelSelector": {"matchLabels": null, "matchExpressions": null}})
    } else {
        json!({"selectorType": "ExclusiveClusterSetLabel", "labelSelector": null})
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
