//! A fleet simulator: N managed clusters in one process, each running the real klusterlet agents
//! of [`ocm_core`] — the registration agent (bootstrap, CSR, lease, status, certificate rotation,
//! add-on registrations) and the work agent — and any add-on agents given, against any hub, all
//! sharing ONE managed-cluster store.
//!
//! The store is one control plane (an embedded [`ocm_controlplane`] from [`embedded_store`], or
//! any cluster's client) in which every simulated cluster has a namespace of its own
//! (`<prefix>-<n>-agent`) for its hub-kubeconfig secret and agent objects. What the clusters
//! share there: the Nodes and ClusterClaims they report (every cluster reports the same), and the
//! objects their works apply (a manifest of the same namespace and name on every cluster is one
//! object in the store). Their AppliedManifestWorks stay apart: each cluster's work agent has an
//! agent id and a hub hash of its own. Each work agent watches every AppliedManifestWork of the
//! store, so works at scale cost the store N² watch events; joining, leases and status do not.
//!
//! Churn: [`Simulator::remove`] (a cluster goes away for good: its agents stop and its
//! credentials are dropped), [`Simulator::pause`] / [`Simulator::resume`] (its leases stop
//! being renewed and come back, as a cluster cut off from the hub), and
//! [`SimOptions::rotate_every`] (client certificate rotation at that period).
//!
//! ```no_run
//! # async fn example(bootstrap: std::path::PathBuf) -> Result<(), ocm_testkit::sim::SimError> {
//! use ocm_testkit::sim::{SimOptions, Simulator, StoreClients, embedded_store};
//!
//! let (store, _admin) = embedded_store().await?;
//! // 5 000 clusters over 79 HTTP/2 connections to the store (one client would do for a few).
//! let clients = StoreClients::of_env(&store, 5000).await?;
//! let dir = tempfile::tempdir().map_err(|e| ocm_testkit::sim::SimError::Dir(e.to_string()))?;
//! let options = SimOptions::new(5000, "sim", bootstrap, dir.path().to_path_buf());
//! let fleet = Simulator::start(clients, options).await?;
//! // ... watch the hub's ManagedClusters; fleet.pause(7), fleet.resume(7), fleet.remove(8) ...
//! # drop(fleet);
//! # Ok(())
//! # }
//! ```

mod cluster;
mod options;
mod store;

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use ocm_api::crd::InstallTarget;
use ocm_api::names::secrets;
use ocm_controlplane::TestEnv;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use cluster::SimCluster;
pub use cluster::SimCounters;
pub use options::{AddonAgent, SimClusterContext, SimOptions};
pub use store::{CLUSTERS_PER_CONNECTION, StoreClients};

/// How often a starting cluster's hub-kubeconfig directory is looked at.
const BOOTSTRAP_POLL: Duration = Duration::from_millis(100);

/// What failed while starting a simulated fleet.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The embedded store did not start.
    #[error("starting the shared managed-cluster store: {0}")]
    StartStore(String),
    /// Installing the managed-cluster CRDs into the store failed.
    #[error("installing the managed-cluster CRDs into the store: {0}")]
    InstallCrds(String),
    /// Creating a cluster's namespace in the store failed.
    #[error(transparent)]
    Namespace(#[from] ocm_core::klusterlet::KlusterletError),
    /// A directory could not be made.
    #[error("making a directory: {0}")]
    Dir(String),
    /// A client of the store could not be built.
    #[error("building a client of the shared store: {0}")]
    StoreClient(String),
}

/// Starts an embedded control plane (in memory, on the current runtime) to be the store of a
/// simulated fleet; keep the [`TestEnv`] while the fleet runs.
///
/// # Errors
/// [`SimError::StartStore`].
pub async fn embedded_store() -> Result<(TestEnv, kube::Client), SimError> {
    let env = TestEnv::start()
        .await
        .map_err(|e| SimError::StartStore(e.to_string()))?;
    let client = env
        .client()
        .await
        .map_err(|e| SimError::StartStore(e.to_string()))?;
    Ok((env, client))
}

/// The resident memory of this process: (`VmRSS`, `VmHWM`) in bytes, from `/proc/self/status`.
#[must_use]
pub fn process_memory() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let kib: u64 = line
                .strip_prefix(name)?
                .strip_prefix(':')?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            Some(kib * 1024)
        })
    };
    Some((field("VmRSS")?, field("VmHWM")?))
}

/// A running simulated fleet; its agents stop when it is dropped.
pub struct Simulator {
    options: SimOptions,
    clusters: Vec<Arc<SimCluster>>,
    counters: Arc<SimCounters>,
    starter: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        self.stop_all();
    }
}

