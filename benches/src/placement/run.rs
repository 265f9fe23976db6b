//! The order of a run: the hub (started, or `--kubeconfig`'s) with its CRDs and the controller's
//! identity; the clusters, set, binding and scores; the controller, until it decided a first
//! placement; the measured placements, until all are decided; then the audit log, memory and CPU
//! readings become the report, and on a given hub the run's objects are deleted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ocm_api::crd::InstallTarget;
use tokio::time::Instant;

use super::controller::ControllerProcess;
use super::fleet::{self, Names, READY_PLACEMENT, Shape};
use super::progress::{Progress, wait_decided, wait_done};
use super::report::{ControllerMemory, Report, Requester, Requests};
use super::{Options, PlacementLoadError};
use crate::audit::log_length;
use crate::join::hub::Hub;
use crate::join::memory::MemoryWatch;
use crate::join::report::Spread;
use crate::load::LoadError;
use crate::load::rss;
use crate::work::agent::client_for;
use crate::work::cpu;
use crate::work::identity::account_kubeconfig;
use crate::work::works::CreatedAt;

/// The namespace of the controller's ServiceAccount on an embedded hub.
pub const CONTROLLER_NAMESPACE: &str = "placement-load-controller";
/// The controller's ServiceAccount on an embedded hub.
pub const CONTROLLER_ACCOUNT: &str = "placement-controller";
/// How long the controller may take to decide its first placement.
const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// The user the controller's requests are audited as on an embedded hub.
pub fn controller_user() -> String {
    format!("system:serviceaccount:{CONTROLLER_NAMESPACE}:{CONTROLLER_ACCOUNT}")
}

fn runtime(name: &'static str) -> Result<tokio::runtime::Runtime, PlacementLoadError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(name)
        .build()
        .map_err(|source| LoadError::StartRuntime { name, source })?)
}

/// Runs the harness with `options` and returns the report.
///
/// # Errors
/// When the options cannot give a run that ends, the hub or the controller cannot be started,
/// `--placement-cmd` is unusable, or the placements are not all decided within `--timeout`.
pub fn run_blocking(options: &Options) -> Result<Report, PlacementLoadError> {
    options.check().map_err(PlacementLoadError::Options)?;
    let servers = runtime("servers")?;
    let harness = runtime("harness")?;
    let report = harness.block_on(run(options, servers.handle()));
    harness.shutdown_timeout(Duration::from_secs(1));
    servers.shutdown_timeout(Duration::from_secs(1));
    report
}

async fn run(options: &Options, servers: &tokio::runtime::Handle) -> Result<Report, PlacementLoadError> {
    let mut tmp = tempfile::Builder::new();
    tmp.prefix("placement-load-");
    let dir = match &options.work_dir {
        Some(parent) => tmp.tempdir_in(parent),
        None => tmp.tempdir(),
    }
    .map_err(|source| PlacementLoadError::File {
        what: "creating a directory in",
        path: options
            .work_dir
            .as_ref()
            .map_or_else(|| "the temporary directory".into(), |p| p.display().to_string()),
        source,
    })?;
    let report = run_in(options, servers, dir.path()).await;
    if options.keep_files {
        let kept = dir.keep();
        eprintln!("placement-load: the run's files are in {}", kept.display());
    }
    report
}

/// The hub of a run as the measuring phase sees it.
struct HubView<'a> {
    client: &'a kube::Client,
    description: String,
    /// The kubeconfig the controller gets.
    controller_kubeconfig: PathBuf,
    /// The audit log, when the harness started the hub.
    audit_log: Option<PathBuf>,
    /// The hub's process, when it is a child.
    pid: Option<u32>,
}

