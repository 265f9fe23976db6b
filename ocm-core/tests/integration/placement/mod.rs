//! Integration tests of the placement controller (ocm-core.md §6.3), one test per upstream
//! scenario, named after it: `decisions` (upstream's `placement` scenarios: decisions, sets,
//! bindings, groups), `predicate`, `prioritizer` and `toleration`.
//!
//! Each test starts its own placement controller against a hub (embedded, or the real one of
//! `OCM_TEST_HUB_KUBECONFIG`) and works in its own namespace with its own sets and clusters, so
//! tests sharing a real hub do not see each other's objects.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail the test on any error"
)]

mod decisions;
mod predicate;
mod prioritizer;
mod toleration;

use std::collections::BTreeMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_controlplane::TestEnv;
use ocm_core::placement::{PlacementOptions, run};
use serde_json::{Value, json};

pub use crate::support::{eventually, unique};

/// The cluster-set label.
pub const SET_LABEL: &str = "cluster.open-cluster-management.io/clusterset";

/// A hub with the OCM CRDs, a namespace of the test's own and a running placement controller.
pub struct Hub {
    _env: TestEnv,
    pub client: kube::Client,
    pub ns: String,
    controller: tokio::task::JoinHandle<()>,
    clusters: Mutex<Vec<String>>,
    sets: Mutex<Vec<String>>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.controller.abort();
    }
}

fn object<K: serde::de::DeserializeOwned>(value: Value) -> K {
    serde_json::from_value(value).unwrap()
}

async fn ignore_missing<T>(result: Result<T, kube::Error>) {
    match result {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => panic!("{e}"),
    }
}

impl Hub {
    /// Starts the hub, the namespace and the controller.
    pub async fn start() -> Hub {
        let env = TestEnv::hub().await.unwrap();
        env.install_ocm_crds().await.unwrap();
        let client = env.client().await.unwrap();
        let ns = unique("placement");
        let namespaces: Api<Namespace> = Api::all(client.clone());
        namespaces
            .create(&PostParams::default(), &object(json!({"metadata": {"name": ns}})))
            .await
            .unwrap();
        let controller_client = client.clone();
        let controller = tokio::spawn(async move {
            let _ = run(
                controller_client,
                PlacementOptions::default(),
                ocm_core::metrics::ControllerMetrics::default(),
            )
            .await;
        });
        Hub {
            _env: env,
            client,
            ns,
            controller,
            clusters: Mutex::new(Vec::new()),
            sets: Mutex::new(Vec::new()),
        }
    }

    fn placements(&self) -> Api<Placement> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn clusters_api(&self) -> Api<ManagedCluster> {
        Api::all(self.client.clone())
    }

    /// Creates an `ExclusiveClusterSetLabel` set with a unique name, and returns the name.
    pub async fn set(&self) -> String {
        self.set_with(json!({})).await
    }

