//! ManifestWork admission (ocm-core.md §3.11) through kubectl, on whichever hub [`AdmissionHub`]
//! runs: the embedded control plane in-process, or a real hub with the webhook server.

use serde_json::{Value, json};

use super::{AdmissionHub, Run};
use crate::support::unique;

const WORK_VALIDATOR: &str = "manifestworkvalidators.admission.work.open-cluster-management.io";

fn assert_refused(run: &Run, message: &str) {
    assert!(!run.ok, "expected a refusal, got: {}", run.stdout);
    let want = format!("admission webhook \"{WORK_VALIDATOR}\" denied the request: {message}");
    assert!(
        run.stderr.contains("(BadRequest)") && run.stderr.contains(&want),
        "expected (BadRequest) {want:?}, got: {}",
        run.stderr
    );
}

fn assert_ok(run: &Run, what: &str) {
    assert!(run.ok, "{what} failed: {}", run.stderr);
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
        "data": {"k": "v"}})
}

/// A hub namespace for the test's works.
async fn namespace(hub: &AdmissionHub) -> String {
    let namespace = unique("adm-work");
    assert_ok(
        &hub.kubectl(None, &["create", "namespace", &namespace], None)
            .await,
        "creating the namespace",
    );
    hub.created(&["namespace", &namespace]);
    namespace
}

fn work(
    hub: &AdmissionHub,
    namespace: &str,
    name: &str,
    manifests: Value,
    executor: Option<Value>,
) -> String {
    let mut work = json!({"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": name, "namespace": namespace, "labels": {super::RUN_LABEL: hub.run}},
        "spec": {"workload": {"manifests": manifests}}});
    if let Some(executor) = executor {
        work["spec"]["executor"] = executor;
    }
    work.to_string()
}

#[tokio::test]
async fn manifest_works_need_named_unique_manifests_within_the_limit() {
    let hub = AdmissionHub::start().await;
    let ns = namespace(&hub).await;
    let create = |yaml: String| {
        let hub = &hub;
        async move { hub.kubectl(None, &["create", "-f", "-"], Some(yaml)).await }
    };
    assert_refused(
        &create(work(&hub, &ns, "empty", json!([]), None)).await,
        "manifests should not be empty",
    );
    assert_refused(
        &create(work(
            &hub,
            &ns,
            "twice",
            json!([config_map("a"), config_map("b"), config_map("a")]),
            None,
        ))
        .await,
        "duplicate manifest for resource default/a with resource type v1.ConfigMap",
    );
    let generated = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "g", "generateName": "g-", "namespace": "default"}});
    assert_refused(
        &create(work(&hub, &ns, "generated", json!([generated]), None)).await,
        "generateName must not be set in manifest",
    );
    // 600 000 bytes of data are past the default 500 KiB limit.
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "default"},
        "data": {"k": "x".repeat(600_000)}});
    let run = create(work(&hub, &ns, "big", json!([big]), None)).await;
    assert!(!run.ok, "a work past the limit was admitted");
    assert!(
        run.stderr.contains("bytes which exceeds the 512000 limit"),
        "{}",
        run.stderr
    );
    let ok = work(&hub, &ns, "fine", json!([config_map("a"), config_map("b")]), None);
    assert_ok(&create(ok).await, "creating a valid work");
    // Updates are checked too.
    let run = hub
        .kubectl(
            None,
            &[
                "-n",
                &ns,
                "patch",
                "manifestwork",
                "fine",
                "--type=merge",
                "-p",
                r#"{"spec":{"workload":{"manifests":[]}}}"#,
            ],
            None,
        )
        .await;
    assert_refused(&run, "manifests should not be empty");
    hub.cleanup().await;
}

#[tokio::test]
async fn an_executor_needs_the_execute_as_permission() {
    let hub = AdmissionHub::start().await;
    let ns = namespace(&hub).await;
    let writer = json!({"apiGroups": ["work.open-cluster-management.io"], "resources": ["manifestworks"],
        "verbs": ["get", "list", "create", "update", "patch"]});
    let execute = json!({"apiGroups": ["work.open-cluster-management.io"], "resources": ["manifestworks"],
        "verbs": ["execute-as"], "resourceNames": ["system:serviceaccount:ns1:sa1"]});
    let plain = hub.user_with(json!([writer])).await;
    let executor_user = hub.user_with(json!([writer, execute])).await;
    let executor = json!({"subject": {"type": "ServiceAccount",
        "serviceAccount": {"namespace": "ns1", "name": "sa1"}}});
    let with_executor = |name: &str| work(&hub, &ns, name, json!([config_map("a")]), Some(executor.clone()));
    let run = hub
        .kubectl(Some(&plain), &["create", "-f", "-"], Some(with_executor("w1")))
        .await;
    assert_refused(
        &run,
        &format!(
            "user {} cannot manipulate the Manifestwork with executor ns1/sa1 in namespace {ns}",
            plain.name()
        ),
    );
    let run = hub
        .kubectl(
            Some(&executor_user),
            &["create", "-f", "-"],
            Some(with_executor("w1")),
        )
        .await;
    assert_ok(&run, "creating a work with a permitted executor");
    // Without an executor nothing is asked (gate NilExecutorValidating off); an update that keeps
    // the executor is not checked again.
    let run = hub
        .kubectl(
            Some(&plain),
            &["create", "-f", "-"],
            Some(work(&hub, &ns, "w2", json!([config_map("a")]), None)),
        )
        .await;
    assert_ok(&run, "creating a work without executor");
    let run = hub
        .kubectl(
            Some(&plain),
            &["-n", &ns, "label", "manifestwork", "w1", "note=x"],
            None,
        )
        .await;
    assert_ok(&run, "labelling a work keeping its executor");
    // A nil service account is refused.
    let run = hub
        .kubectl(
            None,
            &["create", "-f", "-"],
            Some(work(
                &hub,
                &ns,
                "w3",
                json!([config_map("a")]),
                Some(json!({"subject": {"type": "ServiceAccount"}})),
            )),
        )
        .await;
    assert_refused(&run, "executor service account can not be nil");
    hub.cleanup().await;
}
