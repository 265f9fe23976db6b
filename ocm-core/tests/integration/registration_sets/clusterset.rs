//! Scenarios "managedclusterset" (empty, legacy exclusive label, labelSelector, global), the
//! default and global sets, ManagedClusterSetBinding `Bound`, and managed namespaces.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail the test on any error"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_api::conditions::ConditionList;
use ocm_controlplane::TestEnv;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::registration::hub::clusterset::{self, ClusterSetOptions};
use serde_json::{Value, json};

use super::{eventually, hub, unique};
use crate::hub_lock::{HubLock, Lock};

fn start(client: &kube::Client, default_sets: bool) -> tokio::task::JoinHandle<()> {
    let options = ClusterSetOptions {
        default_sets,
        resync: Duration::from_millis(500),
    };
    let client = client.clone();
    tokio::spawn(async move {
        let result = clusterset::run(client, options, ControllerMetrics::default()).await;
        panic!("the cluster-set controllers stopped: {result:?}");
    })
}

async fn create_cluster(client: &kube::Client, name: &str, labels: &[(&str, &str)]) {
    let labels: BTreeMap<_, _> = labels.iter().copied().collect();
    let cluster: ManagedCluster = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": labels}, "spec": {"hubAcceptsClient": true}}))
    .unwrap();
    Api::<ManagedCluster>::all(client.clone())
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
}

async fn create_set(client: &kube::Client, name: &str, spec: Value) {
    let set: ManagedClusterSet = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
        "metadata": {"name": name}, "spec": spec}))
    .unwrap();
    Api::<ManagedClusterSet>::all(client.clone())
        .create(&PostParams::default(), &set)
        .await
        .unwrap();
}

/// Waits until set `name` has `ClusterSetEmpty` with `status`, `reason` and `message`.
async fn wait_empty(client: &kube::Client, name: &str, status: &str, reason: &str, message: &str) {
    let sets: Api<ManagedClusterSet> = Api::all(client.clone());
    eventually(
        &format!("{name}: ClusterSetEmpty {status} {reason} {message:?}"),
        || {
            let sets = sets.clone();
            async move {
                let set = sets.get_opt(name).await.unwrap()?;
                let c = set.status?.conditions.find_condition("ClusterSetEmpty")?.clone();
                (c.status == status && c.reason == reason && c.message == message).then_some(())
            }
        },
    )
    .await;
}

/// Waits until the `default` or `global` set selects `n` clusters; on a shared real hub at least
/// `n`, since the clusters of other tests running meanwhile count too.
async fn wait_selected(env: &TestEnv, client: &kube::Client, name: &str, n: usize) {
    if env.control_plane().is_some() {
        let message = format!("{n} ManagedClusters selected");
        return wait_empty(client, name, "False", "ClustersSelected", &message).await;
    }
    let sets: Api<ManagedClusterSet> = Api::all(client.clone());
    eventually(&format!("{name} selecting at least {n} clusters"), || {
        let sets = sets.clone();
        async move {
            let set = sets.get_opt(name).await.unwrap()?;
            let c = set.status?.conditions.find_condition("ClusterSetEmpty")?.clone();
            let selected: usize = c
                .message
                .strip_suffix(" ManagedClusters selected")?
                .parse()
                .ok()?;
            (c.status == "False" && c.reason == "ClustersSelected" && selected >= n).then_some(())
        }
    })
    .await;
}

/// Removes what a test created on a possibly shared hub: its sets, its clusters (their
/// finalizers released, in case hub controllers of other tests added them) and the namespaces
/// named after them.
async fn clean_up(client: &kube::Client, sets: &[&str], clusters: &[&str]) {
    let set_api: Api<ManagedClusterSet> = Api::all(client.clone());
    for set in sets {
        let _ = set_api.delete(set, &DeleteParams::default()).await;
    }
    let cluster_api: Api<ManagedCluster> = Api::all(client.clone());
    let release = json!({"metadata": {"finalizers": null}});
    for cluster in clusters {
        let _ = cluster_api.delete(cluster, &DeleteParams::default()).await;
        let _ = cluster_api
            .patch(cluster, &PatchParams::default(), &Patch::Merge(&release))
            .await;
        let _ = Api::<Namespace>::all(client.clone())
            .delete(cluster, &DeleteParams::default())
            .await;
    }
}

