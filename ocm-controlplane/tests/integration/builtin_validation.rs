//! Validation of built-in kinds through the HTTP API: objects kube-apiserver refuses are refused
//! with the same status code, reason, causes and message, and bodies that do not decode into the
//! kind's Go types answer 400 with kube's "cannot be handled as a ..." message. kubectl sees the
//! same answers.
//!
//! Every test uses its own namespace and cleans up, so they also pass against a real cluster
//! (`OCM_TEST_HUB_KUBECONFIG`).

use hyper::http::Request;
use kube::client::Body;
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

use crate::garbage_collection::{create_namespace, delete_namespace, unique};
use crate::kubectl::Kubectl;

/// Sends `body` with `method` to `path`; answers the status code and the JSON body.
async fn send(client: &kube::Client, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let content_type = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let code = response.status().as_u16();
    let bytes = response.into_body().collect_bytes().await.unwrap();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn causes(status: &Value) -> Vec<(String, String, String)> {
    status["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("field"), s("reason"), s("message"))
        })
        .collect()
}

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}})
}

#[tokio::test]
async fn invalid_deployments_are_refused_with_kubes_causes() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("valid-deploy");
    create_namespace(&client, &ns).await;
    let path = format!("/apis/apps/v1/namespaces/{ns}/deployments");

    let mut bad = deployment("web");
    bad["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
    bad["spec"]["template"]["spec"]["containers"][0] = json!({"name": "app"});
    bad["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
    let (code, status) = send(&client, "POST", &path, &bad).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["kind"], "Deployment");
    assert_eq!(status["details"]["group"], "apps");
    assert_eq!(
        causes(&status),
        vec![
            (
                "spec.template.metadata.labels".into(),
                "FieldValueInvalid".into(),
                "Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`".into()
            ),
            (
                "spec.template.spec.containers[0].image".into(),
                "FieldValueRequired".into(),
                "Required value".into()
            ),
            (
                "spec.template.spec.restartPolicy".into(),
                "FieldValueNotSupported".into(),
                "Unsupported value: \"Never\": supported values: \"Always\"".into()
            ),
        ]
    );
    assert_eq!(
        status["message"],
        "Deployment.apps \"web\" is invalid: [spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`, spec.template.spec.containers[0].image: Required value, spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"]"
    );

    // A valid Deployment is created; its selector cannot change afterwards.
    let (code, _) = send(&client, "POST", &path, &deployment("web")).await;
    assert_eq!(code, 201);
    let patch = json!({"spec": {"selector": {"matchLabels": {"app": "web", "tier": "x"}},
        "template": {"metadata": {"labels": {"app": "web", "tier": "x"}}}}});
    let (code, status) = send(&client, "PATCH", &format!("{path}/web"), &patch).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        vec![(
            "spec.selector".into(),
            "FieldValueInvalid".into(),
            "Invalid value: {\"matchLabels\":{\"app\":\"web\",\"tier\":\"x\"}}: field is immutable".into()
        )]
    );
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn bodies_of_the_wrong_go_type_answer_400() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("valid-decode");
    create_namespace(&client, &ns).await;
    let mut bad = deployment("typed");
    bad["spec"]["replicas"] = json!("x");
    let (code, status) = send(
        &client,
        "POST",
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        &bad,
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
        "spec": {"holderIdentity": 5}});
    let (code, status) = send(
        &client,
        "POST",
        &format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"),
        &lease,
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "Lease in version \"v1\" cannot be handled as a Lease: json: cannot unmarshal number into Go struct field LeaseSpec.spec.holderIdentity of type string"
    );
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn services_rbac_and_leases_follow_kubes_rules() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("valid-misc");
    create_namespace(&client, &ns).await;

    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"type": "ClusterIP", "ports": [{"port": 80, "nodePort": 30080}, {"port": 80}]}});
    let (code, status) = send(
        &client,
        "POST",
        &format!("/api/v1/namespaces/{ns}/services"),
        &svc,
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let fields: Vec<String> = causes(&status).into_iter().map(|c| c.0).collect();
    for expected in [
        "spec.ports[0].name",
        "spec.ports[1].name",
        "spec.ports[0].nodePort",
        "spec.ports[1]",
    ] {
        assert!(fields.contains(&expected.to_string()), "{expected} in {status}");
    }

    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Thing", "name": "r"},
        "subjects": [{"kind": "User", "name": "alice"}]});
    let (code, status) = send(
        &client,
        "POST",
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"),
        &binding,
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "RoleBinding.rbac.authorization.k8s.io \"b\" is invalid: roleRef.kind: Unsupported value: \"Thing\": supported values: \"Role\", \"ClusterRole\""
    );

    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
        "spec": {"leaseDurationSeconds": 0}});
    let (code, status) = send(
        &client,
        "POST",
        &format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"),
        &lease,
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "Lease.coordination.k8s.io \"l\" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
    );
    delete_namespace(&client, &ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reports_the_same_refusal() {
    let env = TestEnv::hub().await.unwrap();
    let Some(kubectl) = Kubectl::new(&env, "kubectl_reports_the_same_refusal").await else {
        return;
    };
    let client = env.client().await.unwrap();
    let ns = unique("valid-kubectl");
    create_namespace(&client, &ns).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("job.json");
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "j", "image": "busybox:1.36"}]}}}});
    std::fs::write(&file, serde_json::to_vec(&job).unwrap()).unwrap();
    let stderr = kubectl
        .fails(&[
            "-n",
            &ns,
            "create",
            "--validate=false",
            "-f",
            file.to_str().unwrap(),
        ])
        .await;
    assert!(
        stderr.contains(
            "The Job \"j\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
        ),
        "{stderr}"
    );
    delete_namespace(&client, &ns).await;
}
