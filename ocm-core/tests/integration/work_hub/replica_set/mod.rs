//! The ManifestWorkReplicaSet controller (ocm-core.md §6.2 row "manifestworkreplicaset"), one
//! test per upstream scenario (test/integration/work/manifestworkreplicaset_test.go) plus the
//! ones upstream leaves to unit tests (ProgressivePerGroup, Foreground deletion, missing and
//! empty Placements).
//!
//! No work agent runs: the tests write PlacementDecisions, the Placement's
//! `numberOfSelectedClusters` and the works' conditions by hand (status subresources), as
//! upstream's integration tests do. Each test runs its own controller limited to its own
//! namespace, so that tests sharing a real hub do not reconcile each other's replica sets.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail the test on any error"
)]

mod deletion;
mod placement;
mod rollout;
mod status;

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::names::labels::{MANIFEST_WORK_REPLICA_SET, MANIFEST_WORK_REPLICA_SET_PLACEMENT};
use ocm_api::work::v1::ManifestWork;
use ocm_api::work::v1alpha1::ManifestWorkReplicaSet;
use ocm_controlplane::TestEnv;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::work::hub::replica_set::{self, ReplicaSetOptions};
use serde_json::{Value, json};

use crate::support::{eventually, unique};

/// The replica set every test creates.
pub const SET: &str = "test-work";

/// A hub with the OCM CRDs, the test's namespace, cluster namespaces and a running controller.
pub struct Fixture {
    _env: TestEnv,
    pub client: kube::Client,
    pub ns: String,
    pub clusters: Vec<String>,
    controller: tokio::task::JoinHandle<()>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.controller.abort();
    }
}

/// How a test marks a work, as the agent would report it.
#[derive(Clone, Copy, Debug)]
pub enum Report {
    /// Applied, Available, Progressing False: done.
    Succeeded,
    /// Applied, Progressing True and Degraded True: failing.
    Failed,
}

fn object<K: serde::de::DeserializeOwned>(value: Value) -> K {
    serde_json::from_value(value).unwrap()
}

impl Fixture {
    /// Starts the hub, the namespaces of `clusters` clusters and the controller.
    pub async fn start(clusters: usize) -> Fixture {
        let env = TestEnv::hub().await.unwrap();
        env.install_ocm_crds().await.unwrap();
        let client = env.client().await.unwrap();
        let ns = unique("mwrs");
        let namespaces: Api<Namespace> = Api::all(client.clone());
        namespaces
            .create(&PostParams::default(), &object(json!({"metadata": {"name": ns}})))
            .await
            .unwrap();
        let mut names = Vec::new();
        for _ in 0..clusters {
            let cluster = unique("cluster");
            namespaces
                .create(
                    &PostParams::default(),
                    &object(json!({"metadata": {"name": cluster}})),
                )
                .await
                .unwrap();
            names.push(cluster);
        }
        names.sort();
        let options = ReplicaSetOptions {
            namespace: Some(ns.clone()),
            ..ReplicaSetOptions::default()
        };
        let controller_client = client.clone();
        let controller = tokio::spawn(async move {
            let _ = replica_set::run(controller_client, options, ControllerMetrics::default()).await;
        });
        Fixture {
            _env: env,
            client,
            ns,
            clusters: names,
            controller,
        }
    }

    /// Deletes what the test made (on a real hub they would stay).
    pub async fn cleanup(self) {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        for ns in self.clusters.iter().chain([&self.ns]) {
            let _ = namespaces.delete(ns, &DeleteParams::default()).await;
        }
    }

    pub fn sets(&self) -> Api<ManifestWorkReplicaSet> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn placements(&self) -> Api<Placement> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn decisions(&self) -> Api<PlacementDecision> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// Creates Placement `name` (status: `selected` clusters selected, `groups` decision groups).
    pub async fn placement(&self, name: &str, selected: usize, groups: usize) {
        self.placements()
            .create(
                &PostParams::default(),
                &object(json!({"metadata": {"name": name}, "spec": {}})),
            )
            .await
            .unwrap();
        self.placement_status(name, selected, groups).await;
    }

