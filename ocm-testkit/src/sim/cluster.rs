//! One simulated cluster: the real registration agent of `ocm_core::registration::agent` (run
//! again when it returns, as a restarted pod would), the work agent of
//! `ocm_core::klusterlet::run_work_agent` beside it, and the add-on agents, all on the shared
//! store under the cluster's own namespace.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ocm_api::names::secrets;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::registration::agent::{self, AgentError, AgentOptions};
use ocm_core::work::agent::{WorkAgentOptions, hub_hash};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::options::{SimClusterContext, SimOptions};

/// How long to wait before running a failed registration agent again.
const RESTART_DELAY: Duration = Duration::from_secs(1);

/// Counters over every cluster of a fleet.
#[derive(Debug, Default)]
pub struct SimCounters {
    /// Runs of the registration agent that returned an error (the agent is run again).
    pub failed_runs: AtomicUsize,
    /// Runs that ended because the hub credentials stopped working (bootstrap again).
    pub rebootstraps: AtomicUsize,
}

/// The state of one simulated cluster.
#[derive(Debug)]
pub(crate) struct SimCluster {
    pub(crate) context: SimClusterContext,
    started: Mutex<Option<Instant>>,
    tasks: Mutex<Vec<AbortHandle>>,
}

impl SimCluster {
    pub(crate) fn new(context: SimClusterContext) -> Self {
        Self {
            context,
            started: Mutex::new(None),
            tasks: Mutex::new(Vec::new()),
        }
    }

    /// When its agents were first started.
    pub(crate) fn started(&self) -> Option<Instant> {
        *self.started.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether its agents run.
    pub(crate) fn running(&self) -> bool {
        !self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// Stops its agents (their credentials stay: [`SimCluster::start`] again resumes).
    pub(crate) fn stop(&self) {
        for task in self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            task.abort();
        }
    }

    /// Starts its agents unless they run.
    pub(crate) fn start(&self, options: &SimOptions, counters: &Arc<SimCounters>) {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        if !tasks.is_empty() {
            return;
        }
        self.started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(Instant::now);
        let ctx = &self.context;
        let registration = registration_options(options, ctx);
        tasks.push(
            tokio::spawn(run_registration(
                ctx.spoke.clone(),
                registration,
                counters.clone(),
            ))
            .abort_handle(),
        );
        if options.work_agents {
            let work = work_options(&ctx.name);
            let work = WorkAgentOptions {
                status_sync_interval: options.status_sync_interval,
                ..work
            };
            tasks.push(
                tokio::spawn(ocm_core::klusterlet::run_work_agent(
                    ctx.spoke.clone(),
                    ctx.hub_kubeconfig_dir.clone(),
                    work,
                    ControllerMetrics::default(),
                ))
                .abort_handle(),
            );
        }
        for addon in &options.addon_agents {
            tasks.push(tokio::spawn(addon(ctx.clone())).abort_handle());
        }
    }
}

/// The registration agent's options of cluster `ctx`.
pub(crate) fn registration_options(options: &SimOptions, ctx: &SimClusterContext) -> AgentOptions {
    let mut agent = AgentOptions::new(
        options.bootstrap_kubeconfig.clone(),
        ctx.hub_kubeconfig_dir.clone(),
    );
    agent.cluster_name = Some(ctx.name.clone());
    agent.agent_name = Some(format!("sim{}", ctx.index));
    agent.component_namespace = ctx.namespace.clone();
    agent.hub_kubeconfig_secret = secrets::HUB_KUBECONFIG.into();
    agent.cluster_healthcheck_period = options.healthcheck_period;
    agent.addon_sync_period = options.addon_sync_period;
    // Add-on credentials and leases in the cluster's own namespace: the install namespace is
    // the same for every cluster of the shared store.
    agent.addon_namespace = Some(ctx.namespace.clone());
    if let Some(every) = options.rotate_every {
        agent.rotation_threshold = Some(1.0);
        agent.rotation_check_period = every;
    }
    agent
}

/// The work agent's options of cluster `name`: its own agent id and hub hash, so that the
/// AppliedManifestWorks of the clusters sharing the store stay apart.
pub(crate) fn work_options(name: &str) -> WorkAgentOptions {
    let mut work = WorkAgentOptions::new(name);
    work.agent_id = Some(name.to_string());
    work.hub_hash = Some(hub_hash(&format!("fleet-sim/{name}")));
    work
}

/// Runs the registration agent for ever: again after it returns.
async fn run_registration(spoke: kube::Client, options: AgentOptions, counters: Arc<SimCounters>) {
    loop {
        match agent::run(spoke.clone(), options.clone(), ControllerMetrics::default()).await {
            Ok(()) => {}
            Err(AgentError::HubKubeconfigInvalid(_)) => {
                counters.rebootstraps.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => {
                counters.failed_runs.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(cluster = ?options.cluster_name, %error, "registration agent failed; running it again");
                tokio::time::sleep(RESTART_DELAY).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_agents_of_different_clusters_never_share_applied_work_names() {
        let a = work_options("sim-1");
        let b = work_options("sim-2");
        assert_ne!(a.hub_hash, b.hub_hash);
        assert_eq!(a.agent_id.as_deref(), Some("sim-1"));
        assert_eq!(a.hub_hash.as_ref().map(String::len), Some(64));
    }
}
