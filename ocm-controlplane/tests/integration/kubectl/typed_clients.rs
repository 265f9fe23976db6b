//! kubectl commands whose requests go through client-go's typed clients, which encode built-in
//! kinds as protobuf (`Content-Type: application/vnd.kubernetes.protobuf`): the `create` generators
//! (`namespace`, `configmap`, `secret generic`, `serviceaccount`, `role`, `rolebinding`,
//! `clusterrole`, `clusterrolebinding`, `deployment`, `job`, `service clusterip`) and `certificate
//! approve|deny` (a PUT of the CSR's `approval` subresource). Each object is compared with the
//! same object sent as JSON: the generator's `--dry-run=client -o json` output through `create -f`,
//! or, for approvals, kubectl's condition PUT as JSON with `replace --raw`. Malformed protobuf and a
//! protobuf `DeleteOptions` are sent over plain HTTP.
//!
//! `kubectl create token` (TokenRequest) is not covered: this server does not serve TokenRequest yet.

use base64::Engine;
use hyper::http::{Method, Request};
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kube::client::Body;
use prost::Message as _;

use super::*;

/// An object as stored, reduced to what two creations of the same object share: no status, no
/// server-set metadata or annotations, the managedFields of `manager` without their times, its own
/// uid and name replaced by placeholders, and no service IPs (allocated per object).
fn comparable(object: &Value, manager: &str) -> Value {
    let meta = &object["metadata"];
    let uid = meta["uid"].as_str().unwrap_or_default().to_string();
    let name = meta["name"].as_str().unwrap_or_default().to_string();
    let mut text = serde_json::to_string(object).unwrap();
    if !uid.is_empty() {
        text = text.replace(&uid, "<uid>");
    }
    text = text.replace(&name, "<name>");
    let mut o: Value = serde_json::from_str(&text).unwrap();
    let m = o.as_object_mut().unwrap();
    m.remove("status");
    if let Some(spec) = m.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    let meta = m.get_mut("metadata").and_then(Value::as_object_mut).unwrap();
    for key in ["resourceVersion", "creationTimestamp", "annotations", "selfLink"] {
        meta.remove(key);
    }
    let managed: Vec<Value> = meta
        .get("managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["manager"] == manager)
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("time");
            e
        })
        .collect();
    meta.insert("managedFields".into(), Value::Array(managed));
    o
}

async fn get_json(k: &Kubectl, resource: &str, name: &str, ns: Option<&str>) -> Value {
    let mut args = vec!["get", resource, name, "-o", "json", "--show-managed-fields"];
    if let Some(ns) = ns {
        args.extend(["-n", ns]);
    }
    serde_json::from_str(&k.ok(&args).await).unwrap()
}

/// Runs a generator (`generator` = the words after `create`, then the name, then `rest`) once
/// as itself — protobuf — and once as JSON: its dry-run output under `<name>-json` through `create
/// -f`. Asserts that both objects are stored alike and returns the protobuf one.
async fn same_as_json(
    k: &Kubectl,
    ns: Option<&str>,
    resource: &str,
    generator: &[&str],
    name: &str,
    rest: &[&str],
) -> Value {
    let twin = format!("{name}-json");
    let ns_args: Vec<&str> = ns.map(|n| vec!["-n", n]).unwrap_or_default();
    let mut args = vec!["create"];
    args.extend(&ns_args);
    args.extend(generator);
    args.push(name);
    args.extend(rest);
    k.ok(&args).await;

    let mut args = vec!["create", "--dry-run=client", "-o", "json"];
    args.extend(&ns_args);
    args.extend(generator);
    args.push(&twin);
    args.extend(rest);
    let json = k.ok(&args).await;
    k.with_stdin("create", &json, &ns_args).await;

    let stored = get_json(k, resource, name, ns).await;
    let from_json = get_json(k, resource, &twin, ns).await;
    let (a, b) = (
        comparable(&stored, "kubectl-create"),
        comparable(&from_json, "kubectl-create"),
    );
    assert_eq!(
        a,
        b,
        "kubectl create {generator:?} (protobuf) and its JSON differ:\nprotobuf: {}\njson: {}",
        serde_json::to_string_pretty(&a).unwrap(),
        serde_json::to_string_pretty(&b).unwrap()
    );
    stored
}

