//! The `klusterlet` binary: the registration and work agents of a managed cluster as one process
//! (upstream's singleton mode). With a bootstrap kubeconfig for the hub the registration agent
//! creates the ManagedCluster and a CSR, waits for approval, keeps the issued credentials in
//! `hub-kubeconfig-secret` and the files of `--hub-kubeconfig-dir`, then renews the cluster lease
//! and reports the cluster's status. The work agent applies the ManifestWorks of the cluster's hub
//! namespace with those credentials ([`ocm_core::klusterlet`]). It serves `/healthz`, `/readyz` and
//! `/metrics`. The managed cluster is the one of
//! `--spoke-kubeconfig` or an embedded control plane (`--embedded DIR`).
//!
//! `--unjoin` removes what the agent wrote on the managed cluster and exits.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ocm_api::crd::InstallTarget;
use ocm_api::names::feature_gates::{
    CLUSTER_CLAIM, CLUSTER_PROPERTY, Component, EXECUTOR_VALIDATING_CACHES, RAW_FEEDBACK_JSON_STRING,
};
use ocm_api::names::{namespaces, secrets};
use ocm_core::klusterlet;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::registration::agent::{self, AgentError, AgentOptions, Unjoined, spoke_ca};
use ocm_core::work::agent::WorkAgentOptions;

use crate::cluster::{Cluster, ClusterError};
use crate::flags::{self, FeatureGates, FlagError};
use crate::serving::{self, Health, ServeError};

/// How long requests in flight may take to finish when the process stops.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The components whose feature gates `klusterlet --feature-gates` sets.
const AGENT_COMPONENTS: &[Component] = &[Component::SpokeRegistration, Component::SpokeWork];

/// The flags of `klusterlet`, named like upstream's registration agent's.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "klusterlet",
    about = "Runs the OCM registration agent of a managed cluster (or unjoins it with --unjoin)"
)]
pub struct KlusterletArgs {
    /// The managed cluster's name (default: the cluster-name file of --hub-kubeconfig-dir, else
    /// a random UUID).
    #[arg(long)]
    pub cluster_name: Option<String>,
    /// The agent's name (default: the agent-name file of --hub-kubeconfig-dir, else random).
    #[arg(long)]
    pub agent_name: Option<String>,
    /// The kubeconfig to join the hub with (from `hub get-token` or `clusteradm get token`).
    #[arg(long, value_name = "FILE", required_unless_present = "unjoin")]
    pub bootstrap_kubeconfig: Option<PathBuf>,
    /// The secret on the managed cluster holding the hub credentials.
    #[arg(long, default_value = secrets::HUB_KUBECONFIG)]
    pub hub_kubeconfig_secret: String,
    /// The directory the hub credentials are copied to (kubeconfig, tls.crt, tls.key, ...).
    #[arg(long, default_value = "hub-kubeconfig", value_name = "DIR")]
    pub hub_kubeconfig_dir: PathBuf,
    /// The agent's namespace on the managed cluster, where the secret lives.
    #[arg(long, default_value = namespaces::AGENT)]
    pub namespace: String,
    /// The managed cluster's kubeconfig (default: KUBECONFIG, ~/.kube/config or in-cluster).
    #[arg(long, value_name = "FILE", conflicts_with = "embedded")]
    pub spoke_kubeconfig: Option<PathBuf>,
    /// Run the managed cluster as an embedded control plane keeping its data in DIR (its admin
    /// kubeconfig is DIR/admin.kubeconfig).
    #[arg(long, value_name = "DIR")]
    pub embedded: Option<PathBuf>,
    /// The port of the embedded control plane on 127.0.0.1 (0 picks a free one; default: the
    /// port DIR's server used last time, else a free one).
    #[arg(long)]
    pub embedded_port: Option<u16>,
    /// The managed cluster's API server URLs the hub may use (spec.managedClusterClientConfigs,
    /// with the CA of the managed cluster's kubeconfig as caBundle); with --embedded, the
    /// embedded server's URL by default.
    #[arg(long, value_delimiter = ',', value_name = "URL,...")]
    pub spoke_external_server_urls: Vec<String>,
    /// Annotations for the ManagedCluster as key=value,... (keys prefixed
    /// agent.open-cluster-management.io only).
    #[arg(long, value_delimiter = ',', value_name = "KEY=VALUE,...")]
    pub cluster_annotations: Vec<String>,
    /// How often the cluster's status is reported (30s, 1m, ...).
    #[arg(long, default_value = "60s", value_parser = flags::duration)]
    pub cluster_healthcheck_period: Duration,
    /// Feature gates of the registration and work agents, as Name=true|false,... (ClusterClaim
    /// is on, ClusterProperty, RawFeedbackJsonString and ExecutorValidatingCaches off by default).
    #[arg(long, value_delimiter = ',', value_name = "NAME=BOOL,...")]
    pub feature_gates: Vec<String>,
    /// How often the work agent reads the status of each work's resources back.
    #[arg(long, default_value = "10s", value_parser = flags::duration)]
    pub status_sync_interval: Duration,
    /// How long an AppliedManifestWork whose ManifestWork is gone from the hub is kept before it
    /// and its resources are deleted (100 years or more: never).
    #[arg(long = "appliedmanifestwork-eviction-grace-period", default_value = "60m", value_parser = flags::duration)]
    pub eviction_grace_period: Duration,
    /// The work agent's id in AppliedManifestWorks (default: the hash of the hub's URL).
    #[arg(long)]
    pub agent_id: Option<String>,
    /// The longest JSON value status feedback reports (feature gate RawFeedbackJsonString).
    #[arg(long, default_value_t = 1024)]
    pub max_json_raw_length: usize,
    /// How many works the work agent reconciles at once.
    #[arg(long = "workload-agent-workers", default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub work_workers: u16,
    /// Where /healthz, /readyz and /metrics are served.
    #[arg(long, default_value = "127.0.0.1:8081", value_name = "HOST:PORT")]
    pub metrics_bind_address: String,
    /// Remove the hub credentials and add-on secrets the agent wrote on the managed cluster, and
    /// the files of --hub-kubeconfig-dir, then exit (the ManagedCluster on the hub stays).
    #[arg(long)]
    pub unjoin: bool,
}

