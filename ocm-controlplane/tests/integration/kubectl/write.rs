//! `kubectl replace`, `patch --type=merge|json`, `delete` and `wait`.

use super::*;

#[tokio::test]
async fn kubectl_replace_patch_delete() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_replace_patch_delete").await else {
        return;
    };
    env.install_ocm_crds().await.unwrap();
    let name = unique("edit");
    k.with_stdin("create", &managed_cluster_yaml(&name, "edit"), &[])
        .await;
    let original: Value = serde_json::from_str(&k.ok(&["get", "mcl", &name, "-o", "json"]).await).unwrap();

    // replace -f: a spec change bumps the generation.
    let mut changed = original.clone();
    changed["spec"]["hubAcceptsClient"] = json!(false);
    changed["spec"]["leaseDurationSeconds"] = json!(120);
    let out = k.with_stdin("replace", &changed.to_string(), &[]).await;
    assert_eq!(out.trim(), format!("{MC}/{name} replaced"));
    let replaced: Value = serde_json::from_str(&k.ok(&["get", "mcl", &name, "-o", "json"]).await).unwrap();
    assert_eq!(replaced["spec"]["hubAcceptsClient"], false);
    assert_eq!(replaced["spec"]["leaseDurationSeconds"], 120);
    assert_eq!(replaced["metadata"]["generation"], 2);
    assert_ne!(
        replaced["metadata"]["resourceVersion"],
        original["metadata"]["resourceVersion"]
    );
    // replace with a stale resourceVersion: kube-apiserver's Conflict, in kubectl's words.
    let mut args = vec!["replace"];
    args.extend(&k.validate);
    args.extend(["-f", "-"]);
    let stale = k.run_with_input(&args, Some(&changed.to_string())).await;
    assert!(!stale.ok);
    assert!(
        stale.stderr.contains(&format!(
            "Error from server (Conflict): error when replacing \"STDIN\": Operation cannot be fulfilled on \
             managedclusters.cluster.open-cluster-management.io \"{name}\": the object has been modified; \
             please apply your changes to the latest version and try again"
        )),
        "{}",
        stale.stderr
    );

    // patch --type=merge
    let out = k
        .ok(&[
            "patch",
            "mcl",
            &name,
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"tier":"gold"}},"spec":{"hubAcceptsClient":true}}"#,
        ])
        .await;
    assert_eq!(out.trim(), format!("{MC}/{name} patched"));
    let got = k
        .ok(&[
            "get",
            "mcl",
            &name,
            "-o",
            "jsonpath={.metadata.labels.tier} {.spec.hubAcceptsClient}",
        ])
        .await;
    assert_eq!(got, "gold true");
    // A no-op patch changes nothing, and kubectl says so.
    let out = k
        .ok(&[
            "patch",
            "mcl",
            &name,
            "--type=merge",
            "-p",
            r#"{"spec":{"hubAcceptsClient":true}}"#,
        ])
        .await;
    assert_eq!(out.trim(), format!("{MC}/{name} patched (no change)"));
    // patch --type=json, with a passing and then a failing test operation.
    let ops = json!([
        {"op": "test", "path": "/spec/hubAcceptsClient", "value": true},
        {"op": "add", "path": "/metadata/labels/zone", "value": "eu"},
        {"op": "replace", "path": "/spec/leaseDurationSeconds", "value": 30},
        {"op": "remove", "path": "/metadata/labels/tier"},
    ]);
    k.ok(&["patch", "mcl", &name, "--type=json", "-p", &ops.to_string()])
        .await;
    let labels: Value = serde_json::from_str(
        &k.ok(&["get", "mcl", &name, "-o", "jsonpath={.metadata.labels}"])
            .await,
    )
    .unwrap();
    assert_eq!(labels, json!({"suite": "edit", "zone": "eu"}));
    let err = k
        .fails(&[
            "patch",
            "mcl",
            &name,
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/spec/hubAcceptsClient","value":false}]"#,
        ])
        .await;
    assert!(
        err.contains(
            "The request is invalid: the server rejected our request due to an error in our request"
        ),
        "{err}"
    );
    // Schema validation through patch: kube-apiserver's 422 with the field cause.
    let err = k
        .fails(&[
            "patch",
            "mcl",
            &name,
            "--type=merge",
            "-p",
            r#"{"spec":{"hubAcceptsClient":"yes"}}"#,
        ])
        .await;
    assert!(
        err.contains(&format!(
            "The ManagedCluster \"{name}\" is invalid: spec.hubAcceptsClient: Invalid value: \"string\": \
             spec.hubAcceptsClient in body must be of type boolean: \"string\""
        )),
        "{err}"
    );
    // patch of the status subresource leaves the spec alone.
    let status = json!({"status": {"conditions": [condition("ManagedClusterJoined", "True")]},
                        "spec": {"hubAcceptsClient": false}});
    k.ok(&[
        "patch",
        "mcl",
        &name,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ])
    .await;
    let got = k
        .ok(&[
            "get",
            "mcl",
            &name,
            "-o",
            "jsonpath={.spec.hubAcceptsClient} {.status.conditions[0].type}",
        ])
        .await;
    assert_eq!(got, "true ManagedClusterJoined");

    // delete; then NotFound in kubectl's words.
    let out = k.ok(&["delete", "mcl", &name]).await;
    assert_eq!(out.trim(), format!("{MC} \"{name}\" deleted"));
    let err = k.fails(&["get", "mcl", &name]).await;
    assert!(
        err.contains(&format!(
            "Error from server (NotFound): managedclusters.cluster.open-cluster-management.io \"{name}\" not found"
        )),
        "{err}"
    );
    let err = k.fails(&["delete", "mcl", &name]).await;
    assert!(err.contains("(NotFound)"), "{err}");
    // --ignore-not-found
    let r = k.run(&["delete", "mcl", &name, "--ignore-not-found"]).await;
    assert!(r.ok && r.stdout.is_empty(), "{r:?}");
}

