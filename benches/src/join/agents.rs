//! Starting the simulated agents: each a real `ocm_core::registration::agent::run` in this
//! process, with its own cluster name, hub-kubeconfig directory and spoke namespace, started at
//! most `concurrency` bootstrapping at a time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ocm_api::names::secrets;
use ocm_core::registration::agent::{self, AgentError, AgentOptions};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::spoke::{agent_namespace, cluster_name};

/// How often a starting agent's hub-kubeconfig directory is looked at.
const BOOTSTRAP_POLL: Duration = Duration::from_millis(100);

/// When each agent was started and how its runs ended, shared with the progress watcher.
#[derive(Debug, Default)]
pub struct AgentLog {
    started: Mutex<HashMap<String, Instant>>,
    /// Runs of `agent::run` that returned an error (the agent is run again).
    pub failed_runs: AtomicUsize,
    /// Runs that returned because the hub kubeconfig stopped being valid (bootstrap again).
    pub rebootstraps: AtomicUsize,
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
}

impl AgentLog {
    /// When the agent of `cluster` was started.
    pub fn started(&self, cluster: &str) -> Option<Instant> {
        self.started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(cluster)
            .copied()
    }

    /// Stops every agent started so far.
    pub fn stop_all(&self) {
        for task in self
            .tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain(..)
        {
            task.abort();
        }
    }

    fn record_task(&self, task: tokio::task::AbortHandle) {
        self.tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(task);
    }

    fn record_start(&self, cluster: String) {
        self.started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(cluster, Instant::now());
    }
}

/// The options of agent `index`.
pub fn agent_options(
    run: &str,
    index: usize,
    bootstrap: &Path,
    dir: &Path,
    healthcheck_period: Duration,
) -> AgentOptions {
    let mut options = AgentOptions::new(bootstrap.to_path_buf(), dir.join(format!("agent-{index}")));
    options.cluster_name = Some(cluster_name(run, index));
    options.agent_name = Some(format!("agent{index}"));
    options.component_namespace = agent_namespace(index);
    options.hub_kubeconfig_secret = secrets::HUB_KUBECONFIG.into();
    options.cluster_healthcheck_period = healthcheck_period;
    options
}

/// Runs one agent for ever: `agent::run` again after it returns (as a restarted pod would).
async fn run_agent(spoke: kube::Client, options: AgentOptions, log: Arc<AgentLog>) {
    loop {
        let metrics = ocm_core::metrics::ControllerMetrics::default();
        match agent::run(spoke.clone(), options.clone(), metrics).await {
            Ok(()) => {}
            Err(AgentError::HubKubeconfigInvalid(_)) => {
                log.rebootstraps.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => {
                log.failed_runs.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(cluster = ?options.cluster_name, %error, "agent run failed; running it again");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Waits until `dir` holds a hub kubeconfig (the agent has its credentials) or `limit` passes.
async fn wait_bootstrapped(dir: &Path, limit: Duration) {
    let file: PathBuf = dir.join(secrets::keys::KUBECONFIG);
    let deadline = Instant::now() + limit;
    while !file.is_file() && Instant::now() < deadline {
        tokio::time::sleep(BOOTSTRAP_POLL).await;
    }
}

/// What to start.
#[derive(Debug, Clone)]
pub struct StartPlan {
    /// The clusters' name prefix ([`super::spoke::run_prefix`]).
    pub run: String,
    /// How many agents.
    pub agents: usize,
    /// At most this many without hub credentials at a time (0: all at once).
    pub concurrency: usize,
    /// The bootstrap kubeconfig file they share.
    pub bootstrap: PathBuf,
    /// The directory their hub-kubeconfig directories go in.
    pub dir: PathBuf,
    /// Their status loop's period.
    pub healthcheck_period: Duration,
    /// How long a start waits for credentials before the next agent may start anyway.
    pub bootstrap_limit: Duration,
}

/// Starts the agents of `plan`; returns when the last one has been started. The agents run until
/// the runtime stops.
pub async fn start_all(plan: StartPlan, spoke: kube::Client, log: Arc<AgentLog>) {
    let permits = if plan.concurrency == 0 {
        plan.agents.max(1)
    } else {
        plan.concurrency
    };
    let permits = Arc::new(Semaphore::new(permits));
    for index in 0..plan.agents {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let options = agent_options(
            &plan.run,
            index,
            &plan.bootstrap,
            &plan.dir,
            plan.healthcheck_period,
        );
        let hub_dir = options.hub_kubeconfig_dir.clone();
        log.record_start(cluster_name(&plan.run, index));
        let task = tokio::spawn(run_agent(spoke.clone(), options, log.clone()));
        log.record_task(task.abort_handle());
        let limit = plan.bootstrap_limit;
        tokio::spawn(async move {
            wait_bootstrapped(&hub_dir, limit).await;
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_has_its_own_cluster_namespace_and_directory() {
        let a = agent_options("r", 1, Path::new("/b"), Path::new("/d"), Duration::from_secs(5));
        let b = agent_options("r", 2, Path::new("/b"), Path::new("/d"), Duration::from_secs(5));
        assert_ne!(a.cluster_name, b.cluster_name);
        assert_ne!(a.component_namespace, b.component_namespace);
        assert_ne!(a.hub_kubeconfig_dir, b.hub_kubeconfig_dir);
        assert_eq!(a.bootstrap_kubeconfig, b.bootstrap_kubeconfig);
        assert_eq!(a.cluster_healthcheck_period, Duration::from_secs(5));
    }
}
