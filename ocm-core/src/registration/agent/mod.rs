//! The managed-cluster side of registration: the controllers a klusterlet's registration agent runs.
//!
//! [`run`] bootstraps when the hub kubeconfig in [`AgentOptions::hub_kubeconfig_dir`] is not valid
//! (ocm-core.md §1.3–1.6: ManagedCluster, CSR, `hub-kubeconfig-secret`), then runs the lease
//! updater (§1.8), the status controller (§1.9) and certificate rotation (§1.5 c) with the issued credentials until one fails.
//! When the hub kubeconfig stops being valid (certificate expired, bootstrap kubeconfig pointing at
//! another hub) `run` returns [`AgentError::HubKubeconfigInvalid`]; calling `run` again
//! re-bootstraps, as upstream's liveness restart does.
//!
//! | module | what it holds |
//! |---|---|
//! | [`kubeconfig`] | the hub kubeconfig's validity check and its generation from the bootstrap kubeconfig |
//! | [`csr`] | keys, certificate requests, rotation thresholds |
//! | [`claims`] | the claims reported from ClusterClaims and ClusterProperties |
//! | `managed_namespaces` | the namespaces the cluster's sets manage, labelled for the hub |
//! | [`addon`] | add-on registration secrets and the add-on lease checker |
//! | `pkcs10` | certificate requests laid out as Go's `x509` lays them out |
//! | [`quantity`] | capacity and allocatable summed and printed as Kubernetes quantities |
//! | [`spoke_ca`] | the managed cluster's CA bundle from its kubeconfig, for the client configs |
//! | `bootstrap` | creating the ManagedCluster, the CSR loop, writing the secret and its files |
//! | `lease` | renewing `managed-cluster-lease` |
//! | `rotation` | rotating the client certificate, condition `ClusterCertificateRotated` |
//! | `status` | Joined, Available, version, capacity and allocatable, ClusterClaims |
//! | [`mod@unjoin`] | removing the credentials and add-on secrets the agent wrote on the managed cluster |

pub mod addon;
mod bootstrap;
pub mod claims;
pub mod csr;
pub mod kubeconfig;
mod lease;
mod managed_namespaces;
mod patch;
mod pkcs10;
pub mod quantity;
mod rotation;
pub mod spoke_ca;
mod status;
pub mod unjoin;

pub use unjoin::{Unjoined, unjoin};

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use ocm_api::names::{namespaces, secrets};

use crate::metrics::ControllerMetrics;

