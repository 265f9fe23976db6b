//! What every area of the add-on integration tests shares: unique names, polling with a
//! deadline, a hub with the OCM CRDs, ManagedClusters with their namespaces, ClusterManagementAddOns
//! and ManagedClusterAddOns owned by them, and an `AddonManager` running in the background.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    dead_code,
    reason = "test helpers; not every area uses every helper"
)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use ocm_addon_framework::{AddonManager, AgentAddon};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_controlplane::TestEnv;
use serde_json::json;

/// How long [`eventually`] waits.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A name unique to this test run (lowercase, DNS-label safe): the prefix, the process id, the
/// clock and a counter, so that runs sharing a real cluster never meet each other's leftovers.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{:x}{:05x}{n}", std::process::id(), nanos >> 12)
}

/// Polls `check` until it returns `Some`, failing the test after [`DEADLINE`].
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    eventually_within(DEADLINE.as_secs(), what, check).await
}

/// Polls `check` every 100 ms until it returns `Some`, failing the test after `secs` seconds.
pub async fn eventually_within<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {secs}s waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A hub with the OCM CRDs installed: the embedded control plane, or the real hub of
/// `OCM_TEST_HUB_KUBECONFIG` (keep the `env` alive for as long as the test runs).
pub struct Hub {
    /// The environment (stops the embedded server when dropped).
    pub env: TestEnv,
    /// An admin client of the hub.
    pub client: Client,
}

/// Starts (or connects to) the hub and installs the OCM CRDs.
pub async fn hub() -> Hub {
    let env = TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    Hub { env, client }
}

/// Creates an accepted ManagedCluster `name` and its cluster namespace.
pub async fn create_cluster(client: &Client, name: &str) -> ManagedCluster {
    let cluster: ManagedCluster = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": name},
        "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 60}
    }))
    .unwrap();
    let cluster = Api::<ManagedCluster>::all(client.clone())
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    create_namespace(client, name).await;
    cluster
}

/// Creates namespace `name` (an existing one is fine).
pub async fn create_namespace(client: &Client, name: &str) {
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    match Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("create namespace {name}: {e}"),
    }
}

/// Creates the ClusterManagementAddOn `name`; `spec` is its JSON spec (e.g. `json!({})`, or one
/// with `supportedConfigs` / `defaultConfigs` and an `installStrategy`).
pub async fn create_cma(client: &Client, name: &str, spec: serde_json::Value) -> ClusterManagementAddOn {
    let cma: ClusterManagementAddOn = serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ClusterManagementAddOn",
        "metadata": {"name": name},
        "spec": spec
    }))
    .unwrap();
    Api::<ClusterManagementAddOn>::all(client.clone())
        .create(&PostParams::default(), &cma)
        .await
        .unwrap()
}

/// Creates the ManagedClusterAddOn `name` in the namespace of `cluster` with `spec`, owned by
/// `cma` when given (the ownerRef the ocm addon-manager would set; upstream's framework tests set
/// it by hand too).
pub async fn create_mca(
    client: &Client,
    cluster: &str,
    name: &str,
    spec: serde_json::Value,
    cma: Option<&ClusterManagementAddOn>,
) -> ManagedClusterAddOn {
    let mut mca = json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": name, "namespace": cluster},
        "spec": spec
    });
    if let Some(cma) = cma {
        mca["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn",
            "name": cma.metadata.name,
            "uid": cma.metadata.uid,
        }]);
    }
    let mca: ManagedClusterAddOn = serde_json::from_value(mca).unwrap();
    Api::<ManagedClusterAddOn>::namespaced(client.clone(), cluster)
        .create(&PostParams::default(), &mca)
        .await
        .unwrap()
}

/// A ManagedCluster, its namespace, a ClusterManagementAddOn and a ManagedClusterAddOn owned by it,
/// all named uniquely; deleted again by [`Scenario::cleanup`].
pub struct Scenario {
    /// The cluster (and cluster namespace) name.
    pub cluster: String,
    /// The add-on name (ClusterManagementAddOn and ManagedClusterAddOn).
    pub addon: String,
}

impl Scenario {
    /// Unique names for a cluster and an add-on, nothing created yet.
    pub fn new(prefix: &str) -> Self {
        Self {
            cluster: unique(&format!("{prefix}-c")),
            addon: unique(&format!("{prefix}-a")),
        }
    }

    /// Creates the cluster with its namespace and the ClusterManagementAddOn (with `cma_spec`).
    pub async fn create_cluster_and_cma(
        &self,
        client: &Client,
        cma_spec: serde_json::Value,
    ) -> ClusterManagementAddOn {
        create_cluster(client, &self.cluster).await;
        create_cma(client, &self.addon, cma_spec).await
    }

