//! What typed Go clients (client-go, controller-runtime) send, answered as kube-apiserver answers:
//! `null` for nil slices, maps and pointers (in bodies, merge patches, strategic merge patches,
//! list items, and server-side apply configurations of built-in kinds) is dropped before
//! validation; finalizer
//! names that are not domain-qualified only warn on custom resources; a binding's `roleRef` never
//! changes and binding a missing role without `bind` is a 404; a Node keeps the status it is
//! created with; `kube-system/extension-apiserver-authentication` publishes the client CA.
//!
//! Every test uses its own names and cleans up, so the module also passes against a real
//! kube-apiserver (`OCM_TEST_HUB_KUBECONFIG`).

use std::time::Duration;

use ocm_controlplane::TestEnv;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(30);

fn unique(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..8])
}

/// One answer: status code, JSON body and the `Warning` header texts.
struct Answer {
    code: u16,
    body: Value,
    warnings: Vec<String>,
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> Answer {
    let mut request = hyper::http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let request = request
        .body(kube::client::Body::from(
            body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        ))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(warning_text)
        .collect();
    let bytes = response.into_body().collect_bytes().await.unwrap();
    Answer {
        code,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        warnings,
    }
}

/// The text of a `Warning: 299 - "text"` header.
fn warning_text(header: &str) -> String {
    let quoted = header.splitn(3, ' ').nth(2).unwrap_or(header);
    serde_json::from_str::<String>(quoted).unwrap_or_else(|_| quoted.to_string())
}

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

async fn create_namespace(client: &kube::Client, name: &str) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    let a = send(client, "POST", "/api/v1/namespaces", JSON, Some(&ns), &[]).await;
    assert_eq!(a.code, 201, "{}", a.body);
}

async fn delete(client: &kube::Client, path: &str) {
    let a = send(client, "DELETE", path, JSON, None, &[]).await;
    assert!(matches!(a.code, 200 | 202 | 404), "DELETE {path}: {}", a.body);
}

/// A Deployment as client-go's typed client serializes it: nil pointers, slices and maps of
/// fields without `omitempty` as `null`, empty structs as `{}`; plus nulls for `volumes` and
/// `nodeSelector` as clients built from unstructured content send them.
fn go_deployment(name: &str) -> Value {
    json!({"kind": "Deployment", "apiVersion": "apps/v1",
        "metadata": {"name": name, "creationTimestamp": null, "labels": null},
        "spec": {"replicas": null, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"creationTimestamp": null, "labels": {"app": name}},
                "spec": {"volumes": null, "nodeSelector": null, "containers": [
                    {"name": "app", "image": "nginx:1", "args": null, "env": null, "resources": {},
                        "securityContext": null}]}},
            "strategy": {}, "revisionHistoryLimit": null},
        "status": {}})
}

