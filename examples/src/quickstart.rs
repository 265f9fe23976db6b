//! The `quickstart` binary: upstream's quick start in one command. It starts an embedded hub and
//! an embedded managed cluster, runs the hub controllers and the klusterlet's registration and
//! work agents, and walks the join step by step — ManagedCluster created, CSR pending, CSR
//! approved, cluster accepted, Joined and Available — then applies a ManifestWork holding the
//! `hello` Pod, and walks the OCM blog's helloworld add-on (installed, enabled, registered, its
//! agent copying a hub ConfigMap, Available; `quickstart_addon`), printing at each step the kubectl
//! commands that show it. (The embedded managed cluster has no kubelet: the Pod is created and
//! stays Pending, and the add-on agent runs in the quickstart's process, which the demo says.)
//!
//! The approval and the acceptance are done through the API, as `kubectl certificate approve`
//! and `kubectl patch managedcluster … hubAcceptsClient: true` do; with `--manual` the demo
//! waits for the user to run those commands. With `--keep-running` the clusters keep running
//! after the join until Ctrl-C, for playing with kubectl.

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, ListParams, Patch, PatchParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::conditions;
use ocm_api::crd::InstallTarget;
use ocm_api::names::conditions::cluster::managed_cluster;
use ocm_api::names::conditions::work::manifest_work as work_conditions;
use ocm_api::names::{labels, leases, namespaces, secrets};
use ocm_api::work::v1::{Manifest, ManifestWork, ManifestWorkSpec, ManifestsTemplate};
use ocm_core::klusterlet::{self, KlusterletError};
use ocm_core::metrics::ControllerMetrics;
use ocm_core::registration::agent::AgentOptions;
use ocm_core::registration::hub::{self, HubOptions, bootstrap};
use ocm_core::work::agent::WorkAgentOptions;
use tokio::task::JoinHandle;

use crate::cluster::{Cluster, ClusterError};
use crate::flags;
use crate::hub::HubCommandError;

/// How long the embedded control planes may take to finish requests in flight when stopping.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// How often the demo looks at the hub while it waits for a step.
const POLL: Duration = Duration::from_millis(200);
/// The field manager of the demo's own writes (approval, acceptance).
pub(crate) const FIELD_MANAGER: &str = "ocm-quickstart";

/// The flags of `quickstart`.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "quickstart",
    about = "Starts an embedded hub and managed cluster and joins them step by step"
)]
pub struct QuickstartArgs {
    /// Where the two control planes keep their data (DIR/hub, DIR/CLUSTER-NAME); earlier data of
    /// the demo there is removed at start.
    #[arg(long, default_value = "quickstart-data", value_name = "DIR")]
    pub data_dir: PathBuf,
    /// The managed cluster's name.
    #[arg(long, default_value = "cluster1")]
    pub cluster_name: String,
    /// Wait for you to approve the CSR and accept the cluster with kubectl instead of doing it.
    #[arg(long)]
    pub manual: bool,
    /// Keep both clusters running after the join until Ctrl-C.
    #[arg(long)]
    pub keep_running: bool,
    /// How long each automatic step may take (90s, 2m, ...).
    #[arg(long, default_value = "2m", value_parser = flags::duration)]
    pub step_timeout: Duration,
}

