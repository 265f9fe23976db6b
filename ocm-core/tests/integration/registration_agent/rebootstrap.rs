//! spokeagent_rebootstrap / spokeagent_recovery / spokeagent_restart scenarios: the agent
//! bootstraps again when its hub kubeconfig stops being valid.

use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use ocm_core::{metrics::ControllerMetrics, registration::agent};

use super::support::{Setup, eventually, expired_certificate};

async fn join(setup: &Setup) -> tokio::task::JoinHandle<Result<(), agent::AgentError>> {
    let handle = tokio::spawn(agent::run(
        setup.spoke_client.clone(),
        setup.options(),
        ControllerMetrics::default(),
    ));
    eventually(30, "CSR", || async {
        (!setup.pending_csrs().await.is_empty()).then_some(())
    })
    .await;
    setup.approve_pending().await;
    handle
}

#[tokio::test]
async fn spokeagent_rebootstrap_cert_expiry_bootstraps_again() {
    let setup = Setup::new("rb-1").await;
    let handle = join(&setup).await;
    setup.accept(1).await;
    eventually(30, "Joined", || async {
        setup.condition_true("ManagedClusterJoined").await.then_some(())
    })
    .await;
    let csrs_before = setup.csrs().await.len();

    // The certificate expires (here: the secret and its file are given an expired one).
    let expired = expired_certificate(&setup.cluster);
    let secrets: Api<Secret> = Api::namespaced(setup.spoke_client.clone(), &setup.agent_namespace);
    secrets
        .patch(
            "hub-kubeconfig-secret",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"tls.crt": ByteString(expired.clone())}})),
        )
        .await
        .unwrap();
    std::fs::write(setup.hub_dir().join("tls.crt"), &expired).unwrap();

    // The running agent notices and returns the distinct error.
    let result = tokio::time::timeout(std::time::Duration::from_secs(30), handle)
        .await
        .expect("the agent returns when its hub kubeconfig becomes invalid")
        .unwrap();
    assert!(
        matches!(result, Err(agent::AgentError::HubKubeconfigInvalid(_))),
        "{result:?}"
    );

    // Running it again bootstraps with a new CSR and joins.
    let handle = join(&setup).await;
    assert_eq!(setup.csrs().await.len(), csrs_before + 1);
    eventually(30, "secret with a valid certificate", || async {
        let data = setup.secret().await?.data?;
        (data["tls.crt"].0 != expired).then_some(())
    })
    .await;
    assert!(!handle.is_finished());
    handle.abort();
    let _ = handle.await;
    setup.finish().await;
}

#[tokio::test]
async fn spokeagent_restart_kubeconfig_context_cluster_changes() {
    let setup = Setup::new("rb-2").await;
    let handle = join(&setup).await;
    setup.accept(1).await;
    eventually(30, "secret", || async { setup.secret().await }).await;
    handle.abort();
    let _ = handle.await;
    let csrs_before = setup.csrs().await.len();

    // Same server and CA, another cluster entry name: a rebuilt hub.
    let path = setup.dir.path().join("bootstrap.kubeconfig");
    let mut kc = kube::config::Kubeconfig::read_from(&path).unwrap();
    let old = kc.clusters[0].name.clone();
    kc.clusters[0].name = format!("{old}-rebuilt");
    for ctx in &mut kc.contexts {
        if let Some(c) = ctx.context.as_mut().filter(|c| c.cluster == old) {
            c.cluster = format!("{old}-rebuilt");
        }
    }
    std::fs::write(&path, serde_json::to_string(&kc).unwrap()).unwrap();

    let handle = join(&setup).await;
    assert_eq!(setup.csrs().await.len(), csrs_before + 1);
    eventually(30, "kubeconfig naming the new cluster entry", || async {
        let data = setup.secret().await?.data?;
        let kc =
            kube::config::Kubeconfig::from_yaml(std::str::from_utf8(&data["kubeconfig"].0).ok()?).ok()?;
        kc.clusters[0].name.ends_with("-rebuilt").then_some(())
    })
    .await;
    handle.abort();
    let _ = handle.await;
    setup.finish().await;
}

#[tokio::test]
async fn spokeagent_recovery_invalid_bootstrap_then_fixed() {
    let setup = Setup::new("rb-3").await;
    let path = setup.dir.path().join("bootstrap.kubeconfig");
    let good = std::fs::read_to_string(&path).unwrap();
    let mut kc = kube::config::Kubeconfig::from_yaml(&good).unwrap();
    // A port nothing listens on.
    kc.clusters[0].cluster.as_mut().unwrap().server = Some("https://127.0.0.1:1".into());
    std::fs::write(&path, serde_json::to_string(&kc).unwrap()).unwrap();

    let handle = tokio::spawn(agent::run(
        setup.spoke_client.clone(),
        setup.options(),
        ControllerMetrics::default(),
    ));
    // Over a few bootstrap rounds: the agent keeps trying, no cluster and no CSR on the hub.
    for _ in 0..10 {
        assert!(!handle.is_finished(), "an unreachable hub is retried, not fatal");
        assert!(setup.cluster().await.is_none());
        assert!(setup.csrs().await.is_empty());
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    handle.abort();
    let _ = handle.await;

    // Fixed file (upstream restarts the agent when the bootstrap secret changes).
    std::fs::write(&path, good).unwrap();
    let handle = join(&setup).await;
    setup.accept(1).await;
    eventually(30, "Joined", || async {
        setup.condition_true("ManagedClusterJoined").await.then_some(())
    })
    .await;
    handle.abort();
    let _ = handle.await;
    setup.finish().await;
}
