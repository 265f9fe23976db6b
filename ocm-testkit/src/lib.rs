//! An OCM hub and managed clusters in one process, for `cargo test`.
//!
//! [`Fleet::start`] starts an embedded hub (the OCM CRDs, the bootstrap RBAC, admission as
//! upstream's webhooks admit, the hub registration controllers accepting new clusters, the add-on
//! owner controller for the fleet's cluster namespaces) and one embedded control plane per
//! managed cluster, each running the real klusterlet agents of [`ocm_core::klusterlet`] —
//! registration and work — joined through a bootstrap token as `clusteradm join` does. What an add-on author tests with kind clusters
//! upstream runs here in one process in seconds:
//!
//! ```no_run
//! # async fn example() -> Result<(), ocm_testkit::FleetError> {
//! use ocm_testkit::{Fleet, FleetOptions};
//!
//! let fleet = Fleet::start(FleetOptions::new(["cluster1", "cluster2"])).await?;
//! let hub = fleet.hub_client();
//! // Run the add-on's AddonManager against `hub`, create its ClusterManagementAddOn and a
//! // ManagedClusterAddOn in `cluster1`, then start its agent with the credentials the
//! // registration agent obtained for it:
//! let credentials = fleet
//!     .addon_hub_kubeconfig_dir("cluster1", "helloworld", std::time::Duration::from_secs(60))
//!     .await?;
//! let spoke = fleet.cluster("cluster1").map(|c| c.client());
//! # let _ = (hub, credentials, spoke);
//! # Ok(())
//! # }
//! ```
//!
//! With `OCM_TEST_HUB_KUBECONFIG` set the hub is that cluster instead (its CRDs installed when
//! missing, the controllers run in this process), and with `OCM_TEST_SPOKE_KUBECONFIG` the first
//! managed cluster is that one (its agents in a namespace of their own), so a test written with a
//! fleet also runs on real clusters.
//!
//! For thousands of clusters, [`sim`] runs the same agents for N clusters that share one
//! managed-cluster store (the `fleet-sim` binary of `ocm-benches` drives it).

mod addon;
mod cluster;
pub mod sim;

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::Api;
use kube::api::DeleteParams;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::conditions::{ConditionList, Status};
use ocm_api::meta::Condition;
use ocm_api::names::conditions::cluster::managed_cluster;
use ocm_controlplane::TestEnv;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::registration::hub::{self, HubOptions, bootstrap};

pub use cluster::ManagedClusterEnv;

/// How long a bootstrap token the fleet mints is valid.
const BOOTSTRAP_TTL: Duration = Duration::from_secs(24 * 3600);

/// How often the fleet looks again while waiting.
const POLL: Duration = Duration::from_millis(100);

/// What failed while starting or using a fleet.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A control plane did not start or its client could not be built.
    #[error("starting the {which} control plane: {source}")]
    StartControlPlane {
        /// `hub` or the managed cluster's name.
        which: String,
        /// Why.
        source: Box<ocm_controlplane::testenv::TestEnvError>,
    },
    /// Installing CRDs failed.
    #[error("installing the CRDs of {which}: {message}")]
    InstallCrds {
        /// `hub` or the managed cluster's name.
        which: String,
        /// Why.
        message: String,
    },
    /// Granting bootstrap access or minting the bootstrap kubeconfig failed.
    #[error("granting bootstrap access on the hub: {0}")]
    Bootstrap(#[from] bootstrap::BootstrapError),
    /// A kubeconfig could not be read.
    #[error("reading kubeconfig {path}: {message}")]
    ReadKubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// Writing a file failed.
    #[error("writing {path}: {source}")]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Preparing a managed cluster for its agents failed.
    #[error(transparent)]
    PrepareAgents(#[from] ocm_core::klusterlet::KlusterletError),
    /// An API call failed.
    #[error("{what}: {source}")]
    Api {
        /// What was being done.
        what: String,
        /// The API error.
        source: kube::Error,
    },
    /// Something did not happen in time.
    #[error("timed out after {timeout:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        timeout: Duration,
    },
    /// A managed cluster of that name is not in the fleet.
    #[error("no managed cluster {0} in the fleet")]
    UnknownCluster(String),
}

/// What a fleet runs.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// The managed clusters' names.
    pub clusters: Vec<String>,
    /// How long [`Fleet::start`] waits for every cluster to be accepted and available.
    pub join_timeout: Duration,
    /// How often the work agents read status back (upstream: 10 s).
    pub status_sync_interval: Duration,
    /// How often the registration agents look at add-on registrations and leases (upstream: 30 s).
    pub addon_sync_period: Duration,
}

impl FleetOptions {
    /// These clusters, with periods short enough for tests.
    pub fn new<I, S>(clusters: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            clusters: clusters.into_iter().map(Into::into).collect(),
            join_timeout: Duration::from_secs(60),
            status_sync_interval: Duration::from_secs(2),
            addon_sync_period: Duration::from_secs(2),
        }
    }
}

