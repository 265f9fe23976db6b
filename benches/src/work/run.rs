//! The order of a run: hub and spoke with their CRDs, namespaces and the agent's identities;
//! the agent, until it watches; the works, until all are applied; the settle period; then the
//! audit logs, memory and CPU readings become the report.

use std::path::Path;
use std::time::Duration;

use ocm_api::crd::InstallTarget;
use tokio::time::Instant;

use super::agent::{AgentInputs, AgentProcess};
use super::identity::{agent_kubeconfig, agent_user};
use super::progress::{Progress, wait_done};
use super::report::{AgentMemory, CpuTime, PhaseRequests, Report, Requester, Requests};
use super::works::{CLUSTER, CreatedAt, SPOKE_NAMESPACE, Shape, create_all};
use super::{Options, WorkError, cpu};
use crate::audit::log_length;
use crate::join::hub::Hub;
use crate::join::memory::MemoryWatch;
use crate::join::report::Spread;
use crate::load::LoadError;
use crate::load::rss;
use crate::load::target::create_namespace;

/// How long the agent may take to start watching.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

fn runtime(name: &'static str) -> Result<tokio::runtime::Runtime, WorkError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(name)
        .build()
        .map_err(|source| LoadError::StartRuntime { name, source })?)
}

/// Runs the harness with `options` and returns the report.
///
/// # Errors
/// When a control plane or the agent cannot be started, `--work-agent-cmd` is unusable, or the
/// works are not all applied within `--timeout`.
pub fn run_blocking(options: &Options) -> Result<Report, WorkError> {
    let servers = runtime("servers")?;
    let harness = runtime("harness")?;
    let report = harness.block_on(run(options, servers.handle()));
    harness.shutdown_timeout(Duration::from_secs(1));
    servers.shutdown_timeout(Duration::from_secs(1));
    report
}

/// Where the audit logs are read from next.
struct Offsets {
    hub: u64,
    spoke: u64,
}

impl Offsets {
    fn now(hub: &Hub, spoke: &Hub) -> Self {
        Self {
            hub: log_length(&hub.audit_log),
            spoke: log_length(&spoke.audit_log),
        }
    }

