//! Placement scenarios: decisions follow clusters, sets, bindings, numberOfClusters and decision
//! groups.

use kube::api::{Api, DeleteParams};
use ocm_api::cluster::v1beta1::PlacementDecision;
use serde_json::json;

use super::{Hub, SET_LABEL, eventually};

/// A hub with one bound set of `n` clusters.
async fn bound(n: usize) -> (Hub, String, Vec<String>) {
    let hub = Hub::start().await;
    let set = hub.set().await;
    hub.bind(&set).await;
    let clusters = hub.clusters(&set, n).await;
    (hub, set, clusters)
}

#[tokio::test]
async fn placement_decision_deleted_is_recreated() {
    let (hub, _, _) = bound(5).await;
    hub.placement("p", json!({"numberOfClusters": 10})).await;
    hub.wait_decided("p", 5).await;
    let api: Api<PlacementDecision> = Api::namespaced(hub.client.clone(), &hub.ns);
    let before = hub.decisions("p").await["p-decision-1"].metadata.uid.clone();
    api.delete("p-decision-1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("a new p-decision-1 with 5 decisions", || async {
        let decisions = hub.decisions("p").await;
        let d = decisions.get("p-decision-1")?;
        (d.metadata.uid != before && d.cluster_names().count() == 5).then_some(())
    })
    .await;
    assert_eq!(hub.decisions("p").await.len(), 1);
    let groups = hub.get("p").await.status.unwrap().decision_groups.unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(
        groups[0].decisions.as_deref(),
        Some(&["p-decision-1".to_string()][..])
    );
    assert_eq!(groups[0].cluster_count, Some(5));
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_terminating_cluster_is_not_selected() {
    let (hub, _, clusters) = bound(5).await;
    hub.placement("p", json!({"numberOfClusters": 10})).await;
    hub.wait_decided("p", 5).await;
    hub.patch_cluster(
        &clusters[0],
        json!({"metadata": {"finalizers": ["test.open-cluster-management.io/hold"]}}),
    )
    .await;
    hub.delete_cluster(&clusters[0]).await;
    let decided = hub.wait_decided("p", 4).await;
    assert!(!decided.contains(&clusters[0]));
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_no_cluster_gives_one_empty_decision() {
    let hub = Hub::start().await;
    hub.placement("p", json!({})).await;
    eventually("an empty p-decision-1", || async {
        let decisions = hub.decisions("p").await;
        let d = decisions.get("p-decision-1")?;
        (decisions.len() == 1 && d.cluster_names().count() == 0).then_some(())
    })
    .await;
    hub.wait_condition(
        "p",
        "PlacementSatisfied",
        "False",
        Some("NoManagedClusterSetBindings"),
    )
    .await;
    let groups = hub.get("p").await.status.unwrap().decision_groups.unwrap();
    assert_eq!(groups[0].cluster_count, Some(0));
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_more_than_100_clusters() {
    let (hub, _, _) = bound(101).await;
    hub.placement("p", json!({})).await;
    hub.wait_decided("p", 101).await;
    let decisions = hub.decisions("p").await;
    let sizes: Vec<(String, usize)> = decisions
        .iter()
        .map(|(n, d)| (n.clone(), d.cluster_names().count()))
        .collect();
    assert_eq!(
        sizes,
        [("p-decision-1".to_string(), 100), ("p-decision-2".to_string(), 1)]
    );
    let groups = hub.get("p").await.status.unwrap().decision_groups.unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].decisions.as_ref().map(Vec::len), Some(2));
    hub.wait_satisfied("p", true).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_cluster_sets_change() {
    let hub = Hub::start().await;
    let (set1, set2) = (hub.set().await, hub.set().await);
    hub.bind(&set1).await;
    hub.bind(&set2).await;
    let first = hub.clusters(&set1, 2).await;
    hub.clusters(&set2, 3).await;
    hub.placement("p", json!({})).await;
    hub.wait_decided("p", 5).await;
    hub.patch_placement("p", json!({"clusterSets": [set1]})).await;
    assert_eq!(hub.wait_decided("p", 2).await, first);
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_number_of_clusters_reduced_and_increased() {
    let (hub, _, _) = bound(5).await;
    hub.placement("p", json!({"numberOfClusters": 5})).await;
    hub.wait_decided("p", 5).await;
    hub.wait_satisfied("p", true).await;
    hub.patch_placement("p", json!({"numberOfClusters": 3})).await;
    hub.wait_decided("p", 3).await;
    hub.wait_satisfied("p", true).await;
    hub.patch_placement("p", json!({"numberOfClusters": 4})).await;
    hub.wait_decided("p", 4).await;
    hub.wait_satisfied("p", true).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_misconfigured_then_fixed() {
    let (hub, _, _) = bound(1).await;
    hub.placement(
        "p",
        json!({"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}),
    )
    .await;
    hub.wait_condition("p", "PlacementMisconfigured", "True", Some("Misconfigured"))
        .await;
    let placement = hub.get("p").await;
    let condition = placement
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "PlacementMisconfigured")
        .unwrap();
    assert_eq!(
        condition.message,
        "TaintToleration:If the operator is Exists, the value should be empty."
    );
    assert!(hub.decided("p").await.is_empty());
    hub.patch_placement("p", json!({"tolerations": [{"key": "k", "operator": "Exists"}]}))
        .await;
    hub.wait_decided("p", 1).await;
    hub.wait_condition("p", "PlacementMisconfigured", "False", Some("Succeedconfigured"))
        .await;
    hub.wait_satisfied("p", true).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_clusters_added() {
    let (hub, set, _) = bound(5).await;
    hub.placement("p", json!({"numberOfClusters": 10})).await;
    hub.wait_decided("p", 5).await;
    hub.wait_satisfied("p", false).await;
    hub.clusters(&set, 5).await;
    hub.wait_decided("p", 10).await;
    hub.wait_satisfied("p", true).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_label_selector_set_membership() {
    let hub = Hub::start().await;
    let run = hub.ns.clone();
    let set = hub.label_set(json!({"run": run})).await;
    hub.bind(&set).await;
    let a = hub.cluster_with(json!({"run": run}), json!({})).await;
    hub.cluster_with(json!({"run": "other"}), json!({})).await;
    hub.placement("p", json!({})).await;
    hub.wait_clusters("p", &[&a]).await;
    let b = hub.cluster_with(json!({"run": run}), json!({})).await;
    hub.wait_clusters("p", &[&a, &b]).await;
    hub.delete_cluster(&a).await;
    hub.wait_clusters("p", &[&b]).await;
    // A cluster leaving the set by a label change leaves the decisions too.
    hub.patch_cluster(&b, json!({"metadata": {"labels": {"run": "moved"}}}))
        .await;
    hub.wait_clusters("p", &[]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_decision_groups() {
    let hub = Hub::start().await;
    let set = hub.set().await;
    hub.bind(&set).await;
    let mut canary = Vec::new();
    for _ in 0..2 {
        canary.push(
            hub.cluster_with(json!({SET_LABEL: set, "vendor": "openShift"}), json!({}))
                .await,
        );
    }
    let mut rest = hub.clusters(&set, 3).await;
    canary.sort();
    hub.placement(
        "p",
        json!({"decisionStrategy": {"groupStrategy": {
            "clustersPerDecisionGroup": 2,
            "decisionGroups": [{"groupName": "canary", "groupClusterSelector": {"labelSelector": {"matchLabels": {"vendor": "openShift"}}}}]
        }}}),
    )
    .await;
    hub.wait_decided("p", 5).await;
    let shape = || async {
        let status = hub.get("p").await.status.unwrap_or_default();
        status
            .decision_groups
            .unwrap_or_default()
            .into_iter()
            .map(|g| {
                (
                    g.decision_group_name.unwrap_or_default(),
                    g.cluster_count.unwrap_or_default(),
                    g.decisions.unwrap_or_default(),
                )
            })
            .collect::<Vec<_>>()
    };
    let names = |ks: &[usize]| ks.iter().map(|k| format!("p-decision-{k}")).collect::<Vec<_>>();
    eventually("three groups", || async {
        (shape().await
            == vec![
                ("canary".to_string(), 2, names(&[1])),
                (String::new(), 2, names(&[2])),
                (String::new(), 1, names(&[3])),
            ])
        .then_some(())
    })
    .await;
    let decisions = hub.decisions("p").await;
    let labels = decisions["p-decision-1"].metadata.labels.clone().unwrap();
    assert_eq!(
        labels["cluster.open-cluster-management.io/decision-group-name"],
        "canary"
    );
    assert_eq!(
        labels["cluster.open-cluster-management.io/decision-group-index"],
        "0"
    );
    assert_eq!(
        decisions["p-decision-1"].cluster_names().collect::<Vec<_>>(),
        canary
    );
    // Another cluster: the unnamed groups grow to 2 and 2.
    rest.push(hub.cluster(&set).await);
    eventually("groups 2, 2, 2", || async {
        let counts: Vec<i32> = shape().await.into_iter().map(|g| g.1).collect();
        (counts == [2, 2, 2]).then_some(())
    })
    .await;
    // A canary cluster gone: canary 1.
    hub.delete_cluster(&canary[0]).await;
    eventually("groups 1, 2, 2", || async {
        let counts: Vec<i32> = shape().await.into_iter().map(|g| g.1).collect();
        (counts == [1, 2, 2]).then_some(())
    })
    .await;
    // Every cluster gone: one empty group and decision.
    for c in rest.iter().chain(&canary[1..]) {
        hub.delete_cluster(c).await;
    }
    eventually("one empty group", || async {
        let groups = shape().await;
        (groups == vec![(String::new(), 0, names(&[1]))] && hub.decisions("p").await.len() == 1).then_some(())
    })
    .await;
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_global_set_tracks_clusters() {
    let hub = Hub::start().await;
    let global = hub
        .set_with(json!({"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}}))
        .await;
    hub.bind(&global).await;
    // The global set holds every cluster of the hub: the predicate keeps this test's own.
    let run = hub.ns.clone();
    hub.placement(
        "p",
        json!({"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"run": run}}}}]}),
    )
    .await;
    let a = hub.cluster_with(json!({"run": run}), json!({})).await;
    let b = hub.cluster_with(json!({"run": run}), json!({})).await;
    hub.wait_clusters("p", &[&a, &b]).await;
    hub.delete_cluster(&a).await;
    hub.wait_clusters("p", &[&b]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_new_set_bound() {
    let (hub, _, _) = bound(5).await;
    hub.placement("p", json!({"numberOfClusters": 10})).await;
    hub.wait_decided("p", 5).await;
    let other = hub.set().await;
    hub.clusters(&other, 3).await;
    hub.bind(&other).await;
    hub.wait_decided("p", 8).await;
    hub.wait_condition(
        "p",
        "PlacementSatisfied",
        "False",
        Some("NotAllDecisionsScheduled"),
    )
    .await;
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_new_label_selector_set_bound() {
    let hub = Hub::start().await;
    let run = hub.ns.clone();
    let first = hub.label_set(json!({"run": run, "tier": "a"})).await;
    let second = hub.label_set(json!({"run": run, "tier": "b"})).await;
    hub.bind(&first).await;
    let a = hub
        .cluster_with(json!({"run": run, "tier": "a"}), json!({}))
        .await;
    let b = hub
        .cluster_with(json!({"run": run, "tier": "b"}), json!({}))
        .await;
    hub.placement("p", json!({})).await;
    hub.wait_clusters("p", &[&a]).await;
    hub.bind(&second).await;
    hub.wait_clusters("p", &[&a, &b]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_set_deleted_and_added_again() {
    let (hub, set, _) = bound(5).await;
    hub.placement("p", json!({})).await;
    hub.wait_decided("p", 5).await;
    hub.delete_set(&set).await;
    hub.wait_decided("p", 0).await;
    hub.recreate_set(&set, json!({})).await;
    hub.wait_decided("p", 5).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_label_selector_set_deleted_and_added_again() {
    let hub = Hub::start().await;
    let run = hub.ns.clone();
    let set = hub.label_set(json!({"run": run})).await;
    hub.bind(&set).await;
    let a = hub.cluster_with(json!({"run": run}), json!({})).await;
    hub.placement("p", json!({})).await;
    hub.wait_clusters("p", &[&a]).await;
    hub.delete_set(&set).await;
    hub.wait_clusters("p", &[]).await;
    hub.recreate_set(&set, json!({"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {"matchLabels": {"run": run}}}}))
        .await;
    hub.wait_clusters("p", &[&a]).await;
    hub.delete_cluster(&a).await;
    hub.wait_clusters("p", &[]).await;
    hub.cleanup().await;
}

#[tokio::test]
async fn placement_binding_deleted_and_added_again() {
    let (hub, set, _) = bound(5).await;
    hub.placement("p", json!({})).await;
    hub.wait_decided("p", 5).await;
    hub.unbind(&set).await;
    hub.wait_decided("p", 0).await;
    hub.wait_condition(
        "p",
        "PlacementSatisfied",
        "False",
        Some("NoManagedClusterSetBindings"),
    )
    .await;
    hub.bind(&set).await;
    hub.wait_decided("p", 5).await;
    hub.cleanup().await;
}
