//! The config controllers (addon-framework.md §2.8, §5.3): spec hashes and observed generations
//! of the configs ManagedClusterAddOns and ClusterManagementAddOns refer to, checked against the
//! upstream vectors.

#![allow(clippy::unwrap_used, reason = "test")]

use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use ocm_addon_framework::agent::ConfigGvr;
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use serde_json::json;

use crate::support::{
    Scenario, TestAddon, create_namespace, eventually, hub, patch_mca_status, run_manager, unique,
};

const GROUP: &str = "addon.open-cluster-management.io";
const RESOURCE: &str = "addondeploymentconfigs";

/// §5.3: the hashes of `customizedVariables` `test`, `test1`, `test2`.
const HASH_TEST: &str = "ea4e6089e8b2f584c1cd8b86e16a15df3186b30744f433ede7436091c93a4cc7";
const HASH_TEST1: &str = "b746cc98936955dd2168640f0011a14f2a74be306c747bc8ba829328cc772690";
const HASH_TEST2: &str = "3e6348b0c0f0a341ce28d0a2f99bc41fc63fb17d947eb5a45284729fbeb63b32";

fn adc_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: "v1alpha1".into(),
        api_version: format!("{GROUP}/v1alpha1"),
        kind: "AddOnDeploymentConfig".into(),
        plural: RESOURCE.into(),
    }
}

fn adc_spec(variable: &str) -> serde_json::Value {
    json!({"agentInstallNamespace": "open-cluster-management-agent-addon",
           "customizedVariables": [{"name": variable, "value": variable}],
           "proxyConfig": {}})
}

async fn create_adc(client: &kube::Client, namespace: &str, name: &str, variable: &str) {
    let adc: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "AddOnDeploymentConfig",
        "metadata": {"name": name, "namespace": namespace},
        "spec": adc_spec(variable)
    }))
    .unwrap();
    Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &adc_resource())
        .create(&PostParams::default(), &adc)
        .await
        .unwrap();
}

fn addon_supporting_adc(name: &str) -> TestAddon {
    let mut addon = TestAddon::named(name);
    addon.options.supported_configs = vec![ConfigGvr {
        group: GROUP.into(),
        version: "v1alpha1".into(),
        resource: RESOURCE.into(),
    }];
    addon
}

/// An AddOnDeploymentConfig named in the ManagedClusterAddOn's `spec.configs` gets
/// `desiredConfig.specHash` (the §5.3 vector) and `lastObservedGeneration`, both following
/// updates of the config.
#[tokio::test]
async fn config_spec_hash_of_mca_spec_configs() {
    let hub = hub().await;
    let s = Scenario::new("cfgmca");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    let adc = unique("adc");
    create_adc(&hub.client, &s.cluster, &adc, "test").await;
    let _manager = run_manager(&hub.client, vec![addon_supporting_adc(&s.addon).shared()]);
    s.create_mca(
        &hub.client,
        json!({"configs": [{"group": GROUP, "resource": RESOURCE, "namespace": s.cluster, "name": adc}]}),
        &cma,
    )
    .await;
    // What the ocm addon-manager's configuration controller writes.
    patch_mca_status(
        &hub.client,
        &s.cluster,
        &s.addon,
        json!({"configReferences": [{"group": GROUP, "resource": RESOURCE,
            "desiredConfig": {"namespace": s.cluster, "name": adc}}]}),
    )
    .await;
    let reference = |m: &ManagedClusterAddOn| {
        serde_json::to_value(&m.status.as_ref().unwrap().config_references.as_ref().unwrap()[0]).unwrap()
    };
    eventually("the spec hash of test", || async {
        s.get_mca(&hub.client).await.filter(|m| {
            let r = reference(m);
            r["desiredConfig"]["specHash"] == HASH_TEST && r["lastObservedGeneration"] == 1
        })
    })
    .await;
    Api::<DynamicObject>::namespaced_with(hub.client.clone(), &s.cluster, &adc_resource())
        .patch(
            &adc,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": adc_spec("test1")})),
        )
        .await
        .unwrap();
    eventually("the spec hash of test1", || async {
        s.get_mca(&hub.client).await.filter(|m| {
            let r = reference(m);
            r["desiredConfig"]["specHash"] == HASH_TEST1 && r["lastObservedGeneration"] == 2
        })
    })
    .await;
    s.cleanup(&hub.client).await;
}

