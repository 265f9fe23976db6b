//! The order of a run: hub, CRDs and bootstrap RBAC, hub controllers, spoke, then the agents
//! while the ManagedClusters are watched; then the audit log and the memory are read.

use std::sync::atomic::Ordering;
use std::time::Duration;

use ocm_testkit::sim::{SimOptions, Simulator};
use tokio::time::Instant;

use super::cleanup::delete_run;
use super::controllers::{ControllersProcess, expand_command};
use super::hub::{BOOTSTRAP_USER, Hub};
use super::memory::MemoryWatch;
use super::progress::wait_all_available;
use super::report::{JoinTimes, Report};
use super::requests::{Requests, log_length};
use super::spoke::{Spoke, agent_files_dir, run_prefix};
use super::{JoinError, Options};
use crate::load::LoadError;

fn runtime(name: &'static str, threads: Option<usize>) -> Result<tokio::runtime::Runtime, JoinError> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        builder.worker_threads(n);
    }
    Ok(builder
        .enable_all()
        .thread_name(name)
        .build()
        .map_err(|source| LoadError::StartRuntime { name, source })?)
}

/// Runs the harness with `options` on runtimes of its own and returns the report.
///
/// # Errors
/// When the hub, the spoke or the controllers cannot be started, or not every cluster joins
/// within `--timeout`.
pub fn run_blocking(options: &Options) -> Result<Report, JoinError> {
    let servers = runtime("servers", None)?;
    let clients = runtime("agents", None)?;
    let report = clients.block_on(run(options, servers.handle()));
    clients.shutdown_timeout(Duration::from_secs(1));
    servers.shutdown_timeout(Duration::from_secs(1));
    report
}

async fn run(options: &Options, servers: &tokio::runtime::Handle) -> Result<Report, JoinError> {
    let mut tmp = tempfile::Builder::new();
    tmp.prefix("join-load-");
    let dir = match &options.work_dir {
        Some(parent) => tmp.tempdir_in(parent),
        None => tmp.tempdir(),
    }
    .map_err(|source| JoinError::File {
        what: "creating a directory in",
        path: options
            .work_dir
            .as_ref()
            .map_or_else(|| "the temporary directory".into(), |p| p.display().to_string()),
        source,
    })?;

    let hub = match &options.hub_kubeconfig {
        Some(kubeconfig) => Hub::external(kubeconfig).await?,
        None => {
            Hub::start(
                dir.path(),
                options.hub_binary.as_deref(),
                options.in_process_hub,
                servers,
            )
            .await?
        }
    };
    if hub.is_external() {
        hub.install_missing_hub_crds().await?;
    } else {
        hub.install_crds().await?;
    }
    let run_prefix = run_prefix(!hub.is_external());
    let bootstrap = hub.bootstrap_kubeconfig().await?;
    let bootstrap_path = dir.path().join("bootstrap.kubeconfig");
    std::fs::write(&bootstrap_path, bootstrap).map_err(|source| JoinError::File {
        what: "writing",
        path: bootstrap_path.display().to_string(),
        source,
    })?;
    let controllers_log = dir.path().join("hub-controllers.log");
    let mut controllers = match &options.hub_controllers_cmd {
        Some(template) => ControllersProcess::spawn_command(
            &expand_command(template, &hub.admin_kubeconfig, BOOTSTRAP_USER),
            &controllers_log,
        )?,
        None => ControllersProcess::spawn(&hub.admin_kubeconfig, BOOTSTRAP_USER, &controllers_log)?,
    };
    let spoke = Spoke::start(servers, options.agents).await?;
    let agents_dir = agent_files_dir(options.agents_dir.as_deref(), "join-load-agents-")?;
    let mut sim_options = SimOptions::new(
        options.agents,
        run_prefix.clone(),
        bootstrap_path,
        agents_dir.path().to_path_buf(),
    );
    sim_options.work_agents = false;
    sim_options.concurrency = options.concurrency;
    sim_options.healthcheck_period = options.healthcheck_period;
    sim_options.bootstrap_limit = options.timeout;

    let mut processes = Vec::new();
    if let Some(pid) = hub.pid() {
        processes.push(("hub: ocm-controlplane".to_string(), Some(pid)));
    }
    for pid in &options.server_pids {
        processes.push((format!("hub: {} (pid {pid})", process_name(*pid)), Some(*pid)));
    }
    processes.push((
        if controllers.is_ours() {
            "hub controllers".to_string()
        } else {
            format!("hub controllers: {}", process_name(controllers.pid()))
        },
        Some(controllers.pid()),
    ));
    processes.push((
        if hub.pid().is_some() || hub.is_external() {
            "harness: agents + spoke".to_string()
        } else {
            "harness: agents + spoke + hub".to_string()
        },
        None,
    ));
    let memory = MemoryWatch::start(processes)?;
    let audit_offset = if hub.counts_requests() {
        log_length(&hub.audit_log)
    } else {
        0
    };

    // Prepares the spoke (CRDs, a namespace per cluster), then starts the agents in the background.
    let sim = Simulator::start(spoke.clients.clone(), sim_options).await?;
    let start = Instant::now();
    let milestones = wait_all_available(
        hub.client.clone(),
        options.agents,
        &|name| sim.started(name),
        start,
        options.timeout,
    )
    .await;
    let all_joined = start.elapsed();
    if milestones.is_err() {
        sim.stop_all();
    }
    if let Some(status) = controllers.exited() {
        return Err(JoinError::Controllers(format!(
            "exited during the run ({status}); see {}",
            controllers_log.display()
        )));
    }
    let milestones = match milestones {
        Ok(m) => m,
        Err(e) => {
            if hub.is_external()
                && let Err(cleanup) = delete_run(&hub.client, &run_prefix).await
            {
                tracing::warn!(%cleanup, "cleaning up after a failed run");
            }
            controllers.stop().await;
            return Err(e);
        }
    };
    let memory = memory.finish()?;
    let requests = if hub.counts_requests() {
        Requests::read(&hub.audit_log, audit_offset)?
    } else {
        Requests::tally(std::iter::empty())
    };
    if let (Some(copy), true) = (&options.keep_audit_log, hub.counts_requests()) {
        std::fs::copy(&hub.audit_log, copy).map_err(|source| JoinError::File {
            what: "copying the audit log to",
            path: copy.display().to_string(),
            source,
        })?;
    }
    sim.stop_all();
    // The run's numbers are in: a cleanup that fails (an external hub keeping a cluster) is
    // reported, not allowed to lose them.
    if hub.is_external()
        && let Err(cleanup) = delete_run(&hub.client, &run_prefix).await
    {
        tracing::error!(%cleanup, "cleaning up the run on the hub failed; delete its clusters by hand");
    }
    let reconciles = controllers.stop().await;
    let report = Report {
        hub: hub.description(),
        agents: options.agents,
        healthcheck_period_s: options.healthcheck_period.as_secs_f64(),
        concurrency: options.concurrency,
        all_joined_s: all_joined.as_secs_f64(),
        per_cluster: JoinTimes::of(&milestones),
        requests,
        requests_counted: hub.counts_requests(),
        memory,
        agent_failed_runs: sim.counters().failed_runs.load(Ordering::Relaxed),
        agent_rebootstraps: sim.counters().rebootstraps.load(Ordering::Relaxed),
        reconciles,
    };
    hub.stop().await;
    drop(sim);
    drop(spoke);
    Ok(report)
}

/// The command name of process `pid` (`/proc/<pid>/comm`), or `?`.
fn process_name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}