    /// Creates the ManagedClusterAddOn (with `spec`), owned by `cma`.
    pub async fn create_mca(
        &self,
        client: &Client,
        spec: serde_json::Value,
        cma: &ClusterManagementAddOn,
    ) -> ManagedClusterAddOn {
        create_mca(client, &self.cluster, &self.addon, spec, Some(cma)).await
    }

    /// The current ManagedClusterAddOn.
    pub async fn get_mca(&self, client: &Client) -> Option<ManagedClusterAddOn> {
        Api::<ManagedClusterAddOn>::namespaced(client.clone(), &self.cluster)
            .get_opt(&self.addon)
            .await
            .unwrap()
    }

    /// Deletes the ManagedClusterAddOn, the ClusterManagementAddOn, the cluster and its namespace
    /// (best effort; a real hub may keep the namespace Terminating for a while).
    pub async fn cleanup(&self, client: &Client) {
        let dp = DeleteParams::default();
        let _ = Api::<ManagedClusterAddOn>::namespaced(client.clone(), &self.cluster)
            .delete(&self.addon, &dp)
            .await;
        let _ = Api::<ClusterManagementAddOn>::all(client.clone())
            .delete(&self.addon, &dp)
            .await;
        let _ = Api::<ManagedCluster>::all(client.clone())
            .delete(&self.cluster, &dp)
            .await;
        let _ = Api::<Namespace>::all(client.clone())
            .delete(&self.cluster, &dp)
            .await;
    }
}

/// The status condition `type_` of a ManagedClusterAddOn, if set.
pub fn condition<'a>(mca: &'a ManagedClusterAddOn, type_: &str) -> Option<&'a ocm_api::meta::Condition> {
    mca.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// An `AddonManager` running in the background; aborted when dropped.
pub struct RunningManager {
    task: tokio::task::JoinHandle<Result<(), ocm_addon_framework::ManagerError>>,
}

impl Drop for RunningManager {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Runs an `AddonManager` of `addons` in the background and hands it out too, for
/// `AddonManager::trigger`.
pub fn run_shared_manager(
    client: &Client,
    addons: Vec<Arc<dyn AgentAddon>>,
) -> (Arc<AddonManager>, RunningManager) {
    let mut manager = AddonManager::new(client.clone());
    for addon in addons {
        manager.add_agent(addon).unwrap();
    }
    let manager = Arc::new(manager);
    let running = manager.clone();
    let task = tokio::spawn(async move { running.run().await });
    (manager, RunningManager { task })
}

/// Runs an `AddonManager` of `addons` against `client` in the background.
pub fn run_manager(client: &Client, addons: Vec<Arc<dyn AgentAddon>>) -> RunningManager {
    // Logs with RUST_LOG set (e.g. RUST_LOG=ocm_addon_framework=debug).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let mut manager = AddonManager::new(client.clone());
    for addon in addons {
        manager.add_agent(addon).unwrap();
    }
    RunningManager {
        task: tokio::spawn(async move { manager.run().await }),
    }
}

/// An add-on with fixed options and no manifests: enough for the registration, CSR and config
/// controllers (areas that deploy manifests write their own `AgentAddon`).
pub struct TestAddon {
    /// What [`AgentAddon::options`] returns.
    pub options: ocm_addon_framework::AgentAddonOptions,
}

impl TestAddon {
    /// An add-on named `name` with otherwise default options.
    pub fn named(name: &str) -> Self {
        Self {
            options: ocm_addon_framework::AgentAddonOptions {
                addon_name: name.to_string(),
                ..Default::default()
            },
        }
    }

    /// Into the `Arc<dyn AgentAddon>` the manager takes.
    pub fn shared(self) -> Arc<dyn AgentAddon> {
        Arc::new(self)
    }
}

#[async_trait::async_trait]
impl AgentAddon for TestAddon {
    async fn manifests(
        &self,
        _cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
    ) -> Result<Vec<ocm_api::work::v1::Manifest>, ocm_addon_framework::agent::AddonError> {
        Ok(Vec::new())
    }

    fn options(&self) -> ocm_addon_framework::AgentAddonOptions {
        self.options.clone()
    }
}

/// Checks that `check` holds on every poll for `secs` seconds (upstream's `Consistently`).
pub async fn consistently<F, Fut>(secs: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while tokio::time::Instant::now() < deadline {
        assert!(check().await, "{what} stopped holding");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Merge-patches the status of ManagedClusterAddOn `cluster/name` (as the agents and the ocm
/// addon-manager would write it).
pub async fn patch_mca_status(client: &Client, cluster: &str, name: &str, status: serde_json::Value) {
    Api::<ManagedClusterAddOn>::namespaced(client.clone(), cluster)
        .patch_status(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&json!({"status": status})),
        )
        .await
        .unwrap();
}
