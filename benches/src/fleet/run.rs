//! The order of a `fleet-sim` run: hub (embedded child or external), CRDs and bootstrap RBAC, hub
//! controllers, the shared store, the simulated clusters until all are Joined and Available; then
//! churn (lease duration, pause and resume, removal), `--hold`, the memory readings, and on an
//! external hub the removal of the run's clusters.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ocm_testkit::sim::{SimOptions, Simulator, process_memory};
use tokio::time::Instant;

use super::churn::{ChurnStep, csrs_per_cluster, set_lease_duration, wait_for};
use super::report::{Report, SimMemory};
use super::{Options, SimRunError};
use crate::join::JoinError;
use crate::join::cleanup::delete_run;
use crate::join::controllers::ControllersProcess;
use crate::join::hub::{BOOTSTRAP_USER, Hub};
use crate::join::memory::MemoryWatch;
use crate::join::progress::wait_all_available;
use crate::join::report::JoinTimes;
use crate::join::spoke::{Spoke, agent_files_dir, named_run_prefix};
use crate::load::LoadError;

fn runtime(name: &'static str) -> Result<tokio::runtime::Runtime, SimRunError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(name)
        .build()
        .map_err(|source| JoinError::Load(LoadError::StartRuntime { name, source }))?)
}

/// Runs the simulator with `options` on runtimes of its own and returns the report.
///
/// # Errors
/// When the hub, its controllers or the store cannot be started, not every cluster joins within
/// `--timeout`, or churn does not show on the hub in time.
pub fn run_blocking(options: &Options) -> Result<Report, SimRunError> {
    let servers = runtime("servers")?;
    let clients = runtime("clusters")?;
    let report = clients.block_on(run(options, servers.handle()));
    clients.shutdown_timeout(Duration::from_secs(1));
    servers.shutdown_timeout(Duration::from_secs(1));
    report
}

fn own_memory() -> (u64, u64) {
    process_memory().unwrap_or_default()
}