    /// Creates a set with `spec`, and returns its unique name.
    pub async fn set_with(&self, spec: Value) -> String {
        let name = unique("set");
        let sets: Api<ManagedClusterSet> = Api::all(self.client.clone());
        sets.create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": name}, "spec": spec})),
        )
        .await
        .unwrap();
        self.sets.lock().unwrap().push(name.clone());
        name
    }

    /// Creates a `LabelSelector` set selecting `labels`.
    pub async fn label_set(&self, labels: Value) -> String {
        self.set_with(json!({"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {"matchLabels": labels}}}))
            .await
    }

    /// Re-creates a deleted set of name `name` with `spec`.
    pub async fn recreate_set(&self, name: &str, spec: Value) {
        let sets: Api<ManagedClusterSet> = Api::all(self.client.clone());
        eventually("the set is gone", || async {
            sets.get_opt(name).await.unwrap().is_none().then_some(())
        })
        .await;
        sets.create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": name}, "spec": spec})),
        )
        .await
        .unwrap();
    }

    /// Deletes a set.
    pub async fn delete_set(&self, name: &str) {
        let sets: Api<ManagedClusterSet> = Api::all(self.client.clone());
        ignore_missing(sets.delete(name, &DeleteParams::default()).await).await;
    }

    /// Binds `set` to the test's namespace.
    pub async fn bind(&self, set: &str) {
        let bindings: Api<ManagedClusterSetBinding> = Api::namespaced(self.client.clone(), &self.ns);
        bindings
            .create(
                &PostParams::default(),
                &object(
                    json!({"metadata": {"name": set, "namespace": self.ns}, "spec": {"clusterSet": set}}),
                ),
            )
            .await
            .unwrap();
    }

    /// Deletes the binding of `set`, and waits until it is gone.
    pub async fn unbind(&self, set: &str) {
        let bindings: Api<ManagedClusterSetBinding> = Api::namespaced(self.client.clone(), &self.ns);
        ignore_missing(bindings.delete(set, &DeleteParams::default()).await).await;
        eventually("the binding is gone", || async {
            bindings.get_opt(set).await.unwrap().is_none().then_some(())
        })
        .await;
    }

    /// Creates a cluster with `labels` (and `spec`), and returns its unique name.
    pub async fn cluster_with(&self, labels: Value, spec: Value) -> String {
        let name = unique("cluster");
        self.clusters_api()
            .create(
                &PostParams::default(),
                &object(json!({"metadata": {"name": name, "labels": labels}, "spec": spec})),
            )
            .await
            .unwrap();
        self.clusters.lock().unwrap().push(name.clone());
        name
    }

    /// Creates a cluster in `set`.
    pub async fn cluster(&self, set: &str) -> String {
        self.cluster_with(json!({SET_LABEL: set}), json!({})).await
    }

    /// Creates `n` clusters in `set`, and returns their names sorted.
    pub async fn clusters(&self, set: &str, n: usize) -> Vec<String> {
        let mut names = Vec::new();
        for _ in 0..n {
            names.push(self.cluster(set).await);
        }
        names.sort();
        names
    }

    /// Merges `patch` into cluster `name`.
    pub async fn patch_cluster(&self, name: &str, patch: Value) {
        self.clusters_api()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    /// Merges `status` into the status of cluster `name`.
    pub async fn cluster_status(&self, name: &str, status: Value) {
        self.clusters_api()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": status})),
            )
            .await
            .unwrap();
    }

    /// Deletes cluster `name`.
    pub async fn delete_cluster(&self, name: &str) {
        ignore_missing(self.clusters_api().delete(name, &DeleteParams::default()).await).await;
    }

    /// Creates or replaces the AddOnPlacementScore `name` of `cluster` with `scores`
    /// (`[{"name":..., "value":...}]`), valid for an hour.
    pub async fn score(&self, cluster: &str, name: &str, scores: Value) {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        if namespaces.get_opt(cluster).await.unwrap().is_none() {
            namespaces
                .create(
                    &PostParams::default(),
                    &object(json!({"metadata": {"name": cluster}})),
                )
                .await
                .unwrap();
        }
        let api: Api<AddOnPlacementScore> = Api::namespaced(self.client.clone(), cluster);
        if api.get_opt(name).await.unwrap().is_none() {
            api.create(
                &PostParams::default(),
                &object(json!({"metadata": {"name": name, "namespace": cluster}})),
            )
            .await
            .unwrap();
        }
        let until = k8s_openapi::jiff::Timestamp::now()
            .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(3600))
            .unwrap();
        let status = json!({"status": {"scores": scores, "validUntil": until.to_string()}});
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
    }

    /// Creates placement `name` with `spec`.
    pub async fn placement(&self, name: &str, spec: Value) {
        self.placements()
            .create(
                &PostParams::default(),
                &object(json!({"metadata": {"name": name, "namespace": self.ns}, "spec": spec})),
            )
            .await
            .unwrap();
    }

    /// Merges `spec` into the spec of placement `name`.
    pub async fn patch_placement(&self, name: &str, spec: Value) {
        self.placements()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": spec})),
            )
            .await
            .unwrap();
    }

    /// Changes an annotation of placement `name`, so that it is scheduled again.
    pub async fn touch_placement(&self, name: &str) {
        let patch =
            json!({"metadata": {"annotations": {"test.open-cluster-management.io/touched": unique("t")}}});
        self.placements()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    /// The PlacementDecisions of placement `name`, by name.
    pub async fn decisions(&self, name: &str) -> BTreeMap<String, PlacementDecision> {
        let api: Api<PlacementDecision> = Api::namespaced(self.client.clone(), &self.ns);
        let list = api
            .list(&ListParams::default().labels(&format!("{}={name}", ocm_api::names::labels::PLACEMENT)))
            .await
            .unwrap();
        list.items.into_iter().map(|d| (d.name_any(), d)).collect()
    }

    /// The clusters of all decisions of placement `name`, sorted.
    pub async fn decided(&self, name: &str) -> Vec<String> {
        let mut clusters: Vec<String> = self
            .decisions(name)
            .await
            .values()
            .flat_map(|d| d.cluster_names().map(str::to_string).collect::<Vec<_>>())
            .collect();
        clusters.sort();
        clusters
    }

    /// Placement `name`.
    pub async fn get(&self, name: &str) -> Placement {
        self.placements().get(name).await.unwrap()
    }

    /// Waits until placement `name` has `n` decisions in all, reported in its status too, and
    /// returns the decided clusters.
    pub async fn wait_decided(&self, name: &str, n: usize) -> Vec<String> {
        eventually(&format!("{n} decisions of {name}"), || async {
            let decided = self.decided(name).await;
            let status = self.get(name).await.status.unwrap_or_default();
            let selected = status.number_of_selected_clusters.unwrap_or(-1);
            (decided.len() == n && usize::try_from(selected).ok() == Some(n)).then_some(decided)
        })
        .await
    }

    /// Waits until placement `name` decides exactly `clusters`.
    pub async fn wait_clusters(&self, name: &str, clusters: &[&str]) {
        let mut wanted: Vec<String> = clusters.iter().map(|c| (*c).to_string()).collect();
        wanted.sort();
        eventually(&format!("{name} deciding {wanted:?}"), || async {
            (self.decided(name).await == wanted).then_some(())
        })
        .await;
    }

    /// Waits until condition `type_` of placement `name` has `status` (and `reason`, if given).
    pub async fn wait_condition(&self, name: &str, type_: &str, status: &str, reason: Option<&str>) {
        eventually(&format!("{type_}={status} on {name}"), || async {
            let placement = self.get(name).await;
            let conditions = placement.status.and_then(|s| s.conditions).unwrap_or_default();
            conditions
                .iter()
                .any(|c| c.type_ == type_ && c.status == status && reason.is_none_or(|r| c.reason == r))
                .then_some(())
        })
        .await;
    }

    /// Waits until placement `name` is Satisfied (`true`) or not.
    pub async fn wait_satisfied(&self, name: &str, satisfied: bool) {
        let status = if satisfied { "True" } else { "False" };
        self.wait_condition(name, "PlacementSatisfied", status, None)
            .await;
    }

    /// Deletes what the test created outside its namespace, then the namespace.
    pub async fn cleanup(self) {
        let clusters = self.clusters.lock().unwrap().clone();
        for name in clusters {
            let patch = json!({"metadata": {"finalizers": null}});
            ignore_missing(
                self.clusters_api()
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await,
            )
            .await;
            self.delete_cluster(&name).await;
            let namespaces: Api<Namespace> = Api::all(self.client.clone());
            ignore_missing(namespaces.delete(&name, &DeleteParams::default()).await).await;
        }
        let sets = self.sets.lock().unwrap().clone();
        for name in sets {
            self.delete_set(&name).await;
        }
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        ignore_missing(namespaces.delete(&self.ns, &DeleteParams::default()).await).await;
    }
}
