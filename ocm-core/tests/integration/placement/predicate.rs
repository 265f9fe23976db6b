//! Predicate scenarios: changing a placement's label, claim or CEL selector re-selects clusters.

use serde_json::json;

use super::{Hub, SET_LABEL};

/// A bound set with clusters labelled and claimed `cloud=aws` (2) and `cloud=gcp` (1).
async fn setup() -> (Hub, Vec<String>, String) {
    let hub = Hub::start().await;
    let set = hub.set().await;
    hub.bind(&set).await;
    let mut aws = Vec::new();
    for _ in 0..2 {
        aws.push(
            hub.cluster_with(json!({SET_LABEL: set, "cloud": "aws"}), json!({}))
                .await,
        );
    }
    let gcp = hub
        .cluster_with(json!({SET_LABEL: set, "cloud": "gcp"}), json!({}))
        .await;
    for (cluster, cloud) in aws.iter().map(|c| (c, "aws")).chain([(&gcp, "gcp")]) {
        hub.cluster_status(
            cluster,
            json!({"clusterClaims": [{"name": "platform.open-cluster-management.io", "value": cloud}]}),
        )
        .await;
    }
    (hub, aws, gcp)
}

#[tokio::test]
async fn predicate_label_selector_change() {
    let (hub, aws, gcp) = setup().await;
    let selector = |cloud: &str| json!({"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"cloud": cloud}}}}]});
    hub.placement("p", selector("aws")).await;
    hub.wait_clusters("p", &[&aws[0], &aws[1]]).await;
    hub.patch_placement("p", selector("gcp")).await;
    hub.wait_clusters("p", &[&gcp]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn predicate_claim_selector_change() {
    let (hub, aws, gcp) = setup().await;
    let selector = |cloud: &str| {
        json!({"predicates": [{"requiredClusterSelector": {"claimSelector": {"matchExpressions": [
            {"key": "platform.open-cluster-management.io", "operator": "In", "values": [cloud]}
        ]}}}]})
    };
    hub.placement("p", selector("gcp")).await;
    hub.wait_clusters("p", &[&gcp]).await;
    hub.patch_placement("p", selector("aws")).await;
    hub.wait_clusters("p", &[&aws[0], &aws[1]]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn predicate_cel_selector_change() {
    let (hub, aws, gcp) = setup().await;
    let selector = |expression: &str| json!({"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": [expression]}}}]});
    hub.placement("p", selector("managedCluster.metadata.labels['cloud'] == 'aws'"))
        .await;
    hub.wait_clusters("p", &[&aws[0], &aws[1]]).await;
    hub.patch_placement(
        "p",
        selector("managedCluster.status.clusterClaims.exists(c, c.name == 'platform.open-cluster-management.io' && c.value == 'gcp')"),
    )
    .await;
    hub.wait_clusters("p", &[&gcp]).await;
    // An invalid expression: Misconfigured, no decision.
    hub.patch_placement("p", selector("managedCluster.metadata.name =="))
        .await;
    hub.wait_condition("p", "PlacementMisconfigured", "True", Some("Misconfigured"))
        .await;
    hub.wait_clusters("p", &[]).await;
    hub.cleanup().await;
}
