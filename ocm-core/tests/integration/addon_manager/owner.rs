//! The add-on owner controller: ManagedClusterAddOns become owned by the ClusterManagementAddOn
//! of their name unless it opts out (`lifecycle: self`); deleting the ClusterManagementAddOn then
//! garbage-collects them.

#![allow(clippy::unwrap_used, reason = "test")]

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_controlplane::TestEnv;
use ocm_core::addon::owner;
use ocm_core::metrics::ControllerMetrics;
use serde_json::json;

use crate::support::{eventually, unique};

async fn create_owner(
    api: &Api<ClusterManagementAddOn>,
    name: &str,
    lifecycle: Option<&str>,
) -> ClusterManagementAddOn {
    let mut cma = json!({"apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ClusterManagementAddOn",
        "metadata": {"name": name}, "spec": {}});
    if let Some(value) = lifecycle {
        cma["metadata"]["annotations"] = json!({"addon.open-cluster-management.io/lifecycle": value});
    }
    api.create(&PostParams::default(), &serde_json::from_value(cma).unwrap())
        .await
        .unwrap()
}

async fn create_addon(api: &Api<ManagedClusterAddOn>, name: &str) {
    let mca = json!({"apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": name}, "spec": {}});
    api.create(&PostParams::default(), &serde_json::from_value(mca).unwrap())
        .await
        .unwrap();
}

fn owner_uid(addon: &ManagedClusterAddOn) -> Option<String> {
    addon
        .metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|r| {
            r.kind == "ClusterManagementAddOn"
                && r.controller == Some(true)
                && r.block_owner_deletion == Some(true)
        })
        .map(|r| r.uid.clone())
}

#[tokio::test]
async fn addons_are_owned_by_their_cluster_management_addon_unless_it_manages_itself() {
    let env = TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("addon-owner");
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
    let namespaces = Api::<Namespace>::all(client.clone());
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let controller = tokio::spawn(owner::run_with(
        client.clone(),
        owner::OwnerOptions {
            namespaces: vec![ns.clone()],
        },
        ControllerMetrics::default(),
    ));
    let cmas = Api::<ClusterManagementAddOn>::all(client.clone());
    let addons = Api::<ManagedClusterAddOn>::namespaced(client.clone(), &ns);
    let managed = unique("managed");
    let selfish = unique("selfish");
    let managed_cma = create_owner(&cmas, &managed, None).await;
    create_owner(&cmas, &selfish, Some("self")).await;
    create_addon(&addons, &selfish).await;
    create_addon(&addons, &managed).await;

    let uid = managed_cma.metadata.uid.clone();
    eventually("the add-on to be owned by its ClusterManagementAddOn", || async {
        (owner_uid(&addons.get(&managed).await.unwrap()) == uid).then_some(())
    })
    .await;
    assert_eq!(
        owner_uid(&addons.get(&selfish).await.unwrap()),
        None,
        "a self-managed add-on got an owner"
    );

    // Handing the add-on to the add-on manager makes its ManagedClusterAddOns owned.
    let patch =
        json!({"metadata": {"annotations": {"addon.open-cluster-management.io/lifecycle": "addon-manager"}}});
    cmas.patch(&selfish, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    eventually("the formerly self-managed add-on to be owned", || async {
        owner_uid(&addons.get(&selfish).await.unwrap()).map(|_| ())
    })
    .await;

    // Deleting the ClusterManagementAddOn garbage-collects its ManagedClusterAddOns.
    cmas.delete(&managed, &DeleteParams::background()).await.unwrap();
    eventually("the owned add-on to be garbage-collected", || async {
        addons.get_opt(&managed).await.unwrap().is_none().then_some(())
    })
    .await;

    controller.abort();
    cmas.delete(&selfish, &DeleteParams::background()).await.unwrap();
    namespaces.delete(&ns, &DeleteParams::background()).await.unwrap();
}