async fn run_in(
    options: &Options,
    servers: &tokio::runtime::Handle,
    dir: &Path,
) -> Result<Report, PlacementLoadError> {
    let names = Names::generate();
    match &options.kubeconfig {
        Some(path) => {
            let (client, url) = client_for(path).await?;
            let view = HubView {
                client: &client,
                description: format!("the API server of {} ({url})", path.display()),
                controller_kubeconfig: path.clone(),
                audit_log: None,
                pid: None,
            };
            let result = measure(options, &names, view, dir).await;
            if options.keep_files {
                eprintln!(
                    "placement-load: the run's objects are left on the hub (label {}={})",
                    fleet::RUN_LABEL,
                    names.run
                );
                return result;
            }
            let cleaned = fleet::cleanup(&client, &names, options.create_concurrency).await;
            match (result, cleaned) {
                (Ok(report), Ok(())) => Ok(report),
                (Ok(_), Err(e)) => Err(e),
                (Err(e), cleaned) => {
                    if let Err(c) = cleaned {
                        eprintln!("placement-load: {c}");
                    }
                    Err(e)
                }
            }
        }
        None => {
            let hub = Hub::start_named("hub", dir, options.hub_binary.as_deref(), false, servers).await?;
            hub.install_crds_for(InstallTarget::Hub).await?;
            let kubeconfig = dir.join("controller.kubeconfig");
            account_kubeconfig(&hub, "hub", CONTROLLER_NAMESPACE, CONTROLLER_ACCOUNT, &kubeconfig).await?;
            let view = HubView {
                client: &hub.client,
                description: hub.description(),
                controller_kubeconfig: kubeconfig,
                audit_log: Some(hub.audit_log.clone()),
                pid: hub.pid(),
            };
            let result = measure(options, &names, view, dir).await;
            hub.stop().await;
            result
        }
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

async fn measure(
    options: &Options,
    names: &Names,
    hub: HubView<'_>,
    dir: &Path,
) -> Result<Report, PlacementLoadError> {
    let shape = Shape {
        clusters: options.clusters,
        placements: options.placements,
        select: usize::from(options.select),
    };
    let fleet_start = Instant::now();
    fleet::create_fleet(hub.client, names, shape.clusters, options.create_concurrency).await?;
    let fleet_s = secs(fleet_start.elapsed());
    let controller_start = Instant::now();
    let mut controller = ControllerProcess::spawn(
        options.placement_cmd.as_deref(),
        options.placement_workers,
        &hub.controller_kubeconfig,
        &dir.join("controller.log"),
    )?;
    let result = measure_with(options, names, shape, &hub, &mut controller, controller_start).await;
    controller.stop().await;
    result.map(|mut report| {
        report.fleet_s = fleet_s;
        report
    })
}

async fn measure_with(
    options: &Options,
    names: &Names,
    shape: Shape,
    hub: &HubView<'_>,
    controller: &mut ControllerProcess,
    controller_start: Instant,
) -> Result<Report, PlacementLoadError> {
    // Ready: a first placement, outside the measured ones, decided.
    fleet::create_placement(hub.client, names, READY_PLACEMENT, shape.select).await?;
    wait_decided(
        hub.client,
        names,
        READY_PLACEMENT,
        &shape,
        controller,
        READY_TIMEOUT,
    )
    .await?;
    let controller_ready = controller_start.elapsed();
    let pid = controller.pid();
    let hub_memory = MemoryWatch::start(
        hub.pid
            .map(|p| ("hub: ocm-controlplane".to_string(), Some(p)))
            .into_iter()
            .collect(),
    )?;
    let ready = rss::read(Some(pid))?;
    let cpu_before = cpu::read(pid);
    let offset = hub.audit_log.as_deref().map(log_length);

    // Schedule: create the placements while watching them and their decisions.
    let created = CreatedAt::default();
    let start = Instant::now();
    let mut watch = tokio::spawn(wait_done(
        hub.client.clone(),
        names.clone(),
        shape,
        created.clone(),
        start,
        options.timeout,
    ));
    let creating = fleet::create_placements(
        hub.client.clone(),
        names.clone(),
        shape,
        options.create_concurrency,
        created,
    )
    .await;
    if let Err(e) = creating {
        watch.abort();
        return Err(e);
    }
    let create = start.elapsed();
    let progress: Progress = loop {
        tokio::select! {
            joined = &mut watch => {
                break joined.map_err(|e| PlacementLoadError::Watch { what: "progress", message: e.to_string() })??;
            }
            () = tokio::time::sleep(Duration::from_millis(500)) => {
                if let Err(e) = controller.check_running() {
                    watch.abort();
                    return Err(e);
                }
            }
        }
    };
    let done = rss::read(Some(pid))?;
    let cpu_s = match (cpu::read(pid), cpu_before) {
        (Some(now), Some(before)) => secs(now.saturating_sub(before)),
        _ => 0.0,
    };
    let user = controller_user();
    let requests = match (&hub.audit_log, offset) {
        (Some(path), Some(offset)) => Some(
            Requests::read_by(path, offset, |u| Requester::of(u, &user)).map_err(|source| {
                PlacementLoadError::File {
                    what: "reading the audit log",
                    path: path.display().to_string(),
                    source,
                }
            })?,
        ),
        _ => None,
    };
    let hub_memory = hub_memory.finish()?;
    let all_decided = progress.last();
    Ok(Report {
        controller: controller.description.clone(),
        hub: hub.description.clone(),
        clusters: shape.clusters,
        placements: shape.placements,
        select: shape.select,
        create_concurrency: options.create_concurrency,
        fleet_s: 0.0,
        controller_ready_s: secs(controller_ready),
        create_s: secs(create),
        all_decided_s: secs(all_decided),
        placements_per_s: shape.placements as f64 / secs(all_decided).max(f64::EPSILON),
        latency: Spread::of(progress.latency.clone()),
        requests,
        controller_memory: ControllerMemory {
            ready_bytes: ready.rss_bytes,
            done_bytes: done.rss_bytes,
            peak_bytes: done.peak_bytes,
        },
        controller_cpu_s: cpu_s,
        hub_memory,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_controller_user_is_its_service_account() {
        assert_eq!(
            controller_user(),
            "system:serviceaccount:placement-load-controller:placement-controller"
        );
    }
}