impl Simulator {
    /// Installs the managed-cluster CRDs into the store (ClusterClaims, AppliedManifestWorks),
    /// creates every cluster's namespace there, and starts the clusters' agents in the background
    /// — at most [`SimOptions::concurrency`] bootstrapping at a time — returning at once;
    /// [`Simulator::started`] says when each started.
    ///
    /// `store` is one client of the store, or [`StoreClients`] spreading thousands of clusters
    /// over several connections ([`StoreClients::connect`]).
    ///
    /// # Errors
    /// The store refused the CRDs or a namespace.
    pub async fn start(store: impl Into<StoreClients>, options: SimOptions) -> Result<Self, SimError> {
        let store = store.into();
        let spoke = store.for_cluster(0).clone();
        let crds = ocm_core::crds::generated(&[InstallTarget::Managed])
            .map_err(|e| SimError::InstallCrds(e.to_string()))?
            .into_iter()
            .map(|generated| generated.crd)
            .collect();
        ocm_core::crds::install(&spoke, crds, Duration::from_secs(60))
            .await
            .map_err(|e| SimError::InstallCrds(e.to_string()))?;
        ocm_core::klusterlet::ensure_namespace(&spoke, ocm_api::names::namespaces::ADDON_AGENT).await?;
        std::fs::create_dir_all(&options.dir)
            .map_err(|e| SimError::Dir(format!("{}: {e}", options.dir.display())))?;
        let clusters: Vec<Arc<SimCluster>> = (0..options.clusters)
            .map(|index| {
                Arc::new(SimCluster::new(SimClusterContext {
                    name: options.cluster_name(index),
                    index,
                    spoke: store.for_cluster(index).clone(),
                    namespace: options.cluster_namespace(index),
                    hub_kubeconfig_dir: options.hub_kubeconfig_dir(index),
                }))
            })
            .collect();
        futures::stream::iter(clusters.iter().map(|c| c.context.namespace.clone()))
            .map(|namespace| {
                let spoke = spoke.clone();
                async move { ocm_core::klusterlet::ensure_namespace(&spoke, &namespace).await }
            })
            .buffer_unordered(16)
            .try_collect::<Vec<()>>()
            .await?;
        let counters = Arc::new(SimCounters::default());
        let starter = tokio::spawn(start_all(clusters.clone(), options.clone(), counters.clone()));
        Ok(Self {
            options,
            clusters,
            counters,
            starter,
        })
    }

    /// The options the fleet runs with.
    #[must_use]
    pub fn options(&self) -> &SimOptions {
        &self.options
    }

    /// The clusters' names, in index order.
    pub fn cluster_names(&self) -> impl Iterator<Item = &str> {
        self.clusters.iter().map(|c| c.context.name.as_str())
    }

    /// The context of cluster `index` (its name, namespace, credentials directory).
    #[must_use]
    pub fn cluster(&self, index: usize) -> Option<&SimClusterContext> {
        self.clusters.get(index).map(|c| &c.context)
    }

    /// The index of the cluster called `name`.
    #[must_use]
    pub fn index_of(&self, name: &str) -> Option<usize> {
        let index: usize = name
            .strip_prefix(self.options.name_prefix.as_str())?
            .strip_prefix('-')?
            .parse()
            .ok()?;
        (index < self.clusters.len()).then_some(index)
    }

    /// When the agents of the cluster called `name` were first started (`None`: not yet, or not
    /// a cluster of this fleet).
    #[must_use]
    pub fn started(&self, name: &str) -> Option<Instant> {
        self.clusters.get(self.index_of(name)?)?.started()
    }

    /// Whether every cluster's agents have been started.
    #[must_use]
    pub fn all_started(&self) -> bool {
        self.starter.is_finished()
    }

    /// Whether the agents of cluster `index` run.
    #[must_use]
    pub fn is_running(&self, index: usize) -> bool {
        self.clusters.get(index).is_some_and(|c| c.running())
    }

    /// Failed and re-bootstrapped registration agent runs over the fleet.
    #[must_use]
    pub fn counters(&self) -> &SimCounters {
        &self.counters
    }

    /// Churn: cluster `index` stops renewing its lease and reporting status (its agents stop;
    /// its credentials stay for [`Simulator::resume`]).
    pub fn pause(&self, index: usize) {
        if let Some(cluster) = self.clusters.get(index) {
            cluster.stop();
        }
    }

    /// Churn: cluster `index` comes back after [`Simulator::pause`] with the credentials it had.
    pub fn resume(&self, index: usize) {
        if let Some(cluster) = self.clusters.get(index) {
            cluster.start(&self.options, &self.counters);
        }
    }

    /// Churn: cluster `index` goes away for good: its agents stop and its hub credentials are
    /// dropped (the files and the secret), so that it would have to join anew.
    pub async fn remove(&self, index: usize) {
        let Some(cluster) = self.clusters.get(index) else {
            return;
        };
        cluster.stop();
        let ctx = &cluster.context;
        if let Err(error) = std::fs::remove_dir_all(&ctx.hub_kubeconfig_dir)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(%error, cluster = %ctx.name, "removing the hub credentials");
        }
        let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
            kube::Api::namespaced(ctx.spoke.clone(), &ctx.namespace);
        if let Err(error) = secrets
            .delete(secrets::HUB_KUBECONFIG, &kube::api::DeleteParams::default())
            .await
        {
            tracing::debug!(%error, cluster = %ctx.name, "deleting the hub-kubeconfig secret");
        }
    }

    /// Stops every cluster's agents (and the start of the rest).
    pub fn stop_all(&self) {
        self.starter.abort();
        for cluster in &self.clusters {
            cluster.stop();
        }
    }
}

/// Starts every cluster, at most `options.concurrency` without hub credentials at a time.
async fn start_all(clusters: Vec<Arc<SimCluster>>, options: SimOptions, counters: Arc<SimCounters>) {
    let permits = if options.concurrency == 0 {
        clusters.len().max(1)
    } else {
        options.concurrency
    };
    let permits = Arc::new(Semaphore::new(permits));
    for cluster in clusters {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        cluster.start(&options, &counters);
        let file = cluster.context.hub_kubeconfig_dir.join(secrets::keys::KUBECONFIG);
        let limit = options.bootstrap_limit;
        tokio::spawn(async move {
            let deadline = Instant::now() + limit;
            while !file.is_file() && Instant::now() < deadline {
                tokio::time::sleep(BOOTSTRAP_POLL).await;
            }
            drop(permit);
        });
    }
}
