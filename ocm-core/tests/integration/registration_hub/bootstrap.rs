//! Bootstrap kubeconfigs: what `clusteradm get token` hands a joining cluster.

use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_core::registration::hub::bootstrap;

use super::{CLUSTERS_GROUP, SIGNER, USAGES, agent_csr, client_from, forbidden, unique};

#[tokio::test]
async fn bootstrap_kubeconfig_can_join_but_not_read_secrets() {
    let env = ocm_controlplane::TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let admin = env.client().await.unwrap();
    // Real kubeconfigs often name a CA file instead of embedding it: take either.
    let (server, ca) = crate::support::server_and_ca(env.kubeconfig_path());
    let text = bootstrap::bootstrap_kubeconfig(&admin, &server, &ca, Duration::from_secs(3600))
        .await
        .unwrap();
    let joiner = client_from(&text).await;
    let name = unique("boot");
    let managed: ManagedCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": name}, "spec": {"hubAcceptsClient": false}}))
    .unwrap();
    Api::<ManagedCluster>::all(joiner.clone())
        .create(&PostParams::default(), &managed)
        .await
        .unwrap();
    let csr = agent_csr(
        &unique("boot-csr"),
        &name,
        &format!("system:open-cluster-management:{name}:a1"),
        &[&format!("system:open-cluster-management:{name}"), CLUSTERS_GROUP],
        USAGES,
        SIGNER,
    );
    let created = Api::<CertificateSigningRequest>::all(joiner.clone())
        .create(&PostParams::default(), &csr)
        .await
        .unwrap();
    assert_eq!(
        created.spec.username.as_deref(),
        Some("system:serviceaccount:open-cluster-management:agent-registration-bootstrap")
    );
    assert!(forbidden(
        Api::<Secret>::all(joiner.clone())
            .list(&ListParams::default())
            .await
    ));
    assert!(forbidden(
        Api::<Secret>::namespaced(joiner, "open-cluster-management")
            .list(&ListParams::default())
            .await
    ));
    // Idempotent: a second kubeconfig works as well.
    bootstrap::bootstrap_kubeconfig(&admin, &server, &ca, Duration::from_secs(600))
        .await
        .unwrap();
    Api::<ManagedCluster>::all(admin.clone())
        .delete(&name, &Default::default())
        .await
        .unwrap();
    let _ = Api::<CertificateSigningRequest>::all(admin.clone())
        .delete(csr.metadata.name.as_deref().unwrap(), &Default::default())
        .await;
}
