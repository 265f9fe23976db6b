//! The `hub` binary: an OCM hub as one process. It installs the hub CRDs and the bootstrap RBAC
//! (what upstream's cluster-manager operator installs), runs the hub controllers of `ocm-core` —
//! registration (accept, CSR approval, leases, taints, cluster sets, cleanup, add-on status), work
//! (ManifestWork garbage collection, ManifestWorkReplicaSets; each behind its feature gate, off by
//! default as upstream's), placement and the add-on manager (ManagedClusterAddOns owned by their
//! ClusterManagementAddOn); `--controllers` picks a subset — and serves
//! `/healthz`, `/readyz` and `/metrics`. It runs on the cluster of
//! `--kubeconfig` or on an embedded control plane (`--embedded DIR`).
//!
//! ManagedClusters, ManagedClusterSetBindings and ManifestWorks are admitted as upstream's
//! cluster-manager webhooks admit them: on a cluster, with `--webhook-bind-address`, `hub` serves the admission
//! webhooks (its own serving certificate) and registers them with the cluster, by URL or by
//! Service (`--webhook-service`); the embedded control plane admits them in-process. The same
//! server converts the add-on kinds between v1alpha1 (stored) and v1beta1 for kube-apiserver
//! (upstream's add-on conversion webhook, `/convert`): `hub` points the add-on CRDs at it, and sets
//! them back to conversion `None` on exit when registered by URL.
//!
//! `hub get-token` does what `clusteradm get token` does: it prints (or writes) a bootstrap
//! kubeconfig for joining clusters; `--bootstrap-kubeconfig-out FILE` writes one at start-up.

use std::path::PathBuf;
use std::time::Duration;

use ocm_api::admission::managed_cluster::MutateOptions;
use ocm_api::admission::manifest_work::{DEFAULT_MANIFEST_LIMIT, ManifestWorkOptions};
use ocm_api::crd::InstallTarget;
use ocm_api::names::feature_gates::{
    ADDON_MANAGEMENT, CLEAN_UP_COMPLETED_MANIFEST_WORK, Component, DEFAULT_CLUSTER_SET,
    MANAGED_CLUSTER_AUTO_APPROVAL, MANIFEST_WORK_REPLICA_SET, NIL_EXECUTOR_VALIDATING,
};
use ocm_controlplane::admission::ClusterAdmission;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::placement::{self, PlacementError, PlacementOptions};
use ocm_core::registration::hub::{self, HubOptions, bootstrap};
use ocm_core::registration::webhook::{
    Endpoint, Registration, Reviewer, WebhookError, WebhookServer, conversion,
};
use ocm_core::work::hub::garbage_collection::{self, GarbageCollectionError};
use ocm_core::work::hub::replica_set::{self, ReplicaSetError, ReplicaSetOptions};

use crate::cluster::{Cluster, ClusterError};
use crate::flags::{self, FeatureGates, FlagError};
use crate::serving::{self, Health, ServeError};

/// The components whose feature gates `hub --feature-gates` sets.
const HUB_COMPONENTS: &[Component] = &[
    Component::HubRegistration,
    Component::HubWork,
    Component::HubPlacement,
    Component::HubAddonManager,
];

/// The hub's controller groups, as upstream's separate hub binaries split them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum HubController {
    /// The registration controllers (upstream's `registration controller`).
    Registration,
    /// The work controllers: ManifestWork garbage collection with the gate
    /// CleanUpCompletedManifestWork, the ManifestWorkReplicaSet controller with the gate
    /// ManifestWorkReplicaSet (upstream's `work manager`).
    Work,
    /// The placement scheduler (upstream's `placement controller`).
    Placement,
    /// The general add-on manager with the gate AddonManagement (upstream's `addon manager`):
    /// ManagedClusterAddOns owned by their ClusterManagementAddOn.
    Addon,
}