async fn new_namespace(k: &Kubectl, prefix: &str) -> String {
    let ns = unique(prefix);
    k.with_stdin("create", &namespace_yaml(&ns), &[]).await;
    ns
}

#[tokio::test]
async fn kubectl_create_generators_of_config_and_access() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_create_generators_of_config_and_access").await else {
        return;
    };
    let namespace = new_namespace(&k, "typed-config").await;
    let ns = Some(namespace.as_str());

    // Names unique enough that replacing them in the JSON text touches nothing else.
    let (cm_name, secret_name, sa_name) = (unique("settings"), unique("creds"), unique("robot"));
    let (role_name, binding_name) = (unique("reader"), unique("reader-binding"));
    let cm = same_as_json(
        &k,
        ns,
        "configmap",
        &["configmap"],
        &cm_name,
        &["--from-literal=mode=fast", "--from-literal=empty="],
    )
    .await;
    assert_eq!(cm["data"], json!({"empty": "", "mode": "fast"}));

    let secret = same_as_json(
        &k,
        ns,
        "secret",
        &["secret", "generic"],
        &secret_name,
        &[
            "--from-literal=user=admin",
            "--from-literal=blank=",
            "--type=example.com/basic",
        ],
    )
    .await;
    assert_eq!(secret["data"], json!({"blank": "", "user": "YWRtaW4="}));
    assert_eq!(secret["type"], "example.com/basic");

    same_as_json(&k, ns, "serviceaccount", &["serviceaccount"], &sa_name, &[]).await;

    let role = same_as_json(
        &k,
        ns,
        "role",
        &["role"],
        &role_name,
        &[
            "--verb=get,list",
            "--resource=pods,configmaps",
            &format!("--resource-name={cm_name}"),
        ],
    )
    .await;
    assert_eq!(role["rules"][0]["verbs"], json!(["get", "list"]));
    assert_eq!(role["rules"][0]["resourceNames"], json!([cm_name]));

    let binding = same_as_json(
        &k,
        ns,
        "rolebinding",
        &["rolebinding"],
        &binding_name,
        &[
            &format!("--role={role_name}"),
            "--user=bob",
            &format!("--serviceaccount={namespace}:{sa_name}"),
        ],
    )
    .await;
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name})
    );
    assert_eq!(binding["subjects"].as_array().map(Vec::len), Some(2), "{binding}");

    k.ok(&["delete", "namespace", &namespace, "--wait=false"]).await;
}

#[tokio::test]
async fn kubectl_create_generators_of_workloads() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_create_generators_of_workloads").await else {
        return;
    };
    let namespace = new_namespace(&k, "typed-work").await;
    let ns = Some(namespace.as_str());

    // An explicit zero for a pointer field (replicas) stays.
    let deployment = same_as_json(
        &k,
        ns,
        "deployment",
        &["deployment"],
        &unique("web"),
        &["--image=nginx", "--port=80", "--replicas=0"],
    )
    .await;
    assert_eq!(deployment["spec"]["replicas"], json!(0));
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["ports"][0]["containerPort"], json!(80));

    let job = same_as_json(
        &k,
        ns,
        "job",
        &["job"],
        &unique("once"),
        &["--image=busybox", "--", "echo", "hi"],
    )
    .await;
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["command"],
        json!(["echo", "hi"])
    );

    let service = same_as_json(
        &k,
        ns,
        "service",
        &["service", "clusterip"],
        &unique("front"),
        &["--tcp=80:8080", "--tcp=443:https"],
    )
    .await;
    assert_eq!(service["spec"]["ports"][0]["targetPort"], json!(8080));
    assert_eq!(service["spec"]["ports"][1]["targetPort"], json!("https"));

    k.ok(&["delete", "namespace", &namespace, "--wait=false"]).await;
}

