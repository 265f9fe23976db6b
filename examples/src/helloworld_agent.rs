//! The helloworld add-on's agent (addon-framework.md §3.3, §7.3): it copies every ConfigMap
//! of its cluster's namespace on the hub into its install namespace on the managed cluster,
//! labelled `synced-from-hub: ""` (updating only when the data differs, never deleting, and
//! doing nothing while the ManagedClusterAddOn is being deleted), and renews the add-on's
//! lease in the install namespace.
//!
//! ```text
//! helloworld-agent --hub-kubeconfig /var/run/hub/kubeconfig --cluster-name cluster1 \
//!     --addon-namespace open-cluster-management-agent-addon [--addon-name helloworld] \
//!     [--kubeconfig MANAGED]
//! ```
//!
//! The hub kubeconfig is the one the klusterlet's registration agent writes into the secret
//! `helloworld-hub-kubeconfig`; when it rotates the certificate the agent reloads it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use ocm_addon_framework::hub_kubeconfig::{self, HubKubeconfigWatcher};
use ocm_addon_framework::lease::LeaseUpdater;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;

use crate::cluster::{Cluster, ClusterError};

/// The label on every copied ConfigMap.
pub const SYNCED_LABEL: &str = "synced-from-hub";
/// How often every hub ConfigMap is synced again (upstream's informer resync).
pub const RESYNC_PERIOD: Duration = Duration::from_secs(600);

/// The agent's flags (upstream's `helloworld agent` flags).
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "helloworld-agent",
    about = "The helloworld add-on agent: copies the hub ConfigMaps of its cluster to the managed cluster"
)]
pub struct AgentArgs {
    /// The hub kubeconfig (the `kubeconfig` file of the mounted `<addon>-hub-kubeconfig` secret).
    #[arg(long, value_name = "FILE")]
    pub hub_kubeconfig: PathBuf,
    /// The managed cluster's name (default: the `cluster-name` file beside the hub kubeconfig).
    #[arg(long)]
    pub cluster_name: Option<String>,
    /// The namespace the agent is installed in: where the ConfigMaps and the lease go.
    #[arg(long)]
    pub addon_namespace: String,
    /// The add-on's name: the ManagedClusterAddOn's and the lease's.
    #[arg(long, default_value = crate::helloworld::ADDON_NAME)]
    pub addon_name: String,
    /// The managed cluster's kubeconfig (default: KUBECONFIG, ~/.kube/config or in-cluster;
    /// upstream's name `--managed-kubeconfig` is accepted too).
    #[arg(long, value_name = "FILE", alias = "managed-kubeconfig")]
    pub kubeconfig: Option<PathBuf>,
}

/// Errors of the agent.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Loading the hub kubeconfig or the cluster name failed.
    #[error(transparent)]
    HubKubeconfig(#[from] hub_kubeconfig::HubKubeconfigError),
    /// Connecting to the managed cluster failed.
    #[error(transparent)]
    ManagedCluster(#[from] ClusterError),
    /// Reading the ManagedClusterAddOn on the hub failed.
    #[error("get ManagedClusterAddOn {namespace}/{name} on the hub: {source}")]
    GetAddon {
        /// The cluster namespace.
        namespace: String,
        /// The add-on.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Reading a ConfigMap failed.
    #[error("get ConfigMap {namespace}/{name}: {source}")]
    GetConfigMap {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Writing a ConfigMap on the managed cluster failed.
    #[error("write ConfigMap {namespace}/{name} on the managed cluster: {source}")]
    WriteConfigMap {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// What syncing one ConfigMap did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncOutcome {
    /// The ManagedClusterAddOn is being deleted: nothing was done.
    AddonDeleting,
    /// The copy was created.
    Created,
    /// The copy's data was updated.
    Updated,
    /// The copy already had the same data.
    Unchanged,
}

/// Copies hub ConfigMaps of one cluster to the managed cluster (upstream's
/// `helloworld-agent-controller`).
#[derive(Clone)]
pub struct ConfigMapSync {
    /// The hub client (the agent's own credentials).
    pub hub: Client,
    /// The managed cluster client.
    pub managed: Client,
    /// The cluster's name: the hub namespace read.
    pub cluster_name: String,
    /// The add-on's name.
    pub addon_name: String,
    /// The install namespace on the managed cluster.
    pub addon_namespace: String,
}

impl ConfigMapSync {
    /// Syncs the hub ConfigMap `hub_cm` to the managed cluster.
    ///
    /// # Errors
    ///
    /// The ManagedClusterAddOn could not be read (also when it does not exist), or a
    /// ConfigMap could not be read or written.
    pub async fn sync(&self, hub_cm: &ConfigMap) -> Result<SyncOutcome, AgentError> {
        let addons = Api::<ManagedClusterAddOn>::namespaced(self.hub.clone(), &self.cluster_name);
        let addon = addons
            .get(&self.addon_name)
            .await
            .map_err(|source| AgentError::GetAddon {
                namespace: self.cluster_name.clone(),
                name: self.addon_name.clone(),
                source,
            })?;
        if addon.metadata.deletion_timestamp.is_some() {
            return Ok(SyncOutcome::AddonDeleting);
        }
        let name = hub_cm.metadata.name.clone().unwrap_or_default();
        let api = Api::<ConfigMap>::namespaced(self.managed.clone(), &self.addon_namespace);
        let write_err = |source| AgentError::WriteConfigMap {
            namespace: self.addon_namespace.clone(),
            name: name.clone(),
            source,
        };
        let existing = api
            .get_opt(&name)
            .await
            .map_err(|source| AgentError::GetConfigMap {
                namespace: self.addon_namespace.clone(),
                name: name.clone(),
                source,
            })?;
        match existing {
            None => {
                let copy = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(self.addon_namespace.clone()),
                        labels: Some(BTreeMap::from([(SYNCED_LABEL.to_string(), String::new())])),
                        ..ObjectMeta::default()
                    },
                    data: hub_cm.data.clone(),
                    ..ConfigMap::default()
                };
                api.create(&PostParams::default(), &copy)
                    .await
                    .map_err(write_err)?;
                Ok(SyncOutcome::Created)
            }
            Some(existing) if data_of(&existing) == data_of(hub_cm) => Ok(SyncOutcome::Unchanged),
            Some(mut existing) => {
                existing.data = hub_cm.data.clone();
                api.replace(&name, &PostParams::default(), &existing)
                    .await
                    .map_err(write_err)?;
                Ok(SyncOutcome::Updated)
            }
        }
    }

    /// Watches the hub ConfigMaps of the cluster namespace and syncs each one seen (every
    /// [`RESYNC_PERIOD`] all of them again), until the watch ends. Errors are logged; the
    /// ConfigMap is retried at the next event or resync.
    pub async fn run(&self) {
        let api = Api::<ConfigMap>::namespaced(self.hub.clone(), &self.cluster_name);
        let mut events = watcher(api, watcher::Config::default()).boxed();
        let mut known: BTreeMap<String, ConfigMap> = BTreeMap::new();
        let mut resync = tokio::time::interval(RESYNC_PERIOD);
        resync.tick().await;
        loop {
            let to_sync: Vec<ConfigMap> = tokio::select! {
                event = events.next() => match event {
                    Some(Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm))) => {
                        known.insert(cm.metadata.name.clone().unwrap_or_default(), cm.clone());
                        vec![cm]
                    }
                    Some(Ok(watcher::Event::Delete(cm))) => {
                        known.remove(cm.metadata.name.as_deref().unwrap_or_default());
                        Vec::new()
                    }
                    Some(Ok(watcher::Event::Init | watcher::Event::InitDone)) => Vec::new(),
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "watch the hub ConfigMaps");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        Vec::new()
                    }
                    None => return,
                },
                _ = resync.tick() => known.values().cloned().collect(),
            };
            for cm in to_sync {
                match self.sync(&cm).await {
                    Ok(outcome) => tracing::debug!(configmap = ?cm.metadata.name, ?outcome, "synced"),
                    Err(e) => tracing::warn!(error = %e, "sync a hub ConfigMap"),
                }
            }
        }
    }
}

