//! Prioritizer scenarios: default weights, resources, Steady, Balance and add-on scores.

use kube::api::{Api, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1beta1::PlacementDecision;
use serde_json::{Value, json};

use super::Hub;

/// Upstream's cluster resources: cpu allocatable/capacity, memory allocatable/capacity.
const RESOURCES: [[&str; 4]; 3] = [
    ["10", "10", "50", "100"],
    ["7", "10", "90", "100"],
    ["9", "10", "80", "100"],
];

async fn with_resources(hub: &Hub, cluster: &str, r: [&str; 4]) {
    hub.cluster_status(
        cluster,
        json!({"allocatable": {"cpu": r[0], "memory": r[2]}, "capacity": {"cpu": r[1], "memory": r[3]}}),
    )
    .await;
}

/// A bound set of three clusters with upstream's resources.
async fn three_clusters() -> (Hub, String, Vec<String>) {
    let hub = Hub::start().await;
    let set = hub.set().await;
    hub.bind(&set).await;
    let clusters = hub.clusters(&set, 3).await;
    for (cluster, r) in clusters.iter().zip(RESOURCES) {
        with_resources(&hub, cluster, r).await;
    }
    (hub, set, clusters)
}

fn policy(mode: &str, builtins: &[(&str, i32)]) -> Value {
    let configurations: Vec<Value> = builtins
        .iter()
        .map(|(b, w)| json!({"scoreCoordinate": {"type": "BuiltIn", "builtIn": b}, "weight": w}))
        .collect();
    json!({"mode": mode, "configurations": configurations})
}

/// A PlacementDecision of another (fake) placement holding `clusters`.
async fn fake_decision(hub: &Hub, placement: &str, clusters: &[&str]) {
    let api: Api<PlacementDecision> = Api::namespaced(hub.client.clone(), &hub.ns);
    let name = format!("{placement}-decision-1");
    let decision: PlacementDecision = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": hub.ns,
                     "labels": {"cluster.open-cluster-management.io/placement": placement}},
    }))
    .unwrap();
    api.create(&PostParams::default(), &decision).await.unwrap();
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

#[tokio::test]
async fn prioritizer_default_policy() {
    let (hub, _, c) = three_clusters().await;
    hub.placement("p", json!({"numberOfClusters": 2})).await;
    hub.wait_clusters("p", &[&c[0], &c[1]]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn prioritizer_exact_cpu_and_memory() {
    let (hub, _, c) = three_clusters().await;
    hub.placement(
        "p",
        json!({"numberOfClusters": 2, "prioritizerPolicy": policy("Exact", &[("ResourceAllocatableCPU", 1), ("ResourceAllocatableMemory", 1)])}),
    )
    .await;
    hub.wait_clusters("p", &[&c[0], &c[2]]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn prioritizer_steady_keeps_the_selection() {
    let (hub, set, c) = three_clusters().await;
    hub.placement(
        "p",
        json!({"numberOfClusters": 2, "prioritizerPolicy": policy("Additive", &[("Steady", 3), ("ResourceAllocatableCPU", 1), ("ResourceAllocatableMemory", 1)])}),
    )
    .await;
    hub.wait_clusters("p", &[&c[0], &c[2]]).await;
    fake_decision(&hub, "p-1", &[&c[1]]).await;
    let new = hub.cluster(&set).await;
    with_resources(&hub, &new, ["10", "10", "100", "100"]).await;
    // Schedule once more after the new cluster, and check the selection held.
    hub.touch_placement("p").await;
    hub.wait_clusters("p", &[&c[0], &c[2]]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn prioritizer_exact_balance_and_cpu() {
    let (hub, _, c) = three_clusters().await;
    // Balance compares with the most used cluster of the whole hub: other placements' decisions
    // name c0 ten times, more than any cluster of other tests sharing a real hub.
    fake_decision(&hub, "fake", &[c[0].as_str(); 10]).await;
    hub.placement(
        "p",
        json!({"numberOfClusters": 2, "prioritizerPolicy": policy("Exact", &[("Balance", 2), ("ResourceAllocatableCPU", 1)])}),
    )
    .await;
    hub.wait_clusters("p", &[&c[1], &c[2]]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn prioritizer_reschedule_on_cluster_added_and_deleted() {
    let (hub, set, c) = three_clusters().await;
    hub.placement(
        "p",
        json!({"numberOfClusters": 2, "prioritizerPolicy": policy("Exact", &[("ResourceAllocatableCPU", 1), ("ResourceAllocatableMemory", 1)])}),
    )
    .await;
    hub.wait_clusters("p", &[&c[0], &c[2]]).await;
    let new = hub.cluster(&set).await;
    with_resources(&hub, &new, ["10", "10", "100", "100"]).await;
    hub.wait_clusters("p", &[&c[2], &new]).await;
    hub.delete_cluster(&new).await;
    hub.wait_clusters("p", &[&c[0], &c[2]]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn prioritizer_addon_score() {
    let hub = Hub::start().await;
    let set = hub.set().await;
    hub.bind(&set).await;
    let c = hub.clusters(&set, 3).await;
    hub.placement(
        "p",
        json!({"numberOfClusters": 2, "prioritizerPolicy": {"mode": "Exact", "configurations": [
            {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "demo", "scoreName": "demo"}}, "weight": 1}
        ]}}),
    )
    .await;
    // No scores yet: by name.
    hub.wait_clusters("p", &[&c[0], &c[1]]).await;
    for (cluster, value) in c.iter().zip([80, 90, 100]) {
        hub.score(cluster, "demo", json!([{"name": "demo", "value": value}]))
            .await;
    }
    hub.wait_clusters("p", &[&c[1], &c[2]]).await;
    hub.score(&c[0], "demo", json!([{"name": "demo", "value": 100}]))
        .await;
    hub.wait_clusters("p", &[&c[0], &c[2]]).await;
    hub.cleanup().await;
}