    /// The requests since these offsets.
    fn tally(&self, hub: &Hub, spoke: &Hub, agent_user: &str) -> Result<PhaseRequests, WorkError> {
        let read = |path: &Path, offset| {
            Requests::read_by(path, offset, |user| Requester::of(user, agent_user)).map_err(|source| {
                WorkError::File {
                    what: "reading the audit log",
                    path: path.display().to_string(),
                    source,
                }
            })
        };
        Ok(PhaseRequests {
            hub: read(&hub.audit_log, self.hub)?,
            spoke: read(&spoke.audit_log, self.spoke)?,
        })
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn cpu_since(pid: u32, before: Option<Duration>) -> f64 {
    match (cpu::read(pid), before) {
        (Some(now), Some(before)) => secs(now.saturating_sub(before)),
        _ => 0.0,
    }
}

async fn run(options: &Options, servers: &tokio::runtime::Handle) -> Result<Report, WorkError> {
    let mut tmp = tempfile::Builder::new();
    tmp.prefix("work-load-");
    let dir = match &options.work_dir {
        Some(parent) => tmp.tempdir_in(parent),
        None => tmp.tempdir(),
    }
    .map_err(|source| WorkError::File {
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
        eprintln!("work-load: the run's files are in {}", kept.display());
    }
    report
}

async fn run_in(
    options: &Options,
    servers: &tokio::runtime::Handle,
    dir: &Path,
) -> Result<Report, WorkError> {
    let shape = Shape {
        works: options.works,
        manifests_per_work: options.manifests_per_work,
        configmap_bytes: options.configmap_bytes,
    };
    let binary = options.hub_binary.as_deref();
    let hub = Hub::start_named("hub", dir, binary, false, servers).await?;
    let spoke = Hub::start_named("spoke", dir, binary, false, servers).await?;
    hub.install_crds_for(InstallTarget::Hub).await?;
    spoke.install_crds_for(InstallTarget::Managed).await?;
    create_namespace(&hub.client, CLUSTER).await?;
    create_namespace(&spoke.client, SPOKE_NAMESPACE).await?;
    let inputs = AgentInputs {
        hub_kubeconfig: agent_kubeconfig(&hub, "hub", dir).await?,
        spoke_kubeconfig: agent_kubeconfig(&spoke, "spoke", dir).await?,
        cluster: CLUSTER.to_string(),
    };
    let user = agent_user();

    let offsets = Offsets::now(&hub, &spoke);
    let agent_start = Instant::now();
    let mut agent = AgentProcess::spawn(options.work_agent_cmd.as_deref(), &inputs, &dir.join("agent.log"))?;
    let pid = agent.pid();
    agent
        .wait_watching(
            &user,
            (&hub.audit_log, offsets.hub, "manifestworks"),
            (&spoke.audit_log, offsets.spoke, "appliedmanifestworks"),
            READY_TIMEOUT,
        )
        .await?;
    let agent_ready = agent_start.elapsed();
    let mut processes = Vec::new();
    for (name, server) in [("hub", &hub), ("spoke", &spoke)] {
        if let Some(pid) = server.pid() {
            processes.push((format!("{name}: ocm-controlplane"), Some(pid)));
        }
    }
    let control_plane_memory = MemoryWatch::start(processes)?;
    let idle = rss::read(Some(pid))?;
    let cpu_before = cpu::read(pid);

    // Apply: create the works while watching them and the spoke's ConfigMaps.
    let offsets = Offsets::now(&hub, &spoke);
    let created: CreatedAt = Default::default();
    let start = Instant::now();
    let mut watch = tokio::spawn(wait_done(
        hub.client.clone(),
        spoke.client.clone(),
        shape,
        options.until,
        created.clone(),
        start,
        options.timeout,
    ));
    create_all(hub.client.clone(), shape, options.create_concurrency, created).await?;
    let create = start.elapsed();
    let progress: Progress = loop {
        tokio::select! {
            joined = &mut watch => {
                break joined.map_err(|e| WorkError::Watch { what: "progress", message: e.to_string() })??;
            }
            () = tokio::time::sleep(Duration::from_millis(500)) => {
                if let Err(e) = agent.check_running() {
                    watch.abort();
                    return Err(e);
                }
            }
        }
    };
    let apply_end = start.elapsed();
    let done = rss::read(Some(pid))?;
    let cpu_done = cpu::read(pid);
    let apply_cpu = cpu_since(pid, cpu_before);
    let apply_requests = offsets.tally(&hub, &spoke, &user)?;

    // Settle: nothing to do; what does the agent still ask for and keep?
    let offsets = Offsets::now(&hub, &spoke);
    tokio::time::sleep(options.settle).await;
    agent.check_running()?;
    let steady = rss::read(Some(pid))?;
    let settle_cpu = cpu_since(pid, cpu_done);
    let settle_requests = offsets.tally(&hub, &spoke, &user)?;
    let control_plane_memory = control_plane_memory.finish()?;

    let all_manifests = Progress::last(&progress.configmaps);
    let report = Report {
        agent: agent.description.clone(),
        control_planes: format!("hub: {}; spoke: {}", hub.description(), spoke.description()),
        works: shape.works,
        manifests_per_work: shape.manifests_per_work,
        configmap_bytes: shape.configmap_bytes,
        agent_ready_s: secs(agent_ready),
        create_s: secs(create),
        all_manifests_s: secs(all_manifests),
        all_applied_s: secs(Progress::last(&progress.applied)),
        until: options.until,
        apply_s: secs(apply_end),
        available: progress.available.len(),
        all_available_s: (progress.available.len() >= shape.works)
            .then(|| secs(Progress::last(&progress.available))),
        manifests_per_s: shape.manifests() as f64 / secs(all_manifests).max(f64::EPSILON),
        applied_latency: Spread::of(progress.applied_latency.clone()),
        available_latency: Spread::of(progress.available_latency.clone()),
        apply_requests,
        settle_s: secs(options.settle),
        settle_requests,
        agent_memory: AgentMemory {
            idle_bytes: idle.rss_bytes,
            done_bytes: done.rss_bytes,
            steady_bytes: steady.rss_bytes,
            peak_bytes: steady.peak_bytes,
        },
        agent_cpu: CpuTime {
            apply_s: apply_cpu,
            settle_s: settle_cpu,
        },
        control_plane_memory,
    };
    agent.stop().await;
    hub.stop().await;
    spoke.stop().await;
    Ok(report)
}