fn data_of(cm: &ConfigMap) -> BTreeMap<String, String> {
    cm.data.clone().unwrap_or_default()
}

/// Runs the agent until `shutdown` resolves: the lease updater on the managed cluster (falling
/// back to the hub when the managed cluster has no Lease API or namespace), and the ConfigMap
/// sync, restarted with a new hub client whenever the hub kubeconfig is rotated.
///
/// # Errors
///
/// The hub kubeconfig, the cluster name or the managed cluster's kubeconfig could not be loaded.
pub async fn run_until(
    args: AgentArgs,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), AgentError> {
    let secret_dir = args
        .hub_kubeconfig
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let cluster_name = hub_kubeconfig::cluster_name(args.cluster_name.as_deref(), &secret_dir)?;
    let hub = HubKubeconfigWatcher::start(&args.hub_kubeconfig, hub_kubeconfig::DEFAULT_POLL_PERIOD).await?;
    let managed = Cluster::connect(args.kubeconfig.as_deref()).await?.client();
    tracing::info!(cluster = %cluster_name, addon = %args.addon_name, namespace = %args.addon_namespace, "helloworld agent started");
    let lease = LeaseUpdater::new(managed.clone(), &args.addon_name, &args.addon_namespace)
        .with_hub_lease_config(hub.client(), &cluster_name);
    let lease_task = tokio::spawn(lease.run());
    let mut clients = hub.subscribe();
    let sync_loop = async {
        loop {
            let sync = ConfigMapSync {
                hub: clients.borrow_and_update().clone(),
                managed: managed.clone(),
                cluster_name: cluster_name.clone(),
                addon_name: args.addon_name.clone(),
                addon_namespace: args.addon_namespace.clone(),
            };
            tokio::select! {
                () = sync.run() => tokio::time::sleep(Duration::from_secs(1)).await,
                changed = clients.changed() => if changed.is_err() { return },
            }
        }
    };
    tokio::select! {
        () = sync_loop => {}
        () = shutdown => {}
    }
    lease_task.abort();
    Ok(())
}

/// Runs the agent until SIGTERM or Ctrl-C.
///
/// # Errors
///
/// See [`run_until`].
pub async fn run(args: AgentArgs) -> Result<(), AgentError> {
    run_until(args, crate::process::shutdown_signal()).await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use clap::Parser;

    use super::*;

    #[test]
    fn flags_are_upstreams_with_the_managed_cluster_from_kubeconfig() {
        let args = AgentArgs::try_parse_from([
            "helloworld-agent",
            "--hub-kubeconfig=/var/run/hub/kubeconfig",
            "--cluster-name=cluster1",
            "--addon-namespace=ns",
            "--managed-kubeconfig=/m",
        ])
        .unwrap();
        assert_eq!(args.addon_name, "helloworld");
        assert_eq!(args.cluster_name.as_deref(), Some("cluster1"));
        assert_eq!(args.kubeconfig, Some(PathBuf::from("/m")));
        assert!(AgentArgs::try_parse_from(["helloworld-agent", "--cluster-name=c"]).is_err());
    }
}
