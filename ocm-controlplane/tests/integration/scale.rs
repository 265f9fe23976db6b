//! The `scale` subresource (`autoscaling/v1` Scale) of Deployments, ReplicaSets, StatefulSets
//! and of a custom resource whose CRD declares one: get, PUT, the three patch types and
//! server-side apply, `status.selector`, resourceVersion conflicts, kube-apiserver's error
//! bodies, discovery and RBAC on `…/scale`.
//!
//! The tests use their own namespaces, CRD group and users and clean up, so they also pass against
//! a real cluster (`OCM_TEST_HUB_KUBECONFIG`); the kube-controller-manager of a real cluster may
//! write status meanwhile, so status replicas are only checked where no controller runs.

use kube::config::{KubeConfigOptions, Kubeconfig};
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

use crate::garbage_collection::{create_namespace, delete_namespace, eventually, unique};

/// Sends a request with a JSON body; returns the status code and the parsed body.
pub(crate) async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let request = hyper::http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .header("accept", "application/json")
        .body(kube::client::Body::from(bytes))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect_bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

fn apps_object(kind: &str, name: &str, replicas: i64) -> Value {
    let template = json!({"metadata": {"labels": {"app": name, "tier": "web"}},
        "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}});
    let selector = json!({"matchLabels": {"app": name},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}]});
    let mut spec = json!({"replicas": replicas, "selector": selector, "template": template});
    if kind == "StatefulSet" {
        spec["serviceName"] = json!(name);
    }
    json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec})
}

/// The managedFields entry of `manager` with subresource `scale`.
fn scale_entry<'a>(object: &'a Value, manager: &str) -> Option<&'a Value> {
    object["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["subresource"] == "scale")
}