#[tokio::test]
async fn managedclusterset_empty_and_legacy_exclusive_label() {
    let (_env, client) = hub().await;
    let controller = start(&client, false);
    let (s1, s2, c1) = (unique("set"), unique("set"), unique("cluster"));
    create_set(&client, &s1, json!({})).await;
    create_set(
        &client,
        &s2,
        json!({"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}),
    )
    .await;
    wait_empty(
        &client,
        &s1,
        "True",
        "NoClusterMatched",
        "No ManagedCluster selected",
    )
    .await;
    wait_empty(
        &client,
        &s2,
        "True",
        "NoClusterMatched",
        "No ManagedCluster selected",
    )
    .await;

    create_cluster(
        &client,
        &c1,
        &[("cluster.open-cluster-management.io/clusterset", &s1)],
    )
    .await;
    wait_empty(
        &client,
        &s1,
        "False",
        "ClustersSelected",
        "1 ManagedClusters selected",
    )
    .await;

    // Moving the cluster updates both the old and the new set.
    Api::<ManagedCluster>::all(client.clone())
        .patch(
            &c1,
            &PatchParams::default(),
            &Patch::Merge(
                &json!({"metadata": {"labels": {"cluster.open-cluster-management.io/clusterset": s2}}}),
            ),
        )
        .await
        .unwrap();
    wait_empty(
        &client,
        &s2,
        "False",
        "ClustersSelected",
        "1 ManagedClusters selected",
    )
    .await;
    wait_empty(
        &client,
        &s1,
        "True",
        "NoClusterMatched",
        "No ManagedCluster selected",
    )
    .await;

    Api::<ManagedCluster>::all(client.clone())
        .delete(&c1, &DeleteParams::default())
        .await
        .unwrap();
    // On a shared hub, another test's accept controller may have put its finalizer on the
    // cluster and stopped since: released here, as that controller would.
    let release = json!({"metadata": {"finalizers": null}});
    let _ = Api::<ManagedCluster>::all(client.clone())
        .patch(&c1, &PatchParams::default(), &Patch::Merge(&release))
        .await;
    wait_empty(
        &client,
        &s2,
        "True",
        "NoClusterMatched",
        "No ManagedCluster selected",
    )
    .await;
    controller.abort();
    clean_up(&client, &[&s1, &s2], &[&c1]).await;
}

#[tokio::test]
async fn managedclusterset_label_selector_and_global() {
    let (env, client) = hub().await;
    let _lock = HubLock::shared(&env, Lock::DefaultSets).await;
    let controller = start(&client, true);
    let set = unique("by-vendor");
    // The label value is unique too: clusters of other runs on a shared hub do not match.
    let (openshift, eks) = (unique("OpenShift"), unique("EKS"));
    create_set(
        &client,
        &set,
        json!({"clusterSelector": {"selectorType": "LabelSelector",
            "labelSelector": {"matchLabels": {"vendor": openshift}}}}),
    )
    .await;
    wait_empty(
        &client,
        &set,
        "True",
        "NoClusterMatched",
        "No ManagedCluster selected",
    )
    .await;
    let (ocp, other) = (unique("ocp"), unique("eks"));
    create_cluster(&client, &ocp, &[("vendor", &openshift)]).await;
    create_cluster(&client, &other, &[("vendor", &eks)]).await;
    wait_empty(
        &client,
        &set,
        "False",
        "ClustersSelected",
        "1 ManagedClusters selected",
    )
    .await;
    // The global set selects every cluster; the default set every cluster without a set label.
    wait_selected(&env, &client, "global", 2).await;
    wait_selected(&env, &client, "default", 2).await;
    controller.abort();
    clean_up(&client, &[&set], &[&ocp, &other]).await;
}

#[tokio::test]
async fn default_and_global_sets_recreated_and_reverted() {
    let (env, client) = hub().await;
    // It deletes and edits the shared default and global sets.
    let _lock = HubLock::exclusive(&env, Lock::DefaultSets).await;
    let controller = start(&client, true);
    let sets: Api<ManagedClusterSet> = Api::all(client.clone());
    let selector_of = |name: &'static str| {
        let sets = sets.clone();
        async move {
            let set = sets.get_opt(name).await.unwrap()?;
            Some(serde_json::to_value(set.spec.cluster_selector).unwrap())
        }
    };
    eventually("the default set", || async {
        selector_of("default")
            .await
            .filter(|s| s["selectorType"] == "ExclusiveClusterSetLabel")
    })
    .await;
    eventually("the global set", || async {
        selector_of("global")
            .await
            .filter(|s| s["selectorType"] == "LabelSelector" && s["labelSelector"] == json!({}))
    })
    .await;

    // Deleted → recreated.
    sets.delete("default", &DeleteParams::default()).await.unwrap();
    eventually("default recreated", || async { selector_of("default").await }).await;

    // Edited selector → reverted; other fields and labels kept.
    sets.patch(
        "global",
        &PatchParams::default(),
        &Patch::Merge(&json!({"metadata": {"labels": {"team": "a"}},
            "spec": {"clusterSelector": {"labelSelector": {"matchLabels": {"x": "y"}}},
                "managedNamespaces": [{"name": "ns1"}]}})),
    )
    .await
    .unwrap();
    eventually("global reverted", || async {
        selector_of("global")
            .await
            .filter(|s| s["labelSelector"] == json!({}) && s["selectorType"] == "LabelSelector")
    })
    .await;
    let global = sets.get("global").await.unwrap();
    assert_eq!(global.metadata.labels.unwrap()["team"], "a");
    assert_eq!(global.spec.managed_namespaces.unwrap()[0].name, "ns1");

    // autoupdate=false → left alone.
    sets.patch(
        "default",
        &PatchParams::default(),
        &Patch::Merge(
            &json!({"metadata": {"annotations": {"cluster.open-cluster-management.io/autoupdate": "false"}},
            "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}}}),
        ),
    )
    .await
    .unwrap();
    // Deleting global and waiting for it proves the loop ran after the edit.
    sets.delete("global", &DeleteParams::default()).await.unwrap();
    eventually("global recreated", || async {
        let set = sets.get_opt("global").await.unwrap()?;
        set.metadata.deletion_timestamp.is_none().then_some(())
    })
    .await;
    eventually("global recreated twice", || async { selector_of("global").await }).await;
    let default = selector_of("default").await.unwrap();
    assert_eq!(default["selectorType"], "LabelSelector");
    // Back to the sets a hub has (on a shared hub others rely on them): the default set without
    // autoupdate=false is recreated with its selector, the global set without the test's edits.
    sets.delete("default", &DeleteParams::default()).await.unwrap();
    sets.delete("global", &DeleteParams::default()).await.unwrap();
    eventually("default restored", || async {
        selector_of("default")
            .await
            .filter(|s| s["selectorType"] == "ExclusiveClusterSetLabel")
    })
    .await;
    eventually("global restored", || async {
        let set = sets.get_opt("global").await.unwrap()?;
        (set.metadata.deletion_timestamp.is_none() && set.spec.managed_namespaces.is_none()).then_some(())
    })
    .await;
    controller.abort();
}

#[tokio::test]
async fn clusters_without_a_set_label_join_the_default_set() {
    let (env, client) = hub().await;
    let _lock = HubLock::shared(&env, Lock::DefaultSets).await;
    let controller = start(&client, true);
    let (plain, empty, labelled) = (unique("plain"), unique("empty"), unique("labelled"));
    create_cluster(&client, &plain, &[]).await;
    create_cluster(
        &client,
        &empty,
        &[("cluster.open-cluster-management.io/clusterset", "")],
    )
    .await;
    create_cluster(
        &client,
        &labelled,
        &[("cluster.open-cluster-management.io/clusterset", "dev")],
    )
    .await;
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    for name in [&plain, &empty] {
        eventually(&format!("{name} labelled default"), || async {
            let c = clusters.get(name).await.unwrap();
            (c.metadata
                .labels
                .unwrap_or_default()
                .get("cluster.open-cluster-management.io/clusterset")
                == Some(&"default".to_string()))
            .then_some(())
        })
        .await;
    }
    wait_selected(&env, &client, "default", 2).await;
    let c = clusters.get(&labelled).await.unwrap();
    assert_eq!(
        c.metadata.labels.unwrap()["cluster.open-cluster-management.io/clusterset"],
        "dev"
    );
    controller.abort();
    clean_up(&client, &[], &[&plain, &empty, &labelled]).await;
}

#[tokio::test]
async fn managedclustersetbinding_bound_and_not_found() {
    let (_env, client) = hub().await;
    let controller = start(&client, false);
    let (set, ns) = (unique("bound"), unique("ns"));
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let bindings: Api<ManagedClusterSetBinding> = Api::namespaced(client.clone(), &ns);
    let binding: ManagedClusterSetBinding = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
        "metadata": {"name": set, "namespace": ns}, "spec": {"clusterSet": set}}))
    .unwrap();
    bindings.create(&PostParams::default(), &binding).await.unwrap();
    let bound = |status: &'static str, reason: &'static str| {
        let bindings = bindings.clone();
        let set = set.clone();
        async move {
            let b = bindings.get(&set).await.unwrap();
            let c = b.status?.conditions.find_condition("Bound")?.clone();
            (c.status == status && c.reason == reason).then_some(())
        }
    };
    eventually("Bound False", || bound("False", "ClusterSetNotFound")).await;
    create_set(&client, &set, json!({})).await;
    eventually("Bound True", || bound("True", "ClusterSetBound")).await;
    Api::<ManagedClusterSet>::all(client.clone())
        .delete(&set, &DeleteParams::default())
        .await
        .unwrap();
    eventually("Bound False again", || bound("False", "ClusterSetNotFound")).await;
    controller.abort();
    let _ = Api::<Namespace>::all(client.clone())
        .delete(&ns, &DeleteParams::default())
        .await;
}