/// A reference inherited from the ClusterManagementAddOn (not in `spec.configs`) gets
/// `lastObservedGeneration` but its hash stays as written.
#[tokio::test]
async fn config_inherited_reference_gets_the_generation_only() {
    let hub = hub().await;
    let s = Scenario::new("cfginh");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    let adc = unique("adc");
    create_adc(&hub.client, &s.cluster, &adc, "test").await;
    let _manager = run_manager(&hub.client, vec![addon_supporting_adc(&s.addon).shared()]);
    s.create_mca(&hub.client, json!({}), &cma).await;
    patch_mca_status(
        &hub.client,
        &s.cluster,
        &s.addon,
        json!({"configReferences": [{"group": GROUP, "resource": RESOURCE,
            "desiredConfig": {"namespace": s.cluster, "name": adc, "specHash": "from-cma"}}]}),
    )
    .await;
    let mca = eventually("the observed generation", || async {
        s.get_mca(&hub.client).await.filter(|m| {
            m.status.as_ref().unwrap().config_references.as_ref().unwrap()[0].last_observed_generation
                == Some(1)
        })
    })
    .await;
    let reference = &mca.status.unwrap().config_references.unwrap()[0];
    assert_eq!(
        reference.desired_config.as_ref().unwrap().spec_hash.as_deref(),
        Some("from-cma")
    );
    s.cleanup(&hub.client).await;
}

/// A ClusterManagementAddOn's default config reference and install-progression reference get
/// their spec hashes (the §5.3 vectors); a missing config hashes to "".
#[tokio::test]
async fn config_spec_hash_of_cma_default_config() {
    let hub = hub().await;
    let s = Scenario::new("cfgcma");
    let namespace = unique("cfgcma-ns");
    create_namespace(&hub.client, &namespace).await;
    let (default, placed) = (unique("adc"), unique("adc"));
    create_adc(&hub.client, &namespace, &default, "test").await;
    create_adc(&hub.client, &namespace, &placed, "test2").await;
    s.create_cluster_and_cma(
        &hub.client,
        json!({"defaultConfigs": [{"group": GROUP, "resource": RESOURCE, "namespace": namespace, "name": default}]}),
    )
    .await;
    let _manager = run_manager(&hub.client, vec![addon_supporting_adc(&s.addon).shared()]);
    let cmas = Api::<ClusterManagementAddOn>::all(hub.client.clone());
    // What the ocm addon-manager's install-progression controller writes.
    let status = json!({"status": {
        "defaultConfigReferences": [
            {"group": GROUP, "resource": RESOURCE, "desiredConfig": {"namespace": namespace, "name": default}},
            {"group": GROUP, "resource": RESOURCE, "desiredConfig": {"namespace": namespace, "name": "missing"}}],
        "installProgressions": [{"namespace": namespace, "name": "placement1", "configReferences": [
            {"group": GROUP, "resource": RESOURCE, "desiredConfig": {"namespace": namespace, "name": placed}}]}]}});
    cmas.patch_status(&s.addon, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    eventually("the CMA spec hashes", || async {
        let cma = cmas.get(&s.addon).await.unwrap();
        let status = serde_json::to_value(cma.status.as_ref()?).unwrap();
        (status["defaultConfigReferences"][0]["desiredConfig"]["specHash"] == HASH_TEST
            && status["defaultConfigReferences"][1]["desiredConfig"]["specHash"] == ""
            && status["installProgressions"][0]["configReferences"][0]["desiredConfig"]["specHash"]
                == HASH_TEST2)
            .then_some(())
    })
    .await;
    // A change of the config updates the hash.
    Api::<DynamicObject>::namespaced_with(hub.client.clone(), &namespace, &adc_resource())
        .patch(
            &default,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": adc_spec("test1")})),
        )
        .await
        .unwrap();
    eventually("the updated CMA spec hash", || async {
        let cma = cmas.get(&s.addon).await.unwrap();
        let status = serde_json::to_value(cma.status.as_ref()?).unwrap();
        (status["defaultConfigReferences"][0]["desiredConfig"]["specHash"] == HASH_TEST1).then_some(())
    })
    .await;
    s.cleanup(&hub.client).await;
    let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(hub.client.clone())
        .delete(&namespace, &DeleteParams::default())
        .await;
}
