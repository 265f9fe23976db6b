//! spokecluster_joining, spokeagent_restart and spokecluster_status scenarios.

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use ocm_core::{metrics::ControllerMetrics, registration::agent};

use super::support::{Setup, eventually};

fn start(setup: &Setup, spoke: kube::Client) -> tokio::task::JoinHandle<Result<(), agent::AgentError>> {
    let options = setup.options();
    tokio::spawn(agent::run(spoke, options, ControllerMetrics::default()))
}

#[tokio::test]
async fn spokecluster_joining_join_without_proxy() {
    let setup = Setup::new("join-1").await;
    let handle = start(&setup, setup.spoke_client.clone());

    // The agent creates the ManagedCluster and a pending CSR.
    eventually(30, "ManagedCluster", || async { setup.cluster().await }).await;
    eventually(30, "a pending CSR", || async {
        let pending = setup.pending_csrs().await;
        (!pending.is_empty()).then_some(())
    })
    .await;
    let csr = setup.csrs().await.remove(0);
    assert!(
        csr.metadata
            .name
            .as_deref()
            .unwrap()
            .starts_with(&format!("{}-", setup.cluster))
    );
    assert_eq!(csr.spec.signer_name, "kubernetes.io/kube-apiserver-client");
    assert!(setup.secret().await.is_none());

    assert_eq!(setup.approve_pending().await, 1);
    setup.accept(1).await;

    // The secret is filled with the issued credentials.
    let secret = eventually(30, "hub-kubeconfig-secret", || async { setup.secret().await }).await;
    let data = secret.data.unwrap();
    for key in ["kubeconfig", "tls.crt", "tls.key", "cluster-name", "agent-name"] {
        assert!(data.contains_key(key), "secret lacks {key}");
    }
    assert_eq!(data["cluster-name"].0, setup.cluster.as_bytes());
    assert_eq!(data["agent-name"].0, b"agent1");
    let kc =
        kube::config::Kubeconfig::from_yaml(std::str::from_utf8(&data["kubeconfig"].0).unwrap()).unwrap();
    assert_eq!(kc.current_context.as_deref(), Some("default-context"));
    let user = kc.auth_infos[0].auth_info.as_ref().unwrap();
    assert_eq!(user.client_certificate.as_deref(), Some("tls.crt"));
    assert_eq!(user.client_key.as_deref(), Some("tls.key"));
    assert!(setup.hub_dir().join("tls.crt").is_file());

    // Joined and Available, and the lease is renewed by the agent's own identity.
    eventually(30, "Joined", || async {
        setup.condition_true("ManagedClusterJoined").await.then_some(())
    })
    .await;
    eventually(30, "Available", || async {
        setup
            .condition_true("ManagedClusterConditionAvailable")
            .await
            .then_some(())
    })
    .await;
    let leases: Api<Lease> = Api::namespaced(setup.hub_client.clone(), &setup.cluster);
    eventually(30, "lease renewed", || async {
        leases
            .get("managed-cluster-lease")
            .await
            .unwrap()
            .spec
            .and_then(|s| s.renew_time)
            .map(|_| ())
    })
    .await;
    let status = setup.cluster().await.unwrap().status.unwrap();
    assert!(status.version.and_then(|v| v.kubernetes).is_some());
    // The change to Available is recorded as an event in the cluster namespace on the hub.
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(setup.hub_client.clone(), &setup.cluster);
    eventually(30, "Available event", || async {
        let list = events.list(&Default::default()).await.unwrap();
        list.items
            .into_iter()
            .find(|e| {
                e.reason.as_deref() == Some("Available")
                    && e.reporting_controller.as_deref() == Some("klusterlet-agent")
            })
            .map(|_| ())
    })
    .await;
    assert!(!handle.is_finished());
    handle.abort();
    let _ = handle.await;
    setup.finish().await;
}