#[tokio::test]
async fn managed_namespaces_follow_cluster_sets() {
    let (env, client) = hub().await;
    // Set a selects every cluster (as global does): no test may edit the global set meanwhile.
    let _lock = HubLock::shared(&env, Lock::DefaultSets).await;
    let controller = start(&client, false);
    let (set_a, set_b, cluster) = (unique("a-set"), unique("b-set"), unique("cluster"));
    create_set(
        &client,
        &set_b,
        json!({"managedNamespaces": [{"name": "ns-y"}, {"name": "ns-x"}]}),
    )
    .await;
    create_set(
        &client,
        &set_a,
        json!({"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}},
            "managedNamespaces": [{"name": "ns-z"}]}),
    )
    .await;
    create_cluster(
        &client,
        &cluster,
        &[("cluster.open-cluster-management.io/clusterset", &set_b)],
    )
    .await;
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let expected = vec![
        (set_a.clone(), "ns-z".to_string()),
        (set_b.clone(), "ns-x".to_string()),
        (set_b.clone(), "ns-y".to_string()),
    ];
    eventually("managed namespaces", || async {
        let c = clusters.get(&cluster).await.unwrap();
        let got: Vec<_> = c
            .status?
            .managed_namespaces?
            .into_iter()
            .map(|n| (n.cluster_set, n.name))
            .collect();
        (got == expected).then_some(())
    })
    .await;
    // Leaving set b drops its namespaces.
    clusters
        .patch(
            &cluster,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"cluster.open-cluster-management.io/clusterset": "elsewhere"}}})),
        )
        .await
        .unwrap();
    eventually("managed namespaces of set a only", || async {
        let c = clusters.get(&cluster).await.unwrap();
        let got: Vec<_> = c
            .status?
            .managed_namespaces?
            .into_iter()
            .map(|n| (n.cluster_set, n.name))
            .collect();
        (got == vec![(set_a.clone(), "ns-z".to_string())]).then_some(())
    })
    .await;
    controller.abort();
    clean_up(&client, &[&set_a, &set_b], &[&cluster]).await;
}
