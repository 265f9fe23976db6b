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
    if !crate::registration_e2e::support::addon_conversion(&setup.hub).await {
        eprintln!("{}", super::support::NO_ADDON_CONVERSION);
        setup.finish().await;
        return;
    }
    let install = format!("{}-install", setup.cluster);
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
                name: Some(install.clone()),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let addons: Api<ManagedClusterAddOn> = Api::namespaced(setup.hub_client.clone(), &setup.cluster);
    let addon: ManagedClusterAddOn = serde_json::from_value(serde_json::json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": "helloworld", "namespace": setup.cluster}, "spec": {}}))
    .unwrap();
    addons.create(&PostParams::default(), &addon).await.unwrap();
    // The hub add-on manager writes registrations; v1alpha1's form (signerName) is the stored one.
    let alpha: Api<ocm_api::addon::v1alpha1::ManagedClusterAddOn> =
        Api::namespaced(setup.hub_client.clone(), &setup.cluster);
    alpha
        .patch_status(
            "helloworld",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {
                "namespace": install,
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
            .starts_with(&format!("addon-{}-helloworld-", setup.cluster))
    );
    setup.approve_pending().await;

    let secrets: Api<Secret> = Api::namespaced(setup.spoke_client.clone(), &install);
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
    let leases: Api<Lease> = Api::namespaced(setup.spoke_client.clone(), &install);
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
    let _ = handle.await;
    let _ = ns.delete(&install, &DeleteParams::default()).await;
    setup.finish().await;
}

#[tokio::test]
async fn addon_registration_custom_signer_secret_without_kubeconfig() {
    let setup = Setup::new("addon-2").await;
    if !crate::registration_e2e::support::addon_conversion(&setup.hub).await {
        eprintln!("{}", super::support::NO_ADDON_CONVERSION);
        setup.finish().await;
        return;
    }
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

    // No install namespace anywhere: the default one.
    let ns: Api<Namespace> = Api::all(setup.spoke_client.clone());
    let _ = ns
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: kube::api::ObjectMeta {
                    name: Some("open-cluster-management-agent-addon".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await;
    let alpha: Api<ocm_api::addon::v1alpha1::ManagedClusterAddOn> =
        Api::namespaced(setup.hub_client.clone(), &setup.cluster);
    let addon: ocm_api::addon::v1alpha1::ManagedClusterAddOn = serde_json::from_value(serde_json::json!({
        "apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": "myaddon", "namespace": setup.cluster}, "spec": {}}))
    .unwrap();
    alpha.create(&PostParams::default(), &addon).await.unwrap();
    alpha
        .patch_status(
            "myaddon",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {
                "registrations": [{"signerName": "example.com/signer-name",
                    "subject": {"user": "u1", "groups": ["g1"], "organizationUnit": ["ou1"]}}]}})),
        )
        .await
        .unwrap();

    let csr = eventually(30, "custom-signer CSR", || async {
        setup.pending_csrs().await.into_iter().next()
    })
    .await;
    assert_eq!(csr.spec.signer_name, "example.com/signer-name");
    let request =
        rcgen::CertificateSigningRequestParams::from_pem(std::str::from_utf8(&csr.spec.request.0).unwrap())
            .unwrap();
    let subject: Vec<String> = request
        .params
        .distinguished_name
        .iter()
        .map(|(ty, v)| format!("{ty:?}={v:?}"))
        .collect();
    let subject = subject.join(",");
    assert!(
        subject.contains("u1") && subject.contains("g1") && subject.contains("ou1"),
        "{subject}"
    );
    setup.approve_pending().await;
    super::support::issue_custom(&setup.hub_client, &csr).await;

    let secrets: Api<Secret> =
        Api::namespaced(setup.spoke_client.clone(), "open-cluster-management-agent-addon");
    let secret = eventually(30, "custom-signer secret", || async {
        secrets
            .get_opt("myaddon-example.com-signer-name-client-cert")
            .await
            .unwrap()
    })
    .await;
    let data = secret.data.unwrap();
    assert!(
        data.contains_key("tls.crt") && data.contains_key("tls.key") && data.contains_key("cluster-name")
    );
    assert!(!data.contains_key("kubeconfig"));
    let labels = secret.metadata.labels.unwrap_or_default();
    assert_eq!(labels["open-cluster-management.io/addon-name"], "myaddon");

    // unjoin: the agent stops; its hub credentials, their files and the add-on secret go, the
    // ManagedCluster on the hub stays. A second unjoin finds nothing.
    handle.abort();
    let _ = handle.await;
    let options = setup.options();
    let unjoined = agent::unjoin(setup.spoke_client.clone(), &options).await.unwrap();
    assert_eq!(unjoined.cluster.as_deref(), Some(setup.cluster.as_str()));
    assert_eq!(unjoined.secrets.len(), 2, "{unjoined:?}");
    assert!(setup.secret().await.is_none());
    assert!(
        secrets
            .get_opt("myaddon-example.com-signer-name-client-cert")
            .await
            .unwrap()
            .is_none()
    );
    for file in ["kubeconfig", "tls.crt", "tls.key", "cluster-name", "agent-name"] {
        assert!(!setup.hub_dir().join(file).exists(), "{file} left behind");
    }
    assert!(setup.cluster().await.is_some());
    let again = agent::unjoin(setup.spoke_client.clone(), &options).await.unwrap();
    assert!(again.secrets.is_empty() && again.files.is_empty(), "{again:?}");
    setup.finish().await;
}
