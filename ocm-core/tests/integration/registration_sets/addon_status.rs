//! Scenario "addon status on the hub": add-ons' `Available` copied from an Unknown cluster, and the
//! `feature.open-cluster-management.io/addon-<name>` labels.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail the test on any error"
)]

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::conditions::ConditionList;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::registration::hub::addon_status::{self, AddonStatusOptions};
use serde_json::json;

use super::{eventually, hub, unique};

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> serde_json::Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

async fn feature(clusters: &Api<ManagedCluster>, cluster: &str, addon: &str) -> Option<String> {
    clusters
        .get(cluster)
        .await
        .unwrap()
        .metadata
        .labels
        .unwrap_or_default()
        .get(&format!("feature.open-cluster-management.io/addon-{addon}"))
        .cloned()
}

#[tokio::test]
async fn addon_available_copied_on_cluster_unknown_and_feature_labels() {
    let (_env, client) = hub().await;
    let controller = tokio::spawn(addon_status::run(
        client.clone(),
        AddonStatusOptions::default(),
        ControllerMetrics::default(),
    ));
    let name = unique("addons");
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
    let addons: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &name);
    for (addon, status) in [("good", "True"), ("bad", "False")] {
        let object: ManagedClusterAddOn = serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
            "metadata": {"name": addon, "namespace": name}, "spec": {}}))
        .unwrap();
        addons.create(&PostParams::default(), &object).await.unwrap();
        addons
            .patch_status(
                addon,
                &PatchParams::default(),
                &Patch::Merge(
                    &json!({"status": {"conditions": [condition("Available", status, "Probe", "")]}}),
                ),
            )
            .await
            .unwrap();
    }
    // No Available condition on the cluster yet: no labels.
    assert_eq!(feature(&clusters, &name, "good").await, None);

    let set_available = |status: &'static str, reason: &'static str, message: &'static str| {
        let clusters = clusters.clone();
        let name = name.clone();
        async move {
            clusters
                .patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"status": {"conditions": [
                        condition("ManagedClusterConditionAvailable", status, reason, message)]}})),
                )
                .await
                .unwrap();
        }
    };
    set_available("True", "ManagedClusterAvailable", "Managed cluster is available").await;
    eventually("available / unhealthy labels", || async {
        (feature(&clusters, &name, "good").await.as_deref() == Some("available")
            && feature(&clusters, &name, "bad").await.as_deref() == Some("unhealthy"))
        .then_some(())
    })
    .await;

    let message = "Registration agent stopped updating its lease.";
    set_available("Unknown", "ManagedClusterLeaseUpdateStopped", message).await;
    for addon in ["good", "bad"] {
        eventually(&format!("{addon} Available Unknown"), || async {
            let a = addons.get(addon).await.unwrap();
            let c = a.status?.conditions.find_condition("Available")?.clone();
            (c.status == "Unknown" && c.reason == "ManagedClusterLeaseUpdateStopped" && c.message == message)
                .then_some(())
        })
        .await;
    }
    eventually("unreachable labels", || async {
        (feature(&clusters, &name, "good").await.as_deref() == Some("unreachable")
            && feature(&clusters, &name, "bad").await.as_deref() == Some("unreachable"))
        .then_some(())
    })
    .await;

    addons.delete("bad", &DeleteParams::default()).await.unwrap();
    eventually("label of a deleted add-on removed", || async {
        feature(&clusters, &name, "bad").await.is_none().then_some(())
    })
    .await;
    assert_eq!(
        feature(&clusters, &name, "good").await.as_deref(),
        Some("unreachable")
    );
    controller.abort();
    // Removed for runs on a shared hub: the add-on, the cluster (finalizers another test's
    // controllers may have added released) and its namespace.
    let _ = addons.delete("good", &DeleteParams::default()).await;
    let _ = clusters.delete(&name, &DeleteParams::default()).await;
    let release = json!({"metadata": {"finalizers": null}});
    let _ = clusters
        .patch(&name, &PatchParams::default(), &Patch::Merge(&release))
        .await;
    let _ = Api::<Namespace>::all(client.clone())
        .delete(&name, &DeleteParams::default())
        .await;
}