async fn run(options: &Options, servers: &tokio::runtime::Handle) -> Result<Report, SimRunError> {
    let mut tmp = tempfile::Builder::new();
    tmp.prefix("fleet-sim-");
    let dir = match &options.work_dir {
        Some(parent) => tmp.tempdir_in(parent),
        None => tmp.tempdir(),
    }
    .map_err(|source| JoinError::File {
        what: "creating a temporary directory",
        path: options.work_dir.as_ref().map_or_else(
            || "in the temporary directory".into(),
            |p| p.display().to_string(),
        ),
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
    let prefix = named_run_prefix("sim", !hub.is_external());
    let bootstrap = hub.bootstrap_kubeconfig().await?;
    let bootstrap_path = dir.path().join("bootstrap.kubeconfig");
    std::fs::write(&bootstrap_path, bootstrap).map_err(|source| JoinError::File {
        what: "writing",
        path: bootstrap_path.display().to_string(),
        source,
    })?;
    let controllers = if options.no_hub_controllers {
        None
    } else {
        Some(ControllersProcess::spawn(
            &hub.admin_kubeconfig,
            BOOTSTRAP_USER,
            &dir.path().join("hub-controllers.log"),
        )?)
    };
    let spoke = Spoke::start(servers, options.clusters).await?;

    let mut processes = Vec::new();
    if let Some(pid) = hub.pid() {
        processes.push(("hub: ocm-controlplane".to_string(), Some(pid)));
    }
    for pid in &options.server_pids {
        processes.push((format!("hub: pid {pid}"), Some(*pid)));
    }
    if let Some(c) = &controllers {
        processes.push(("hub controllers".to_string(), Some(c.pid())));
    }
    let hub_memory = MemoryWatch::start(processes).map_err(SimRunError::from)?;

    let clusters_dir = agent_files_dir(options.agents_dir.as_deref(), "fleet-sim-clusters-")?;
    let mut sim_options = SimOptions::new(
        options.clusters,
        prefix.clone(),
        bootstrap_path,
        clusters_dir.path().to_path_buf(),
    );
    sim_options.work_agents = !options.no_work_agents;
    sim_options.healthcheck_period = options.healthcheck_period;
    sim_options.status_sync_interval = options.status_sync_interval;
    sim_options.concurrency = options.concurrency;
    sim_options.bootstrap_limit = options.timeout;
    sim_options.rotate_every = options.rotate_every;
    let before_bytes = own_memory().0;
    let sim = Simulator::start(spoke.clients.clone(), sim_options).await?;
    let start = Instant::now();
    let joined = wait_all_available(
        hub.client.clone(),
        options.clusters,
        &|name| sim.started(name),
        start,
        options.timeout,
    )
    .await;
    let all_joined = start.elapsed();
    let joined_bytes = own_memory().0;
    let result = match joined {
        Ok(milestones) => churn(options, &hub, &sim)
            .await
            .map(|(pause, remove)| (milestones, pause, remove)),
        Err(e) => Err(e.into()),
    };
    let names: HashSet<String> = sim.cluster_names().map(String::from).collect();
    let csrs = match (&result, options.rotate_every) {
        (Ok(_), Some(_)) => Some(csrs_per_cluster(&hub.client, &names).await?),
        _ => None,
    };
    if result.is_ok() && !options.hold.is_zero() {
        tokio::time::sleep(options.hold).await;
    }
    let (end_bytes, peak_bytes) = own_memory();
    let hub_processes = hub_memory.finish()?;
    sim.stop_all();
    if hub.is_external()
        && let Err(error) = delete_run(&hub.client, &prefix).await
    {
        tracing::warn!(%error, "removing the run's clusters from the hub");
    }
    if let Some(c) = controllers {
        c.stop().await;
    }
    let (milestones, pause, remove) = result?;
    let memory = SimMemory {
        before_bytes,
        joined_bytes,
        end_bytes,
        peak_bytes,
    };
    let report = Report {
        hub: hub.description(),
        clusters: options.clusters,
        work_agents: !options.no_work_agents,
        healthcheck_period_s: options.healthcheck_period.as_secs_f64(),
        all_joined_s: all_joined.as_secs_f64(),
        per_cluster: JoinTimes::of(&milestones),
        memory,
        memory_per_cluster_bytes: memory.per_cluster_bytes(options.clusters),
        hub_processes,
        pause,
        remove,
        csrs_per_cluster: csrs,
        agent_failed_runs: sim.counters().failed_runs.load(Ordering::Relaxed),
        agent_rebootstraps: sim.counters().rebootstraps.load(Ordering::Relaxed),
    };
    hub.stop().await;
    drop(sim);
    drop(spoke);
    Ok(report)
}

/// The churn steps: the lease duration, then `--pause` clusters (0..) paused until the hub marks
/// them unavailable and resumed until it marks them available, then `--remove` clusters (the
/// next ones) removed until the hub marks them unavailable.
async fn churn(
    options: &Options,
    hub: &Hub,
    sim: &Simulator,
) -> Result<(Option<ChurnStep>, Option<ChurnStep>), SimRunError> {
    let all: Vec<String> = sim.cluster_names().map(String::from).collect();
    if let Some(seconds) = options.lease_duration {
        set_lease_duration(&hub.client, &all, seconds).await?;
    }
    let pause_n = options.pause.min(all.len());
    let remove_n = options.remove.min(all.len() - pause_n);
    let pause = if pause_n > 0 {
        let names: HashSet<String> = all[..pause_n].iter().cloned().collect();
        for index in 0..pause_n {
            sim.pause(index);
        }
        let gone = wait_for(
            &hub.client,
            &names,
            "paused clusters not Available",
            options.timeout,
            |n| n == 0,
        )
        .await?;
        for index in 0..pause_n {
            sim.resume(index);
        }
        let back = wait_for(
            &hub.client,
            &names,
            "resumed clusters Available",
            options.timeout,
            |n| n == names.len(),
        )
        .await?;
        Some(ChurnStep {
            clusters: pause_n,
            unavailable_after_s: gone.as_secs_f64(),
            available_again_after_s: Some(back.as_secs_f64()),
        })
    } else {
        None
    };
    let remove = if remove_n > 0 {
        let range = pause_n..pause_n + remove_n;
        let names: HashSet<String> = all[range.clone()].iter().cloned().collect();
        for index in range {
            sim.remove(index).await;
        }
        let gone = wait_for(
            &hub.client,
            &names,
            "removed clusters not Available",
            options.timeout,
            |n| n == 0,
        )
        .await?;
        Some(ChurnStep {
            clusters: remove_n,
            unavailable_after_s: gone.as_secs_f64(),
            available_again_after_s: None,
        })
    } else {
        None
    };
    Ok((pause, remove))
}
