//! Aggregated discovery (`application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`)
//! as kube-apiserver serves it: group metadata with the name only, built-in kinds with response
//! kinds that name no group or version, subresources with theirs (`scale` as autoscaling/v1
//! Scale), custom resources with full response kinds, and every version `Current`.
//!
//! The CRD group is the test's own and is removed after, so the test also passes against a real
//! cluster (`OCM_TEST_HUB_KUBECONFIG`).

use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

use crate::garbage_collection::{eventually, unique};
use crate::scale::send;

const V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

async fn aggregated(client: &kube::Client, path: &str) -> Value {
    let request = hyper::http::Request::builder()
        .method("GET")
        .uri(path)
        .header("accept", V2)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
    assert_eq!(content_type, V2);
    let bytes = response.into_body().collect_bytes().await.unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn group<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| {
            g["metadata"]
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                == name
        })
        .unwrap_or_else(|| panic!("no group {name:?}"))
}

fn resource<'a>(version: &'a Value, name: &str) -> &'a Value {
    version["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == name)
        .unwrap_or_else(|| panic!("no resource {name}"))
}

#[tokio::test]
async fn aggregated_discovery_answers_as_kube_apiserver() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();

    let core = aggregated(&client, "/api").await;
    assert_eq!(core["kind"], "APIGroupDiscoveryList");
    assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2");
    assert_eq!(core["items"].as_array().unwrap().len(), 1);
    assert_eq!(core["items"][0]["metadata"], json!({}));
    let v1 = &core["items"][0]["versions"][0];
    assert_eq!(v1["version"], "v1");
    assert_eq!(v1["freshness"], "Current");
    assert_eq!(
        *resource(v1, "configmaps"),
        json!({"resource": "configmaps", "responseKind": {"group": "", "version": "", "kind": "ConfigMap"},
            "scope": "Namespaced", "singularResource": "configmap",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["cm"]})
    );

    let apis = aggregated(&client, "/apis").await;
    let apps = group(&apis, "apps");
    assert_eq!(apps["metadata"], json!({"name": "apps"}));
    let deployments = resource(&apps["versions"][0], "deployments");
    assert_eq!(
        deployments["responseKind"],
        json!({"group": "", "version": "", "kind": "Deployment"})
    );
    assert_eq!(deployments["shortNames"], json!(["deploy"]));
    assert_eq!(deployments["categories"], json!(["all"]));
    assert_eq!(
        deployments["subresources"],
        json!([
            {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
             "verbs": ["get", "patch", "update"]},
            {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "Deployment"},
             "verbs": ["get", "patch", "update"]},
        ])
    );

    // A custom resource with status and scale subresources.
    let name = format!("{}.discovery.example.com", unique("g"));
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("sprockets.{name}")},
        "spec": {"group": name, "scope": "Namespaced",
            "names": {"plural": "sprockets", "singular": "sprocket", "kind": "Sprocket", "listKind": "SprocketList",
                "shortNames": ["spr"], "categories": ["gear"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas"}}}]}});
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (code, body) = send(&client, "POST", crds, "application/json", Some(&crd)).await;
    assert_eq!(code, 201, "{body}");
    let entry = eventually("the CRD group in aggregated discovery", || {
        let (client, name) = (client.clone(), name.clone());
        async move {
            let apis = aggregated(&client, "/apis").await;
            let found = apis["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["metadata"]["name"] == name.as_str())
                .cloned();
            found.map(|g| g["versions"][0].clone())
        }
    })
    .await;
    assert_eq!(entry["version"], "v1");
    assert_eq!(entry["freshness"], "Current");
    assert_eq!(
        entry["resources"],
        json!([{"resource": "sprockets", "responseKind": {"group": name, "version": "v1", "kind": "Sprocket"},
        "scope": "Namespaced", "singularResource": "sprocket",
        "verbs": ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"],
        "shortNames": ["spr"], "categories": ["gear"],
        "subresources": [
            {"subresource": "status", "responseKind": {"group": name, "version": "v1", "kind": "Sprocket"},
             "verbs": ["get", "patch", "update"]},
            {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
             "verbs": ["get", "patch", "update"]},
        ]}])
    );
    let _ = send(
        &client,
        "DELETE",
        &format!("{crds}/sprockets.{name}"),
        "application/json",
        None,
    )
    .await;
}
