//! Refused request options, answered as kube-apiserver answers them: a `dryRun` value other than
//! `All` on each write verb (422 naming the verb's options kind) and field selectors naming a
//! field the kind does not support (400, worded per kind: the default conversion, the kinds with
//! their own, Job's, and custom resources').
//!
//! Every test uses its own namespace (or CRD group) and cleans up, so they also pass against a real
//! cluster (`OCM_TEST_HUB_KUBECONFIG`).

use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

use crate::garbage_collection::{create_namespace, delete_namespace, eventually, unique};
use crate::scale::send;

fn bad_dry_run(options: &str, values: &str) -> Value {
    let detail = format!("Unsupported value: [{values}]: supported values: \"All\"");
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{options}.meta.k8s.io \"\" is invalid: dryRun: {detail}"),
        "reason": "Invalid",
        "details": {"group": "meta.k8s.io", "kind": options,
            "causes": [{"reason": "FieldValueNotSupported", "message": detail, "field": "dryRun"}]},
        "code": 422})
}

#[tokio::test]
async fn bad_dry_run_values_are_refused_per_verb() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("dry-run");
    create_namespace(&client, &ns).await;
    let configmaps = format!("/api/v1/namespaces/{ns}/configmaps");
    let body = json!({"metadata": {"name": "cm"}, "data": {"a": "1"}});
    let (code, created) = send(&client, "POST", &configmaps, "application/json", Some(&body)).await;
    assert_eq!(code, 201, "{created}");
    let object = format!("{configmaps}/cm");
    let cases = [
        (
            "POST",
            configmaps.as_str(),
            "application/json",
            body.clone(),
            "CreateOptions",
        ),
        (
            "PUT",
            object.as_str(),
            "application/json",
            created.clone(),
            "UpdateOptions",
        ),
        (
            "PATCH",
            object.as_str(),
            "application/merge-patch+json",
            json!({"data": {"b": "2"}}),
            "PatchOptions",
        ),
        (
            "DELETE",
            object.as_str(),
            "application/json",
            Value::Null,
            "DeleteOptions",
        ),
    ];
    for (method, path, content_type, body, options) in cases {
        let body = (!body.is_null()).then_some(body);
        let (code, answer) = send(
            &client,
            method,
            &format!("{path}?dryRun=foo"),
            content_type,
            body.as_ref(),
        )
        .await;
        assert_eq!(code, 422, "{method}: {answer}");
        assert_eq!(answer, bad_dry_run(options, "\"foo\""), "{method}");
    }
    let (code, answer) = send(
        &client,
        "POST",
        &format!("{configmaps}?dryRun=All&dryRun=bar"),
        "application/json",
        Some(&body),
    )
    .await;
    assert_eq!(code, 422, "{answer}");
    assert_eq!(answer, bad_dry_run("CreateOptions", "\"All\",\"bar\""));
    // A delete with a body takes its options from the body: its dryRun is checked, and
    // `dryRun: ["All"]` there makes the delete a dry run whatever the query says.
    let (code, answer) = send(
        &client,
        "DELETE",
        &object,
        "application/json",
        Some(&json!({"dryRun": ["bar"]})),
    )
    .await;
    assert_eq!(code, 422, "{answer}");
    assert_eq!(answer, bad_dry_run("DeleteOptions", "\"bar\""));
    let (code, answer) = send(
        &client,
        "DELETE",
        &format!("{object}?dryRun=foo"),
        "application/json",
        Some(&json!({"dryRun": ["All"]})),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    // Nothing was written or deleted; reads ignore the parameter.
    let (code, got) = send(
        &client,
        "GET",
        &format!("{object}?dryRun=foo"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(code, 200, "{got}");
    assert_eq!(got["data"], json!({"a": "1"}));
    delete_namespace(&client, &ns).await;
}

fn bad_request(message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "BadRequest", "code": 400})
}

#[tokio::test]
async fn unsupported_field_selectors_are_refused_per_kind() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("field-selector");
    create_namespace(&client, &ns).await;
    let default =
        "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"";
    let cases = [
        (format!("/api/v1/namespaces/{ns}/configmaps"), default.to_string()),
        (
            format!("/apis/apps/v1/namespaces/{ns}/deployments"),
            default.to_string(),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles".to_string(),
            default.to_string(),
        ),
        (
            format!("/api/v1/namespaces/{ns}/secrets"),
            "field label not supported: spec.foo".to_string(),
        ),
        (
            "/api/v1/namespaces".to_string(),
            "field label not supported: spec.foo".to_string(),
        ),
        (
            format!("/apis/batch/v1/namespaces/{ns}/jobs"),
            "field label \"spec.foo\" not supported for Job".to_string(),
        ),
    ];
    for (path, message) in &cases {
        for query in [
            "fieldSelector=spec.foo%3Dbar",
            "fieldSelector=spec.foo%3Dbar&watch=true",
        ] {
            let (code, answer) = send(
                &client,
                "GET",
                &format!("{path}?{query}"),
                "application/json",
                None,
            )
            .await;
            assert_eq!(code, 400, "{path}?{query}: {answer}");
            assert_eq!(answer, bad_request(message), "{path}?{query}");
        }
    }
    // Namespaces are not selected by their namespace; the supported fields still work.
    let (code, answer) = send(
        &client,
        "GET",
        "/api/v1/namespaces?fieldSelector=metadata.namespace%3Dx",
        "application/json",
        None,
    )
    .await;
    assert_eq!(code, 400, "{answer}");
    assert_eq!(
        answer,
        bad_request("field label not supported: metadata.namespace")
    );
    let (code, answer) = send(
        &client,
        "GET",
        &format!("/api/v1/namespaces?fieldSelector=metadata.name%3D{ns}"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["items"].as_array().unwrap().len(), 1);

    // A custom resource: metadata.name, and metadata.namespace when namespaced.
    let group = format!("{}.fields.example.com", unique("g"));
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {"group": group, "scope": "Cluster",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (code, body) = send(&client, "POST", crds, "application/json", Some(&crd)).await;
    assert_eq!(code, 201, "{body}");
    let gadgets = format!("/apis/{group}/v1/gadgets");
    eventually("the Gadget kind is served", || {
        let (client, gadgets) = (client.clone(), gadgets.clone());
        async move { (send(&client, "GET", &gadgets, "application/json", None).await.0 == 200).then_some(()) }
    })
    .await;
    for (label, code) in [
        ("metadata.name", 200),
        ("metadata.namespace", 400),
        ("spec.foo", 400),
    ] {
        let (got, answer) = send(
            &client,
            "GET",
            &format!("{gadgets}?fieldSelector={label}%3Dx"),
            "application/json",
            None,
        )
        .await;
        assert_eq!(got, code, "{label}: {answer}");
        if code == 400 {
            assert_eq!(
                answer,
                bad_request(&format!("field label not supported: {label}"))
            );
        }
    }
    let _ = send(
        &client,
        "DELETE",
        &format!("{crds}/gadgets.{group}"),
        "application/json",
        None,
    )
    .await;
    delete_namespace(&client, &ns).await;
}