    /// Writes the Placement's selected-cluster count and decision groups.
    pub async fn placement_status(&self, name: &str, selected: usize, groups: usize) {
        let groups: Vec<Value> = (0..groups)
            .map(|i| json!({"decisionGroupIndex": i, "decisionGroupName": "", "decisions": [format!("{name}-decision-{}", i + 1)], "clusterCount": 0}))
            .collect();
        self.placements()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(
                    &json!({"status": {"numberOfSelectedClusters": selected, "decisionGroups": groups}}),
                ),
            )
            .await
            .unwrap();
    }

    /// Creates (or rewrites) the PlacementDecision `<placement>-decision-<index + 1>` of group
    /// `index` naming `clusters`.
    pub async fn decide(&self, placement: &str, index: usize, clusters: &[&String]) {
        let name = format!("{placement}-decision-{}", index + 1);
        let api = self.decisions();
        if api.get_opt(&name).await.unwrap().is_none() {
            api.create(
                &PostParams::default(),
                &object(json!({"metadata": {"name": name, "labels": {
                    "cluster.open-cluster-management.io/placement": placement,
                    "cluster.open-cluster-management.io/decision-group-index": index.to_string()}}})),
            )
            .await
            .unwrap();
        }
        let decisions: Vec<Value> = clusters
            .iter()
            .map(|c| json!({"clusterName": c, "reason": ""}))
            .collect();
        api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"decisions": decisions}})),
        )
        .await
        .unwrap();
    }

    /// Creates a Placement selecting every cluster of the fixture in one decision.
    pub async fn placement_of_all(&self, name: &str) {
        self.placement(name, self.clusters.len(), 1).await;
        self.decide(name, 0, &self.clusters.iter().collect::<Vec<_>>())
            .await;
    }

    /// Creates the replica set [`SET`] with one ConfigMap `cm` and the references `refs`
    /// (Placement name, rollout strategy).
    pub async fn create_set(&self, cm: &str, refs: &[(&str, Value)], extra: Value) {
        let refs: Vec<Value> = refs
            .iter()
            .map(|(name, strategy)| json!({"name": name, "rolloutStrategy": strategy}))
            .collect();
        let mut set = json!({"apiVersion": "work.open-cluster-management.io/v1alpha1",
            "kind": "ManifestWorkReplicaSet",
            "metadata": {"name": SET, "labels": {"app": "replica-set-test"}},
            "spec": {"placementRefs": refs, "manifestWorkTemplate": template(cm)}});
        if let (Some(spec), Value::Object(extra)) = (set["spec"].as_object_mut(), extra) {
            spec.extend(extra);
        }
        self.sets()
            .create(&PostParams::default(), &object(set))
            .await
            .unwrap();
    }

    /// The works of the replica set (optionally of one Placement).
    pub async fn works(&self, placement: Option<&str>) -> Vec<ManifestWork> {
        let mut selector = format!("{MANIFEST_WORK_REPLICA_SET}={}.{SET}", self.ns);
        if let Some(placement) = placement {
            selector.push_str(&format!(",{MANIFEST_WORK_REPLICA_SET_PLACEMENT}={placement}"));
        }
        Api::<ManifestWork>::all(self.client.clone())
            .list(&ListParams::default().labels(&selector))
            .await
            .unwrap()
            .items
    }

    /// Waits until the replica set has exactly `n` works, all in clusters of the fixture, and
    /// returns them.
    pub async fn wait_works(&self, n: usize) -> Vec<ManifestWork> {
        self.wait_works_of(None, n).await
    }

    /// [`Self::wait_works`] for the works of one Placement.
    pub async fn wait_works_of(&self, placement: Option<&str>, n: usize) -> Vec<ManifestWork> {
        eventually(&format!("{n} works"), || async {
            let works = self.works(placement).await;
            (works.len() == n).then_some(works)
        })
        .await
    }

    /// Checks for `secs` seconds that the replica set keeps exactly `n` works.
    pub async fn keeps_works(&self, n: usize, secs: u64) {
        let until = tokio::time::Instant::now() + Duration::from_secs(secs);
        while tokio::time::Instant::now() < until {
            assert_eq!(self.works(None).await.len(), n, "the number of works changed");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The clusters the works are in.
    pub fn clusters_of(works: &[ManifestWork]) -> BTreeSet<String> {
        works.iter().map(|w| w.namespace().unwrap()).collect()
    }

    /// Writes the conditions the agent would report on `work` for its current generation.
    pub async fn report(&self, work: &ManifestWork, report: Report) {
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let generation = work.metadata.generation.unwrap_or_default();
        let c = |t: &str, s: &str, r: &str| {
            json!({"type": t, "status": s, "reason": r, "message": "", "lastTransitionTime": now,
                "observedGeneration": generation})
        };
        let conditions = match report {
            Report::Succeeded => vec![
                c("Applied", "True", "AppliedManifestWorkComplete"),
                c("Available", "True", "ResourcesAvailable"),
                c("Progressing", "False", "AppliedManifestWorkComplete"),
            ],
            Report::Failed => vec![
                c("Applied", "True", "AppliedManifestWorkComplete"),
                c("Available", "False", "ResourcesNotAvailable"),
                c("Progressing", "True", "Applying"),
                c("Degraded", "True", "ApplyFailed"),
            ],
        };
        Api::<ManifestWork>::namespaced(self.client.clone(), &work.namespace().unwrap())
            .patch_status(
                &work.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": {"conditions": conditions}})),
            )
            .await
            .unwrap();
    }

    /// Reports `report` on every work of the replica set.
    pub async fn report_all(&self, report: Report) {
        for work in self.works(None).await {
            self.report(&work, report).await;
        }
    }

    /// The replica set's condition `type_` as (status, reason).
    pub async fn condition(&self, type_: &str) -> Option<(String, String)> {
        let set = self.sets().get(SET).await.unwrap();
        set.status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == type_)
            .map(|c| (c.status, c.reason))
    }

    /// Waits until condition `type_` has `status` (and `reason`, when given).
    pub async fn wait_condition(&self, type_: &str, status: &str, reason: Option<&str>) {
        eventually(&format!("{type_}={status} {reason:?}"), || async {
            let (s, r) = self.condition(type_).await?;
            (s == status && reason.is_none_or(|reason| reason == r)).then_some(())
        })
        .await;
    }

    /// Waits until the summary's (total, applied, available, degraded, progressing) are `want`.
    pub async fn wait_summary(&self, want: [i64; 5]) {
        eventually(&format!("summary {want:?}"), || async {
            let summary = self.sets().get(SET).await.unwrap().status?.summary?;
            let got = [
                summary.total?,
                summary.applied?,
                summary.available?,
                summary.degraded?,
                summary.progressing?,
            ];
            (got == want).then_some(())
        })
        .await;
    }
}

/// A work template holding one ConfigMap `name`.
pub fn template(name: &str) -> Value {
    json!({"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"}, "data": {"a": "b"}}]}})
}

/// The `All` strategy.
pub fn all() -> Value {
    json!({"type": "All"})
}