/// Everything the scale subresource of one apps kind answers.
async fn exercise_apps_kind(client: &kube::Client, ns: &str, plural: &str, kind: &str) {
    let name = unique(&kind.to_lowercase());
    let collection = format!("/apis/apps/v1/namespaces/{ns}/{plural}");
    let (code, created) = send(
        client,
        "POST",
        &collection,
        JSON,
        Some(&apps_object(kind, &name, 2)),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let object = format!("{collection}/{name}");
    let scale = format!("{object}/scale");

    let (code, got) = send(client, "GET", &scale, JSON, None).await;
    assert_eq!(code, 200, "{got}");
    assert_eq!(got["kind"], "Scale");
    assert_eq!(got["apiVersion"], "autoscaling/v1");
    assert_eq!(got["metadata"]["name"], name.as_str());
    assert_eq!(got["metadata"]["namespace"], ns);
    assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(
        got["metadata"]["creationTimestamp"],
        created["metadata"]["creationTimestamp"]
    );
    assert!(got["metadata"].get("managedFields").is_none(), "{got}");
    assert_eq!(got["spec"], json!({"replicas": 2}));
    assert!(got["status"]["replicas"].is_i64(), "{got}");
    assert_eq!(got["status"]["selector"], format!("app={name},tier in (api,web)"));

    // PUT; read again on a conflict (on a real cluster the workload controllers write the
    // parent's status meanwhile).
    let mut got = got;
    let mut attempts = 0;
    let (code, updated) = loop {
        let mut put = got.clone();
        put["spec"]["replicas"] = json!(3);
        let (code, updated) = send(client, "PUT", &scale, JSON, Some(&put)).await;
        attempts += 1;
        if code != 409 || attempts == 10 {
            break (code, updated);
        }
        got = send(client, "GET", &scale, JSON, None).await.1;
    };
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["kind"], "Scale");
    assert_eq!(updated["spec"]["replicas"], 3);
    assert_ne!(
        updated["metadata"]["resourceVersion"],
        got["metadata"]["resourceVersion"]
    );
    let (_, parent) = send(client, "GET", &object, JSON, None).await;
    assert_eq!(parent["spec"]["replicas"], 3);
    assert_eq!(parent["metadata"]["generation"], 2);
    let entry = parent["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["subresource"] == "scale"))
        .unwrap_or_else(|| panic!("no scale entry in {parent}"));
    assert_eq!(entry["operation"], "Update");
    assert_eq!(entry["apiVersion"], "apps/v1");
    assert_eq!(entry["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));

    // The resourceVersion of a Scale is a precondition: the one read before the PUT is stale.
    let mut stale = got.clone();
    stale["spec"]["replicas"] = json!(9);
    let (code, conflict) = send(client, "PUT", &scale, JSON, Some(&stale)).await;
    assert_eq!(code, 409, "{conflict}");
    assert_eq!(conflict["reason"], "Conflict");
    assert_eq!(
        conflict["message"],
        format!(
            "Operation cannot be fulfilled on {plural}.apps \"{name}\": the object has been modified; \
             please apply your changes to the latest version and try again"
        )
    );

    // The patch types.
    for (content_type, patch, want) in [
        (MERGE, json!({"spec": {"replicas": 4}}), 4),
        (STRATEGIC, json!({"spec": {"replicas": 5}}), 5),
        (
            JSON_PATCH,
            json!([{"op": "replace", "path": "/spec/replicas", "value": 6}]),
            6,
        ),
    ] {
        let (code, patched) = send(client, "PATCH", &scale, content_type, Some(&patch)).await;
        assert_eq!(code, 200, "{content_type}: {patched}");
        assert_eq!(patched["kind"], "Scale");
        assert_eq!(patched["spec"]["replicas"], want, "{content_type}");
    }
    let (code, conflict) = send(
        client,
        "PATCH",
        &scale,
        MERGE,
        Some(&json!({"metadata": {"resourceVersion": got["metadata"]["resourceVersion"]}, "spec": {"replicas": 1}})),
    )
    .await;
    assert_eq!(code, 409, "{conflict}");

    // Server-side apply of a Scale (forced: the patches above made another manager own the
    // replicas).
    let apply_path = format!("{scale}?fieldManager=scaler&force=true");
    let config = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": name}, "spec": {"replicas": 7}});
    let (code, applied) = send(client, "PATCH", &apply_path, APPLY, Some(&config)).await;
    assert_eq!(code, 200, "{applied}");
    assert_eq!(applied["spec"]["replicas"], 7);
    let (_, parent) = send(client, "GET", &object, JSON, None).await;
    assert_eq!(parent["spec"]["replicas"], 7);
    let entry = scale_entry(&parent, "scaler").unwrap_or_else(|| panic!("no scaler entry in {parent}"));
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["apiVersion"], "apps/v1");
    assert_eq!(entry["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    // Another applier of the replicas conflicts with the owner.
    let (code, conflict) = send(
        client,
        "PATCH",
        &format!("{scale}?fieldManager=other"),
        APPLY,
        Some(&json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": name}, "spec": {"replicas": 8}})),
    )
    .await;
    assert_eq!(code, 409, "{conflict}");
    assert_eq!(
        conflict["message"],
        "Apply failed with 1 conflict: conflict with \"scaler\" with subresource \"scale\": .spec.replicas"
    );

    // Validation of the Scale.
    let (_, current) = send(client, "GET", &scale, JSON, None).await;
    let mut negative = current.clone();
    negative["spec"]["replicas"] = json!(-1);
    let (code, invalid) = send(client, "PUT", &scale, JSON, Some(&negative)).await;
    assert_eq!(code, 422, "{invalid}");
    assert_eq!(
        invalid["message"],
        format!(
            "Scale.autoscaling \"{name}\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        )
    );
    assert_eq!(invalid["details"]["kind"], "Scale");
    assert_eq!(invalid["details"]["group"], "autoscaling");

    // A dry run changes nothing.
    let (code, dry) = send(
        client,
        "PATCH",
        &format!("{scale}?dryRun=All"),
        MERGE,
        Some(&json!({"spec": {"replicas": 0}})),
    )
    .await;
    assert_eq!(code, 200, "{dry}");
    assert!(
        dry["spec"].get("replicas").is_none(),
        "0 replicas are omitted: {dry}"
    );
    let (_, parent) = send(client, "GET", &object, JSON, None).await;
    assert_eq!(parent["spec"]["replicas"], 7);

    // The scale of a missing object.
    let missing = format!("{collection}/{}/scale", unique("missing"));
    let (code, not_found) = send(client, "GET", &missing, JSON, None).await;
    assert_eq!(code, 404, "{not_found}");
    assert_eq!(not_found["reason"], "NotFound");
    assert_eq!(not_found["details"]["kind"], plural);
    assert_eq!(not_found["details"]["group"], "apps");
}

#[tokio::test]
async fn scale_of_deployments_replicasets_and_statefulsets() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("scale-apps");
    create_namespace(&client, &ns).await;
    for (plural, kind) in [
        ("deployments", "Deployment"),
        ("replicasets", "ReplicaSet"),
        ("statefulsets", "StatefulSet"),
    ] {
        exercise_apps_kind(&client, &ns, plural, kind).await;
    }
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn discovery_lists_the_scale_subresources() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let (code, apps) = send(&client, "GET", "/apis/apps/v1", JSON, None).await;
    assert_eq!(code, 200);
    for plural in ["deployments", "replicasets", "statefulsets"] {
        let name = format!("{plural}/scale");
        let entry = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name.as_str())
            .unwrap_or_else(|| panic!("no {name} in {apps}"));
        assert_eq!(
            *entry,
            json!({"name": name, "singularName": "", "namespaced": true, "group": "autoscaling",
                "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]})
        );
    }
}

fn scalable_crd(group: &str) -> Value {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "maximum": 10},
            "note": {"type": "string"}}},
        "status": {"type": "object", "properties": {
            "replicas": {"type": "integer"}, "selector": {"type": "string"}}}}});
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}}}]}})
}

