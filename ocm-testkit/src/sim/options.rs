//! What a simulated fleet runs: how many clusters, their names, the agents' periods, churn, and
//! the add-on agents to start beside the klusterlet agents of every cluster.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

/// What an add-on agent of one simulated cluster is given.
#[derive(Clone)]
pub struct SimClusterContext {
    /// The cluster's name (its namespace on the hub).
    pub name: String,
    /// Its index in the fleet, 0 based.
    pub index: usize,
    /// An admin client of the shared managed-cluster store.
    pub spoke: kube::Client,
    /// The cluster's own namespace in the store: its klusterlet agents' `component_namespace`,
    /// and where the registration agent writes every add-on's `<addon>-hub-kubeconfig` secret
    /// and reads its lease (instead of the add-on's install namespace, which all clusters share
    /// here): an add-on agent reads its credentials and renews its lease in this namespace.
    pub namespace: String,
    /// Where the registration agent keeps the cluster's hub credentials (files of the
    /// `hub-kubeconfig-secret`).
    pub hub_kubeconfig_dir: PathBuf,
}

impl std::fmt::Debug for SimClusterContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimClusterContext")
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// An add-on agent: started once per simulated cluster with that cluster's context (and again
/// when the cluster comes back after [`Simulator::pause`](super::Simulator::pause)); it runs
/// until its future ends or the cluster stops.
pub type AddonAgent = Arc<dyn Fn(SimClusterContext) -> BoxFuture<'static, ()> + Send + Sync>;

/// The options of a [`Simulator`](super::Simulator).
#[derive(Clone)]
pub struct SimOptions {
    /// How many managed clusters.
    pub clusters: usize,
    /// Their names are `<prefix>-<index>`.
    pub name_prefix: String,
    /// The bootstrap kubeconfig every cluster joins with (`clusteradm get token`'s).
    pub bootstrap_kubeconfig: PathBuf,
    /// Where the clusters' hub-kubeconfig directories go.
    pub dir: PathBuf,
    /// Run the work agent beside each registration agent.
    pub work_agents: bool,
    /// The registration agents' status period (`cluster_healthcheck_period`; upstream 60 s).
    pub healthcheck_period: Duration,
    /// The work agents' status read-back period (upstream 10 s).
    pub status_sync_interval: Duration,
    /// How often the registration agents look at add-on registrations (upstream 30 s).
    pub addon_sync_period: Duration,
    /// At most this many clusters bootstrapping (started, without hub credentials) at a time;
    /// 0: all at once.
    pub concurrency: usize,
    /// How long a start waits for credentials before the next cluster may start anyway.
    pub bootstrap_limit: Duration,
    /// Churn: rotate every cluster's client certificate this often (a rotation threshold of 1,
    /// checked at this period); `None`: upstream's rotation at 75–80 % of the certificate's life.
    pub rotate_every: Option<Duration>,
    /// Add-on agents started for every cluster.
    pub addon_agents: Vec<AddonAgent>,
}

impl std::fmt::Debug for SimOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimOptions")
            .field("clusters", &self.clusters)
            .field("name_prefix", &self.name_prefix)
            .field("work_agents", &self.work_agents)
            .field("healthcheck_period", &self.healthcheck_period)
            .field("concurrency", &self.concurrency)
            .field("rotate_every", &self.rotate_every)
            .field("addon_agents", &self.addon_agents.len())
            .finish_non_exhaustive()
    }
}

impl SimOptions {
    /// `clusters` clusters named `<name_prefix>-<n>`, joining with `bootstrap_kubeconfig`, their
    /// files under `dir`; registration and work agents with upstream's periods, all started at
    /// once, no churn, no add-ons.
    pub fn new(
        clusters: usize,
        name_prefix: impl Into<String>,
        bootstrap_kubeconfig: PathBuf,
        dir: PathBuf,
    ) -> Self {
        Self {
            clusters,
            name_prefix: name_prefix.into(),
            bootstrap_kubeconfig,
            dir,
            work_agents: true,
            healthcheck_period: Duration::from_secs(60),
            status_sync_interval: Duration::from_secs(10),
            addon_sync_period: Duration::from_secs(30),
            concurrency: 0,
            bootstrap_limit: Duration::from_secs(600),
            rotate_every: None,
            addon_agents: Vec::new(),
        }
    }

    /// The name of cluster `index`.
    #[must_use]
    pub fn cluster_name(&self, index: usize) -> String {
        format!("{}-{index}", self.name_prefix)
    }

    /// The namespace of cluster `index` in the shared store.
    #[must_use]
    pub fn cluster_namespace(&self, index: usize) -> String {
        format!("{}-{index}-agent", self.name_prefix)
    }

    /// The hub-kubeconfig directory of cluster `index`.
    #[must_use]
    pub fn hub_kubeconfig_dir(&self, index: usize) -> PathBuf {
        self.dir.join(self.cluster_name(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cluster_has_its_own_name_namespace_and_directory() {
        let o = SimOptions::new(3, "sim", "/b".into(), "/d".into());
        assert_eq!(o.cluster_name(2), "sim-2");
        assert_eq!(o.cluster_namespace(2), "sim-2-agent");
        assert_eq!(o.hub_kubeconfig_dir(2), PathBuf::from("/d/sim-2"));
        assert_ne!(o.cluster_namespace(1), o.cluster_namespace(10));
        assert!(o.work_agents);
        assert_eq!(o.concurrency, 0);
    }
}
