//! The order of a run: hub, CRDs and bootstrap RBAC, hub controllers, spoke, then the agents
//! while the ManagedClusters are watched; then the audit log and the memory are read.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::agents::{AgentLog, StartPlan, start_all};
use super::controllers::ControllersProcess;
use super::hub::{BOOTSTRAP_USER, Hub};
use super::memory::MemoryWatch;
use super::progress::wait_all_available;
use super::report::{JoinTimes, Report};
use super::requests::{Requests, log_length};
use super::spoke::Spoke;
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

    let hub = Hub::start(
        dir.path(),
        options.hub_binary.as_deref(),
        options.in_process_hub,
        servers,
    )
    .await?;
    hub.install_crds().await?;
    let bootstrap = hub.bootstrap_kubeconfig().await?;
    let bootstrap_path = dir.path().join("bootstrap.kubeconfig");
    std::fs::write(&bootstrap_path, bootstrap).map_err(|source| JoinError::File {
        what: "writing",
        path: bootstrap_path.display().to_string(),
        source,
    })?;
    let mut controllers = ControllersProcess::spawn(
        &hub.admin_kubeconfig,
        BOOTSTRAP_USER,
        &dir.path().join("hub-controllers.log"),
    )?;
    let spoke = Spoke::start(servers, options.agents).await?;

    let mut processes = Vec::new();
    if let Some(pid) = hub.pid() {
        processes.push(("hub: ocm-controlplane".to_string(), Some(pid)));
    }
    processes.push(("hub controllers".to_string(), Some(controllers.pid())));
    processes.push((
        if hub.pid().is_some() {
            "harness: agents + spoke".to_string()
        } else {
            "harness: agents + spoke + hub".to_string()
        },
        None,
    ));
    let memory = MemoryWatch::start(processes)?;
    let audit_offset = log_length(&hub.audit_log);

    let log = Arc::new(AgentLog::default());
    let start = Instant::now();
    let plan = StartPlan {
        agents: options.agents,
        concurrency: options.concurrency,
        bootstrap: bootstrap_path,
        dir: dir.path().join("agents"),
        healthcheck_period: options.healthcheck_period,
        bootstrap_limit: options.timeout,
    };
    let starter = tokio::spawn(start_all(plan, spoke.client.clone(), log.clone()));
    let milestones = wait_all_available(
        hub.client.clone(),
        options.agents,
        log.clone(),
        start,
        options.timeout,
    )
    .await;
    let all_joined = start.elapsed();
    starter.abort();
    if milestones.is_err() {
        log.stop_all();
    }
    if let Some(status) = controllers.exited() {
        return Err(JoinError::Controllers(format!(
            "exited during the run ({status}); see {}",
            dir.path().join("hub-controllers.log").display()
        )));
    }
    let milestones = match milestones {
        Ok(m) => m,
        Err(e) => {
            controllers.stop().await;
            return Err(e);
        }
    };
    let memory = memory.finish()?;
    let requests = Requests::read(&hub.audit_log, audit_offset)?;
    if let Some(copy) = &options.keep_audit_log {
        std::fs::copy(&hub.audit_log, copy).map_err(|source| JoinError::File {
            what: "copying the audit log to",
            path: copy.display().to_string(),
            source,
        })?;
    }
    log.stop_all();
    let reconciles = controllers.stop().await;
    let report = Report {
        hub: hub.description(),
        agents: options.agents,
        healthcheck_period_s: options.healthcheck_period.as_secs_f64(),
        concurrency: options.concurrency,
        all_joined_s: all_joined.as_secs_f64(),
        per_cluster: JoinTimes::of(&milestones),
        requests,
        memory,
        agent_failed_runs: log.failed_runs.load(Ordering::Relaxed),
        agent_rebootstraps: log.rebootstraps.load(Ordering::Relaxed),
        reconciles,
    };
    hub.stop().await;
    drop(spoke);
    Ok(report)
}