/// How long requests in flight may take to finish when the process stops.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The flags of `hub`.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "hub",
    about = "Runs the OCM hub controllers (registration, work, placement, add-on manager) on a cluster or an embedded control plane"
)]
pub struct HubArgs {
    /// The hub cluster's kubeconfig (default: KUBECONFIG, ~/.kube/config or in-cluster).
    #[arg(long, global = true, value_name = "FILE", conflicts_with = "embedded")]
    pub kubeconfig: Option<PathBuf>,
    /// Run on an embedded control plane keeping its data in DIR (its admin kubeconfig is
    /// DIR/admin.kubeconfig) instead of a cluster.
    #[arg(long, global = true, value_name = "DIR")]
    pub embedded: Option<PathBuf>,
    /// The port of the embedded control plane on 127.0.0.1 (0 picks a free one; default: the
    /// port DIR's server used last time, else a free one).
    #[arg(long, global = true)]
    pub embedded_port: Option<u16>,
    /// Users whose clusters' first CSRs are approved and whose clusters are accepted
    /// automatically; needs the feature gate ManagedClusterAutoApproval (upstream's older flag).
    #[arg(long, value_delimiter = ',', value_name = "USER,...")]
    pub cluster_auto_approval_users: Vec<String>,
    /// Users whose clusters' first CSRs are approved automatically (acceptance stays manual
    /// unless ManagedClusterAutoApproval is on).
    #[arg(long, value_delimiter = ',', value_name = "USER,...")]
    pub auto_approved_csr_users: Vec<String>,
    /// The controllers to run, comma-separated (default: all), so that a hub can run any subset
    /// as upstream's separate binaries do.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "registration,work,placement,addon"
    )]
    pub controllers: Vec<HubController>,
    /// Feature gates of the hub registration, work and placement controllers, as Name=true|false,...
    #[arg(long, value_delimiter = ',', value_name = "NAME=BOOL,...")]
    pub feature_gates: Vec<String>,
    /// Labels added to the namespaces and RBAC objects the hub creates, as key=value,...
    #[arg(long, value_delimiter = ',', value_name = "KEY=VALUE,...")]
    pub labels: Vec<String>,
    /// Where /healthz, /readyz and /metrics are served.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "HOST:PORT")]
    pub metrics_bind_address: String,
    /// The largest total size of a ManifestWork's manifests, in bytes (upstream's work webhook
    /// `--manifestLimit`).
    #[arg(long, default_value_t = DEFAULT_MANIFEST_LIMIT, value_name = "BYTES")]
    pub manifest_limit: usize,
    /// Serve the ManagedCluster, ManagedClusterSetBinding and ManifestWork admission webhooks and
    /// the add-on conversion webhook on HOST:PORT (HTTPS, with a serving certificate of its own)
    /// and register them with the cluster, as upstream's cluster-manager does. Not used with --embedded, whose control plane admits
    /// these kinds in-process.
    #[arg(long, value_name = "HOST:PORT")]
    pub webhook_bind_address: Option<String>,
    /// Register the webhooks by this Service (NAMESPACE/NAME or NAMESPACE/NAME:PORT; the port
    /// defaults to the bound one) instead of by the URL of --webhook-bind-address, when `hub` runs in the cluster
    /// behind that Service (upstream: open-cluster-management-hub/cluster-manager-registration-webhook).
    #[arg(long, value_name = "NAMESPACE/NAME[:PORT]", requires = "webhook_bind_address")]
    pub webhook_service: Option<String>,
    /// Write a bootstrap kubeconfig for joining clusters to FILE once the hub is set up.
    #[arg(long, value_name = "FILE")]
    pub bootstrap_kubeconfig_out: Option<PathBuf>,
    /// How long bootstrap tokens are valid (90s, 30m, 24h, 7d).
    #[arg(long, global = true, default_value = "24h", value_parser = flags::duration)]
    pub bootstrap_token_ttl: Duration,
    /// A one-shot command instead of running the controllers.
    #[command(subcommand)]
    pub command: Option<HubCommand>,
}

