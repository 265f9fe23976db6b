//! kubectl's strategic-merge paths: client-side `apply -f` (a three-way strategic merge patch and
//! the `last-applied-configuration` annotation), `patch` with its default type, and `diff`
//! (a dry-run of the same patch).

use super::*;

fn deployment_yaml(ns: &str, image: &str, with_side: bool, env: &[(&str, &str)]) -> String {
    let env: Vec<Value> = env.iter().map(|(n, v)| json!({"name": n, "value": v})).collect();
    let mut containers = vec![json!({"name": "app", "image": image, "env": env})];
    if with_side {
        containers.push(json!({"name": "side", "image": "busybox:1"}));
    }
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns, "labels": {"tier": "front"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}}})
    .to_string()
}

async fn deployment(k: &Kubectl, ns: &str) -> Value {
    serde_json::from_str(&k.ok(&["get", "deployment", "web", "-n", ns, "-o", "json"]).await).unwrap()
}

/// The `last-applied-configuration` annotation (kubectl records the file with an empty
/// `metadata.annotations`, which is dropped here).
fn applied_configuration(d: &Value) -> Value {
    let mut v: Value = serde_json::from_str(
        d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    if v["metadata"]["annotations"] == json!({}) {
        v["metadata"].as_object_mut().unwrap().remove("annotations");
    }
    v
}

fn container<'v>(d: &'v Value, name: &str) -> Option<&'v Value> {
    d["spec"]["template"]["spec"]["containers"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == name)
}

#[tokio::test]
async fn kubectl_apply_client_side_patch_and_diff() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_apply_client_side_patch_and_diff").await else {
        return;
    };
    let ns = unique("apply-cs");
    k.with_stdin("create", &namespace_yaml(&ns), &[]).await;

    // First apply creates the object and records what was applied.
    let first = deployment_yaml(&ns, "nginx:1", true, &[("A", "1"), ("B", "2")]);
    let out = k.with_stdin("apply", &first, &[]).await;
    assert_eq!(out.trim(), "deployment.apps/web created");
    let created = deployment(&k, &ns).await;
    let last_applied = applied_configuration(&created);
    assert_eq!(last_applied, serde_json::from_str::<Value>(&first).unwrap());

    // kubectl get prints a Deployment's usual columns (READY is ready/desired; no controller
    // runs pods here, so 0/1).
    let table = Table::parse(&k.ok(&["get", "deployment", "web", "-n", &ns, "-o", "wide"]).await);
    assert_eq!(
        table.columns,
        columns(&[
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ])
    );
    let row = table.row(0, "web");
    assert_eq!(row[1], "0/1");
    assert_eq!(row[5], "app,side");
    assert_eq!(row[6], "nginx:1,busybox:1");
    assert_eq!(row[7], "app=web");

    // Another writer adds a label: a three-way merge keeps what apply never managed.
    k.ok(&["label", "deployment", "web", "-n", &ns, "owner=ops"])
        .await;

    // kubectl diff shows the change, exits 1, and changes nothing.
    let second = deployment_yaml(&ns, "nginx:2", false, &[("A", "1")]);
    let diff = k.run_with_input(&["diff", "-f", "-"], Some(&second)).await;
    assert!(!diff.ok, "diff must exit non-zero when the object differs");
    assert!(diff.stdout.contains("-        image: nginx:1"), "{}", diff.stdout);
    assert!(diff.stdout.contains("+        image: nginx:2"), "{}", diff.stdout);
    let unchanged = deployment(&k, &ns).await;
    assert_eq!(container(&unchanged, "app").unwrap()["image"], "nginx:1");
    assert_eq!(
        unchanged["metadata"]["resourceVersion"],
        deployment(&k, &ns).await["metadata"]["resourceVersion"]
    );

    // Second apply: the changed image changes, the dropped container and env var go.
    let out = k.with_stdin("apply", &second, &[]).await;
    assert_eq!(out.trim(), "deployment.apps/web configured");
    let applied = deployment(&k, &ns).await;
    let app = container(&applied, "app").unwrap();
    assert_eq!(app["image"], "nginx:2");
    assert_eq!(app["env"], json!([{"name": "A", "value": "1"}]));
    assert!(container(&applied, "side").is_none(), "{applied}");
    assert_eq!(applied["metadata"]["labels"]["owner"], "ops");
    let last_applied = applied_configuration(&applied);
    assert_eq!(last_applied, serde_json::from_str::<Value>(&second).unwrap());

    // diff of what is applied: no output, exit 0.
    let same = k.run_with_input(&["diff", "-f", "-"], Some(&second)).await;
    assert!(same.ok, "{} {}", same.stdout, same.stderr);
    assert!(same.stdout.trim().is_empty(), "{}", same.stdout);

    // kubectl patch (strategic by default): containers merge by name; a merged list puts the
    // items the patch names first where the live list gives no order (as kube-apiserver does).
    let out = k
        .ok(&[
            "patch",
            "deployment",
            "web",
            "-n",
            &ns,
            "-p",
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"extra","image":"busybox:2"},{"name":"app","env":[{"name":"B","value":"3"}]}]}}}}"#,
        ])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web patched");
    let patched = deployment(&k, &ns).await;
    assert_eq!(container(&patched, "extra").unwrap()["image"], "busybox:2");
    assert_eq!(
        container(&patched, "app").unwrap()["env"],
        json!([{"name": "B", "value": "3"}, {"name": "A", "value": "1"}])
    );
    assert_eq!(container(&patched, "app").unwrap()["image"], "nginx:2");

    k.ok(&["delete", "namespace", &ns, "--wait=false"]).await;
}
