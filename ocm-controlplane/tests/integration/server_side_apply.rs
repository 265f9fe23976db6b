//! Server-side apply through kube-rs (`Patch::Apply`): two field managers sharing, conflicting,
//! forcing and giving up fields of a ConfigMap; keyed lists of a Deployment merged by key; apply on
//! a custom resource's `/status`; and the errors for requests apply refuses. The expected
//! managedFields are those ../shared/apiserver-conformance records a real kube-apiserver writing.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

async fn namespace(client: &kube::Client, prefix: &str) -> String {
    let ns = unique(prefix);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await
        .unwrap();
    ns
}

async fn delete_namespace(client: &kube::Client, ns: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let _ = namespaces.delete(ns, &DeleteParams::default()).await;
}

fn apply(manager: &str) -> PatchParams {
    PatchParams::apply(manager)
}

fn configmap(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": data})
}

/// `(manager, operation, subresource, fieldsV1)` of every managedFields entry, in order.
fn managed<K: kube::Resource>(object: &K) -> Vec<(String, String, String, Value)> {
    object
        .meta()
        .managed_fields
        .iter()
        .flatten()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.operation.clone().unwrap_or_default(),
                e.subresource.clone().unwrap_or_default(),
                serde_json::to_value(e.fields_v1.as_ref().unwrap()).unwrap(),
            )
        })
        .collect()
}

fn entry(manager: &str, operation: &str, fields: Value) -> (String, String, String, Value) {
    (manager.into(), operation.into(), String::new(), fields)
}

fn conflict_causes(err: kube::Error) -> (u16, String, Vec<(String, String)>) {
    let kube::Error::Api(status) = err else {
        panic!("expected an API error, got {err:?}");
    };
    let causes = status
        .details
        .as_ref()
        .map(|d| d.causes.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.field, c.message))
        .collect();
    (status.code, status.message, causes)
}

