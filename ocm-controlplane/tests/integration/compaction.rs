//! Compaction of the history, as kube-apiserver's `--etcd-compaction-interval` has etcd compact
//! it: once a compaction round has passed a resourceVersion, an exact list at it and a `continue`
//! token from a list at it answer `410 Gone` (reason `Expired`) with kube-apiserver's messages,
//! while lists at the current state go on working.
//!
//! The embedded server is started with a 1 s interval. Against a real cluster
//! (`OCM_TEST_HUB_KUBECONFIG`) its kube-apiserver must compact often enough for the deadline
//! (`up.sh` of the real-kube tools starts it with `--etcd-compaction-interval=20s`; `COMPACTION=5s`
//! is quicker).

use std::time::Duration;

use ocm_controlplane::{ControlPlane, TestEnv};
use serde_json::{Value, json};

use crate::garbage_collection::{create_namespace, delete_namespace, unique};
use crate::scale::send;

/// How long a compaction round may take to come (a real cluster's interval is 20 s by default).
const DEADLINE: Duration = Duration::from_secs(150);

/// The hub of `OCM_TEST_HUB_KUBECONFIG`, else an embedded server compacting every second.
async fn compacting_server() -> TestEnv {
    if std::env::var("OCM_TEST_HUB_KUBECONFIG").is_ok_and(|v| !v.is_empty()) {
        return TestEnv::hub().await.unwrap();
    }
    TestEnv::start_with(ControlPlane::builder().compaction_interval(Some(Duration::from_secs(1))))
        .await
        .unwrap()
}

fn expired(message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Expired", "code": 410})
}

#[tokio::test]
async fn exact_lists_and_continue_tokens_expire_after_compaction() {
    let env = compacting_server().await;
    let client = env.client().await.unwrap();
    let ns = unique("compaction");
    create_namespace(&client, &ns).await;
    let configmaps = format!("/api/v1/namespaces/{ns}/configmaps");
    for i in 0..3 {
        let body = json!({"metadata": {"name": format!("item-{i}"), "labels": {"set": "seed"}}, "data": {"i": i.to_string()}});
        let (code, created) = send(&client, "POST", &configmaps, "application/json", Some(&body)).await;
        assert_eq!(code, 201, "{created}");
    }
    let (code, first_page) = send(
        &client,
        "GET",
        &format!("{configmaps}?labelSelector=set%3Dseed&limit=1"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(code, 200, "{first_page}");
    let rv = first_page["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let token = first_page["metadata"]["continue"].as_str().unwrap().to_string();
    let exact =
        format!("{configmaps}?labelSelector=set%3Dseed&resourceVersion={rv}&resourceVersionMatch=Exact");

    // Before a compaction passes it, the list at that resourceVersion is served.
    let (code, at_rv) = send(&client, "GET", &exact, "application/json", None).await;
    assert_eq!(code, 200, "{at_rv}");
    assert_eq!(at_rv["items"].as_array().unwrap().len(), 3);

    // Later writes, then compaction rounds, until the list at `rv` expires.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let mut round = 0;
    let answer = loop {
        let patch = json!({"data": {"i": format!("v{round}")}});
        let (code, body) = send(
            &client,
            "PATCH",
            &format!("{configmaps}/item-0"),
            "application/merge-patch+json",
            Some(&patch),
        )
        .await;
        assert_eq!(code, 200, "{body}");
        round += 1;
        let (code, body) = send(&client, "GET", &exact, "application/json", None).await;
        if code == 410 {
            break body;
        }
        assert_eq!(code, 200, "{body}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "the list at resourceVersion {rv} was still served after {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(
        answer,
        expired("The resourceVersion for the provided list is too old.")
    );

    // The continue token of the list at `rv` expired with it; the answer carries a fresh token
    // that continues from the current state.
    let (code, body) = send(
        &client,
        "GET",
        &format!("{configmaps}?labelSelector=set%3Dseed&limit=1&continue={token}"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(code, 410, "{body}");
    let fresh = body["metadata"]["continue"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!fresh.is_empty(), "no fresh continue token in {body}");
    let mut without_token = body.clone();
    without_token["metadata"] = json!({});
    assert_eq!(
        without_token,
        expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a new \
             list without the continue parameter, or use the continue token in this response to retrieve the \
             remainder of the results. Continuing with the provided token results in an inconsistent list - \
             objects that were created, modified, or deleted between the time the first chunk was returned and \
             now may show up in the list."
        )
    );
    let (code, rest) = send(
        &client,
        "GET",
        &format!("{configmaps}?labelSelector=set%3Dseed&limit=5&continue={fresh}"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(code, 200, "{rest}");
    let names: Vec<&str> = rest["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["item-1", "item-2"]);

    // The current state is still listed, and a list at the current resourceVersion is exact.
    let (code, now) = send(
        &client,
        "GET",
        &format!("{configmaps}?labelSelector=set%3Dseed"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(code, 200, "{now}");
    assert_eq!(now["items"][0]["data"]["i"], format!("v{}", round - 1));
    delete_namespace(&client, &ns).await;
}