/// What stopped `klusterlet`.
#[derive(Debug, thiserror::Error)]
pub enum KlusterletError {
    /// A flag value is invalid.
    #[error(transparent)]
    ParseFlags(#[from] FlagError),
    /// The managed cluster could not be reached or prepared.
    #[error(transparent)]
    PrepareCluster(#[from] ClusterError),
    /// Creating the agent's namespace failed.
    #[error(transparent)]
    PrepareAgents(#[from] klusterlet::KlusterletError),
    /// The health and metrics endpoints could not be served.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// The managed cluster's CA bundle could not be read from its kubeconfig.
    #[error(transparent)]
    ReadSpokeCa(#[from] spoke_ca::SpokeCaError),
    /// The agent failed in a way a restart does not fix, or unjoin failed.
    #[error("running the registration agent: {0}")]
    RunAgent(#[from] AgentError),
}

/// `path` made absolute against the working directory.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

impl KlusterletArgs {
    /// The agent's options from the flags; relative paths are made absolute.
    ///
    /// # Errors
    /// A feature gate or annotation is malformed, or a gate is unknown.
    pub fn agent_options(&self) -> Result<AgentOptions, FlagError> {
        let gates = FeatureGates::parse_for(AGENT_COMPONENTS, &self.feature_gates)?;
        let bootstrap = self
            .bootstrap_kubeconfig
            .as_deref()
            .map(absolute)
            .unwrap_or_default();
        let mut options = AgentOptions::new(bootstrap, absolute(&self.hub_kubeconfig_dir));
        options.cluster_name = self.cluster_name.clone();
        options.agent_name = self.agent_name.clone();
        options.hub_kubeconfig_secret = self.hub_kubeconfig_secret.clone();
        options.component_namespace = self.namespace.clone();
        options.external_server_urls = self.spoke_external_server_urls.clone();
        options.cluster_annotations = flags::key_values("cluster-annotations", &self.cluster_annotations)?;
        options.cluster_healthcheck_period = self.cluster_healthcheck_period;
        options.cluster_claims = gates.enabled(CLUSTER_CLAIM);
        options.cluster_properties = gates.enabled(CLUSTER_PROPERTY);
        Ok(options)
    }

    /// The work agent's options from the flags (its cluster name comes from the hub credentials).
    ///
    /// # Errors
    /// A feature gate is malformed or unknown.
    pub fn work_agent_options(&self) -> Result<WorkAgentOptions, FlagError> {
        let gates = FeatureGates::parse_for(AGENT_COMPONENTS, &self.feature_gates)?;
        let mut options = WorkAgentOptions::new(self.cluster_name.clone().unwrap_or_default());
        options.agent_id = self.agent_id.clone();
        options.status_sync_interval = self.status_sync_interval;
        options.eviction_grace_period = self.eviction_grace_period;
        options.max_json_raw_length = self.max_json_raw_length;
        options.workers = self.work_workers;
        options.raw_feedback_json_string = gates.enabled(RAW_FEEDBACK_JSON_STRING);
        options.executor_validating_caches = gates.enabled(EXECUTOR_VALIDATING_CACHES);
        Ok(options)
    }

    async fn cluster(&self) -> Result<Cluster, ClusterError> {
        match &self.embedded {
            Some(dir) => Cluster::embedded_on_previous_port(dir, self.embedded_port).await,
            None => Cluster::connect(self.spoke_kubeconfig.as_deref()).await,
        }
    }
}

/// Runs `klusterlet` with `args` until SIGTERM or Ctrl-C, or unjoins with `--unjoin`.
///
/// # Errors
/// Flags are invalid, the managed cluster cannot be prepared, or the agent cannot run.
pub async fn run(args: KlusterletArgs) -> Result<(), KlusterletError> {
    let mut options = args.agent_options()?;
    let work_options = args.work_agent_options()?;
    // As upstream: the CA of the managed cluster's kubeconfig goes with the URLs.
    if !args.unjoin && args.embedded.is_none() && !options.external_server_urls.is_empty() {
        options.spoke_ca_bundle = spoke_ca::from_kubeconfig_file(args.spoke_kubeconfig.as_deref())?;
    }
    let cluster = args.cluster().await?;
    let result = if args.unjoin {
        unjoin(&cluster, &options).await.map(|_| ())
    } else {
        if let Some(handle) = cluster.embedded_handle() {
            if options.external_server_urls.is_empty() {
                options.external_server_urls = vec![handle.url().to_string()];
            }
            options.spoke_ca_bundle = Some(handle.credentials().ca_pem.clone().into_bytes());
        }
        serve_agent(&cluster, &args, options, work_options).await
    };
    cluster.stop(SHUTDOWN_GRACE).await;
    result
}

/// Unjoins and prints what was removed.
async fn unjoin(cluster: &Cluster, options: &AgentOptions) -> Result<Unjoined, KlusterletError> {
    let unjoined = agent::unjoin(cluster.client(), options).await?;
    println!(
        "unjoined cluster {}: removed {} secret(s) and {} file(s)",
        unjoined.cluster.as_deref().unwrap_or("<unknown>"),
        unjoined.secrets.len(),
        unjoined.files.len()
    );
    for secret in &unjoined.secrets {
        println!("  secret {secret}");
    }
    for file in &unjoined.files {
        println!("  file {}", file.display());
    }
    Ok(unjoined)
}

async fn serve_agent(
    cluster: &Cluster,
    args: &KlusterletArgs,
    options: AgentOptions,
    work_options: WorkAgentOptions,
) -> Result<(), KlusterletError> {
    match cluster.install_crds(InstallTarget::Managed).await {
        Ok(crds) => tracing::info!(count = crds.len(), "managed-cluster CRDs installed"),
        // ClusterClaims are then not reported; registration works without them.
        Err(error) if cluster.embedded_handle().is_none() => {
            tracing::warn!(%error, "installing the managed-cluster CRDs failed; continuing");
        }
        Err(error) => return Err(error.into()),
    }
    klusterlet::ensure_namespace(&cluster.client(), &options.component_namespace).await?;
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = ControllerMetrics::default();
    metrics.register(&mut registry);
    let health = Health::default();
    let server = serving::serve(&args.metrics_bind_address, registry, health.clone()).await?;
    health.set_ready();
    let result = tokio::select! {
        result = klusterlet::run(cluster.client(), options, work_options, metrics) => result.map_err(KlusterletError::from),
        () = crate::process::shutdown_signal() => Ok(()),
    };
    server.shutdown().await;
    result
}