#[tokio::test]
async fn built_in_nulls_are_dropped_before_validation() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("gonulls");
    create_namespace(&client, &ns).await;
    let base = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let created = send(&client, "POST", &base, JSON, Some(&go_deployment("web")), &[]).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let pod_spec = &created.body["spec"]["template"]["spec"];
    assert!(pod_spec.get("volumes").is_none(), "{pod_spec}");
    assert!(pod_spec.get("nodeSelector").is_none(), "{pod_spec}");
    assert!(pod_spec["containers"][0].get("args").is_none(), "{pod_spec}");
    assert_eq!(created.body["spec"]["replicas"], json!(1));
    assert!(created.body["metadata"]["creationTimestamp"].is_string());

    // PUT of what was read back, with nulls again.
    let mut replaced = go_deployment("web");
    replaced["metadata"]["resourceVersion"] = created.body["metadata"]["resourceVersion"].clone();
    replaced["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    let put = send(&client, "PUT", &format!("{base}/web"), JSON, Some(&replaced), &[]).await;
    assert_eq!(put.code, 200, "{}", put.body);

    // A merge patch whose list item carries nulls: the patch's nulls inside the new list are
    // dropped with it, not sent to validation.
    let patch = json!({"spec": {"template": {"spec": {"nodeSelector": null, "containers": [
        {"name": "app", "image": "nginx:3", "env": null, "ports": null,
            "resources": {"limits": null}}]}}}});
    let merged = send(&client, "PATCH", &format!("{base}/web"), MERGE, Some(&patch), &[]).await;
    assert_eq!(merged.code, 200, "{}", merged.body);
    let container = &merged.body["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], json!("nginx:3"));
    assert!(container.get("env").is_none(), "{container}");

    // A strategic merge patch with nulls (`null` deletes a key there too).
    let patch = json!({"spec": {"template": {"spec": {"volumes": null, "containers": [
        {"name": "app", "args": null, "image": "nginx:4"}]}}}});
    let strategic = send(
        &client,
        "PATCH",
        &format!("{base}/web"),
        STRATEGIC,
        Some(&patch),
        &[],
    )
    .await;
    assert_eq!(strategic.code, 200, "{}", strategic.body);
    assert_eq!(
        strategic.body["spec"]["template"]["spec"]["containers"][0]["image"],
        json!("nginx:4")
    );

    // Server-side apply of a configuration with nulls.
    let mut config = go_deployment("applied");
    config.as_object_mut().unwrap().remove("status");
    let applied = send(
        &client,
        "PATCH",
        &format!("{base}/applied?fieldManager=go-client"),
        APPLY,
        Some(&config),
        &[],
    )
    .await;
    assert_eq!(applied.code, 201, "{}", applied.body);
    assert!(applied.body["spec"]["template"]["spec"].get("volumes").is_none());

    // Nulls of a ConfigMap's fields and of its metadata.
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": "cm", "creationTimestamp": null, "finalizers": null, "ownerReferences": null},
        "data": null, "binaryData": null, "immutable": null});
    let cm_created = send(
        &client,
        "POST",
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        JSON,
        Some(&cm),
        &[],
    )
    .await;
    assert_eq!(cm_created.code, 201, "{}", cm_created.body);
    assert!(cm_created.body.get("data").is_none(), "{}", cm_created.body);
    delete(&client, &format!("/api/v1/namespaces/{ns}")).await;
}

/// A CRD whose schema has non-nullable fields without defaults, a nullable one and a defaulted
/// one, inside objects and list items.
fn gadget_crd(group: &str) -> Value {
    let item = json!({"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "limits": {"type": "object", "additionalProperties": {"type": "string"}}}});
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "items": {"type": "array", "items": item},
                        "selector": {"type": "object", "properties": {"matchLabels": {"type": "object",
                            "additionalProperties": {"type": "string"}}}},
                        "size": {"type": "integer"},
                        "note": {"type": "string", "nullable": true},
                        "mode": {"type": "string", "default": "Auto"}}},
                    "status": {"type": "object", "properties": {
                        "conditions": {"type": "array", "items": {"type": "object"}},
                        "observed": {"type": "integer"}}}}}}}]}})
}

