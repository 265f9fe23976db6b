//! One join, end to end: a hub (CRDs, hub controllers that can be killed and restarted), a spoke,
//! a bootstrap kubeconfig minted by `ocm_core::registration::hub::bootstrap`, and the agent as a
//! task that can be killed and restarted like its pod. Every name is unique per test and the
//! agent works in its own namespace on the spoke, so tests can share real clusters.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_controlplane::TestEnv;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::registration::agent::{self, AgentOptions};
use ocm_core::registration::hub::{self, HubOptions, bootstrap};

use crate::hub_lock::{HubLock, Lock};

pub use crate::support::{eventually_within as eventually, unique};

/// Upstream's cap on the CSRs an agent keeps for its cluster.
pub const CSR_CAP: usize = 10;
/// The label the agent puts on its CSRs.
pub const CLUSTER_LABEL: &str = "open-cluster-management.io/cluster-name";
/// The agent name used by these tests.
pub const AGENT: &str = "e2eagent";

/// The hub, the spoke, the controllers of both sides and the files of one joining cluster.
pub struct Join {
    pub hub: TestEnv,
    /// Kept alive for the test's duration.
    pub _spoke: TestEnv,
    pub hub_client: kube::Client,
    pub spoke_client: kube::Client,
    pub cluster: String,
    /// The agent's namespace on the spoke (unique per test).
    pub agent_namespace: String,
    pub dir: tempfile::TempDir,
    hub_task: Option<tokio::task::JoinHandle<()>>,
    agent_task: Option<tokio::task::JoinHandle<()>>,
    /// Held while the test may run hub controllers (see [`crate::hub_lock`]).
    _lock: HubLock,
}

impl Drop for Join {
    fn drop(&mut self) {
        if let Some(task) = &self.hub_task {
            task.abort();
        }
        if let Some(task) = &self.agent_task {
            task.abort();
        }
    }
}

impl Join {
    /// Hub (with CRDs) and spoke, the agent namespace, and a bootstrap kubeconfig minted the
    /// way `clusteradm get token` does. Nothing runs yet.
    pub async fn new(prefix: &str) -> Self {
        let hub = TestEnv::hub().await.unwrap();
        hub.install_ocm_crds().await.unwrap();
        let _lock = HubLock::shared(&hub, Lock::HubControllers).await;
        let spoke = TestEnv::spoke().await.unwrap();
        let hub_client = hub.client().await.unwrap();
        let spoke_client = spoke.client().await.unwrap();
        let cluster = unique(prefix);
        let agent_namespace = format!("agent-{cluster}");
        let ns: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": agent_namespace}})).unwrap();
        Api::<Namespace>::all(spoke_client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
        let (server, ca) = crate::support::server_and_ca(hub.kubeconfig_path());
        let text = bootstrap::bootstrap_kubeconfig(&hub_client, &server, &ca, Duration::from_secs(3600))
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bootstrap.kubeconfig"), text).unwrap();
        Self {
            hub,
            _spoke: spoke,
            hub_client,
            spoke_client,
            cluster,
            agent_namespace,
            dir,
            hub_task: None,
            agent_task: None,
            _lock,
        }
    }

    /// The agent's hub-kubeconfig directory.
    pub fn hub_dir(&self) -> PathBuf {
        self.dir.path().join("hub-kubeconfig")
    }

    /// The cluster's CSRs on the hub.
    pub async fn csrs(&self) -> Vec<CertificateSigningRequest> {
        crate::support::cluster_csrs(&self.hub_client, &self.cluster).await
    }

    /// The cluster's CSRs with neither Approved nor Denied.
    pub async fn pending_csrs(&self) -> Vec<CertificateSigningRequest> {
        let csrs = self.csrs().await;
        csrs.into_iter().filter(crate::support::is_pending).collect()
    }

    /// Approves every pending CSR of the cluster, as `kubectl certificate approve` does.
    pub async fn approve_pending(&self) -> usize {
        crate::support::approve_pending(&self.hub_client, &self.cluster).await
    }

    /// Agent options: this test's names and namespace, short periods.
    pub fn agent_options(&self) -> AgentOptions {
        let mut options = AgentOptions::new(self.dir.path().join("bootstrap.kubeconfig"), self.hub_dir());
        options.cluster_name = Some(self.cluster.clone());
        options.agent_name = Some(AGENT.into());
        options.component_namespace = self.agent_namespace.clone();
        options.cluster_healthcheck_period = Duration::from_secs(1);
        options.poll_period = Duration::from_millis(200);
        options
    }

    /// Starts the hub controllers (manual CSR approval, manual accept).
    pub fn start_hub(&mut self) {
        let client = self.hub_client.clone();
        self.hub_task = Some(tokio::spawn(async move {
            let result = hub::run(client, HubOptions::default(), ControllerMetrics::default()).await;
            panic!("hub controllers stopped: {result:?}");
        }));
    }

    /// Kills the hub controllers (as if the hub process died).
    pub async fn kill_hub(&mut self) {
        if let Some(task) = self.hub_task.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// Starts the agent with `options`.
    pub fn start_agent_with(&mut self, options: AgentOptions) {
        let spoke = self.spoke_client.clone();
        self.agent_task = Some(tokio::spawn(async move {
            let result = agent::run(spoke, options, ControllerMetrics::default()).await;
            panic!("agent stopped: {result:?}");
        }));
    }

    /// Starts the agent with [`Join::agent_options`].
    pub fn start_agent(&mut self) {
        self.start_agent_with(self.agent_options());
    }

    /// Kills the agent like its pod: the task stops and its local files (the private key of a
    /// pending CSR, the hub-kubeconfig directory) are gone; only the secret remains.
    pub async fn kill_agent(&mut self) {
        if let Some(task) = self.agent_task.take() {
            task.abort();
            let _ = task.await;
        }
        let _ = std::fs::remove_dir_all(self.hub_dir());
    }

    /// Whether the agent task is still running.
    pub fn agent_running(&self) -> bool {
        self.agent_task.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Waits for a pending CSR of the cluster and returns it.
    pub async fn wait_pending_csr(&self) -> CertificateSigningRequest {
        eventually(30, "a pending CSR", || async {
            self.pending_csrs().await.into_iter().next()
        })
        .await
    }

    /// Sets `spec.hubAcceptsClient: true` (what `kubectl patch ... --type=merge` does) and the
    /// lease duration.
    pub async fn accept(&self, lease_seconds: i32) {
        self.clusters()
            .patch(
                &self.cluster,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"spec": {
                    "hubAcceptsClient": true, "leaseDurationSeconds": lease_seconds}})),
            )
            .await
            .unwrap();
    }

