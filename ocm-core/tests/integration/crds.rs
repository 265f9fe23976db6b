//! Installing the OCM CRDs through the API: idempotent, Established, and serving their kinds.

use std::time::Duration;

use kube::api::{Api, DeleteParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::crd::InstallTarget;
use ocm_controlplane::TestEnv;
use ocm_core::crds;

#[tokio::test]
async fn hub_crds_install_twice_and_serve_their_kinds() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let wanted: Vec<_> = crds::generated(&[InstallTarget::Hub])
        .unwrap()
        .into_iter()
        .map(|c| c.crd)
        .collect();
    let first = crds::install(&client, wanted.clone(), Duration::from_secs(30))
        .await
        .unwrap();
    assert!(first.contains(&"managedclusters.cluster.open-cluster-management.io".to_string()));
    // A second run changes nothing and succeeds.
    let second = crds::install(&client, wanted, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(first, second);
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let name = format!("crds-{}", std::process::id());
    let cluster: ManagedCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": name}, "spec": {"hubAcceptsClient": false}}))
    .unwrap();
    let created = clusters.create(&PostParams::default(), &cluster).await.unwrap();
    assert_eq!(created.spec.lease_duration_seconds, Some(60));
    clusters.delete(&name, &DeleteParams::default()).await.unwrap();
}