/// Creates the CRD and waits until its resource is served; returns the collection path in `ns`.
async fn install_gadgets(client: &kube::Client, group: &str, ns: &str) -> String {
    let crd = gadget_crd(group);
    let a = send(
        client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        JSON,
        Some(&crd),
        &[],
    )
    .await;
    assert_eq!(a.code, 201, "{}", a.body);
    let path = format!("/apis/{group}/v1/namespaces/{ns}/gadgets");
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let list = send(client, "GET", &path, JSON, None, &[]).await;
        if list.code == 200 {
            return path;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gadgets never served: {}",
            list.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn custom_resource_nulls_follow_the_structural_schema() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("gonulls-cr");
    let group = format!("{}.example.com", unique("gonulls"));
    create_namespace(&client, &ns).await;
    let path = install_gadgets(&client, &group, &ns).await;

    let gadget = json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget",
        "metadata": {"name": "g", "creationTimestamp": null},
        "spec": {"items": [{"name": "a", "tags": null, "limits": {"cpu": null, "mem": "1"}}],
            "selector": null, "size": null, "note": null, "mode": null},
        "status": {"conditions": null, "observed": null}});
    let created = send(&client, "POST", &path, JSON, Some(&gadget), &[]).await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(
        created.body["spec"],
        json!({"items": [{"name": "a", "limits": {"mem": "1"}}], "note": null, "mode": "Auto"})
    );

    // A merge patch bringing list items with nulls, and nulls for fields to delete.
    let patch = json!({"spec": {"items": [{"name": "b", "tags": null}, {"name": "c", "limits": null}],
        "note": "n", "size": null}});
    let patched = send(&client, "PATCH", &format!("{path}/g"), MERGE, Some(&patch), &[]).await;
    assert_eq!(patched.code, 200, "{}", patched.body);
    assert_eq!(
        patched.body["spec"]["items"],
        json!([{"name": "b"}, {"name": "c"}])
    );

    // The status as controller-runtime writes it: every nil slice as null.
    let mut with_status = patched.body.clone();
    with_status["status"] = json!({"conditions": null, "observed": 2});
    let status = send(
        &client,
        "PUT",
        &format!("{path}/g/status"),
        JSON,
        Some(&with_status),
        &[],
    )
    .await;
    assert_eq!(status.code, 200, "{}", status.body);
    assert_eq!(status.body["status"], json!({"observed": 2}));

    // Server-side apply of a configuration with nulls.
    let config = json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget",
        "metadata": {"name": "applied"},
        "spec": {"items": [{"name": "a", "tags": null}], "selector": null, "size": 3}});
    let applied = send(
        &client,
        "PATCH",
        &format!("{path}/applied?fieldManager=go-client"),
        APPLY,
        Some(&config),
        &[],
    )
    .await;
    // Unlike the other writes, server-side apply does not run the merged custom resource through
    // the decoder that drops them: its nulls are validated, and refused where not nullable.
    assert_eq!(applied.code, 422, "{}", applied.body);
    let mut causes: Vec<String> = applied.body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap(),
                c["message"].as_str().unwrap()
            )
        })
        .collect();
    causes.sort();
    assert_eq!(
        causes,
        [
            "spec.items[0].tags: Invalid value: \"null\": spec.items[0].tags in body must be of type array: \"null\"",
            "spec.selector: Invalid value: \"null\": spec.selector in body must be of type object: \"null\"",
        ]
    );

    // A null list item is not pruned: it is validated like any other value.
    let bad = json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget",
        "metadata": {"name": "bad"}, "spec": {"items": [null]}});
    let refused = send(&client, "POST", &path, JSON, Some(&bad), &[]).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert_eq!(
        refused.body["details"]["causes"][0]["field"],
        json!("spec.items[0]")
    );

    delete(
        &client,
        &format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}"),
    )
    .await;
    delete(&client, &format!("/api/v1/namespaces/{ns}")).await;
}

#[tokio::test]
async fn unqualified_finalizers_warn_on_custom_resources_only() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("gofinalizers");
    let group = format!("{}.example.com", unique("gofinalizers"));
    create_namespace(&client, &ns).await;
    let path = install_gadgets(&client, &group, &ns).await;

    let gadget = json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget",
        "metadata": {"name": "g", "finalizers": ["cleanup", "example.com", "example.com/ok", "orphan"]},
        "spec": {}});
    let created = send(&client, "POST", &path, JSON, Some(&gadget), &[]).await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(
        created.warnings,
        [
            "metadata.finalizers: \"cleanup\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
            "metadata.finalizers: \"example.com\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers",
        ]
    );
    // An update warns only about the finalizers it adds.
    let patch =
        json!({"metadata": {"finalizers": ["cleanup", "example.com", "example.com/ok", "orphan", "more"]}});
    let patched = send(&client, "PATCH", &format!("{path}/g"), MERGE, Some(&patch), &[]).await;
    assert_eq!(patched.code, 200, "{}", patched.body);
    assert_eq!(
        patched.warnings,
        [
            "metadata.finalizers: \"more\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
        ]
    );
    let clear = json!({"metadata": {"finalizers": null}});
    let cleared = send(&client, "PATCH", &format!("{path}/g"), MERGE, Some(&clear), &[]).await;
    assert_eq!(cleared.code, 200, "{}", cleared.body);
    assert!(cleared.warnings.is_empty(), "{:?}", cleared.warnings);

    // A built-in kind refuses the same name.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "finalizers": ["cleanup"]}});
    let refused = send(
        &client,
        "POST",
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        JSON,
        Some(&cm),
        &[],
    )
    .await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert_eq!(
        refused.body["details"]["causes"][0],
        json!({"reason": "FieldValueInvalid", "field": "metadata.finalizers[0]",
            "message": "Invalid value: \"cleanup\": name is neither a standard finalizer name nor is it fully qualified"})
    );

    delete(
        &client,
        &format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}"),
    )
    .await;
    delete(&client, &format!("/api/v1/namespaces/{ns}")).await;
}

