//! `quickstart` runs to completion: every step of the join, with its kubectl commands.

use super::support::{Process, eventually, run_to_end};

const QUICKSTART: &str = env!("CARGO_BIN_EXE_quickstart");

#[tokio::test]
async fn quickstart_walks_the_join_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let args = [
        "--data-dir".to_string(),
        data.display().to_string(),
        "--cluster-name".into(),
        "demo1".into(),
    ];
    let (status, output) = run_to_end(QUICKSTART, &args, &dir.path().join("quickstart.log")).await;
    assert!(status.success(), "{status}\n{output}");
    let hub_kubeconfig = data.join("hub/admin.kubeconfig");
    for expected in [
        format!("export KUBECONFIG={}", hub_kubeconfig.display()),
        "kubectl get managedclusters".to_string(),
        "kubectl get csr -l open-cluster-management.io/cluster-name=demo1".to_string(),
        "kubectl certificate approve demo1-".to_string(),
        r#"kubectl patch managedcluster demo1 -p '{"spec":{"hubAcceptsClient":true}}' --type=merge"#
            .to_string(),
        "demo1 is Joined and Available".to_string(),
        "kubectl get manifestwork addon-helloworld-deploy-0 -n demo1 -o yaml".to_string(),
        "kubectl get csr -l open-cluster-management.io/addon-name=helloworld,open-cluster-management.io/cluster-name=demo1"
            .to_string(),
        "(ManagedClusterAddOnLeaseUpdated)".to_string(),
        format!(
            "kubectl --kubeconfig {} get secret hub-kubeconfig-secret -n open-cluster-management-agent",
            data.join("demo1/admin.kubeconfig").display()
        ),
    ] {
        assert!(output.contains(&expected), "missing {expected:?} in:\n{output}");
    }
    assert!(hub_kubeconfig.is_file());
    // The steps come in order.
    let positions: Vec<usize> = (1..=14)
        .map(|n| {
            output
                .find(&format!("[{n}]"))
                .unwrap_or_else(|| panic!("no step {n}:\n{output}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{output}");
    assert!(!output.contains("WARN"), "{output}");

    // A second run starts afresh on the same directory.
    let (status, output) = run_to_end(QUICKSTART, &args, &dir.path().join("again.log")).await;
    assert!(status.success(), "{status}\n{output}");
    assert!(output.contains("demo1 is Joined and Available"), "{output}");
}

#[tokio::test]
async fn quickstart_keeps_running_until_sigterm_then_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--data-dir".to_string(),
        dir.path().join("data").display().to_string(),
        "--keep-running".into(),
    ];
    let process = Process::start(QUICKSTART, &args, &dir.path().join("quickstart.log"));
    eventually("the joined cluster, kept running", || async {
        process.assert_running();
        process.output().contains("press Ctrl-C to stop").then_some(())
    })
    .await;
    let status = process.terminate().await;
    assert!(status.success(), "{status}");
}