/// Errors of the registration agent, named after the operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The bootstrap kubeconfig could not be read.
    #[error("reading the bootstrap kubeconfig {path}: {message}")]
    ReadBootstrapKubeconfig {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The bootstrap kubeconfig has no usable current context.
    #[error("the bootstrap kubeconfig has no current context with a cluster")]
    BootstrapKubeconfigNoContext,
    /// The hub kubeconfig could not be serialized.
    #[error("serializing the hub kubeconfig: {0}")]
    SerializeKubeconfig(String),
    /// A client for the hub could not be built.
    #[error("building a hub client: {0}")]
    BuildHubClient(String),
    /// The private key could not be encoded as PEM.
    #[error("encoding the private key: {0}")]
    EncodeKey(String),
    /// A key or certificate request could not be made.
    #[error("creating a certificate request: {0}")]
    CreateRequest(String),
    /// Listing CSRs on the hub failed.
    #[error("listing CSRs: {0}")]
    ListCsrs(#[source] kube::Error),
    /// Creating a CSR on the hub failed.
    #[error("creating a CSR: {0}")]
    CreateCsr(#[source] kube::Error),
    /// Reading a CSR on the hub failed.
    #[error("reading CSR {name}: {source}")]
    GetCsr {
        /// The CSR.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Watching the CSR for its certificate failed.
    #[error("watching CSR {name}: {source}")]
    WatchCsr {
        /// The CSR.
        name: String,
        /// The watch error.
        source: kube::runtime::watcher::Error,
    },
    /// Reading or creating the ManagedCluster failed.
    #[error("ensuring ManagedCluster {name}: {source}")]
    EnsureCluster {
        /// The cluster.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Reading or writing the hub-kubeconfig secret on the spoke failed.
    #[error("writing secret {namespace}/{name}: {source}")]
    WriteSecret {
        /// The secret's namespace.
        namespace: String,
        /// The secret.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing a file of the hub-kubeconfig directory failed.
    #[error("writing {path}: {source}")]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Listing the add-on secrets on the managed cluster failed.
    #[error("listing add-on secrets: {0}")]
    ListAddonSecrets(#[source] kube::Error),
    /// Removing a file of the hub-kubeconfig directory failed.
    #[error("removing {path}: {source}")]
    RemoveFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Renewing the cluster lease failed.
    #[error("updating lease {namespace}/{name}: {source}")]
    UpdateLease {
        /// The lease's namespace.
        namespace: String,
        /// The lease.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Reading the spoke (nodes, version) failed.
    #[error("reading the managed cluster: {0}")]
    ReadSpoke(#[source] kube::Error),
    /// Patching the ManagedCluster's status failed.
    #[error("patching the status of ManagedCluster {name}: {source}")]
    PatchStatus {
        /// The cluster.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Reading or patching a ManagedClusterAddOn's status failed.
    #[error("patching the status of ManagedClusterAddOn {name}: {source}")]
    PatchAddonStatus {
        /// The add-on.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// The hub refuses the cluster's status because its clock is out of sync.
    #[error("the clock of ManagedCluster {0} is out of sync with the hub; not patching status")]
    ClockOutOfSync(String),
    /// The hub kubeconfig stopped being valid (expired certificate, another hub): run the agent
    /// again to bootstrap anew.
    #[error("the hub kubeconfig in {0} is no longer valid; bootstrap again")]
    HubKubeconfigInvalid(PathBuf),
}

/// How to run the registration agent.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    /// The cluster's name; else the `cluster-name` file of the hub-kubeconfig directory, else a
    /// random UUID.
    pub cluster_name: Option<String>,
    /// The agent's name; else the `agent-name` file of the hub-kubeconfig directory, else five
    /// random lowercase alphanumerics.
    pub agent_name: Option<String>,
    /// The bootstrap kubeconfig file.
    pub bootstrap_kubeconfig: PathBuf,
    /// The secret (on the managed cluster) the issued credentials are written to.
    pub hub_kubeconfig_secret: String,
    /// The directory holding the files of that secret.
    pub hub_kubeconfig_dir: PathBuf,
    /// The agent's namespace on the managed cluster.
    pub component_namespace: String,
    /// The managed cluster's API server URLs, put into `spec.managedClusterClientConfigs`.
    pub external_server_urls: Vec<String>,
    /// The CA bundle (PEM) of the managed cluster's API server, sent with the URLs (upstream
    /// takes it from the agent's kubeconfig of the managed cluster: [`spoke_ca`]).
    pub spoke_ca_bundle: Option<Vec<u8>>,
    /// Annotations for the ManagedCluster; only keys prefixed `agent.open-cluster-management.io`
    /// are used.
    pub cluster_annotations: BTreeMap<String, String>,
    /// How often the status controller runs.
    pub cluster_healthcheck_period: Duration,
    /// Report ClusterClaims (feature gate `ClusterClaim`, on by default).
    pub cluster_claims: bool,
    /// Report ClusterProperties (`about.k8s.io`; feature gate `ClusterProperty`, off by default).
    pub cluster_properties: bool,
    /// How many non-reserved ClusterClaims are reported at most (20 upstream).
    pub max_custom_cluster_claims: usize,
    /// Claim-name suffixes treated as reserved (never cut).
    pub reserved_cluster_claim_suffixes: Vec<String>,
    /// `spec.expirationSeconds` of the cluster's CSRs (upstream requires ≥ 3600 when set).
    pub client_cert_expiration_seconds: Option<i32>,
    /// How often bootstrap polls the CSR and the files (1 s upstream).
    pub poll_period: Duration,
    /// How often the client certificate is checked for rotation (upstream: 5 min resync).
    pub rotation_check_period: Duration,
    /// A fixed rotation threshold (share of life remaining) instead of upstream's random one in
    /// [0.20, 0.25); tests set 1.0 to rotate at once.
    pub rotation_threshold: Option<f64>,
    /// How often add-on registrations and add-on leases are checked (upstream: lease checker
    /// every 30 s).
    pub addon_sync_period: Duration,
    /// The namespace of the managed cluster where every add-on's credentials secret and lease
    /// are, instead of each add-on's install namespace; `None` (upstream's only behaviour): the
    /// install namespace. A simulator whose clusters share one store gives each cluster its own.
    pub addon_namespace: Option<String>,
}

impl AgentOptions {
    /// Options with upstream's defaults for the given bootstrap kubeconfig and hub-kubeconfig
    /// directory.
    pub fn new(bootstrap_kubeconfig: PathBuf, hub_kubeconfig_dir: PathBuf) -> Self {
        Self {
            cluster_name: None,
            agent_name: None,
            bootstrap_kubeconfig,
            hub_kubeconfig_secret: secrets::HUB_KUBECONFIG.into(),
            hub_kubeconfig_dir,
            component_namespace: namespaces::AGENT.into(),
            external_server_urls: Vec::new(),
            spoke_ca_bundle: None,
            cluster_annotations: BTreeMap::new(),
            cluster_healthcheck_period: Duration::from_secs(60),
            cluster_claims: true,
            cluster_properties: false,
            max_custom_cluster_claims: 20,
            reserved_cluster_claim_suffixes: Vec::new(),
            client_cert_expiration_seconds: None,
            poll_period: Duration::from_secs(1),
            rotation_check_period: Duration::from_secs(300),
            rotation_threshold: None,
            addon_sync_period: Duration::from_secs(30),
            addon_namespace: None,
        }
    }
}

/// The prefix of the cluster annotations the agent passes on.
pub const CLUSTER_ANNOTATION_PREFIX: &str = "agent.open-cluster-management.io";

/// Names and clients the agent's loops share.
#[derive(Clone)]
pub(crate) struct Agent {
    pub spoke: kube::Client,
    pub options: AgentOptions,
    pub cluster: String,
    pub agent: String,
    pub bootstrap: kube::config::Kubeconfig,
    pub metrics: ControllerMetrics,
    /// The hub client of the current hub-kubeconfig files (see [`Agent::hub_client`]).
    pub hub: std::sync::Arc<std::sync::Mutex<Option<CachedHubClient>>>,
    /// Whether the hub accepts the cluster, as the status loop last read it: the lease loop
    /// waits on it while the cluster is not accepted instead of reading the cluster itself.
    pub accepted: tokio::sync::watch::Sender<bool>,
}

/// A hub client and the hub-kubeconfig files it was built from.
pub(crate) struct CachedHubClient {
    /// The bytes of `kubeconfig`, `tls.crt` and `tls.key` when the client was built.
    files: [Option<Vec<u8>>; 3],
    /// When the first certificate of `tls.crt` expires (Unix seconds).
    not_after: i64,
    client: kube::Client,
}

/// Runs the registration agent: bootstraps if the hub kubeconfig is not valid, then renews the
/// lease and reports the cluster's status until one of them fails. Dropping the future stops it.
pub async fn run(
    spoke: kube::Client,
    options: AgentOptions,
    metrics: ControllerMetrics,
) -> Result<(), AgentError> {
    let bootstrap = kube::config::Kubeconfig::read_from(&options.bootstrap_kubeconfig).map_err(|e| {
        AgentError::ReadBootstrapKubeconfig {
            path: options.bootstrap_kubeconfig.clone(),
            message: e.to_string(),
        }
    })?;
    bootstrap::sync_files_from_secret(&spoke, &options).await?;
    let (cluster, agent) = bootstrap::resolve_names(&options);
    let agent = Agent {
        spoke,
        options,
        cluster,
        agent,
        bootstrap,
        metrics,
        hub: Default::default(),
        accepted: tokio::sync::watch::Sender::new(false),
    };
    if !agent.hub_kubeconfig_valid() {
        tracing::info!(cluster = %agent.cluster, agent = %agent.agent, "hub kubeconfig not valid; bootstrapping");
        bootstrap::bootstrap(&agent).await?;
    }
    tracing::info!(cluster = %agent.cluster, "hub kubeconfig ready");
    tokio::try_join!(
        lease::run(&agent),
        status::run(&agent),
        rotation::run(&agent),
        addon::run(&agent)
    )?;
    Ok(())
}

impl Agent {
    /// Whether the files of the hub-kubeconfig directory hold a valid hub kubeconfig now.
    pub(crate) fn hub_kubeconfig_valid(&self) -> bool {
        let files = kubeconfig::HubKubeconfigFiles::read(&self.options.hub_kubeconfig_dir);
        kubeconfig::hub_kubeconfig_valid(
            &files,
            &self.bootstrap,
            Some(&self.cluster),
            Some(&self.agent),
            chrono::Utc::now().timestamp(),
        )
    }

    /// A hub client from the hub-kubeconfig directory, or [`AgentError::HubKubeconfigInvalid`].
    ///
    /// The client is kept while the directory's `kubeconfig`, `tls.crt` and `tls.key` keep their
    /// bytes and the certificate has not expired: every loop of the agent then shares one client,
    /// and so one connection to the hub, instead of parsing the kubeconfig and opening a TLS
    /// connection per round (as upstream's agent builds its clients once). New files (a rotated
    /// certificate) build a new client after the full validity check.
    pub(crate) async fn hub_client(&self) -> Result<kube::Client, AgentError> {
        let dir = &self.options.hub_kubeconfig_dir;
        let files = [
            secrets::keys::KUBECONFIG,
            secrets::keys::TLS_CERT,
            secrets::keys::TLS_KEY,
        ]
        .map(|name| std::fs::read(dir.join(name)).ok());
        let now = chrono::Utc::now().timestamp();
        {
            let cached = self.hub.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(cached) = cached.as_ref()
                && cached.files == files
                && now < cached.not_after
            {
                return Ok(cached.client.clone());
            }
        }
        if !self.hub_kubeconfig_valid() {
            return Err(AgentError::HubKubeconfigInvalid(dir.clone()));
        }
        let client = bootstrap::client_from_dir(dir).await?;
        let not_after = files[1]
            .as_deref()
            .and_then(kubeconfig::earliest_not_after)
            .unwrap_or(now);
        *self.hub.lock().unwrap_or_else(|e| e.into_inner()) = Some(CachedHubClient {
            files,
            not_after,
            client: client.clone(),
        });
        Ok(client)
    }
}
