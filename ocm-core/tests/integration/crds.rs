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
    // As `hub` installs them on a real cluster: a shared hub's add-on kinds stay stored as v1beta1
    // for the other suites' v1beta1 clients.
    let wanted: Vec<_> = crds::generated(&[InstallTarget::Hub])
        .unwrap()
        .into_iter()
        .map(|mut c| {
            if env.control_plane().is_none() {
                ocm_api::crd::store_addon_kinds_as_v1beta1(&mut c.crd);
            }
            c.crd
        })
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

/// A ManagedClusterAddOn whose registrations were written through v1alpha1 (`signerName`) still
/// takes status writes through v1beta1, where each registration has a `type`.
#[tokio::test]
async fn managed_cluster_addon_status_written_through_both_versions() {
    use kube::api::{Patch, PatchParams};
    use ocm_api::addon::{v1alpha1, v1beta1};
    let env = TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    if !crate::registration_e2e::support::addon_conversion(&env).await {
        eprintln!(
            "SKIP: the hub does not convert ManagedClusterAddOns between v1alpha1 and v1beta1 (its \
             CRD has conversion None, created by the tests on a plain cluster)"
        );
        return;
    }
    let client = env.client().await.unwrap();
    let namespace = format!("crds-addon-{}", std::process::id());
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": namespace}})).unwrap();
    namespaces.create(&PostParams::default(), &ns).await.unwrap();
    let beta: Api<v1beta1::ManagedClusterAddOn> = Api::namespaced(client.clone(), &namespace);
    let alpha: Api<v1alpha1::ManagedClusterAddOn> = Api::namespaced(client.clone(), &namespace);
    let addon: v1beta1::ManagedClusterAddOn = serde_json::from_value(serde_json::json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": "helloworld", "namespace": namespace}, "spec": {}}))
    .unwrap();
    beta.create(&PostParams::default(), &addon).await.unwrap();
    alpha
        .patch_status(
            "helloworld",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {
                "registrations": [{"signerName": "kubernetes.io/kube-apiserver-client"}]}})),
        )
        .await
        .unwrap();
    let condition = serde_json::json!({"type": "Available", "status": "True", "reason": "R",
        "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"});
    let patched = beta
        .patch_status(
            "helloworld",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"conditions": [condition]}})),
        )
        .await
        .unwrap();
    let registrations = patched.status.unwrap().registrations.unwrap();
    assert_eq!(
        registrations[0].type_,
        v1beta1::RegistrationConfigType::KubeClient
    );
    namespaces
        .delete(&namespace, &DeleteParams::default())
        .await
        .unwrap();
}