#[tokio::test]
async fn kubectl_create_generators_of_cluster_scoped_kinds() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_create_generators_of_cluster_scoped_kinds").await else {
        return;
    };
    // kubectl really sends protobuf here (this test would prove nothing otherwise).
    let ns = unique("typed-ns");
    let r = k.run(&["create", "namespace", &ns, "-v=8"]).await;
    assert!(r.ok, "{r:?}");
    assert!(
        r.stderr
            .contains("Content-Type: application/vnd.kubernetes.protobuf"),
        "kubectl create namespace did not send protobuf:\n{}",
        r.stderr
    );
    k.ok(&["delete", "namespace", &ns, "--wait=false"]).await;

    let ns = unique("typed-ns");
    let created = same_as_json(&k, None, "namespace", &["namespace"], &ns, &[]).await;
    assert_eq!(created["metadata"]["name"], json!(ns));

    let role = unique("typed-cr");
    let clusterrole = same_as_json(
        &k,
        None,
        "clusterrole",
        &["clusterrole"],
        &role,
        &["--verb=get", "--resource=nodes", "--non-resource-url=/healthz"],
    )
    .await;
    assert_eq!(
        clusterrole["rules"].as_array().map(Vec::len),
        Some(2),
        "{clusterrole}"
    );
    let aggregated = unique("typed-agg");
    let agg = same_as_json(
        &k,
        None,
        "clusterrole",
        &["clusterrole"],
        &aggregated,
        &["--aggregation-rule=typed-test=true"],
    )
    .await;
    assert_eq!(
        agg["aggregationRule"]["clusterRoleSelectors"],
        json!([{"matchLabels": {"typed-test": "true"}}])
    );
    let binding = unique("typed-crb");
    same_as_json(
        &k,
        None,
        "clusterrolebinding",
        &["clusterrolebinding"],
        &binding,
        &[&format!("--clusterrole={role}"), "--group=typed-testers"],
    )
    .await;

    for (resource, name) in [
        ("clusterrolebinding", binding.clone()),
        ("clusterrole", role.clone()),
        ("clusterrole", aggregated.clone()),
        ("namespace", ns.clone()),
    ] {
        let twin = format!("{name}-json");
        k.ok(&["delete", resource, &name, &twin, "--wait=false"]).await;
    }
}

fn csr_json(name: &str) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "typed-client-test");
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    let request = base64::engine::general_purpose::STANDARD.encode(pem);
    json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": request, "signerName": "kubernetes.io/kube-apiserver-client",
                 "usages": ["client auth"], "expirationSeconds": 3600}
    })
    .to_string()
}

/// The conditions and the approval's managedFields entry, times replaced.
fn approval_view(csr: &Value) -> Value {
    let times = |v: &Value| if v.is_string() { json!("<time>") } else { v.clone() };
    let conditions: Vec<Value> = csr["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut c| {
            for key in ["lastUpdateTime", "lastTransitionTime"] {
                if let Some(v) = c.get(key).map(times) {
                    c[key] = v;
                }
            }
            c
        })
        .collect();
    let managed = comparable(csr, "kubectl")["metadata"]["managedFields"].clone();
    json!({"conditions": conditions, "managedFields": managed})
}

/// kubectl's `certificate approve|deny` (protobuf) against the same condition PUT as JSON.
async fn decide(k: &Kubectl, verb: &str, done: &str, condition: &str, reason: &str, message: &str) {
    let name = unique(&format!("typed-{verb}"));
    let twin = format!("{name}-json");
    k.with_stdin("create", &csr_json(&name), &[]).await;
    k.with_stdin("create", &csr_json(&twin), &[]).await;

    let out = k.ok(&["certificate", verb, &name]).await;
    assert!(out.contains(&format!("{name} {done}")), "{out}");

    // What kubectl sends, as JSON: the CSR it read with one more condition.
    let mut csr = get_json(k, "csr", &twin, None).await;
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    csr["status"]["conditions"] = json!([{"type": condition, "status": "True", "reason": reason,
        "message": message, "lastUpdateTime": now, "lastTransitionTime": null}]);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), csr.to_string()).unwrap();
    let path = format!("/apis/certificates.k8s.io/v1/certificatesigningrequests/{twin}/approval");
    k.ok(&["replace", "--raw", &path, "-f", file.path().to_str().unwrap()])
        .await;

    let decided = get_json(k, "csr", &name, None).await;
    let from_json = get_json(k, "csr", &twin, None).await;
    assert_eq!(approval_view(&decided), approval_view(&from_json));
    let c = &decided["status"]["conditions"][0];
    assert_eq!(c["type"], condition, "{decided}");
    assert_eq!(c["status"], "True");
    assert_eq!(c["reason"], reason);
    assert_eq!(c["message"], message);
    // kubectl leaves lastTransitionTime unset; the server fills it in as kube-apiserver does.
    for key in ["lastUpdateTime", "lastTransitionTime"] {
        let time = c[key].as_str().unwrap_or_default();
        assert!(
            chrono::DateTime::parse_from_rfc3339(time).is_ok(),
            "{key} {time:?}"
        );
    }
    // kube-apiserver records no fields of a CSR's creator (its spec is the server's), and an
    // update of an object without managedFields is not tracked: the approval adds no entry.
    let managed = &approval_view(&decided)["managedFields"];
    assert_eq!(managed, &json!([]), "{managed}");
    k.ok(&["delete", "csr", &name, &twin]).await;
}

