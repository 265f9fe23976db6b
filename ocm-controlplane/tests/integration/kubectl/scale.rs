//! `kubectl scale` of a Deployment and a StatefulSet (through their `scale` subresource, with
//! `--current-replicas` as a precondition) and `kubectl get --subresource=scale`.

use super::*;

fn deployment_yaml(name: &str, namespace: &str, kind: &str) -> String {
    let service = if kind == "StatefulSet" {
        format!("  serviceName: {name}\n")
    } else {
        String::new()
    };
    format!(
        "apiVersion: apps/v1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  replicas: 1\n\
         {service}  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n\
         \x20   spec:\n      containers:\n      - name: c\n        image: registry.example/app:1\n"
    )
}

#[tokio::test]
async fn kubectl_scale() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_scale").await else {
        return;
    };
    let ns = unique("kubectl-scale");
    k.with_stdin("create", &namespace_yaml(&ns), &[]).await;
    for (kind, resource) in [
        ("Deployment", "deployment.apps"),
        ("StatefulSet", "statefulset.apps"),
    ] {
        let name = unique(&kind.to_lowercase());
        k.with_stdin("create", &deployment_yaml(&name, &ns, kind), &[])
            .await;
        let target = format!("{}/{name}", kind.to_lowercase());
        let out = k.ok(&["scale", "-n", &ns, &target, "--replicas=3"]).await;
        assert_eq!(out.trim(), format!("{resource}/{name} scaled"));
        let replicas = k
            .ok(&["get", "-n", &ns, &target, "-o", "jsonpath={.spec.replicas}"])
            .await;
        assert_eq!(replicas, "3");
        // --current-replicas is a precondition the Scale read must meet.
        let err = k
            .fails(&[
                "scale",
                "-n",
                &ns,
                &target,
                "--current-replicas=2",
                "--replicas=5",
            ])
            .await;
        assert!(err.contains("Expected replicas to be 2, was 3"), "{err}");
        let out = k
            .ok(&[
                "scale",
                "-n",
                &ns,
                &target,
                "--current-replicas=3",
                "--replicas=0",
            ])
            .await;
        assert_eq!(out.trim(), format!("{resource}/{name} scaled"));
        let scale: Value = serde_json::from_str(
            &k.ok(&["get", "-n", &ns, &target, "--subresource=scale", "-o", "json"])
                .await,
        )
        .unwrap();
        assert_eq!(scale["kind"], "Scale");
        assert_eq!(scale["apiVersion"], "autoscaling/v1");
        assert_eq!(scale["spec"], json!({}));
        assert_eq!(scale["status"]["selector"], format!("app={name}"));
        let table = Table::parse(&k.ok(&["get", "-n", &ns, &target, "--subresource=scale"]).await);
        assert_eq!(table.columns, columns(&["NAME", "DESIRED", "AVAILABLE", "AGE"]));
        assert_eq!(table.row(0, &name)[1], "0");
    }
    k.ok(&["delete", "namespace", &ns, "--wait=false"]).await;
}
