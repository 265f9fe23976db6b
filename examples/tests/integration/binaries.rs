//! `hub` and `klusterlet` as processes: a join end to end, health and metrics, SIGTERM, unjoin,
//! `hub get-token`.

use std::path::{Path, PathBuf};

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_examples::cluster::{Cluster, client_from_file};

use super::support::{Process, eventually, free_port, http_get, run_to_end, unique};

const HUB: &str = env!("CARGO_BIN_EXE_hub");
const KLUSTERLET: &str = env!("CARGO_BIN_EXE_klusterlet");

/// Where the hub and the managed cluster are: the clusters of OCM_TEST_HUB_KUBECONFIG /
/// OCM_TEST_SPOKE_KUBECONFIG, else embedded control planes in the test's directory.
struct Clusters {
    hub_flags: Vec<String>,
    hub_kubeconfig: PathBuf,
    spoke_flags: Vec<String>,
    spoke_kubeconfig: PathBuf,
    spoke_embedded: Option<PathBuf>,
}

impl Clusters {
    fn new(dir: &Path) -> Self {
        let real = |var: &str| {
            std::env::var(var)
                .ok()
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let (hub_flags, hub_kubeconfig) = match real("OCM_TEST_HUB_KUBECONFIG") {
            Some(path) => (vec!["--kubeconfig".into(), path.display().to_string()], path),
            None => (
                vec!["--embedded".into(), "hub".into()],
                dir.join("hub/admin.kubeconfig"),
            ),
        };
        let (spoke_flags, spoke_kubeconfig, spoke_embedded) = match real("OCM_TEST_SPOKE_KUBECONFIG") {
            Some(path) => (
                vec!["--spoke-kubeconfig".into(), path.display().to_string()],
                path,
                None,
            ),
            None => (
                vec!["--embedded".into(), "spoke".into()],
                dir.join("spoke/admin.kubeconfig"),
                Some(dir.join("spoke")),
            ),
        };
        Self {
            hub_flags,
            hub_kubeconfig,
            spoke_flags,
            spoke_kubeconfig,
            spoke_embedded,
        }
    }

    /// A client of the managed cluster while no klusterlet runs: an embedded one is started by
    /// the test itself (stop it with [`Cluster::stop`]).
    async fn spoke_offline(&self) -> Cluster {
        match &self.spoke_embedded {
            Some(dir) => Cluster::embedded(dir, 0).await.unwrap(),
            None => Cluster::connect(Some(&self.spoke_kubeconfig)).await.unwrap(),
        }
    }
}

/// A hub and a klusterlet running as processes, the cluster joined.
struct Joined {
    dir: tempfile::TempDir,
    clusters: Clusters,
    hub: Process,
    klusterlet: Process,
    hub_client: kube::Client,
    cluster: String,
    namespace: String,
    hub_port: u16,
    agent_port: u16,
}

/// Starts `hub` and `klusterlet` (relative paths, from the test's directory), approves the CSR and
/// accepts the cluster as an administrator would with kubectl, and waits for Joined and Available.
async fn join(prefix: &str) -> Joined {
    let dir = tempfile::tempdir().unwrap();
    let clusters = Clusters::new(dir.path());
    let cluster = unique(prefix);
    let namespace = unique("ocm-agent");
    let hub_port = free_port();
    let mut hub_args = clusters.hub_flags.clone();
    hub_args.extend([
        "--bootstrap-kubeconfig-out".into(),
        "bootstrap/bootstrap.kubeconfig".into(),
        "--metrics-bind-address".into(),
        format!("127.0.0.1:{hub_port}"),
    ]);
    let hub = Process::start_in(HUB, &hub_args, &dir.path().join("hub.log"), dir.path());
    eventually("the hub's /readyz", || async {
        hub.assert_running();
        http_get(hub_port, "/readyz")
            .await
            .filter(|(code, _)| *code == 200)
    })
    .await;
    let (code, body) = http_get(hub_port, "/healthz").await.unwrap();
    assert_eq!((code, body.as_str()), (200, "ok"));
    assert!(dir.path().join("bootstrap/bootstrap.kubeconfig").is_file());

    let agent_port = free_port();
    let mut agent_args = clusters.spoke_flags.clone();
    agent_args.extend([
        "--cluster-name".into(),
        cluster.clone(),
        "--bootstrap-kubeconfig".into(),
        "bootstrap/bootstrap.kubeconfig".into(),
        "--hub-kubeconfig-dir".into(),
        "hub-kubeconfig".into(),
        "--namespace".into(),
        namespace.clone(),
        "--cluster-healthcheck-period".into(),
        "2s".into(),
        "--metrics-bind-address".into(),
        format!("127.0.0.1:{agent_port}"),
    ]);
    let klusterlet = Process::start_in(
        KLUSTERLET,
        &agent_args,
        &dir.path().join("klusterlet.log"),
        dir.path(),
    );

    let hub_client = client_from_file(&clusters.hub_kubeconfig).await.unwrap();
    let csrs: Api<CertificateSigningRequest> = Api::all(hub_client.clone());
    let selector = format!("open-cluster-management.io/cluster-name={cluster}");
    let csr = eventually("the cluster's pending CSR", || async {
        klusterlet.assert_running();
        csrs.list(&ListParams::default().labels(&selector))
            .await
            .ok()?
            .items
            .into_iter()
            .find(|c| c.status.as_ref().and_then(|s| s.conditions.as_ref()).is_none())?
            .metadata
            .name
    })
    .await;
    // What `kubectl certificate approve` does.
    let approval = serde_json::json!({"status": {"conditions": [{
        "type": "Approved", "status": "True", "reason": "TestApprove", "message": "approved by the test"}]}});
    csrs.patch_approval(&csr, &PatchParams::default(), &Patch::Merge(&approval))
        .await
        .unwrap();
    // What `kubectl patch managedcluster <c> -p '{"spec":{"hubAcceptsClient":true}}' --type=merge` does.
    let clusters_api: Api<ManagedCluster> = Api::all(hub_client.clone());
    clusters_api
        .patch(
            &cluster,
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({"spec": {"hubAcceptsClient": true}})),
        )
        .await
        .unwrap();
    eventually("Joined and Available", || async {
        klusterlet.assert_running();
        hub.assert_running();
        let managed = clusters_api.get_opt(&cluster).await.ok()??;
        let conditions = managed.status?.conditions.unwrap_or_default();
        (ocm_api::conditions::is_true(&conditions, "ManagedClusterJoined")
            && ocm_api::conditions::is_true(&conditions, "ManagedClusterConditionAvailable")
            && ocm_api::conditions::is_true(&conditions, "HubAcceptedManagedCluster"))
        .then_some(())
    })
    .await;
    Joined {
        dir,
        clusters,
        hub,
        klusterlet,
        hub_client,
        cluster,
        namespace,
        hub_port,
        agent_port,
    }
}

