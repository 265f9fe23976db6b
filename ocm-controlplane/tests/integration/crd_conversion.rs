//! Custom resources served in several versions: the OCM add-on kinds are converted between
//! v1alpha1 and v1beta1 on every read and write where their CRD says `Webhook` (the embedded
//! server installs them that way and converts in-process; a real hub needs OCM's conversion
//! webhook), and a CRD with conversion `None` only relabels and prunes to each version's schema
//! (what a real kube-apiserver does with the generated add-on CRDs too).

use futures::StreamExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams, WatchParams};
use kube::core::WatchEvent;
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

fn cma_api(client: &kube::Client, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(
        "addon.open-cluster-management.io",
        version,
        "ClusterManagementAddOn",
    );
    Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
}

fn dynamic(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

/// The conversion strategy of the installed ClusterManagementAddOn CRD.
async fn cma_strategy(client: &kube::Client) -> String {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds
        .get("clustermanagementaddons.addon.open-cluster-management.io")
        .await
        .unwrap();
    crd.spec
        .conversion
        .map_or_else(|| "None".to_string(), |c| c.strategy)
}

#[tokio::test]
async fn addon_kinds_convert_between_v1alpha1_and_v1beta1() {
    let env = TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    if env.control_plane().is_some() {
        assert_eq!(
            cma_strategy(&client).await,
            "Webhook",
            "the embedded server installs the add-on CRDs with conversion Webhook"
        );
    } else if cma_strategy(&client).await != "Webhook" {
        // A plain cluster with the CRDs as generated (conversion None) converts nothing: the
        // test of that is `addon_kinds_with_conversion_none_are_relabelled_and_pruned`.
        eprintln!("SKIP: the ClusterManagementAddOn CRD has conversion None on this cluster");
        return;
    }
    let alpha = cma_api(&client, "v1alpha1");
    let beta = cma_api(&client, "v1beta1");
    let name = unique("conv");

    // Written as v1alpha1 (the storage version), read as v1beta1.
    let created = alpha
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "addon.open-cluster-management.io/v1alpha1",
                "kind": "ClusterManagementAddOn",
                "metadata": {"name": name},
                "spec": {
                    "addOnMeta": {"displayName": "conversion test"},
                    "supportedConfigs": [
                        {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                         "defaultConfig": {"name": "global", "namespace": "ocm"}},
                        {"group": "addon.open-cluster-management.io", "resource": "addontemplates"}
                    ],
                    "installStrategy": {"type": "Manual"}
                }
            })),
        )
        .await
        .unwrap();
    let as_beta = beta.get(&name).await.unwrap();
    assert_eq!(
        as_beta.types.as_ref().unwrap().api_version,
        "addon.open-cluster-management.io/v1beta1"
    );
    assert_eq!(
        as_beta.data["spec"]["defaultConfigs"],
        json!([
            {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
             "name": "global", "namespace": "ocm"},
            {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
             "name": "__reserved_no_default__"}
        ])
    );
    assert!(as_beta.data["spec"].get("supportedConfigs").is_none());
    assert_eq!(as_beta.metadata.uid, created.metadata.uid);
    assert_eq!(
        as_beta.metadata.resource_version,
        created.metadata.resource_version
    );

    // Written as v1beta1 (a replace), read back as v1alpha1.
    let mut changed = as_beta.clone();
    changed.data["spec"]["defaultConfigs"] = json!([
        {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
         "name": "other", "namespace": "ocm"}
    ]);
    beta.replace(&name, &PostParams::default(), &changed)
        .await
        .unwrap();
    let as_alpha = alpha.get(&name).await.unwrap();
    assert_eq!(
        as_alpha.data["spec"]["supportedConfigs"],
        json!([{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                "defaultConfig": {"name": "other", "namespace": "ocm"}}])
    );

    // Lists and watches in v1beta1 carry converted objects.
    let listed = beta.list(&Default::default()).await.unwrap();
    let item = listed
        .items
        .iter()
        .find(|o| o.metadata.name.as_deref() == Some(&name))
        .unwrap();
    assert!(item.data["spec"].get("defaultConfigs").is_some());
    let mut events = beta
        .watch(
            &WatchParams::default().fields(&format!("metadata.name={name}")),
            "0",
        )
        .await
        .unwrap()
        .boxed();
    match events.next().await.unwrap().unwrap() {
        WatchEvent::Added(o) => {
            assert_eq!(
                o.types.unwrap().api_version,
                "addon.open-cluster-management.io/v1beta1"
            );
            assert!(o.data["spec"].get("defaultConfigs").is_some());
        }
        other => panic!("expected ADDED, got {other:?}"),
    }

    beta.delete(&name, &DeleteParams::default()).await.unwrap();
}