#[tokio::test]
async fn role_ref_is_immutable_and_missing_roles_are_not_found() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("gorbac");
    create_namespace(&client, &ns).await;
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let binding = |name: &str, role: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "someone"}]})
    };
    let bindings = format!("{rbac}/namespaces/{ns}/rolebindings");
    let created = send(&client, "POST", &bindings, JSON, Some(&binding("b", "view")), &[]).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let patch = json!({"roleRef": {"name": "edit"}});
    let changed = send(
        &client,
        "PATCH",
        &format!("{bindings}/b"),
        MERGE,
        Some(&patch),
        &[],
    )
    .await;
    assert_eq!(changed.code, 422, "{}", changed.body);
    assert_eq!(
        changed.body["message"],
        json!(
            "RoleBinding.rbac.authorization.k8s.io \"b\" is invalid: roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef"
        )
    );
    assert_eq!(changed.body["details"]["causes"][0]["field"], json!("roleRef"));

    // A user who may manage bindings here but not `bind` roles: binding a role that does not
    // exist answers the role's 404, binding one whose rules the user lacks a 403.
    let user = unique("binder");
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "binder"},
        "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"],
            "verbs": ["create", "get", "update", "patch"]}]});
    let a = send(
        &client,
        "POST",
        &format!("{rbac}/namespaces/{ns}/roles"),
        JSON,
        Some(&role),
        &[],
    )
    .await;
    assert_eq!(a.code, 201, "{}", a.body);
    let grant = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "binder"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "binder"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]});
    let a = send(&client, "POST", &bindings, JSON, Some(&grant), &[]).await;
    assert_eq!(a.code, 201, "{}", a.body);
    let as_user = [("Impersonate-User", user.as_str())];
    let missing_role = unique("missing");
    let mut to_missing = binding("to-missing", &missing_role);
    to_missing["roleRef"]["kind"] = json!("Role");
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let not_found = loop {
        // The user's own binding reaches the authorizer within moments on a real cluster.
        let a = send(&client, "POST", &bindings, JSON, Some(&to_missing), &as_user).await;
        if a.code != 403 || tokio::time::Instant::now() > deadline {
            break a;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(not_found.code, 404, "{}", not_found.body);
    assert_eq!(
        not_found.body["message"],
        json!(format!(
            "rolebindings.rbac.authorization.k8s.io \"{missing_role}\" not found"
        ))
    );
    assert_eq!(
        not_found.body["details"],
        json!({"name": missing_role, "group": "rbac.authorization.k8s.io", "kind": "rolebindings"})
    );
    let to_view = send(
        &client,
        "POST",
        &bindings,
        JSON,
        Some(&binding("to-view", "view")),
        &as_user,
    )
    .await;
    assert_eq!(to_view.code, 403, "{}", to_view.body);
    // An administrator binds the missing role (it may be created later).
    let admin = send(&client, "POST", &bindings, JSON, Some(&to_missing), &[]).await;
    assert_eq!(admin.code, 201, "{}", admin.body);

    let cluster_binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": unique("gorbac")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}});
    let name = cluster_binding["metadata"]["name"].as_str().unwrap().to_string();
    let cb = send(
        &client,
        "POST",
        &format!("{rbac}/clusterrolebindings"),
        JSON,
        Some(&cluster_binding),
        &[],
    )
    .await;
    assert_eq!(cb.code, 201, "{}", cb.body);
    let mut changed = cb.body.clone();
    changed["roleRef"]["name"] = json!("edit");
    let put = send(
        &client,
        "PUT",
        &format!("{rbac}/clusterrolebindings/{name}"),
        JSON,
        Some(&changed),
        &[],
    )
    .await;
    assert_eq!(put.code, 422, "{}", put.body);
    assert_eq!(
        put.body["details"]["causes"][0]["message"],
        json!(
            "Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef"
        )
    );
    delete(&client, &format!("{rbac}/clusterrolebindings/{name}")).await;
    delete(&client, &format!("/api/v1/namespaces/{ns}")).await;
}

#[tokio::test]
async fn a_node_keeps_the_status_it_is_created_with() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let name = unique("gonode");
    let node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "creationTimestamp": null},
        "spec": {"taints": null},
        "status": {"capacity": {"cpu": "2", "memory": "8Gi"}, "allocatable": {"cpu": "2", "memory": "8Gi"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "ready", "lastHeartbeatTime": null, "lastTransitionTime": null}],
            "nodeInfo": {"kubeletVersion": "v1.36.2", "architecture": "amd64", "operatingSystem": "linux"},
            "images": null}});
    let created = send(&client, "POST", "/api/v1/nodes", JSON, Some(&node), &[]).await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(created.body["status"]["capacity"]["memory"], json!("8Gi"));
    assert_eq!(created.body["status"]["conditions"][0]["type"], json!("Ready"));
    assert_eq!(
        created.body["status"]["nodeInfo"]["kubeletVersion"],
        json!("v1.36.2")
    );
    let read = send(&client, "GET", &format!("/api/v1/nodes/{name}"), JSON, None, &[]).await;
    assert_eq!(read.body["status"]["allocatable"]["cpu"], json!("2"));
    // Status written by the creator is not one of its managed fields (status is reset for the
    // main resource's writes afterwards).
    let managed = read.body["metadata"]["managedFields"].to_string();
    assert!(!managed.contains("f:status"), "{managed}");
    delete(&client, &format!("/api/v1/nodes/{name}")).await;
}