#[tokio::test]
async fn kubectl_delete_waits_for_finalizers() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_delete_waits_for_finalizers").await else {
        return;
    };
    env.install_ocm_crds().await.unwrap();
    let name = unique("fin");
    let mut yaml = managed_cluster_yaml(&name, "fin");
    yaml = yaml.replace("metadata:\n", "metadata:\n  finalizers:\n  - example.com/hold\n");
    k.with_stdin("create", &yaml, &[]).await;

    // --wait=false returns at once; the object stays, marked for deletion.
    let out = k.ok(&["delete", "mcl", &name, "--wait=false"]).await;
    assert_eq!(out.trim(), format!("{MC} \"{name}\" deleted"));
    let ts = k
        .ok(&[
            "get",
            "mcl",
            &name,
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ])
        .await;
    assert!(chrono::DateTime::parse_from_rfc3339(&ts).is_ok(), "{ts:?}");
    // wait --for=delete returns once the finalizer is gone.
    let waiter = {
        let cmd = k.command(&["wait", "--for=delete", &format!("mcl/{name}"), "--timeout=30s"]);
        tokio::task::spawn_blocking(move || {
            let mut cmd = cmd;
            cmd.output().unwrap()
        })
    };
    k.ok(&[
        "patch",
        "mcl",
        &name,
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])
    .await;
    let out = tokio::time::timeout(DEADLINE, waiter).await.unwrap().unwrap();
    assert!(
        out.status.success(),
        "wait --for=delete: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    k.fails(&["get", "mcl", &name]).await;
}

#[tokio::test]
async fn kubectl_wait_for_condition_and_jsonpath() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_wait_for_condition_and_jsonpath").await else {
        return;
    };
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    let name = unique("wait");
    k.with_stdin("create", &managed_cluster_yaml(&name, "wait"), &[])
        .await;

    // Already true: wait returns at once. Not yet true: wait times out with kubectl's message.
    let r = k
        .run(&[
            "wait",
            "--for=condition=ManagedClusterConditionAvailable",
            &format!("managedcluster/{name}"),
            "--timeout=1s",
        ])
        .await;
    assert!(!r.ok);
    assert!(
        r.stderr.contains(&format!(
            "timed out waiting for the condition on managedclusters/{name}"
        )),
        "{}",
        r.stderr
    );
    let out = k
        .ok(&[
            "wait",
            "--for=jsonpath={.spec.hubAcceptsClient}=true",
            &format!("managedcluster/{name}"),
            "--timeout=10s",
        ])
        .await;
    assert_eq!(out.trim(), format!("{MC}/{name} condition met"));

    // Started first, satisfied while it watches.
    let waiters: Vec<_> = [
        "--for=condition=ManagedClusterConditionAvailable".to_string(),
        "--for=condition=ManagedClusterJoined=True".to_string(),
        "--for=jsonpath={.status.conditions[0].reason}=Test".to_string(),
    ]
    .into_iter()
    .map(|cond| {
        let mut cmd = k.command(&["wait", &cond, &format!("mcl/{name}"), "--timeout=30s"]);
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
    })
    .collect();
    let gvk = kube::api::GroupVersionKind::gvk("cluster.open-cluster-management.io", "v1", "ManagedCluster");
    let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, "managedclusters");
    let api: Api<kube::api::DynamicObject> = Api::all_with(client, &ar);
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"conditions": [
            condition("ManagedClusterConditionAvailable", "True"),
            condition("ManagedClusterJoined", "True"),
        ]}})),
    )
    .await
    .unwrap();
    for waiter in waiters {
        let out = tokio::time::timeout(DEADLINE, waiter).await.unwrap().unwrap();
        assert!(
            out.status.success(),
            "kubectl wait: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("{MC}/{name} condition met")
        );
    }
    // A condition that is False does not satisfy --for=condition=X.
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"conditions": [condition("ManagedClusterConditionAvailable", "False")]}}),
        ),
    )
    .await
    .unwrap();
    let r = k
        .run(&[
            "wait",
            "--for=condition=ManagedClusterConditionAvailable",
            &format!("mcl/{name}"),
            "--timeout=1s",
        ])
        .await;
    assert!(!r.ok, "{r:?}");
    k.ok(&[
        "wait",
        "--for=condition=ManagedClusterConditionAvailable=False",
        &format!("mcl/{name}"),
    ])
    .await;
    api.delete(&name, &DeleteParams::default()).await.unwrap();
}