/// With conversion `None` (the generated CRDs' setting for kinds without a converter), objects
/// are only relabelled: the same fields come back under the other apiVersion.
#[tokio::test]
async fn conversion_none_only_relabels() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let group = format!("{}.example.com", unique("conv"));
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {"group": group, "scope": "Cluster",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}
            ]}
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let v2 = Api::<DynamicObject>::all_with(
        client.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk(&group, "v2", "Widget")),
    );
    let v1 = Api::<DynamicObject>::all_with(
        client.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk(&group, "v1", "Widget")),
    );
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let body = dynamic(json!({"apiVersion": format!("{group}/v2"), "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 3}}));
    loop {
        match v2.create(&PostParams::default(), &body).await {
            Ok(_) => break,
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("creating a Widget: {e}"),
        }
    }
    let read = v1.get("w").await.unwrap();
    assert_eq!(read.types.unwrap().api_version, format!("{group}/v1"));
    assert_eq!(read.data["spec"], json!({"size": 3}));
    crds.delete(&format!("widgets.{group}"), &DeleteParams::default())
        .await
        .unwrap();
}

/// A multi-version CRD whose versions declare different fields, conversion `None`.
fn two_schema_crd(group: &str) -> Value {
    let schema = |only: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"size": {"type": "integer"}, only: {"type": "string"}}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {"group": group, "scope": "Cluster",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "conversion": {"strategy": "None"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("onlyV1")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("onlyV2")}
            ]}
    })
}

/// With conversion `None`, an object read or written in another version than the stored one
/// keeps only what that version's schema declares: a field only the request's version knows is
/// lost on the way to storage, one only the storage version knows is not served in the other.
#[tokio::test]
async fn conversion_none_prunes_to_each_versions_schema() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let group = format!("{}.example.com", unique("prune"));
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(two_schema_crd(&group)).unwrap(),
    )
    .await
    .unwrap();
    let api = |version: &str| {
        Api::<DynamicObject>::all_with(
            client.clone(),
            &ApiResource::from_gvk(&GroupVersionKind::gvk(&group, version, "Gadget")),
        )
    };
    let (v1, v2) = (api("v1"), api("v2"));
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let sent = dynamic(json!({"apiVersion": format!("{group}/v2"), "kind": "Gadget",
        "metadata": {"name": "from-v2"}, "spec": {"size": 2, "onlyV2": "lost"}}));
    let created = loop {
        match v2.create(&PostParams::default(), &sent).await {
            Ok(created) => break created,
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("creating a Gadget: {e}"),
        }
    };
    // Stored as v1, which does not know onlyV2: the answer (read back from storage) lacks it.
    assert_eq!(created.data["spec"], json!({"size": 2}));
    assert_eq!(v2.get("from-v2").await.unwrap().data["spec"], json!({"size": 2}));

    v1.create(
        &PostParams::default(),
        &dynamic(json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget",
            "metadata": {"name": "from-v1"}, "spec": {"size": 1, "onlyV1": "kept"}})),
    )
    .await
    .unwrap();
    let as_v1 = v1.get("from-v1").await.unwrap();
    assert_eq!(as_v1.data["spec"], json!({"size": 1, "onlyV1": "kept"}));
    let as_v2 = v2.get("from-v1").await.unwrap();
    assert_eq!(as_v2.types.unwrap().api_version, format!("{group}/v2"));
    assert_eq!(as_v2.data["spec"], json!({"size": 1}));
    let listed = v2.list(&Default::default()).await.unwrap();
    let item = listed
        .items
        .iter()
        .find(|o| o.metadata.name.as_deref() == Some("from-v1"))
        .unwrap();
    assert_eq!(item.data["spec"], json!({"size": 1}));

    crds.delete(&format!("gadgets.{group}"), &DeleteParams::default())
        .await
        .unwrap();
}

/// On a cluster whose add-on CRDs carry conversion `None` (a real kube-apiserver with the CRDs as
/// generated), v1alpha1 objects read as v1beta1 are only relabelled and pruned; the embedded
/// server, which installs them with `Webhook`, converts (the test above).
#[tokio::test]
async fn addon_kinds_with_conversion_none_are_relabelled_and_pruned() {
    let env = TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    if cma_strategy(&client).await != "None" {
        eprintln!("SKIP: the ClusterManagementAddOn CRD converts (strategy Webhook) on this cluster");
        return;
    }
    let alpha = cma_api(&client, "v1alpha1");
    let beta = cma_api(&client, "v1beta1");
    let name = unique("noconv");
    alpha
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "addon.open-cluster-management.io/v1alpha1",
                "kind": "ClusterManagementAddOn",
                "metadata": {"name": name},
                "spec": {"addOnMeta": {"displayName": "no conversion"},
                    "supportedConfigs": [{"group": "addon.open-cluster-management.io",
                        "resource": "addondeploymentconfigs",
                        "defaultConfig": {"name": "global", "namespace": "ocm"}}],
                    "installStrategy": {"type": "Manual"}}
            })),
        )
        .await
        .unwrap();
    let as_beta = beta.get(&name).await.unwrap();
    assert_eq!(
        as_beta.types.as_ref().unwrap().api_version,
        "addon.open-cluster-management.io/v1beta1"
    );
    // Nothing is converted into v1beta1's defaultConfigs, and what v1beta1 does not declare is
    // not served.
    assert!(as_beta.data["spec"].get("defaultConfigs").is_none());
    assert!(as_beta.data["spec"].get("supportedConfigs").is_none());
    assert_eq!(
        as_beta.data["spec"]["addOnMeta"],
        json!({"displayName": "no conversion"})
    );
    assert_eq!(as_beta.data["spec"]["installStrategy"], json!({"type": "Manual"}));
    beta.delete(&name, &DeleteParams::default()).await.unwrap();
}
