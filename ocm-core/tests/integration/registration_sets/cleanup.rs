//! Scenario "managedcluster deletion" (ResourceCleanup): add-ons first, then ManifestWorks by
//! cleanup priority, the `Deleting` condition, and the finalizer removed at the end.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail the test on any error"
)]

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::conditions::ConditionList;
use ocm_api::names::finalizers::MANAGED_CLUSTER_RESOURCE_CLEANUP;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::registration::hub::cleanup::{self, CleanupOptions};
use serde_json::json;

use super::{addon_resource, create_dynamic, deleting, eventually, hub, release, unique, work_resource};
use crate::hub_lock::{HubLock, Lock};

fn options() -> CleanupOptions {
    CleanupOptions {
        requeue: Duration::from_millis(300),
        ..CleanupOptions::default()
    }
}

/// Creates cluster `name` and its namespace, and waits for the cleanup finalizer.
async fn cluster_with_namespace(client: &kube::Client, name: &str) {
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let cluster: ManagedCluster = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": name}, "spec": {"hubAcceptsClient": true}}))
    .unwrap();
    clusters.create(&PostParams::default(), &cluster).await.unwrap();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    // On a shared hub the accept controller of another test may have created it already.
    match Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => panic!("creating namespace {name}: {error}"),
    }
    eventually("the resource-cleanup finalizer", || {
        let clusters = clusters.clone();
        async move {
            let c = clusters.get(name).await.unwrap();
            c.metadata
                .finalizers
                .unwrap_or_default()
                .iter()
                .any(|f| f == MANAGED_CLUSTER_RESOURCE_CLEANUP)
                .then_some(())
        }
    })
    .await;
}

async fn work(client: &kube::Client, ns: &str, name: &str, priority: Option<&str>) {
    let mut annotations = serde_json::Map::new();
    if let Some(p) = priority {
        annotations.insert("open-cluster-management.io/cleanup-priority".into(), json!(p));
    }
    create_dynamic(
        client,
        &work_resource(),
        ns,
        json!({"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": name, "finalizers": ["test.open-cluster-management.io/hold"], "annotations": annotations},
            "spec": {"workload": {"manifests": []}}}),
    )
    .await;
}

async fn wait_deleting(client: &kube::Client, ns: &str, name: &str) {
    let works = work_resource();
    eventually(&format!("{name} deleting"), || {
        let works = works.clone();
        async move { (deleting(client, &works, ns, name).await == Some(true)).then_some(()) }
    })
    .await;
}

async fn deleting_condition(client: &kube::Client, name: &str) -> Option<(String, String, String)> {
    let c = Api::<ManagedCluster>::all(client.clone())
        .get_opt(name)
        .await
        .unwrap()?;
    let cond = c.status?.conditions.find_condition("Deleting")?.clone();
    Some((cond.status, cond.reason, cond.message))
}

#[tokio::test]
async fn managedcluster_deletion() {
    let (env, client) = hub().await;
    let _lock = HubLock::shared(&env, Lock::HubControllers).await;
    let controller = tokio::spawn(cleanup::run(
        client.clone(),
        options(),
        ControllerMetrics::default(),
    ));
    let name = unique("gc");
    cluster_with_namespace(&client, &name).await;
    let addons = addon_resource();
    let works = work_resource();
    create_dynamic(
        &client,
        &addons,
        &name,
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
            "metadata": {"name": "addon1", "finalizers": ["test.open-cluster-management.io/hold"]}, "spec": {}}),
    )
    .await;
    work(&client, &name, "work1", None).await;
    work(&client, &name, "work2", Some("100")).await;
    work(&client, &name, "work3", Some("20")).await;

    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    clusters.delete(&name, &DeleteParams::default()).await.unwrap();
    eventually("addon1 deleting", || {
        let addons = addons.clone();
        let (client, name) = (&client, &name);
        async move { (deleting(client, &addons, name, "addon1").await == Some(true)).then_some(()) }
    })
    .await;
    let message = eventually("Deleting ResourceRemaining for add-ons", || async {
        deleting_condition(&client, &name)
            .await
            .filter(|(_, _, m)| m.contains("managedclusteraddons"))
    })
    .await;
    assert_eq!(
        message,
        (
            "False".to_string(),
            "ResourceRemaining".to_string(),
            "The resource managedclusteraddons is remaning, the remaining count is 1, the finalizer pending count is 1"
                .to_string()
        )
    );
    for w in ["work1", "work2", "work3"] {
        assert_eq!(deleting(&client, &works, &name, w).await, Some(false), "{w}");
    }

    release(&client, &addons, &name, "addon1").await;
    wait_deleting(&client, &name, "work1").await;
    assert_eq!(deleting(&client, &works, &name, "work2").await, Some(false));
    assert_eq!(deleting(&client, &works, &name, "work3").await, Some(false));

    release(&client, &works, &name, "work1").await;
    wait_deleting(&client, &name, "work3").await;
    assert_eq!(deleting(&client, &works, &name, "work2").await, Some(false));

    release(&client, &works, &name, "work3").await;
    wait_deleting(&client, &name, "work2").await;
    let (status, reason, _) = deleting_condition(&client, &name).await.unwrap();
    assert_eq!((status.as_str(), reason.as_str()), ("False", "ResourceRemaining"));

    release(&client, &works, &name, "work2").await;
    eventually("the cluster gone", || {
        let clusters = clusters.clone();
        let name = name.clone();
        async move { clusters.get_opt(&name).await.unwrap().is_none().then_some(()) }
    })
    .await;
    controller.abort();
    let _ = Api::<Namespace>::all(client.clone())
        .delete(&name, &DeleteParams::default())
        .await;
}

#[tokio::test]
async fn managedcluster_deletion_cluster_gone() {
    let (env, client) = hub().await;
    let _lock = HubLock::shared(&env, Lock::HubControllers).await;
    let controller = tokio::spawn(cleanup::run(
        client.clone(),
        options(),
        ControllerMetrics::default(),
    ));
    let name = unique("gc-gone");
    cluster_with_namespace(&client, &name).await;
    let works = work_resource();
    work(&client, &name, "work1", None).await;
    work(&client, &name, "work2", Some("50")).await;

    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    clusters.delete(&name, &DeleteParams::default()).await.unwrap();
    clusters
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    eventually("the cluster gone", || {
        let clusters = clusters.clone();
        let name = name.clone();
        async move { clusters.get_opt(&name).await.unwrap().is_none().then_some(()) }
    })
    .await;
    wait_deleting(&client, &name, "work1").await;
    assert_eq!(deleting(&client, &works, &name, "work2").await, Some(false));
    release(&client, &works, &name, "work1").await;
    wait_deleting(&client, &name, "work2").await;
    release(&client, &works, &name, "work2").await;
    eventually("work2 gone", || async {
        deleting(&client, &works, &name, "work2")
            .await
            .is_none()
            .then_some(())
    })
    .await;
    controller.abort();
    let _ = Api::<Namespace>::all(client.clone())
        .delete(&name, &DeleteParams::default())
        .await;
}