#[tokio::test]
async fn extension_apiserver_authentication_publishes_the_client_ca() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let a = send(
        &client,
        "GET",
        "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
        JSON,
        None,
        &[],
    )
    .await;
    assert_eq!(a.code, 200, "{}", a.body);
    let bundle = a.body["data"]["client-ca-file"].as_str().unwrap_or_default();
    assert!(bundle.starts_with("-----BEGIN CERTIFICATE-----"), "{}", a.body);
    // The admin's client certificate is one this bundle verifies: its issuer is a subject here.
    let kubeconfig = kube::config::Kubeconfig::read_from(env.kubeconfig_path()).unwrap();
    let user = kubeconfig.auth_infos[0].auth_info.clone().unwrap();
    let cert_pem = match (&user.client_certificate_data, &user.client_certificate) {
        (Some(data), _) => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.decode(data).unwrap()
        }
        (None, Some(path)) => std::fs::read(path).unwrap(),
        (None, None) => {
            eprintln!("admin kubeconfig has no client certificate; only the bundle was checked");
            return;
        }
    };
    let cert_der = rustls::pki_types::CertificateDer::from_pem_slice(&cert_pem).unwrap();
    let (_, cert) = x509_parser::parse_x509_certificate(&cert_der).unwrap();
    let issuer = cert.issuer().to_string();
    let subjects: Vec<String> = rustls::pki_types::CertificateDer::pem_slice_iter(bundle.as_bytes())
        .map(|c| {
            let der = c.unwrap();
            let (_, ca) = x509_parser::parse_x509_certificate(&der).unwrap();
            ca.subject().to_string()
        })
        .collect();
    assert!(subjects.contains(&issuer), "{issuer} not among {subjects:?}");
}
