//! addon_registration and addon_lease scenarios.

use k8s_openapi::api::{
    coordination::v1::{Lease, LeaseSpec},
    core::v1::{Namespace, Secret},
};
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_core::{metrics::ControllerMetrics, registration::agent};

use super::support::{Setup, eventually};

#[tokio::test]
async fn addon_registration_kube_client_secret_in_install_namespace_and_lease() {
    let setup = Setup::new("addon-1").await;
    let mut options = setup.options();
    options.addon_sync_period = std::time::Duration::from_millis(300);
    let handle = tokio::spawn(agent::run(
        setup.spoke_client.clone(),
        options,
        ControllerMetrics::default(),
    ));
    eventually(30, "CSR", || async {
        (!setup.pending_csrs().await.is_empty()).then_some(())
    })
    .await;
    setup.approve_pending().await;
    setup.accept(1).await;
    eventually(30, "Joined", || async {
        setup.condition_true("ManagedClusterJoined").await.then_some(())
    })
    .await;

    let ns: Api<Namespace> = Api::all(setup.spoke_client.clone());
    ns.create(
        &PostParams::default(),
        &Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some("addon-install".into()),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let addons: Api<ManagedClusterAddOn> = Api::namespaced(setup.hub_client.clone(), "addon-1");
    let addon: ManagedClusterAddOn = serde_json::from_value(serde_json::json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": "helloworld", "namespace": "addon-1"}, "spec": {}}))
    .unwrap();
    addons.create(&PostParams::default(), &addon).await.unwrap();
    // The hub add-on manager writes registrations; v1alpha1's form (signerName) is the stored one.
    let alpha: Api<ocm_api::addon::v1alpha1::ManagedClusterAddOn> =
        Api::namespaced(setup.hub_client.clone(), "addon-1");
    alpha
        .patch_status(
            "helloworld",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {
                "namespace": "addon-install",
                "registrations": [{"signerName": "kubernetes.io/kube-apiserver-client"}]}})),
        )
        .await
        .unwrap();

    // An add-on CSR with both labels and the add-on's default subject.
    let csr = eventually(30, "add-on CSR", || async {
        setup.pending_csrs().await.into_iter().next()
    })
    .await;
    let labels = csr.metadata.labels.clone().unwrap();
    assert_eq!(labels["open-cluster-management.io/addon-name"], "helloworld");
    assert!(
        csr.metadata
            .name
            .as_deref()
            .unwrap()
            .starts_with("addon-addon-1-helloworld-")
    );
    setup.approve_pending().await;

    let secrets: Api<Secret> = Api::namespaced(setup.spoke_client.clone(), "addon-install");
    let secret = eventually(30, "add-on secret", || async {
        secrets.get_opt("helloworld-hub-kubeconfig").await.unwrap()
    })
    .await;
    let data = secret.data.unwrap();
    for key in ["tls.crt", "tls.key", "cluster-name", "kubeconfig"] {
        assert!(data.contains_key(key), "secret lacks {key}");
    }
    assert!(!data.contains_key("agent-name"));
    let condition = |type_: &'static str| {
        let addons = addons.clone();
        async move {
            addons
                .get("helloworld")
                .await
                .ok()?
                .status?
                .conditions?
                .into_iter()
                .find(|c| c.type_ == type_)
        }
    };
    let rotated = eventually(30, "ClusterCertificateRotated", || {
        condition("ClusterCertificateRotated")
    })
    .await;
    assert_eq!(
        (rotated.status.as_str(), rotated.reason.as_str()),
        ("True", "ClientCertificateUpdated")
    );

    // addon_lease: no lease → Unknown; a renewed lease → True.
    let unknown = eventually(30, "Available Unknown", || async {
        condition("Available").await.filter(|c| c.status == "Unknown")
    })
    .await;
    assert_eq!(unknown.reason, "ManagedClusterAddOnLeaseNotFound");
    let leases: Api<Lease> = Api::namespaced(setup.spoke_client.clone(), "addon-install");
    leases
        .create(
            &PostParams::default(),
            &Lease {
                metadata: kube::api::ObjectMeta {
                    name: Some("helloworld".into()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    renew_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                        k8s_openapi::jiff::Timestamp::now(),
                    )),
                    ..Default::default()
                }),
            },
        )
        .await
        .unwrap();
    let available = eventually(30, "Available True", || async {
        condition("Available").await.filter(|c| c.status == "True")
    })
    .await;
    assert_eq!(available.message, "helloworld add-on is available.");

    // Deleting the add-on deletes its secret.
    addons
        .delete("helloworld", &DeleteParams::default())
        .await
        .unwrap();
    eventually(30, "add-on secret deleted", || async {
        secrets
            .get_opt("helloworld-hub-kubeconfig")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    handle.abort();
}