#[tokio::test]
async fn scale_of_a_custom_resource() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let group = format!("{}.scale.example.com", unique("g"));
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (code, body) = send(&client, "POST", crds, JSON, Some(&scalable_crd(&group))).await;
    assert_eq!(code, 201, "{body}");
    let ns = unique("scale-cr");
    create_namespace(&client, &ns).await;
    let collection = format!("/apis/{group}/v1/namespaces/{ns}/widgets");
    let created = eventually("the Widget kind is served", || {
        let (client, collection) = (client.clone(), collection.clone());
        async move {
            let body = json!({"apiVersion": format!("{}/v1", collection.split('/').nth(2).unwrap()),
                "kind": "Widget", "metadata": {"name": "w"}, "spec": {"replicas": 2}});
            let (code, created) = send(&client, "POST", &collection, JSON, Some(&body)).await;
            (code == 201).then_some(created)
        }
    })
    .await;
    let object = format!("{collection}/w");
    let scale = format!("{object}/scale");
    // Status written through /status gives the Scale its status and selector.
    let mut with_status = created.clone();
    with_status["status"] = json!({"replicas": 1, "selector": "app=w"});
    let (code, body) = send(
        &client,
        "PUT",
        &format!("{object}/status"),
        JSON,
        Some(&with_status),
    )
    .await;
    assert_eq!(code, 200, "{body}");

    let (code, got) = send(&client, "GET", &scale, JSON, None).await;
    assert_eq!(code, 200, "{got}");
    assert_eq!(got["kind"], "Scale");
    assert_eq!(got["apiVersion"], "autoscaling/v1");
    assert_eq!(got["spec"], json!({"replicas": 2}));
    assert_eq!(got["status"], json!({"replicas": 1, "selector": "app=w"}));

    let mut put = got.clone();
    put["spec"]["replicas"] = json!(5);
    let (code, updated) = send(&client, "PUT", &scale, JSON, Some(&put)).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["replicas"], 5);
    let (code, conflict) = send(&client, "PUT", &scale, JSON, Some(&put)).await;
    assert_eq!(code, 409, "{conflict}");
    assert_eq!(
        conflict["message"],
        format!(
            "Operation cannot be fulfilled on widgets.{group} \"w\": the object has been modified; \
             please apply your changes to the latest version and try again"
        )
    );
    let (code, patched) = send(
        &client,
        "PATCH",
        &scale,
        MERGE,
        Some(&json!({"spec": {"replicas": 6}})),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    let (_, parent) = send(&client, "GET", &object, JSON, None).await;
    assert_eq!(parent["spec"]["replicas"], 6);
    assert_eq!(parent["status"]["replicas"], 1);

    // The CRD's schema still holds for the custom resource.
    let (code, invalid) = send(
        &client,
        "PATCH",
        &scale,
        MERGE,
        Some(&json!({"spec": {"replicas": 11}})),
    )
    .await;
    assert_eq!(code, 422, "{invalid}");
    assert_eq!(
        invalid["message"],
        format!(
            "Widget.{group} \"w\" is invalid: spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
        )
    );

    // Without a spec replicas field, a patch that does not set one is refused.
    let body = json!({"apiVersion": format!("{group}/v1"), "kind": "Widget", "metadata": {"name": "empty"}, "spec": {"note": "x"}});
    let (code, created) = send(&client, "POST", &collection, JSON, Some(&body)).await;
    assert_eq!(code, 201, "{created}");
    let empty_scale = format!("{collection}/empty/scale");
    let (code, got) = send(&client, "GET", &empty_scale, JSON, None).await;
    assert_eq!(code, 500, "{got}");
    assert_eq!(
        got["message"],
        "Internal error occurred: the spec replicas field \".spec.replicas\" does not exist"
    );
    let (code, refused) = send(
        &client,
        "PATCH",
        &empty_scale,
        MERGE,
        Some(&json!({"metadata": {"labels": {"a": "b"}}})),
    )
    .await;
    assert_eq!(code, 400, "{refused}");
    assert_eq!(
        refused["message"],
        "the spec replicas field \".spec.replicas\" cannot be empty"
    );
    let (code, body) = send(
        &client,
        "PATCH",
        &empty_scale,
        MERGE,
        Some(&json!({"spec": {"replicas": 1}})),
    )
    .await;
    assert_eq!(code, 200, "{body}");

    let (code, discovery) = send(&client, "GET", &format!("/apis/{group}/v1"), JSON, None).await;
    assert_eq!(code, 200);
    let entry = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "widgets/scale")
        .cloned();
    assert_eq!(
        entry,
        Some(
            json!({"name": "widgets/scale", "singularName": "", "namespaced": true, "group": "autoscaling",
            "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]})
        )
    );

    delete_namespace(&client, &ns).await;
    let _ = send(&client, "DELETE", &format!("{crds}/widgets.{group}"), JSON, None).await;
}

/// A client of the same server impersonating `user`.
async fn impersonating(env: &TestEnv, user: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(env.kubeconfig_path()).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    config.auth_info.impersonate = Some(user.to_string());
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn rbac_names_the_scale_subresource() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("scale-rbac");
    create_namespace(&client, &ns).await;
    let user = unique("scaler");
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "scaler"},
        "rules": [{"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get", "update", "patch"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "scaler"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "scaler"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]});
    let rbac = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}");
    assert_eq!(
        send(&client, "POST", &format!("{rbac}/roles"), JSON, Some(&role))
            .await
            .0,
        201
    );
    assert_eq!(
        send(
            &client,
            "POST",
            &format!("{rbac}/rolebindings"),
            JSON,
            Some(&binding)
        )
        .await
        .0,
        201
    );
    let deployments = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let (code, body) = send(
        &client,
        "POST",
        &deployments,
        JSON,
        Some(&apps_object("Deployment", "d", 1)),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    let scaler = impersonating(&env, &user).await;
    let scale = format!("{deployments}/d/scale");
    let (code, body) = eventually("the scaler's role is in effect", || {
        let (scaler, scale) = (scaler.clone(), scale.clone());
        async move {
            let (code, body) = send(&scaler, "GET", &scale, JSON, None).await;
            (code != 403).then_some((code, body))
        }
    })
    .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = send(
        &scaler,
        "PATCH",
        &scale,
        MERGE,
        Some(&json!({"spec": {"replicas": 2}})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let (code, forbidden) = send(&scaler, "GET", &format!("{deployments}/d"), JSON, None).await;
    assert_eq!(code, 403, "{forbidden}");
    assert_eq!(
        forbidden["message"],
        format!(
            "deployments.apps \"d\" is forbidden: User \"{user}\" cannot get resource \"deployments\" in API group \"apps\" in the namespace \"{ns}\""
        )
    );
    let (code, forbidden) = send(
        &scaler,
        "GET",
        &format!("/apis/apps/v1/namespaces/{ns}/replicasets/d/scale"),
        JSON,
        None,
    )
    .await;
    assert_eq!(code, 403, "{forbidden}");
    assert_eq!(
        forbidden["message"],
        format!(
            "replicasets.apps \"d\" is forbidden: User \"{user}\" cannot get resource \"replicasets/scale\" in API group \"apps\" in the namespace \"{ns}\""
        )
    );
    delete_namespace(&client, &ns).await;
}