/// What stopped the demo.
#[derive(Debug, thiserror::Error)]
pub enum QuickstartError {
    /// Removing the data of an earlier run failed.
    #[error("removing {path}: {source}")]
    RemoveOldData {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A control plane could not be started or prepared.
    #[error(transparent)]
    PrepareCluster(#[from] ClusterError),
    /// Setting up the hub failed.
    #[error(transparent)]
    PrepareHub(#[from] HubCommandError),
    /// Setting up the managed cluster failed.
    #[error(transparent)]
    PrepareManagedCluster(#[from] KlusterletError),
    /// Granting bootstrap access failed.
    #[error("granting bootstrap access: {0}")]
    GrantBootstrap(#[from] bootstrap::BootstrapError),
    /// Writing the bootstrap kubeconfig failed.
    #[error("writing {path}: {source}")]
    WriteBootstrapKubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Approving the CSR failed.
    #[error("approving CSR {name}: {source}")]
    ApproveCsr {
        /// The CSR.
        name: String,
        /// Why.
        source: kube::Error,
    },
    /// Accepting the cluster failed.
    #[error("accepting ManagedCluster {name}: {source}")]
    AcceptCluster {
        /// The cluster.
        name: String,
        /// Why.
        source: kube::Error,
    },
    /// Creating the demo's ManifestWork failed.
    #[error("creating ManifestWork {name}: {source}")]
    CreateWork {
        /// The work.
        name: String,
        /// Why.
        source: kube::Error,
    },
    /// Installing or enabling the helloworld add-on failed.
    #[error("helloworld add-on: {what}: {message}")]
    EnableAddon {
        /// What was being done.
        what: String,
        /// Why.
        message: String,
    },
    /// Writing the add-on agent's credentials failed.
    #[error("writing {path}: {source}")]
    WriteAddonCredentials {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A step did not happen in time.
    #[error("timed out after {timeout:?} waiting for {what}")]
    WaitStep {
        /// The step.
        what: String,
        /// How long was waited.
        timeout: Duration,
    },
}

/// The paths of one run, as given (for the printed commands) and absolute (for the processes).
#[derive(Debug, Clone)]
struct Paths {
    shown: PathBuf,
    absolute: PathBuf,
}

impl Paths {
    fn new(data_dir: &Path) -> Self {
        Self {
            shown: data_dir.to_path_buf(),
            absolute: std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf()),
        }
    }

    fn hub(&self) -> PathBuf {
        self.absolute.join("hub")
    }

    fn managed(&self, cluster: &str) -> PathBuf {
        self.absolute.join(cluster)
    }

    fn bootstrap_kubeconfig(&self) -> PathBuf {
        self.absolute.join("bootstrap.kubeconfig")
    }

    fn hub_kubeconfig_dir(&self) -> PathBuf {
        self.absolute.join("hub-kubeconfig")
    }

    /// `name` inside the data directory as the user named it (`./quickstart-data/hub/...`).
    fn show(&self, name: &str) -> String {
        let path = self.shown.join(name);
        if path.is_relative() && !path.starts_with(".") && !path.starts_with("..") {
            format!("./{}", path.display())
        } else {
            path.display().to_string()
        }
    }
}

/// Prints a numbered step and the commands that show it.
pub(crate) fn step(number: u32, title: impl Display, commands: &[String]) {
    println!("\n[{number}] {title}");
    for command in commands {
        println!("      $ {command}");
    }
}

/// Polls `check` until it returns `Some`, for at most `timeout` (forever when `None`).
pub(crate) async fn wait_for<T, F, Fut>(
    what: &str,
    timeout: Option<Duration>,
    mut check: F,
) -> Result<T, QuickstartError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if let (Some(deadline), Some(timeout)) = (deadline, timeout)
            && tokio::time::Instant::now() >= deadline
        {
            return Err(QuickstartError::WaitStep {
                what: what.to_string(),
                timeout,
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Removes what an earlier run left in the data directory (only the demo's own entries).
fn remove_old_data(paths: &Paths, cluster: &str) -> Result<(), QuickstartError> {
    for path in [
        paths.hub(),
        paths.managed(cluster),
        paths.hub_kubeconfig_dir(),
        paths.bootstrap_kubeconfig(),
    ] {
        let result = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else if path.exists() {
            std::fs::remove_file(&path)
        } else {
            continue;
        };
        result.map_err(|source| QuickstartError::RemoveOldData { path, source })?;
    }
    Ok(())
}

/// The running pieces of the demo, stopped together.
struct Demo {
    hub: Option<Cluster>,
    managed: Option<Cluster>,
    tasks: Vec<JoinHandle<()>>,
}

impl Demo {
    async fn stop(self) {
        for task in &self.tasks {
            task.abort();
        }
        for task in self.tasks {
            let _ = task.await;
        }
        for cluster in [self.managed, self.hub].into_iter().flatten() {
            cluster.stop(SHUTDOWN_GRACE).await;
        }
    }
}

/// Runs the demo with `args`; Ctrl-C or SIGTERM stops it early (and still exits cleanly).
///
/// # Errors
/// A cluster could not be started, or a step failed or did not happen in time.
pub async fn run(args: QuickstartArgs) -> Result<(), QuickstartError> {
    let mut demo = Demo {
        hub: None,
        managed: None,
        tasks: Vec::new(),
    };
    let result = tokio::select! {
        result = walk(&args, &mut demo) => result,
        () = crate::process::shutdown_signal() => {
            println!("\nInterrupted; stopping.");
            Ok(())
        }
    };
    demo.stop().await;
    result
}

async fn walk(args: &QuickstartArgs, demo: &mut Demo) -> Result<(), QuickstartError> {
    let cluster_name = args.cluster_name.as_str();
    let paths = Paths::new(&args.data_dir);
    remove_old_data(&paths, cluster_name)?;
    let hub_kubeconfig = paths.show("hub/admin.kubeconfig");
    let spoke_kubeconfig = paths.show(&format!("{cluster_name}/admin.kubeconfig"));
    let step_timeout = Some(args.step_timeout);
    let user_timeout = if args.manual { None } else { step_timeout };
    println!("OCM quickstart: an embedded hub and an embedded managed cluster, joined step by step.");
    println!("In another terminal, point kubectl at the hub to follow along:");
    println!("      $ export KUBECONFIG={hub_kubeconfig}");

    // The hub: CRDs, bootstrap RBAC, controllers; ManagedCluster admission in-process, as upstream's
    // hub admits clusters with its webhooks (default gates: DefaultClusterSet on).
    let admission = ocm_controlplane::admission::ClusterAdmission {
        mutate: ocm_api::admission::managed_cluster::MutateOptions {
            default_cluster_set: true,
        },
        work: ocm_api::admission::manifest_work::ManifestWorkOptions::default(),
    };
    let hub = demo
        .hub
        .insert(Cluster::embedded_with_admission(&paths.hub(), 0, Some(admission)).await?);
    hub.install_crds(InstallTarget::Hub).await?;
    bootstrap::ensure_bootstrap_rbac(&hub.client()).await?;
    let hub_client = hub.client();
    let hub_url = hub
        .embedded_handle()
        .map(|h| h.url().to_string())
        .unwrap_or_default();
    let metrics = ControllerMetrics::default();
    let controllers = hub::run(hub_client.clone(), HubOptions::default(), metrics.clone());
    demo.tasks.push(tokio::spawn(async move {
        if let Err(error) = controllers.await {
            tracing::error!(%error, "the hub controllers stopped");
        }
    }));
    let addon_owner = ocm_core::addon::owner::run(hub_client.clone(), metrics.clone());
    demo.tasks.push(tokio::spawn(async move {
        if let Err(error) = addon_owner.await {
            tracing::error!(%error, "the add-on owner controller stopped");
        }
    }));
    step(
        1,
        format!("Hub running at {hub_url}: OCM CRDs and bootstrap RBAC installed, controllers started."),
        &[
            "kubectl get crds | grep open-cluster-management".to_string(),
            format!("kubectl get clusterrole {}", bootstrap::BOOTSTRAP_CLUSTER_ROLE),
        ],
    );

    // The managed cluster and its agent, with a bootstrap kubeconfig as `clusteradm get token` makes.
    let bootstrap_text = crate::hub::mint_bootstrap_kubeconfig(hub, Duration::from_secs(3600)).await?;
    let bootstrap_path = paths.bootstrap_kubeconfig();
    std::fs::write(&bootstrap_path, bootstrap_text).map_err(|source| {
        QuickstartError::WriteBootstrapKubeconfig {
            path: bootstrap_path.clone(),
            source,
        }
    })?;
    let managed = demo
        .managed
        .insert(Cluster::embedded(&paths.managed(cluster_name), 0).await?);
    managed.install_crds(InstallTarget::Managed).await?;
    let mut options = AgentOptions::new(bootstrap_path, paths.hub_kubeconfig_dir());
    options.cluster_name = Some(cluster_name.to_string());
    options.cluster_healthcheck_period = Duration::from_secs(5);
    options.poll_period = Duration::from_millis(250);
    options.addon_sync_period = Duration::from_secs(2);
    if let Some(handle) = managed.embedded_handle() {
        options.external_server_urls = vec![handle.url().to_string()];
        options.spoke_ca_bundle = Some(handle.credentials().ca_pem.clone().into_bytes());
    }
    klusterlet::ensure_agent_namespaces(&managed.client(), &options.component_namespace).await?;
    // The klusterlet: the registration agent and the work agent on the hub credentials it obtains.
    let mut work_options = WorkAgentOptions::new(cluster_name.to_string());
    work_options.status_sync_interval = Duration::from_secs(2);
    let agents = klusterlet::run(managed.client(), options, work_options, metrics);
    demo.tasks.push(tokio::spawn(async move {
        if let Err(error) = agents.await {
            tracing::error!(%error, "the registration agent stopped");
        }
    }));
    step(
        2,
        format!(
            "Managed cluster {cluster_name} running; its klusterlet joins with {} (a token of the \
             ServiceAccount {}/{}).",
            paths.show("bootstrap.kubeconfig"),
            bootstrap::BOOTSTRAP_NAMESPACE,
            bootstrap::BOOTSTRAP_SERVICE_ACCOUNT
        ),
        &[format!(
            "kubectl --kubeconfig {spoke_kubeconfig} get namespace {}",
            namespaces::AGENT
        )],
    );

    let clusters: Api<ManagedCluster> = Api::all(hub_client.clone());
    wait_for("the ManagedCluster", step_timeout, || async {
        clusters.get_opt(cluster_name).await.ok().flatten()
    })
    .await?;
    step(
        3,
        format!("The agent created ManagedCluster {cluster_name} on the hub (not accepted yet)."),
        &["kubectl get managedclusters".to_string()],
    );

    let csrs: Api<CertificateSigningRequest> = Api::all(hub_client.clone());
    let selector = format!("{}={cluster_name}", labels::CLUSTER_NAME);
    let csr = wait_for("the cluster's CSR", step_timeout, || async {
        csrs.list(&ListParams::default().labels(&selector))
            .await
            .ok()
            .and_then(|list| list.items.into_iter().find(|c| !is_approved(c)))
            .and_then(|c| c.metadata.name)
    })
    .await?;
    let approve = format!("kubectl certificate approve {csr}");
    step(
        4,
        format!("The agent asked for a client certificate: CSR {csr} is Pending."),
        &[format!("kubectl get csr -l {selector}")],
    );

    // Approval and acceptance go together, as `clusteradm accept` does them: the agent's loops
    // start as soon as its certificate is issued and need the RBAC that acceptance brings.
    let accept = format!(
        "kubectl patch managedcluster {cluster_name} -p '{{\"spec\":{{\"hubAcceptsClient\":true}}}}' --type=merge"
    );
    if args.manual {
        step(
            5,
            "Approve the CSR (waiting for you):",
            std::slice::from_ref(&approve),
        );
        step(
            6,
            "Accept the cluster (waiting for you):",
            std::slice::from_ref(&accept),
        );
    } else {
        approve_csr(&csrs, &csr).await?;
        accept_cluster(&clusters, cluster_name).await?;
        step(
            5,
            format!("Approved the CSR, as `{approve}` does; the hub signs it."),
            &[format!("kubectl get csr {csr}")],
        );
        step(
            6,
            "Accepted the cluster, as this command does:",
            std::slice::from_ref(&accept),
        );
    }
    wait_for("the CSR's approval", user_timeout, || async {
        csrs.get_opt(&csr)
            .await
            .ok()
            .flatten()
            .filter(|c| is_approved(c) && c.status.as_ref().is_some_and(|s| s.certificate.is_some()))
    })
    .await?;
    wait_for("the cluster's acceptance", user_timeout, || async {
        clusters
            .get_opt(cluster_name)
            .await
            .ok()
            .flatten()
            .filter(|c| c.spec.hub_accepts_client.unwrap_or(false))
    })
    .await?;

    wait_for("HubAcceptedManagedCluster", step_timeout, || async {
        cluster_condition(&clusters, cluster_name, managed_cluster::HUB_ACCEPTED).await
    })
    .await?;
    step(
        7,
        format!(
            "The hub accepted {cluster_name}: namespace {cluster_name}, its RBAC and the lease are in place."
        ),
        &[
            format!("kubectl get namespace {cluster_name}"),
            format!("kubectl get rolebindings -n {cluster_name}"),
            format!("kubectl get lease {} -n {cluster_name}", leases::MANAGED_CLUSTER),
        ],
    );

    for condition in [managed_cluster::JOINED, managed_cluster::AVAILABLE] {
        wait_for(condition, step_timeout, || async {
            cluster_condition(&clusters, cluster_name, condition).await
        })
        .await?;
    }
    step(
        8,
        format!(
            "{cluster_name} is Joined and Available; the agent keeps its hub credentials in a secret on the managed cluster."
        ),
        &[
            format!("kubectl get managedcluster {cluster_name}"),
            format!(
                "kubectl --kubeconfig {spoke_kubeconfig} get secret {} -n {}",
                secrets::HUB_KUBECONFIG,
                namespaces::AGENT
            ),
        ],
    );

    // The guide's last step: a Pod defined on the hub appears on the managed cluster.
    let works: Api<ManifestWork> = Api::namespaced(hub_client.clone(), cluster_name);
    let work = hello_work(cluster_name);
    works
        .patch(
            HELLO_WORK,
            &PatchParams::apply("quickstart").force(),
            &Patch::Apply(&work),
        )
        .await
        .map_err(|source| QuickstartError::CreateWork {
            name: HELLO_WORK.to_string(),
            source,
        })?;
    for condition in [work_conditions::APPLIED, work_conditions::AVAILABLE] {
        wait_for(condition, step_timeout, || async {
            works
                .get_opt(HELLO_WORK)
                .await
                .ok()
                .flatten()
                .and_then(|w| w.status)
                .and_then(|s| s.conditions)
                .filter(|c| conditions::is_true(c, condition))
        })
        .await?;
    }
    step(
        9,
        format!(
            "ManifestWork {HELLO_WORK} created on the hub in namespace {cluster_name}: the work agent applied its \
             Pod `hello` to {cluster_name} (Applied, Available). With no kubelet in the embedded \
             cluster the Pod stays Pending: the object is there, nothing runs it."
        ),
        &[
            format!("kubectl get manifestwork {HELLO_WORK} -n {cluster_name} -o yaml"),
            format!("kubectl --kubeconfig {spoke_kubeconfig} get pod hello -n default"),
            format!("kubectl --kubeconfig {spoke_kubeconfig} get appliedmanifestworks"),
        ],
    );

    // The OCM blog's add-on story: helloworld installed, enabled, registered, running, healthy.
    let spoke_client = managed.client();
    let spoke_kubeconfig_path = paths.managed(cluster_name).join("admin.kubeconfig");
    crate::quickstart_addon::walk(
        crate::quickstart_addon::AddonDemo {
            hub: hub_client.clone(),
            hub_kubeconfig: paths.hub().join("admin.kubeconfig"),
            spoke: spoke_client,
            spoke_kubeconfig: spoke_kubeconfig_path,
            spoke_kubeconfig_shown: &spoke_kubeconfig,
            cluster: cluster_name,
            data_dir: &paths.absolute,
            timeout: step_timeout,
            first_step: 10,
        },
        &mut demo.tasks,
    )
    .await?;

    if args.keep_running {
        println!(
            "\nBoth clusters keep running; press Ctrl-C to stop (data stays in {}).",
            paths.show("")
        );
        crate::process::shutdown_signal().await;
    } else {
        println!(
            "\nDone. Run again with --keep-running to explore with kubectl, or --manual to approve and accept yourself."
        );
    }
    Ok(())
}

/// The name of the demo's ManifestWork.
const HELLO_WORK: &str = "hello-work";

/// The seed guide's ManifestWork: the `hello` Pod in `default`.
fn hello_work(cluster: &str) -> ManifestWork {
    let mut work = ManifestWork::new(HELLO_WORK, ManifestWorkSpec::default());
    work.metadata.namespace = Some(cluster.to_string());
    let pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "hello", "namespace": "default"},
        "spec": {"containers": [{"name": "hello", "image": "busybox",
            "command": ["sh", "-c", "echo \"Hello, Kubernetes!\" && sleep 3600"]}]},
    });
    if let serde_json::Value::Object(object) = pod {
        work.spec.workload = Some(ManifestsTemplate {
            manifests: Some(vec![Manifest(object)]),
        });
    }
    work
}

/// Whether the CSR carries an `Approved` condition.
fn is_approved(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Approved" && c.status == "True"))
}

/// Approves a CSR through its approval subresource, as `kubectl certificate approve` does.
async fn approve_csr(csrs: &Api<CertificateSigningRequest>, name: &str) -> Result<(), QuickstartError> {
    let patch = serde_json::json!({
        "status": {"conditions": [{
            "type": "Approved",
            "status": "True",
            "reason": "KubectlApprove",
            "message": "This CSR was approved by the OCM quickstart.",
        }]}
    });
    csrs.patch_approval(name, &PatchParams::apply(FIELD_MANAGER), &Patch::Merge(&patch))
        .await
        .map_err(|source| QuickstartError::ApproveCsr {
            name: name.to_string(),
            source,
        })?;
    Ok(())
}

/// Sets `spec.hubAcceptsClient: true`, as the `kubectl patch` of upstream's quick start does.
async fn accept_cluster(clusters: &Api<ManagedCluster>, name: &str) -> Result<(), QuickstartError> {
    let patch = serde_json::json!({"spec": {"hubAcceptsClient": true}});
    clusters
        .patch(name, &PatchParams::apply(FIELD_MANAGER), &Patch::Merge(&patch))
        .await
        .map_err(|source| QuickstartError::AcceptCluster {
            name: name.to_string(),
            source,
        })?;
    Ok(())
}

/// `Some(())` when the cluster's condition `type_` is True.
async fn cluster_condition(clusters: &Api<ManagedCluster>, name: &str, type_: &str) -> Option<()> {
    let cluster = clusters.get_opt(name).await.ok().flatten()?;
    let conditions = cluster.status.and_then(|s| s.conditions).unwrap_or_default();
    conditions::is_true(&conditions, type_).then_some(())
}