impl Joined {
    /// Deletes the ManagedCluster (the hub's cleanup removes its finalizer, so the hub must still
    /// run), and the agent's namespace on a real managed cluster.
    async fn clean_up(&self) {
        let api: Api<ManagedCluster> = Api::all(self.hub_client.clone());
        let _ = api.delete(&self.cluster, &DeleteParams::default()).await;
        eventually("the ManagedCluster's deletion", || async {
            api.get_opt(&self.cluster).await.ok()?.is_none().then_some(())
        })
        .await;
        if self.clusters.spoke_embedded.is_none() {
            let spoke = client_from_file(&self.clusters.spoke_kubeconfig).await.unwrap();
            let _ = Api::<Namespace>::all(spoke)
                .delete(&self.namespace, &DeleteParams::default())
                .await;
        }
    }
}

#[tokio::test]
async fn hub_and_klusterlet_join_serve_metrics_and_stop_on_sigterm() {
    let joined = join("e2e").await;
    // The issued credentials: the secret on the managed cluster, and the files of the relative
    // --hub-kubeconfig-dir, whose kubeconfig names the certificate once (not dir/dir/tls.crt).
    let spoke = client_from_file(&joined.clusters.spoke_kubeconfig).await.unwrap();
    let secret = Api::<Secret>::namespaced(spoke, &joined.namespace)
        .get("hub-kubeconfig-secret")
        .await
        .unwrap();
    assert!(secret.data.unwrap().contains_key("tls.crt"));
    let hub_dir = joined.dir.path().join("hub-kubeconfig");
    let kubeconfig = kube::config::Kubeconfig::read_from(hub_dir.join("kubeconfig")).unwrap();
    let user = kubeconfig.auth_infos[0].auth_info.as_ref().unwrap();
    assert_eq!(
        user.client_certificate.as_deref().map(Path::new),
        Some(hub_dir.join("tls.crt").as_path())
    );

    for (who, port) in [("hub", joined.hub_port), ("klusterlet", joined.agent_port)] {
        let (code, text) = http_get(port, "/metrics").await.unwrap();
        assert_eq!(code, 200, "{who}: {text}");
        assert!(
            text.contains("# TYPE ocm_controller_reconcile counter"),
            "{who}: {text}"
        );
        assert!(text.contains("ocm_controller_reconcile_total{"), "{who}: {text}");
        let (code, _) = http_get(port, "/healthz").await.unwrap();
        assert_eq!(code, 200, "{who}");
    }

    joined.clean_up().await;
    let Joined {
        hub, klusterlet, dir, ..
    } = joined;
    let log = dir.path().join("klusterlet.log");
    let status = klusterlet.terminate().await;
    assert!(
        status.success(),
        "klusterlet: {status}\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
    let log = dir.path().join("hub.log");
    let status = hub.terminate().await;
    let output = std::fs::read_to_string(log).unwrap_or_default();
    assert!(status.success(), "hub: {status}\n{output}");
    assert!(output.contains("SIGTERM received, shutting down"), "{output}");
}

#[tokio::test]
async fn klusterlet_unjoin_removes_the_hub_credentials() {
    let joined = join("unjoin").await;
    let Joined {
        dir,
        clusters,
        hub,
        klusterlet,
        hub_client,
        cluster,
        namespace,
        ..
    } = joined;
    let status = klusterlet.terminate().await;
    assert!(status.success(), "klusterlet: {status}");
    let hub_dir = dir.path().join("hub-kubeconfig");
    assert!(hub_dir.join("tls.key").is_file());

    let mut args = clusters.spoke_flags.clone();
    args.extend([
        "--unjoin".into(),
        "--hub-kubeconfig-dir".into(),
        "hub-kubeconfig".into(),
        "--namespace".into(),
        namespace.clone(),
    ]);
    let log = dir.path().join("unjoin.log");
    let process = Process::start_in(KLUSTERLET, &args, &log, dir.path());
    let status = process.wait().await;
    let output = process.output();
    assert!(status.success(), "unjoin: {status}\n{output}");
    assert!(
        output.contains(&format!("unjoined cluster {cluster}")),
        "{output}"
    );
    assert!(
        output.contains(&format!("secret {namespace}/hub-kubeconfig-secret")),
        "{output}"
    );
    assert!(!hub_dir.join("tls.key").exists());
    assert!(!hub_dir.join("kubeconfig").exists());

    let spoke = clusters.spoke_offline().await;
    let secret = Api::<Secret>::namespaced(spoke.client(), &namespace)
        .get_opt("hub-kubeconfig-secret")
        .await
        .unwrap();
    assert!(secret.is_none());
    if clusters.spoke_embedded.is_none() {
        let _ = Api::<Namespace>::all(spoke.client())
            .delete(&namespace, &DeleteParams::default())
            .await;
    }
    spoke.stop(std::time::Duration::from_millis(200)).await;
    // Unjoin leaves the ManagedCluster on the hub, as upstream's does.
    let api: Api<ManagedCluster> = Api::all(hub_client);
    assert!(api.get_opt(&cluster).await.unwrap().is_some());
    let _ = api.delete(&cluster, &DeleteParams::default()).await;
    eventually("the ManagedCluster's deletion", || async {
        api.get_opt(&cluster).await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(hub.terminate().await.success());
}

#[tokio::test]
async fn hub_get_token_writes_a_bootstrap_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let clusters = Clusters::new(dir.path());
    let output = dir.path().join("bootstrap.kubeconfig");
    let mut args = vec![
        "get-token".to_string(),
        "--output".into(),
        output.display().to_string(),
    ];
    args.extend(clusters.hub_flags.iter().cloned());
    args.extend(["--bootstrap-token-ttl".into(), "10m".into()]);
    // Relative --embedded paths are resolved against the test's directory.
    let process = Process::start_in(HUB, &args, &dir.path().join("get-token.log"), dir.path());
    let status = process.wait().await;
    assert!(status.success(), "get-token: {status}\n{}", process.output());
    let kubeconfig = kube::config::Kubeconfig::read_from(&output).unwrap();
    let user = kubeconfig.auth_infos[0].auth_info.as_ref().unwrap();
    assert!(user.token.is_some());
    assert_eq!(kubeconfig.current_context.as_deref(), Some("bootstrap"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&output).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // Without a subcommand's cluster the run fails with a clear error.
    let (status, text) = run_to_end(
        HUB,
        &[
            "get-token".into(),
            "--kubeconfig".into(),
            "/nonexistent/kubeconfig".into(),
        ],
        &dir.path().join("missing.log"),
    )
    .await;
    assert!(!status.success());
    assert!(text.contains("/nonexistent/kubeconfig"), "{text}");
}