/// A running hub and its managed clusters; everything stops when it is dropped.
pub struct Fleet {
    hub: TestEnv,
    /// On a shared real hub: the lock the hub-controller tests of `ocm-core` coordinate with.
    _hub_lock: Option<std::fs::File>,
    hub_client: kube::Client,
    clusters: Vec<ManagedClusterEnv>,
    dir: tempfile::TempDir,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("hub", &self.hub.kubeconfig_path())
            .field(
                "clusters",
                &self
                    .clusters
                    .iter()
                    .map(ManagedClusterEnv::name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Fleet {
    /// Starts the hub and the managed clusters and waits until every cluster is accepted and
    /// available.
    ///
    /// # Errors
    /// A control plane did not start, the hub could not be prepared, or a cluster did not join
    /// within [`FleetOptions::join_timeout`].
    pub async fn start(options: FleetOptions) -> Result<Self, FleetError> {
        let dir = tempfile::tempdir().map_err(|source| FleetError::WriteFile {
            path: std::env::temp_dir(),
            source,
        })?;
        let hub = start_hub().await?;
        let hub_client = client_of(&hub, "hub").await?;
        hub.install_ocm_crds()
            .await
            .map_err(|e| FleetError::InstallCrds {
                which: "hub".into(),
                message: e.to_string(),
            })?;
        bootstrap::ensure_bootstrap_rbac(&hub_client).await?;
        let _hub_lock = hub_controllers_lock(&hub).await?;
        let mut fleet = Self {
            hub,
            _hub_lock,
            hub_client,
            clusters: Vec::new(),
            dir,
            tasks: Vec::new(),
        };
        fleet.start_hub_controllers(&options.clusters);
        let (server, ca) = server_and_ca(fleet.hub.kubeconfig_path())?;
        let text = bootstrap::bootstrap_kubeconfig(&fleet.hub_client, &server, &ca, BOOTSTRAP_TTL).await?;
        let bootstrap_path = fleet.dir.path().join("bootstrap.kubeconfig");
        std::fs::write(&bootstrap_path, text).map_err(|source| FleetError::WriteFile {
            path: bootstrap_path.clone(),
            source,
        })?;
        for (index, name) in options.clusters.iter().enumerate() {
            let (cluster, task) =
                ManagedClusterEnv::start(name, index == 0, &bootstrap_path, fleet.dir.path(), &options)
                    .await?;
            fleet.clusters.push(cluster);
            fleet.tasks.push(task);
        }
        for name in &options.clusters {
            fleet.wait_available(name, options.join_timeout).await?;
        }
        Ok(fleet)
    }

    fn start_hub_controllers(&mut self, clusters: &[String]) {
        let metrics = ControllerMetrics::default();
        let hub_options = HubOptions {
            auto_approved_csr_users: vec![bootstrap::bootstrap_user()],
            auto_accept: true,
            ..HubOptions::default()
        };
        let controllers = hub::run(self.hub_client.clone(), hub_options, metrics.clone());
        self.tasks.push(tokio::spawn(async move {
            if let Err(error) = controllers.await {
                tracing::error!(%error, "the hub controllers stopped");
            }
        }));
        // Only the fleet's own clusters: tests sharing a real hub keep out of each other's add-ons.
        let owner = ocm_core::addon::owner::run_with(
            self.hub_client.clone(),
            ocm_core::addon::owner::OwnerOptions {
                namespaces: clusters.to_vec(),
            },
            metrics,
        );
        self.tasks.push(tokio::spawn(async move {
            if let Err(error) = owner.await {
                tracing::error!(%error, "the add-on owner controller stopped");
            }
        }));
    }

    /// An admin client of the hub.
    #[must_use]
    pub fn hub_client(&self) -> kube::Client {
        self.hub_client.clone()
    }

    /// The hub's admin kubeconfig file (for `kubectl` or a controller under test).
    #[must_use]
    pub fn hub_kubeconfig(&self) -> &Path {
        self.hub.kubeconfig_path()
    }

    /// The managed cluster of this name.
    #[must_use]
    pub fn cluster(&self, name: &str) -> Option<&ManagedClusterEnv> {
        self.clusters.iter().find(|c| c.name() == name)
    }

    /// Every managed cluster, in the order given.
    #[must_use]
    pub fn clusters(&self) -> &[ManagedClusterEnv] {
        &self.clusters
    }

    /// The bootstrap kubeconfig the fleet's clusters joined with (a token of the
    /// `agent-registration-bootstrap` ServiceAccount, as `clusteradm get token` makes): more
    /// clusters, e.g. a [`sim::Simulator`]'s, can join with it.
    #[must_use]
    pub fn bootstrap_kubeconfig(&self) -> PathBuf {
        self.dir.path().join("bootstrap.kubeconfig")
    }

    /// A directory of the fleet's own, removed when the fleet is dropped.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Waits until ManagedCluster `name` is accepted, joined and available.
    ///
    /// # Errors
    /// [`FleetError::Timeout`] when it is not within `timeout`.
    pub async fn wait_available(&self, name: &str, timeout: Duration) -> Result<(), FleetError> {
        let api: Api<ManagedCluster> = Api::all(self.hub_client.clone());
        let available = |cluster: &ManagedCluster| {
            let conditions = cluster.status.as_ref().and_then(|s| s.conditions.as_ref());
            [managed_cluster::JOINED, managed_cluster::AVAILABLE]
                .iter()
                .all(|type_| {
                    conditions
                        .and_then(|c| c.find_condition(type_))
                        .and_then(Condition::status)
                        == Some(Status::True)
                })
        };
        poll(
            &format!("ManagedCluster {name} to be available"),
            timeout,
            || async {
                api.get_opt(name)
                    .await
                    .ok()
                    .flatten()
                    .filter(available)
                    .map(|_| ())
            },
        )
        .await
    }

    /// Stops the agents and controllers and deletes the fleet's ManagedClusters from the hub
    /// (which removes their namespaces), as a test on a shared real hub should.
    ///
    /// # Errors
    /// [`FleetError::Api`] when a deletion is refused.
    pub async fn cleanup(mut self) -> Result<(), FleetError> {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        let api: Api<ManagedCluster> = Api::all(self.hub_client.clone());
        for cluster in &self.clusters {
            match api.delete(cluster.name(), &DeleteParams::background()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(source) => {
                    return Err(FleetError::Api {
                        what: format!("deleting ManagedCluster {}", cluster.name()),
                        source,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The hub: the cluster of `OCM_TEST_HUB_KUBECONFIG`, else an embedded control plane admitting
/// ManagedClusters and ManifestWorks as upstream's hub webhooks do (default gates).
async fn start_hub() -> Result<TestEnv, FleetError> {
    let error = |source| FleetError::StartControlPlane {
        which: "hub".into(),
        source: Box::new(source),
    };
    if std::env::var("OCM_TEST_HUB_KUBECONFIG").is_ok_and(|v| !v.is_empty()) {
        return TestEnv::hub().await.map_err(error);
    }
    let admission = ocm_controlplane::admission::ClusterAdmission {
        mutate: ocm_api::admission::managed_cluster::MutateOptions {
            default_cluster_set: true,
        },
        work: ocm_api::admission::manifest_work::ManifestWorkOptions::default(),
    };
    TestEnv::start_with(ocm_controlplane::ControlPlane::builder().cluster_admission(Some(admission)))
        .await
        .map_err(error)
}

/// On a real hub, takes (shared) the lock `ocm-core`'s integration tests hold while hub
/// controllers run — a `flock` on `<temp dir>/ocm-core-tests-<hash of the hub kubeconfig
/// path>-HubControllers.lock` — so that a test there which needs the hub without any controller
/// (held exclusively) does not meet this fleet's. Nothing on an embedded hub.
async fn hub_controllers_lock(hub: &TestEnv) -> Result<Option<std::fs::File>, FleetError> {
    use std::hash::{Hash, Hasher};
    if hub.control_plane().is_some() {
        return Ok(None);
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hub.kubeconfig_path().hash(&mut hasher);
    let path = std::env::temp_dir().join(format!(
        "ocm-core-tests-{:016x}-HubControllers.lock",
        hasher.finish()
    ));
    let error_path = path.clone();
    let locked = tokio::task::spawn_blocking(move || {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        file.lock_shared()?;
        Ok::<_, std::io::Error>(file)
    })
    .await
    .map_err(|e| FleetError::WriteFile {
        path: error_path.clone(),
        source: std::io::Error::other(e.to_string()),
    })?;
    locked.map(Some).map_err(|source| FleetError::WriteFile {
        path: error_path,
        source,
    })
}

/// An admin client of `env`.
async fn client_of(env: &TestEnv, which: &str) -> Result<kube::Client, FleetError> {
    env.client()
        .await
        .map_err(|source| FleetError::StartControlPlane {
            which: which.to_string(),
            source: Box::new(source),
        })
}

/// The server URL and CA (PEM) of the current cluster of a kubeconfig file.
fn server_and_ca(path: &Path) -> Result<(String, String), FleetError> {
    use base64::Engine;
    let error = |message: String| FleetError::ReadKubeconfig {
        path: path.to_path_buf(),
        message,
    };
    let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(|e| error(e.to_string()))?;
    let cluster = kubeconfig
        .clusters
        .first()
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| error("no cluster".into()))?;
    let server = cluster.server.ok_or_else(|| error("no server".into()))?;
    let ca = match (cluster.certificate_authority_data, cluster.certificate_authority) {
        (Some(data), _) => base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| error(e.to_string()))?,
        (None, Some(file)) => std::fs::read(&file).map_err(|e| error(format!("{file}: {e}")))?,
        (None, None) => return Err(error("no certificate authority".into())),
    };
    Ok((server, String::from_utf8_lossy(&ca).into_owned()))
}

/// Polls `check` until it returns `Some`, for at most `timeout`.
async fn poll<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T, FleetError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(FleetError::Timeout {
                what: what.to_string(),
                timeout,
            });
        }
        tokio::time::sleep(POLL).await;
    }
}