#[tokio::test]
async fn kubectl_certificate_approve_and_deny() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_certificate_approve_and_deny").await else {
        return;
    };
    decide(
        &k,
        "approve",
        "approved",
        "Approved",
        "KubectlApprove",
        "This CSR was approved by kubectl certificate approve.",
    )
    .await;
    decide(
        &k,
        "deny",
        "denied",
        "Denied",
        "KubectlDeny",
        "This CSR was denied by kubectl certificate deny.",
    )
    .await;
}

fn protobuf(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// Sends a protobuf body; returns the status code and the JSON answer.
async fn send_protobuf(client: &kube::Client, method: Method, uri: &str, body: Vec<u8>) -> (u16, Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .header("accept", "application/json")
        .body(Body::from(body))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let code = response.status().as_u16();
    let bytes = response.into_body().collect_bytes().await.unwrap();
    (code, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn protobuf_bodies_over_http() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = unique("typed-http");
    namespaces
        .create(
            &Default::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await
        .unwrap();
    let collection = format!("/api/v1/namespaces/{ns}/configmaps");

    // A broken envelope, and a broken object: kube-apiserver's two 400 forms.
    let (code, status) = send_protobuf(&client, Method::POST, &collection, b"k8s\0\x0a".to_vec()).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        "the object provided is unrecognized (must be of type ConfigMap): unexpected EOF (6b3873000a)"
    );
    let (code, status) = send_protobuf(
        &client,
        Method::POST,
        &collection,
        protobuf("v1", "ConfigMap", vec![0x08, 0x01]),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: proto: wrong wireType = 0 for field ObjectMeta"
    );

    // A ConfigMap in protobuf, then deleted with protobuf DeleteOptions: a wrong UID
    // precondition conflicts, the right one deletes.
    let cm = k8s_pb::api::core::v1::ConfigMap {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("from-protobuf".into()),
            ..Default::default()
        }),
        data: [("k".to_string(), "v".to_string())].into(),
        ..Default::default()
    };
    let (code, created) = send_protobuf(
        &client,
        Method::POST,
        &collection,
        protobuf("v1", "ConfigMap", cm.encode_to_vec()),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["data"], json!({"k": "v"}));
    let uid = created["metadata"]["uid"].as_str().unwrap().to_string();
    let item = format!("{collection}/from-protobuf");
    let options = |uid: &str| {
        let opts = pb_meta::DeleteOptions {
            preconditions: Some(pb_meta::Preconditions {
                uid: Some(uid.into()),
                resource_version: None,
            }),
            ..Default::default()
        };
        protobuf("v1", "DeleteOptions", opts.encode_to_vec())
    };
    let (code, status) = send_protobuf(&client, Method::DELETE, &item, options("not-the-uid")).await;
    assert_eq!(code, 409, "{status}");
    let (code, status) = send_protobuf(&client, Method::DELETE, &item, options(&uid)).await;
    assert_eq!(code, 200, "{status}");
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), &ns);
    assert!(configmaps.get_opt("from-protobuf").await.unwrap().is_none());

    namespaces.delete(&ns, &DeleteParams::default()).await.unwrap();
}
