//! `kubectl apply --server-side`: creating, conflicting with another writer, `--force-conflicts`,
//! dropping a field from the file, and moving an object from client-side apply to server-side
//! apply (kubectl may take the fields its last-applied record still matches).

use super::*;

fn configmap_yaml(ns: &str, data: &[(&str, &str)]) -> String {
    let data: serde_json::Map<String, Value> =
        data.iter().map(|(k, v)| ((*k).to_string(), json!(v))).collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": ns}, "data": data})
    .to_string()
}

async fn configmap(k: &Kubectl, ns: &str) -> Value {
    serde_json::from_str(
        &k.ok(&[
            "get",
            "configmap",
            "settings",
            "-n",
            ns,
            "-o",
            "json",
            "--show-managed-fields",
        ])
        .await,
    )
    .unwrap()
}

/// The fieldsV1 of `manager`'s entry with `operation`.
fn owned(object: &Value, manager: &str, operation: &str) -> Option<Value> {
    object["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
        .map(|e| e["fieldsV1"].clone())
}

#[tokio::test]
async fn kubectl_apply_server_side_conflicts_and_force() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_apply_server_side_conflicts_and_force").await else {
        return;
    };
    let ns = unique("apply-ss");
    k.with_stdin("create", &namespace_yaml(&ns), &[]).await;

    let first = configmap_yaml(&ns, &[("a", "1"), ("b", "2")]);
    let out = k.with_stdin("apply", &first, &["--server-side"]).await;
    assert_eq!(out.trim(), "configmap/settings serverside-applied");
    let created = configmap(&k, &ns).await;
    assert_eq!(
        owned(&created, "kubectl", "Apply"),
        Some(json!({"f:data": {"f:a": {}, "f:b": {}}}))
    );

    // Another writer changes `a`; applying the file's `a` again conflicts with it.
    k.ok(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"data":{"a":"ops"}}"#,
    ])
    .await;
    let changed = configmap_yaml(&ns, &[("a", "3"), ("b", "2")]);
    let conflict = k
        .run_with_input(&["apply", "--server-side", "-f", "-"], Some(&changed))
        .await;
    assert!(!conflict.ok, "{}", conflict.stdout);
    assert!(
        conflict
            .stderr
            .contains("Apply failed with 1 conflict: conflict with \"kubectl-patch\" using v1: .data.a"),
        "{}",
        conflict.stderr
    );
    assert_eq!(configmap(&k, &ns).await["data"]["a"], "ops");

    // --force-conflicts takes the field back.
    k.with_stdin("apply", &changed, &["--server-side", "--force-conflicts"])
        .await;
    let forced = configmap(&k, &ns).await;
    assert_eq!(forced["data"]["a"], "3");
    assert_eq!(owned(&forced, "kubectl-patch", "Update"), None);

    // Dropping `b` from the file removes it (nobody else owns it).
    let fewer = configmap_yaml(&ns, &[("a", "3")]);
    k.with_stdin("apply", &fewer, &["--server-side"]).await;
    assert_eq!(configmap(&k, &ns).await["data"], json!({"a": "3"}));

    // kubectl diff --server-side shows a pending change and leaves the object alone.
    let next = configmap_yaml(&ns, &[("a", "4")]);
    let diff = k
        .run_with_input(&["diff", "--server-side", "-f", "-"], Some(&next))
        .await;
    assert!(!diff.ok, "diff must exit non-zero when the object differs");
    assert!(diff.stdout.contains("+  a: \"4\""), "{}", diff.stdout);
    assert_eq!(configmap(&k, &ns).await["data"]["a"], "3");

    k.ok(&["delete", "namespace", &ns, "--wait=false"]).await;
}

#[tokio::test]
async fn kubectl_apply_moves_from_client_side_to_server_side() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_apply_moves_from_client_side_to_server_side").await else {
        return;
    };
    let ns = unique("apply-mig");
    k.with_stdin("create", &namespace_yaml(&ns), &[]).await;
    let first = configmap_yaml(&ns, &[("a", "1")]);
    k.with_stdin("apply", &first, &[]).await;
    // The fields client-side apply set are kubectl-client-side-apply's; the record still
    // matches them, so server-side apply may take them without --force-conflicts.
    let second = configmap_yaml(&ns, &[("a", "2"), ("c", "3")]);
    k.with_stdin("apply", &second, &["--server-side"]).await;
    let migrated = configmap(&k, &ns).await;
    assert_eq!(migrated["data"], json!({"a": "2", "c": "3"}));
    let fields = owned(&migrated, "kubectl", "Apply").unwrap();
    assert!(fields["f:data"].get("f:a").is_some(), "{fields}");
    assert!(fields["f:data"].get("f:c").is_some(), "{fields}");
    k.ok(&["delete", "namespace", &ns, "--wait=false"]).await;
}