    pub fn clusters(&self) -> Api<ManagedCluster> {
        Api::all(self.hub_client.clone())
    }

    /// The ManagedCluster, if it exists.
    pub async fn cluster(&self) -> Option<ManagedCluster> {
        self.clusters().get_opt(&self.cluster).await.unwrap()
    }

    /// The cluster's condition `type_` status, if set.
    pub async fn condition(&self, type_: &str) -> Option<String> {
        let cluster = self.cluster().await?;
        let conditions = cluster.status?.conditions?;
        conditions
            .into_iter()
            .find(|c| c.type_ == type_)
            .map(|c| c.status)
    }

    /// Waits until the cluster's condition `type_` is `status`.
    pub async fn wait_condition(&self, type_: &str, status: &str) {
        eventually(30, &format!("{} {type_}={status}", self.cluster), || async {
            (self.condition(type_).await.as_deref() == Some(status)).then_some(())
        })
        .await;
    }

    /// The hub-kubeconfig secret on the spoke, if any.
    pub async fn secret(&self) -> Option<Secret> {
        Api::<Secret>::namespaced(self.spoke_client.clone(), &self.agent_namespace)
            .get_opt("hub-kubeconfig-secret")
            .await
            .unwrap()
    }

    /// Waits until the hub-kubeconfig secret holds a kubeconfig and a certificate; returns the
    /// certificate.
    pub async fn wait_secret(&self) -> Vec<u8> {
        eventually(30, "hub-kubeconfig-secret filled", || async {
            let data = self.secret().await?.data?;
            data.get("kubeconfig")?;
            data.get("tls.crt").map(|c| c.0.clone())
        })
        .await
    }

    /// Waits until the join is complete: accepted, Joined, Available and the secret filled.
    pub async fn wait_joined(&self) -> Vec<u8> {
        self.wait_condition("HubAcceptedManagedCluster", "True").await;
        self.wait_condition("ManagedClusterJoined", "True").await;
        self.wait_condition("ManagedClusterConditionAvailable", "True")
            .await;
        self.wait_secret().await
    }

    /// Removes what the test created: the ManagedCluster (with the hub controllers running, so
    /// its finalizers are released), its CSRs, and the agent namespace on the spoke.
    pub async fn finish(mut self) {
        self.kill_agent().await;
        if self.hub_task.is_none() {
            self.start_hub();
        }
        let _ = self
            .clusters()
            .delete(&self.cluster, &DeleteParams::default())
            .await;
        eventually(60, "the ManagedCluster removed", || async {
            self.cluster().await.is_none().then_some(())
        })
        .await;
        let _ = Api::<CertificateSigningRequest>::all(self.hub_client.clone())
            .delete_collection(
                &DeleteParams::default(),
                &ListParams::default().labels(&format!("{CLUSTER_LABEL}={}", self.cluster)),
            )
            .await;
        let _ = Api::<Namespace>::all(self.spoke_client.clone())
            .delete(&self.agent_namespace, &DeleteParams::default())
            .await;
        let _ = Api::<Namespace>::all(self.hub_client.clone())
            .delete(&self.cluster, &DeleteParams::default())
            .await;
        self.kill_hub().await;
    }
}

/// Whether the hub converts ManagedClusterAddOns between v1alpha1 and v1beta1, which the
/// registration agent relies on (it reads add-ons through v1beta1 and patches their status
/// through v1alpha1). An embedded hub does; a real OCM hub does through the conversion webhook of
/// its cluster-manager. A standalone `ocm-controlplane` server does in-process once the CRD names
/// that webhook: when the tests created the CRD there (conversion `None`), it is switched here.
/// A plain cluster whose CRDs the tests created cannot convert: `false`, and the caller skips.
pub async fn addon_conversion(hub: &TestEnv) -> bool {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    if hub.control_plane().is_some() {
        return true;
    }
    let client = hub.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = "managedclusteraddons.addon.open-cluster-management.io";
    let crd = crds.get(name).await.unwrap();
    let strategy = crd.spec.conversion.as_ref().map(|c| c.strategy.as_str());
    if strategy == Some("Webhook") {
        return true;
    }
    let version = client.apiserver_version().await.unwrap();
    if !version.git_version.ends_with("-ocm-controlplane") {
        return false;
    }
    let mut json = serde_json::to_value(&crd).unwrap();
    if !ocm_controlplane::conversion::use_in_process_conversion(
        &mut json,
        &ocm_controlplane::conversion::Converters::ocm(),
    ) {
        return false;
    }
    let conversion = json["spec"]["conversion"].clone();
    crds.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"conversion": conversion}})),
    )
    .await
    .unwrap();
    true
}