#[tokio::test]
async fn spokeagent_restart_mid_join_creates_a_new_csr_and_completes() {
    let setup = Setup::new("restart-1").await;
    let handle = start(&setup, setup.spoke_client.clone());
    eventually(30, "first CSR", || async {
        (!setup.csrs().await.is_empty()).then_some(())
    })
    .await;
    handle.abort();
    let _ = handle.await;

    let handle = start(&setup, setup.spoke_client.clone());
    eventually(30, "second CSR", || async {
        (setup.csrs().await.len() >= 2).then_some(())
    })
    .await;
    // Approving every pending CSR: only the one the running agent holds the key of is used.
    setup.approve_pending().await;
    setup.accept(1).await;
    eventually(30, "secret", || async { setup.secret().await }).await;
    eventually(30, "Joined", || async {
        setup.condition_true("ManagedClusterJoined").await.then_some(())
    })
    .await;
    assert!(setup.csrs().await.len() <= 10);
    handle.abort();
    let _ = handle.await;

    // Restart after join: the secret is reused, no new CSR.
    let before = setup.csrs().await.len();
    let leases: Api<Lease> = Api::namespaced(setup.hub_client.clone(), &setup.cluster);
    let renew_time = || async {
        leases
            .get("managed-cluster-lease")
            .await
            .unwrap()
            .spec
            .and_then(|s| s.renew_time)
    };
    let last = renew_time().await;
    let handle = start(&setup, setup.spoke_client.clone());
    // Once the restarted agent renews the lease it runs on the saved credentials.
    eventually(30, "lease renewed after restart", || async {
        let now = renew_time().await;
        (now.is_some() && now != last).then_some(())
    })
    .await;
    assert_eq!(
        setup.csrs().await.len(),
        before,
        "a restart after join must not bootstrap again"
    );
    assert!(!handle.is_finished());
    handle.abort();
    let _ = handle.await;
    setup.finish().await;
}

#[tokio::test]
async fn spokeagent_restart_never_more_than_ten_csrs() {
    let setup = Setup::new("throttle-1").await;
    for round in 0..12 {
        let handle = start(&setup, setup.spoke_client.clone());
        let want = (round + 1).min(10);
        eventually(30, "a CSR per restart up to ten", || async {
            (setup.csrs().await.len() >= want).then_some(())
        })
        .await;
        handle.abort();
        let _ = handle.await;
    }
    // The agent that finds ten CSRs creates none: over ten of its bootstrap rounds (200 ms
    // each; earlier agents made their CSR within the first) the count stays at ten.
    let handle = start(&setup, setup.spoke_client.clone());
    for _ in 0..10 {
        assert_eq!(setup.csrs().await.len(), 10);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(!handle.is_finished());
    handle.abort();
    let _ = handle.await;
    setup.finish().await;
}

#[tokio::test]
async fn clusterannotations_only_agent_prefixed_and_client_configs() {
    let setup = Setup::new("annot-1").await;
    let mut options = setup.options();
    options.cluster_annotations = [
        (
            "agent.open-cluster-management.io/foo".to_string(),
            "bar".to_string(),
        ),
        ("foo".to_string(), "bar".to_string()),
    ]
    .into();
    options.external_server_urls = vec!["https://spoke.example:6443".into()];
    options.spoke_ca_bundle = Some(b"CA".to_vec());
    let handle = tokio::spawn(agent::run(
        setup.spoke_client.clone(),
        options,
        ControllerMetrics::default(),
    ));
    let cluster = eventually(30, "ManagedCluster", || async { setup.cluster().await }).await;
    let annotations = cluster.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations
            .get("agent.open-cluster-management.io/foo")
            .map(String::as_str),
        Some("bar")
    );
    assert!(!annotations.contains_key("foo"));
    let configs = cluster.spec.managed_cluster_client_configs.unwrap();
    assert_eq!(configs.len(), 1);
    assert_eq!(configs[0].url, "https://spoke.example:6443");
    assert_eq!(configs[0].ca_bundle.as_ref().unwrap().0, b"CA");
    handle.abort();
    let _ = handle.await;
    setup.finish().await;
}

/// The caBundle of the client configs comes from the kubeconfig of the managed cluster, as
/// upstream's agent takes it: inline data (the embedded spoke's kubeconfig) or the file it names
/// (a real spoke's kubeconfig made by the real-kube tools).
#[tokio::test]
async fn client_config_ca_bundle_is_the_spoke_kubeconfigs_ca() {
    let setup = Setup::new("cabundle").await;
    let path = setup.spoke.kubeconfig_path().to_path_buf();
    let (_, expected) = crate::support::server_and_ca(&path);
    let mut options = setup.options();
    options.external_server_urls = vec!["https://spoke.example:6443".into()];
    options.spoke_ca_bundle = agent::spoke_ca::from_kubeconfig_file(Some(&path)).unwrap();
    assert_eq!(options.spoke_ca_bundle.as_deref(), Some(expected.as_bytes()));
    let handle = tokio::spawn(agent::run(
        setup.spoke_client.clone(),
        options,
        ControllerMetrics::default(),
    ));
    let cluster = eventually(30, "ManagedCluster", || async { setup.cluster().await }).await;
    let configs = cluster.spec.managed_cluster_client_configs.unwrap();
    assert_eq!(configs.len(), 1);
    assert_eq!(configs[0].ca_bundle.as_ref().unwrap().0, expected.as_bytes());
    handle.abort();
    let _ = handle.await;
    setup.finish().await;
}
