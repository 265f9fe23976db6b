//! Toleration scenarios: matching taints, effects, and tolerations that expire.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::Hub;

fn taint(key: &str, value: &str, effect: &str, added: Timestamp) -> Value {
    json!({"key": key, "value": value, "effect": effect, "timeAdded": added.to_string()})
}

async fn tainted(hub: &Hub, cluster: &str, taints: Value) {
    hub.patch_cluster(cluster, json!({"spec": {"taints": taints}}))
        .await;
}

async fn setup(n: usize) -> (Hub, Vec<String>) {
    let hub = Hub::start().await;
    let set = hub.set().await;
    hub.bind(&set).await;
    let clusters = hub.clusters(&set, n).await;
    (hub, clusters)
}

#[tokio::test]
async fn toleration_match() {
    let (hub, c) = setup(3).await;
    let now = Timestamp::now();
    tainted(&hub, &c[0], json!([taint("key1", "value1", "NoSelect", now)])).await;
    tainted(&hub, &c[1], json!([taint("key2", "value2", "NoSelect", now)])).await;
    tainted(&hub, &c[2], json!([taint("key2", "value3", "NoSelect", now)])).await;
    hub.placement(
        "p",
        json!({"numberOfClusters": 3, "tolerations": [
            {"key": "key1", "operator": "Exists"},
            {"key": "key2", "operator": "Equal", "value": "value2"}
        ]}),
    )
    .await;
    hub.wait_clusters("p", &[&c[0], &c[1]]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn toleration_effect() {
    let (hub, c) = setup(4).await;
    let now = Timestamp::now();
    tainted(&hub, &c[0], json!([taint("key1", "value1", "NoSelect", now)])).await;
    tainted(
        &hub,
        &c[1],
        json!([taint("key2", "value2", "NoSelectIfNew", now)]),
    )
    .await;
    tainted(
        &hub,
        &c[2],
        json!([taint("key3", "value3", "PreferNoSelect", now)]),
    )
    .await;
    hub.placement(
        "p",
        json!({"numberOfClusters": 4, "tolerations": [
            {"key": "key1", "operator": "Exists", "effect": "PreferNoSelect"},
            {"key": "key2", "operator": "Exists", "effect": "NoSelect"},
            {"key": "key3", "operator": "Exists", "effect": "NoSelect"},
            {"key": "key4", "operator": "Exists", "effect": "NoSelect"}
        ]}),
    )
    .await;
    hub.wait_clusters("p", &[&c[2], &c[3]]).await;
    // A NoSelectIfNew taint on a cluster already chosen keeps it.
    tainted(
        &hub,
        &c[3],
        json!([taint("key4", "value4", "NoSelectIfNew", now)]),
    )
    .await;
    hub.touch_placement("p").await;
    hub.wait_clusters("p", &[&c[2], &c[3]]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn toleration_seconds_expire() {
    let (hub, c) = setup(4).await;
    let now = Timestamp::now();
    let before = now.checked_sub(SignedDuration::from_secs(60)).unwrap();
    tainted(&hub, &c[0], json!([taint("key1", "value1", "NoSelect", now)])).await;
    tainted(&hub, &c[1], json!([taint("key2", "value2", "NoSelect", now)])).await;
    tainted(&hub, &c[2], json!([taint("key2", "value2", "NoSelect", before)])).await;
    hub.placement(
        "p",
        json!({"numberOfClusters": 4, "tolerations": [
            {"key": "key1", "operator": "Exists", "tolerationSeconds": 10},
            {"key": "key2", "operator": "Exists", "tolerationSeconds": 20}
        ]}),
    )
    .await;
    hub.wait_clusters("p", &[&c[0], &c[1], &c[3]]).await;
    // The requeue at each expiry drops the cluster.
    hub.wait_clusters("p", &[&c[1], &c[3]]).await;
    hub.wait_clusters("p", &[&c[3]]).await;
    // A new NoSelect taint removes the last one.
    tainted(
        &hub,
        &c[3],
        json!([taint("key3", "value3", "NoSelect", Timestamp::now())]),
    )
    .await;
    hub.wait_clusters("p", &[]).await;
    hub.cleanup().await;
}