/// The one-shot commands of `hub`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum HubCommand {
    /// Print a bootstrap kubeconfig for joining clusters (as `clusteradm get token` does): a
    /// token of the ServiceAccount open-cluster-management/agent-registration-bootstrap, bound to the
    /// bootstrap ClusterRole.
    GetToken {
        /// Write the kubeconfig to FILE instead of printing it.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// What stopped `hub`.
#[derive(Debug, thiserror::Error)]
pub enum HubCommandError {
    /// A flag value is invalid.
    #[error(transparent)]
    ParseFlags(#[from] FlagError),
    /// The cluster could not be reached or prepared.
    #[error(transparent)]
    PrepareCluster(#[from] ClusterError),
    /// The bootstrap RBAC or kubeconfig could not be made.
    #[error("granting bootstrap access: {0}")]
    GrantBootstrap(#[from] bootstrap::BootstrapError),
    /// Writing the bootstrap kubeconfig failed.
    #[error("writing {path}: {source}")]
    WriteKubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The health and metrics endpoints could not be served.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// A hub controller stopped.
    #[error("running the hub controllers: {0}")]
    RunControllers(#[from] hub::HubError),
    /// The placement controller stopped.
    #[error("running the placement controller: {0}")]
    RunPlacement(#[from] PlacementError),
    /// The ManifestWork garbage collection stopped.
    #[error("running the ManifestWork garbage collection: {0}")]
    RunWorkGarbageCollection(#[from] GarbageCollectionError),
    /// The add-on owner controller stopped.
    #[error("running the add-on owner controller: {0}")]
    RunAddonOwner(#[from] ocm_core::addon::owner::OwnerError),
    /// The ManifestWorkReplicaSet controller stopped.
    #[error("running the ManifestWorkReplicaSet controller: {0}")]
    RunReplicaSets(#[source] Box<ReplicaSetError>),
    /// The admission webhooks could not be served or registered.
    #[error("admission webhooks: {0}")]
    ServeWebhooks(#[from] WebhookError),
    /// `--webhook-service` is neither NAMESPACE/NAME nor NAMESPACE/NAME:PORT.
    #[error("--webhook-service: {0:?} is not NAMESPACE/NAME[:PORT]")]
    ParseWebhookService(String),
}

impl HubArgs {
    /// The controllers' options from the flags.
    ///
    /// # Errors
    /// A feature gate or label is malformed or unknown.
    pub fn hub_options(&self) -> Result<HubOptions, FlagError> {
        let gates = FeatureGates::parse_for(HUB_COMPONENTS, &self.feature_gates)?;
        let auto_approval = gates.enabled(MANAGED_CLUSTER_AUTO_APPROVAL);
        if !auto_approval && !self.cluster_auto_approval_users.is_empty() {
            tracing::warn!(
                "--cluster-auto-approval-users has no effect unless --feature-gates {MANAGED_CLUSTER_AUTO_APPROVAL}=true"
            );
        }
        let mut users = self.auto_approved_csr_users.clone();
        if auto_approval {
            users.extend(self.cluster_auto_approval_users.iter().cloned());
        }
        users.sort();
        users.dedup();
        Ok(HubOptions {
            extra_labels: flags::key_values("labels", &self.labels)?,
            auto_approved_csr_users: users,
            auto_accept: auto_approval,
            ..HubOptions::default()
        })
    }

    /// How the hub admits its kinds: the ManagedCluster mutating rules follow the gate
    /// DefaultClusterSet, the ManifestWork rules `--manifest-limit` and the gate
    /// NilExecutorValidating.
    ///
    /// # Errors
    /// A feature gate is malformed or unknown.
    pub fn cluster_admission(&self) -> Result<ClusterAdmission, FlagError> {
        let gates = FeatureGates::parse_for(HUB_COMPONENTS, &self.feature_gates)?;
        Ok(ClusterAdmission {
            mutate: MutateOptions {
                default_cluster_set: gates.enabled(DEFAULT_CLUSTER_SET),
            },
            work: ManifestWorkOptions {
                manifest_limit: self.manifest_limit,
                nil_executor_validating: gates.enabled(NIL_EXECUTOR_VALIDATING),
            },
        })
    }

    async fn cluster(&self, admission: ClusterAdmission) -> Result<Cluster, ClusterError> {
        match &self.embedded {
            Some(dir) => {
                Cluster::embedded_on_previous_port_with_admission(dir, self.embedded_port, Some(admission))
                    .await
            }
            None => Cluster::connect(self.kubeconfig.as_deref()).await,
        }
    }
}

/// Runs `hub` with `args` until SIGTERM or Ctrl-C (or a one-shot command to its end).
///
/// # Errors
/// Flags are invalid, the cluster cannot be prepared, or a controller stopped.
pub async fn run(args: HubArgs) -> Result<(), HubCommandError> {
    let options = args.hub_options()?;
    let admission = args.cluster_admission()?;
    let cluster = args.cluster(admission).await?;
    let result = match &args.command {
        Some(HubCommand::GetToken { output }) => get_token(&cluster, &args, output.as_ref()).await,
        None => serve_hub(&cluster, &args, options, admission).await,
    };
    cluster.stop(SHUTDOWN_GRACE).await;
    result
}

/// Mints a bootstrap kubeconfig and prints it or writes it to `output`.
async fn get_token(
    cluster: &Cluster,
    args: &HubArgs,
    output: Option<&PathBuf>,
) -> Result<(), HubCommandError> {
    let kubeconfig = mint_bootstrap_kubeconfig(cluster, args.bootstrap_token_ttl).await?;
    match output {
        Some(path) => write_private(path, &kubeconfig)?,
        None => println!("{kubeconfig}"),
    }
    Ok(())
}

/// A bootstrap kubeconfig for `cluster` valid for `ttl` (ensuring the bootstrap RBAC first).
///
/// # Errors
/// The server or CA is unknown, or the RBAC or token could not be made.
pub async fn mint_bootstrap_kubeconfig(cluster: &Cluster, ttl: Duration) -> Result<String, HubCommandError> {
    let (server, ca) = cluster.server_and_ca()?;
    Ok(bootstrap::bootstrap_kubeconfig(&cluster.client(), &server, &ca, ttl).await?)
}

/// Writes `text` to `path` readable by its owner only (it holds a credential).
fn write_private(path: &PathBuf, text: &str) -> Result<(), HubCommandError> {
    let error = |source| HubCommandError::WriteKubeconfig {
        path: path.clone(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(error)?;
    }
    std::fs::write(path, text).map_err(error)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(error)?;
    }
    Ok(())
}

/// The admission webhooks of a hub on a cluster, while they serve.
struct Webhooks {
    server: WebhookServer,
    registration: Registration,
}

/// Serves the admission webhooks on `bind` and registers them with `cluster`.
async fn serve_webhooks(
    cluster: &Cluster,
    bind: &str,
    service: Option<&str>,
    admission: ClusterAdmission,
) -> Result<Webhooks, HubCommandError> {
    let service = service.map(parse_service).transpose()?;
    let mut hosts = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    if let Ok(address) = bind.parse::<std::net::SocketAddr>()
        && !address.ip().is_unspecified()
        && !address.ip().is_loopback()
    {
        hosts.push(address.ip().to_string());
    }
    if let Some((namespace, name, _)) = &service {
        hosts.push(format!("{name}.{namespace}.svc"));
        hosts.push(format!("{name}.{namespace}.svc.cluster.local"));
    }
    let reviewer = Reviewer {
        client: cluster.client(),
        mutate: admission.mutate,
        work: admission.work,
    };
    let server = WebhookServer::start(bind, &hosts, reviewer).await?;
    let endpoint = match service {
        Some((namespace, name, port)) => Endpoint::Service {
            namespace,
            name,
            port: port.unwrap_or_else(|| i32::from(server.address().port())),
        },
        None => Endpoint::Url(server.url()),
    };
    let registration = Registration {
        endpoint,
        ca_pem: server.ca_pem().to_string(),
        name_suffix: None,
        object_selector: None,
    };
    registration.apply(&cluster.client()).await?;
    let converted = conversion::register(&cluster.client(), &registration.endpoint, server.ca_pem()).await?;
    tracing::info!(address = %server.address(), converted = ?converted, "admission and conversion webhooks registered");
    Ok(Webhooks { server, registration })
}

/// `controller`'s result, or never when it is not run.
async fn optional<F: std::future::Future>(controller: Option<F>) -> F::Output {
    match controller {
        Some(controller) => controller.await,
        None => std::future::pending().await,
    }
}

/// `NAMESPACE/NAME[:PORT]`.
fn parse_service(value: &str) -> Result<(String, String, Option<i32>), HubCommandError> {
    let error = || HubCommandError::ParseWebhookService(value.to_string());
    let (namespace, rest) = value.split_once('/').ok_or_else(error)?;
    let (name, port) = match rest.split_once(':') {
        Some((name, port)) => (name, Some(port.parse::<i32>().map_err(|_| error())?)),
        None => (rest, None),
    };
    if namespace.is_empty() || name.is_empty() {
        return Err(error());
    }
    Ok((namespace.to_string(), name.to_string(), port))
}

async fn serve_hub(
    cluster: &Cluster,
    args: &HubArgs,
    options: HubOptions,
    admission: ClusterAdmission,
) -> Result<(), HubCommandError> {
    let crds = cluster.install_crds(InstallTarget::Hub).await?;
    tracing::info!(count = crds.len(), "hub CRDs installed");
    let webhooks = match (&args.webhook_bind_address, cluster.embedded_handle()) {
        (Some(bind), None) => {
            Some(serve_webhooks(cluster, bind, args.webhook_service.as_deref(), admission).await?)
        }
        (Some(_), Some(_)) => {
            tracing::warn!(
                "--webhook-bind-address is not used with --embedded: its control plane admits clusters in-process"
            );
            None
        }
        (None, _) => None,
    };
    bootstrap::ensure_bootstrap_rbac(&cluster.client()).await?;
    tracing::info!(
        role = bootstrap::BOOTSTRAP_CLUSTER_ROLE,
        "bootstrap RBAC installed"
    );
    if let Some(path) = &args.bootstrap_kubeconfig_out {
        let kubeconfig = mint_bootstrap_kubeconfig(cluster, args.bootstrap_token_ttl).await?;
        write_private(path, &kubeconfig)?;
        tracing::info!(path = %path.display(), "bootstrap kubeconfig written");
    }
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = ControllerMetrics::default();
    metrics.register(&mut registry);
    let health = Health::default();
    let server = serving::serve(&args.metrics_bind_address, registry, health.clone()).await?;
    if let Some(path) = cluster.kubeconfig_path() {
        tracing::info!(kubeconfig = %path.display(), "hub controllers starting");
    }
    let gates = FeatureGates::parse_for(HUB_COMPONENTS, &args.feature_gates)?;
    let runs = |c: HubController| args.controllers.contains(&c);
    let registration =
        runs(HubController::Registration).then(|| hub::run(cluster.client(), options, metrics.clone()));
    let work_gc = (runs(HubController::Work) && gates.enabled(CLEAN_UP_COMPLETED_MANIFEST_WORK)).then(|| {
        tracing::info!("ManifestWork garbage collection on (CleanUpCompletedManifestWork)");
        garbage_collection::run(cluster.client(), metrics.clone())
    });
    let replica_sets = (runs(HubController::Work) && gates.enabled(MANIFEST_WORK_REPLICA_SET)).then(|| {
        tracing::info!("ManifestWorkReplicaSet controller on (ManifestWorkReplicaSet)");
        replica_set::run(cluster.client(), ReplicaSetOptions::default(), metrics.clone())
    });
    let placement = runs(HubController::Placement)
        .then(|| placement::run(cluster.client(), PlacementOptions::default(), metrics.clone()));
    let addon_owner = (runs(HubController::Addon) && gates.enabled(ADDON_MANAGEMENT))
        .then(|| ocm_core::addon::owner::run(cluster.client(), metrics.clone()));
    tracing::info!(controllers = ?args.controllers, "hub controllers starting");
    health.set_ready();
    let result = tokio::select! {
        result = optional(registration) => result.map_err(HubCommandError::from),
        result = optional(work_gc) => result.map_err(HubCommandError::from),
        result = optional(replica_sets) => result.map_err(|e| HubCommandError::RunReplicaSets(Box::new(e))),
        result = optional(placement) => result.map_err(HubCommandError::from),
        result = optional(addon_owner) => result.map_err(HubCommandError::from),
        () = crate::process::shutdown_signal() => Ok(()),
    };
    server.shutdown().await;
    // Webhooks registered by URL belong to this process: without it kube-apiserver could not
    // write ManagedClusters at all (failure policy Fail). Registered by Service they stay, as
    // upstream's do while its deployment restarts.
    if let Some(webhooks) = webhooks
        && matches!(webhooks.registration.endpoint, Endpoint::Url(_))
    {
        drop(webhooks.server);
        if let Err(error) = webhooks.registration.remove(&cluster.client()).await {
            tracing::warn!(%error, "removing the webhook configurations failed");
        }
        if let Err(error) = conversion::unregister(&cluster.client()).await {
            tracing::warn!(%error, "setting the add-on CRDs back to conversion None failed");
        }
    }
    result
}
