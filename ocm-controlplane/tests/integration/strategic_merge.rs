//! Strategic merge patches through kube-rs (`Patch::Strategic`): list merging by merge key,
//! `$retainKeys`, and the 415 kube-apiserver gives for custom resources.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm_controlplane::TestEnv;
use serde_json::json;

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

#[tokio::test]
async fn strategic_patch_merges_containers_and_retains_keys() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("smp");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await
        .unwrap();
    let api: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                {"name": "app", "image": "nginx:1", "ports": [{"containerPort": 80}],
                 "env": [{"name": "A", "value": "1"}]},
                {"name": "side", "image": "busybox:1"}]}}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &deployment).await.unwrap();

    let patch = json!({"spec": {
        "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
        "template": {"spec": {"containers": [
            {"name": "app", "env": [{"name": "B", "value": "2"}], "ports": [{"containerPort": 8080}]},
            {"name": "side", "$patch": "delete"}]}}}});
    let patched = api
        .patch("web", &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .unwrap();
    let spec = patched.spec.unwrap();
    let strategy = spec.strategy.unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("Recreate"));
    assert!(strategy.rolling_update.is_none());
    let containers = spec.template.spec.unwrap().containers;
    assert_eq!(containers.len(), 1);
    let app = &containers[0];
    assert_eq!(app.image.as_deref(), Some("nginx:1"));
    let env: Vec<&str> = app
        .env
        .as_ref()
        .unwrap()
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    // The patch's new item first, then the live-only one: kube's order of a merged list.
    assert_eq!(env, ["B", "A"]);
    let ports: Vec<i32> = app
        .ports
        .as_ref()
        .unwrap()
        .iter()
        .map(|p| p.container_port)
        .collect();
    assert_eq!(ports, [8080, 80]);

    // A merge key missing from a list item: kube-apiserver answers the merge library's error as a
    // bare 500.
    let bad = json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}});
    let err = api
        .patch("web", &PatchParams::default(), &Patch::Strategic(&bad))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(e) => {
            assert_eq!(e.code, 500);
            assert_eq!(
                e.message,
                "map: map[image:x] does not contain declared merge key: name"
            );
        }
        other => panic!("expected a Status, got {other:?}"),
    }
    namespaces.delete(&ns, &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn strategic_patch_of_a_custom_resource_is_unsupported() {
    let env = TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    let name = unique("smp-cr");
    let clusters: Api<ocm_api::cluster::v1::ManagedCluster> = Api::all(client);
    let cluster: ocm_api::cluster::v1::ManagedCluster =
        serde_json::from_value(json!({"apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster", "metadata": {"name": name}, "spec": {"hubAcceptsClient": true}}))
        .unwrap();
    clusters.create(&PostParams::default(), &cluster).await.unwrap();
    let err = clusters
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Strategic(&json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(e) => {
            assert_eq!(e.code, 415);
            assert_eq!(e.reason, "UnsupportedMediaType");
        }
        other => panic!("expected a Status, got {other:?}"),
    }
    clusters.delete(&name, &DeleteParams::default()).await.unwrap();
}
