//! A fleet of two managed clusters: both join the hub, and a ManifestWork in each cluster
//! namespace is applied by that cluster's work agent.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test")]

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use ocm_api::work::v1::ManifestWork;
use ocm_testkit::{Fleet, FleetError, FleetOptions};
use serde_json::json;

/// A name unique to this run, so that runs sharing a real cluster never meet.
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{prefix}-{:x}{:05x}", std::process::id(), nanos >> 12)
}

#[tokio::test]
async fn two_clusters_join_and_apply_their_works() {
    let names = [unique("fleet-a"), unique("fleet-b")];
    let fleet = Fleet::start(FleetOptions::new(names.clone())).await.unwrap();
    assert_eq!(fleet.clusters().len(), 2);
    for name in &names {
        let cluster = fleet.cluster(name).expect("the cluster is in the fleet");
        assert!(cluster.hub_kubeconfig_dir().join("kubeconfig").exists());
        let config_map = format!("{name}-config");
        let work: ManifestWork = serde_json::from_value(json!({
            "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": "hello"},
            "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": config_map, "namespace": "default"}, "data": {"cluster": name}}]}}
        }))
        .unwrap();
        Api::<ManifestWork>::namespaced(fleet.hub_client(), name)
            .create(&PostParams::default(), &work)
            .await
            .unwrap();
        let config_maps = Api::<ConfigMap>::namespaced(cluster.client(), "default");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(cm) = config_maps.get_opt(&config_map).await.unwrap() {
                assert_eq!(cm.data.unwrap()["cluster"], *name);
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the work was not applied on {name}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Api::<ManifestWork>::namespaced(fleet.hub_client(), name)
            .delete("hello", &DeleteParams::background())
            .await
            .unwrap();
    }
    fleet.cleanup().await.unwrap();
}

#[tokio::test]
async fn asking_for_a_cluster_not_in_the_fleet_is_an_error() {
    let name = unique("fleet-c");
    let fleet = Fleet::start(FleetOptions::new([name.clone()])).await.unwrap();
    let error = fleet
        .addon_hub_kubeconfig_dir("no-such-cluster", "helloworld", Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(
        matches!(error, FleetError::UnknownCluster(ref c) if c == "no-such-cluster"),
        "{error}"
    );
    // An add-on that was never enabled gets no credentials: the wait ends with a timeout.
    let error = fleet
        .addon_hub_kubeconfig_dir(&name, "never-enabled", Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(matches!(error, FleetError::Timeout { .. }), "{error}");
    fleet.cleanup().await.unwrap();
}