#[tokio::test]
async fn two_managers_conflict_force_and_give_up_fields() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = namespace(&client, "ssa").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);

    // Apply creates the object; the applier owns exactly what it applied.
    let created = api
        .patch(
            "s",
            &apply("mgr-a"),
            &Patch::Apply(configmap(json!({"a": "1", "shared": "x"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        managed(&created),
        [entry(
            "mgr-a",
            "Apply",
            json!({"f:data": {"f:a": {}, "f:shared": {}}})
        )]
    );

    // A second manager applying the same value shares the field.
    let shared = api
        .patch(
            "s",
            &apply("mgr-b"),
            &Patch::Apply(configmap(json!({"b": "2", "shared": "x"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        managed(&shared),
        [
            entry("mgr-a", "Apply", json!({"f:data": {"f:a": {}, "f:shared": {}}})),
            entry("mgr-b", "Apply", json!({"f:data": {"f:b": {}, "f:shared": {}}})),
        ]
    );

    // Changing a field another manager owns is a conflict ...
    let change = configmap(json!({"a": "changed-by-b", "b": "2"}));
    let err = api
        .patch("s", &apply("mgr-b"), &Patch::Apply(&change))
        .await
        .unwrap_err();
    assert_eq!(
        conflict_causes(err),
        (
            409,
            "Apply failed with 1 conflict: conflict with \"mgr-a\": .data.a".to_string(),
            vec![(".data.a".to_string(), "conflict with \"mgr-a\"".to_string())]
        )
    );
    // ... which force resolves by moving the field.
    let forced = api
        .patch("s", &apply("mgr-b").force(), &Patch::Apply(&change))
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "changed-by-b");
    assert_eq!(
        managed(&forced),
        [
            entry("mgr-a", "Apply", json!({"f:data": {"f:shared": {}}})),
            entry("mgr-b", "Apply", json!({"f:data": {"f:a": {}, "f:b": {}}})),
        ]
    );

    // A manager that stops applying a field it alone owns removes it; fields others own stay.
    let a_gives_up = api
        .patch(
            "s",
            &apply("mgr-a"),
            &Patch::Apply(configmap(json!({"a2": "new"}))),
        )
        .await
        .unwrap();
    let data = a_gives_up.data.clone().unwrap();
    assert_eq!(
        data.keys().map(String::as_str).collect::<Vec<_>>(),
        ["a", "a2", "b"]
    );
    let b_gives_up = api
        .patch("s", &apply("mgr-b"), &Patch::Apply(configmap(json!({"b": "2"}))))
        .await
        .unwrap();
    let data = b_gives_up.data.clone().unwrap();
    assert_eq!(data.keys().map(String::as_str).collect::<Vec<_>>(), ["a2", "b"]);

    // An Update manager's field conflicts too, named with its apiVersion.
    let mut current = b_gives_up;
    current
        .data
        .get_or_insert_with(Default::default)
        .insert("u".into(), "put".into());
    let pp = PostParams {
        field_manager: Some("updater".into()),
        ..PostParams::default()
    };
    api.replace("s", &pp, &current).await.unwrap();
    let err = api
        .patch("s", &apply("mgr-b"), &Patch::Apply(configmap(json!({"u": "b"}))))
        .await
        .unwrap_err();
    assert_eq!(
        conflict_causes(err).2,
        [(
            ".data.u".to_string(),
            "conflict with \"updater\" using v1".to_string()
        )]
    );

    // A dry run shows the result and stores nothing.
    let before = api.get("s").await.unwrap();
    let dry = api
        .patch(
            "s",
            &apply("mgr-c").dry_run(),
            &Patch::Apply(configmap(json!({"dry": "1"}))),
        )
        .await
        .unwrap();
    assert_eq!(dry.data.as_ref().unwrap()["dry"], "1");
    let after = api.get("s").await.unwrap();
    assert_eq!(after.metadata.resource_version, before.metadata.resource_version);
    assert!(!after.data.unwrap().contains_key("dry"));

    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn apply_merges_keyed_lists_by_key() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = namespace(&client, "ssa-list").await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}}})
    };
    api.patch(
        "web",
        &apply("platform"),
        &Patch::Apply(deployment(json!([{"name": "app", "image": "nginx:1",
            "ports": [{"containerPort": 80}], "env": [{"name": "A", "value": "1"}]}]))),
    )
    .await
    .unwrap();
    // Another manager adds a sidecar and an env var to `app`: items merge by name.
    let merged = api
        .patch(
            "web",
            &apply("sidecar-injector"),
            &Patch::Apply(deployment(json!([
                {"name": "app", "env": [{"name": "B", "value": "2"}]},
                {"name": "proxy", "image": "envoy:1"}]))),
        )
        .await
        .unwrap();
    let containers = merged.spec.unwrap().template.spec.unwrap().containers;
    let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["app", "proxy"]);
    let env_names: Vec<&str> = containers[0]
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(env_names, ["A", "B"]);
    assert_eq!(containers[0].image.as_deref(), Some("nginx:1"));
    // The injector's entry names the items it owns by key.
    let injector = managed(&api.get("web").await.unwrap())
        .into_iter()
        .find(|(m, ..)| m == "sidecar-injector")
        .unwrap();
    let owned = &injector.3["f:spec"]["f:template"]["f:spec"]["f:containers"];
    assert!(owned.get("k:{\"name\":\"proxy\"}").is_some(), "{owned}");
    assert!(
        owned["k:{\"name\":\"app\"}"]["f:env"]
            .get("k:{\"name\":\"B\"}")
            .is_some(),
        "{owned}"
    );
    // The platform manager drops its env var: only B (the injector's) is left.
    let dropped = api
        .patch(
            "web",
            &apply("platform"),
            &Patch::Apply(deployment(json!([{"name": "app", "image": "nginx:1",
                "ports": [{"containerPort": 80}]}]))),
        )
        .await
        .unwrap();
    let app = &dropped.spec.unwrap().template.spec.unwrap().containers[0];
    let env_names: Vec<&str> = app.env.iter().flatten().map(|e| e.name.as_str()).collect();
    assert_eq!(env_names, ["B"]);
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn apply_of_status_is_owned_apart_from_the_spec() {
    let env = TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    let api: Api<ManagedCluster> = Api::all(client.clone());
    let name = unique("ssa-mc");
    let cluster = |spec: Value| {
        json!({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": name}, "spec": spec})
    };
    let created = api
        .patch(
            &name,
            &apply("hub"),
            &Patch::Apply(cluster(json!({"hubAcceptsClient": true}))),
        )
        .await
        .unwrap();
    // The defaulted leaseDurationSeconds belongs to no manager.
    assert_eq!(created.spec.lease_duration_seconds, Some(60));
    assert_eq!(
        managed(&created),
        [entry(
            "hub",
            "Apply",
            json!({"f:spec": {"f:hubAcceptsClient": {}}})
        )]
    );
    // The agent may not take the hub's field without force.
    let err = api
        .patch(
            &name,
            &apply("agent"),
            &Patch::Apply(cluster(json!({"hubAcceptsClient": false}))),
        )
        .await
        .unwrap_err();
    assert_eq!(conflict_causes(err).0, 409);

    let status = json!({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "ManagedClusterJoined", "status": "True", "reason": "Joined",
            "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "version": {"kubernetes": "v1.36.0"}}});
    let with_status = api
        .patch_status(&name, &apply("agent"), &Patch::Apply(&status))
        .await
        .unwrap();
    let entries = managed(&with_status);
    let status_entry = entries.iter().find(|(_, _, sub, _)| sub == "status").unwrap();
    assert_eq!(status_entry.0, "agent");
    assert_eq!(
        status_entry.3,
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"ManagedClusterJoined\"}": {".": {},
            "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}},
            "f:version": {"f:kubernetes": {}}}})
    );
    assert_eq!(with_status.spec.hub_accepts_client, Some(true));
    // Spec fields sent to /status are ignored; the agent gave up its status fields, so they go.
    let cleared = api
        .patch_status(
            &name,
            &apply("agent"),
            &Patch::Apply(cluster(json!({"hubAcceptsClient": false}))),
        )
        .await
        .unwrap();
    assert_eq!(cleared.spec.hub_accepts_client, Some(true));
    assert!(
        cleared
            .status
            .is_none_or(|s| s.conditions.unwrap_or_default().is_empty())
    );
    api.delete(&name, &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn apply_refuses_what_kube_apiserver_refuses() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = namespace(&client, "ssa-bad").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let code = |r: Result<ConfigMap, kube::Error>| match r {
        Err(kube::Error::Api(s)) => (s.code, s.message),
        other => panic!("expected an API error, got {other:?}"),
    };
    // Another name than the URL's.
    let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}});
    assert_eq!(
        code(api.patch("s", &apply("m"), &Patch::Apply(&other)).await),
        (
            400,
            "the name of the object (other) does not match the name on the URL (s)".to_string()
        )
    );
    // No apiVersion.
    let untyped = json!({"kind": "ConfigMap", "metadata": {"name": "s"}});
    assert_eq!(
        code(api.patch("s", &apply("m"), &Patch::Apply(&untyped)).await),
        (400, "invalid object type: /, Kind=ConfigMap".to_string())
    );
    // managedFields in the configuration.
    let with_fields = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "s", "managedFields": [{"manager": "x"}]}});
    assert_eq!(
        code(api.patch("s", &apply("m"), &Patch::Apply(&with_fields)).await).0,
        400
    );
    // A field the schema does not declare: kube-apiserver answers a bare 500 (its field manager's
    // error is not an API status).
    let undeclared = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "spec": {}});
    assert_eq!(
        code(api.patch("s", &apply("m"), &Patch::Apply(&undeclared)).await),
        (
            500,
            "failed to create typed patch object (/s; /v1, Kind=ConfigMap): .spec: field not declared in schema"
                .to_string()
        )
    );
    // Nothing was created on the way.
    assert!(api.get_opt("s").await.unwrap().is_none());
    delete_namespace(&client, &ns).await;
}
