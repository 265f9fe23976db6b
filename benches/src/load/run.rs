//! The order of a run: the memory phase on a server of its own, then create, get, update, list
//! and watch fan-out on a fresh server; and the two runtimes they run on.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::time::Instant;

use super::child::{ChildServer, find_server_binary};
use super::ops::{self, Workload};
use super::options::{Options, RssServer};
use super::report::{Report, RssReport};
use super::stats::Phase;
use super::table::thousands;
use super::target::{self, Target};
use super::{LoadError, rss, watch};

/// How long the runtimes may take to wind down after the run.
const RUNTIME_SHUTDOWN: Duration = Duration::from_secs(2);

fn runtime(name: &'static str, threads: usize) -> Result<tokio::runtime::Runtime, LoadError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(format!("load-{name}"))
        .enable_all()
        .build()
        .map_err(|source| LoadError::StartRuntime { name, source })
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Runs the harness: the clients on one runtime, the embedded server (when there is one) on
/// another, as if they were two processes sharing the machine.
pub fn run_blocking(options: &Options) -> Result<Report, LoadError> {
    let or_cpus = |n: usize| if n == 0 { cpus() } else { n };
    let clients = runtime("client", or_cpus(options.client_threads))?;
    let server = match options.kubeconfig {
        None => Some(runtime("server", or_cpus(options.server_threads))?),
        Some(_) => None,
    };
    let handle = server.as_ref().map(|rt| rt.handle().clone());
    let result = clients.block_on(run(options, handle));
    clients.shutdown_timeout(RUNTIME_SHUTDOWN);
    if let Some(server) = server {
        server.shutdown_timeout(RUNTIME_SHUTDOWN);
    }
    result
}

/// A short suffix that keeps the namespaces of separate runs apart.
fn run_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{:06x}", (nanos / 1000) & 0xff_ffff)
}

/// Collects a phase's summary and, when it had errors, a note with the first one.
#[derive(Debug, Default)]
struct Collector {
    results: Vec<super::stats::Summary>,
    notes: Vec<String>,
}

impl Collector {
    fn phase(&mut self, phase: &Phase) {
        self.results.push(phase.summary());
        self.errors(phase);
        if let Some(note) = &phase.note {
            self.notes.push(format!("{}: {note}", phase.operation));
        }
    }

    /// A note with the first error of a phase that had any.
    fn errors(&mut self, phase: &Phase) {
        if phase.errors > 0 {
            self.notes.push(format!(
                "{}: {} errors; the first: {}",
                phase.operation,
                thousands(phase.errors as u64),
                phase.first_error.as_deref().unwrap_or("(no message)")
            ));
        }
    }

    fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
}

fn first(clients: &[Client]) -> Result<&Client, LoadError> {
    clients
        .first()
        .ok_or_else(|| LoadError::BuildClient("no client".into()))
}

/// Runs every phase and builds the report.
pub async fn run(options: &Options, server: Option<tokio::runtime::Handle>) -> Result<Report, LoadError> {
    let begun = Instant::now();
    let date = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let load_average = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    let payload: Arc<str> = Arc::from("x".repeat(options.object_size));
    let suffix = run_suffix();
    let mut out = Collector::default();

    let rss = memory_phase(options, server.as_ref(), &payload, &suffix, &mut out).await?;

    let target = match (&options.kubeconfig, &server) {
        (Some(path), _) => Target::from_kubeconfig(path, options.context.as_deref()).await?,
        (None, Some(server)) => Target::embedded(server, options.data_dir.as_deref()).await?,
        (None, None) => {
            return Err(LoadError::StartServer(
                "no runtime for the embedded server".into(),
            ));
        }
    };
    let clients = target.clients(options.concurrency.max(options.list_concurrency))?;
    let namespace = format!("ocm-load-{suffix}");
    let watch_namespace = format!("ocm-load-{suffix}-watch");
    target::create_namespace(first(&clients)?, &namespace).await?;
    let workload = |namespace: &str| Workload {
        namespace: namespace.to_string(),
        payload: payload.clone(),
        deadline: Instant::now() + Duration::from_secs(options.timeout),
    };

    if options.objects > 0 {
        let created = ops::create(
            "create",
            &clients,
            options.concurrency,
            &workload(&namespace),
            "obj-",
            options.objects,
            true,
        )
        .await;
        out.phase(&created.phase);
        let stored = created.phase.samples.len();
        if options.gets > 0 {
            let phase = ops::get(
                &clients,
                options.concurrency,
                &workload(&namespace),
                "obj-",
                options.objects,
                options.gets,
            )
            .await;
            out.phase(&phase);
        }
        if options.updates > 0 {
            let phase = ops::update(&clients, &workload(&namespace), created.owned, options.updates).await;
            out.phase(&phase);
        }
        if options.lists > 0 {
            let phase = ops::list(
                &clients,
                options.list_concurrency,
                &workload(&namespace),
                stored,
                options.lists,
            )
            .await;
            let objects_per_second = phase.summary().ops_per_second * stored as f64;
            out.phase(&phase);
            out.note(format!(
                "list: each list returns all {} ConfigMaps the harness created in the namespace (label selector, no limit), decoded by kube-rs: {} objects/s",
                thousands(stored as u64),
                thousands(objects_per_second as u64)
            ));
        }
    } else {
        out.note("create, get, update and list skipped (--objects 0)");
    }

    if options.watchers > 0 && options.watch_events > 0 {
        target::create_namespace(first(&clients)?, &watch_namespace).await?;
        let fan = watch::fan_out(
            &clients,
            options.concurrency,
            &workload(&watch_namespace),
            options.watchers,
            options.watch_events,
        )
        .await?;
        out.phase(&fan.deliveries);
        let writes = fan.writes.summary();
        out.note(format!(
            "watch fan-out: {} creates x {} watchers = {} deliveries; latency is create sent -> event decoded by the watcher; \
             the creates ran at {} ops/s ({} writers, p99 {} ms)",
            thousands(options.watch_events as u64),
            options.watchers,
            thousands((options.watch_events * options.watchers) as u64),
            super::table::rate(writes.ops_per_second),
            writes.concurrency,
            super::table::millis(writes.p99_ms),
        ));
        out.errors(&fan.writes);
    } else {
        out.note("watch fan-out skipped (--watchers 0 or --watch-events 0)");
    }

    if !target.embedded {
        for ns in [&namespace, &watch_namespace] {
            if let Err(e) = target::delete_namespace(first(&clients)?, ns).await {
                out.note(format!("cleanup: {e}"));
            }
        }
    }
    let description = target.description.clone();
    let url = target.url.clone();
    drop(clients);
    drop(target);

    Ok(Report {
        date,
        target: description,
        url,
        cpus: cpus(),
        load_average,
        options: options.clone(),
        results: out.results,
        rss,
        notes: out.notes,
        total_seconds: begun.elapsed().as_secs_f64(),
    })
}

/// Where the memory phase's server runs.
enum MemoryServer {
    Child(PathBuf),
    InProcess,
}

/// Creates the memory phase's namespace, reads the memory, stores `options.rss_objects` ConfigMaps
/// and reads the memory again: the creates, the idle and the loaded memory.
async fn store(
    options: &Options,
    work: &Workload,
    clients: &[Client],
    read: impl Fn() -> Result<rss::Memory, LoadError>,
) -> Result<(Phase, rss::Memory, rss::Memory), LoadError> {
    target::create_namespace(first(clients)?, &work.namespace).await?;
    let idle = read()?;
    let created = ops::create(
        "create (memory phase)",
        clients,
        options.concurrency,
        work,
        "rss-",
        options.rss_objects,
        false,
    )
    .await;
    let loaded = read()?;
    Ok((created.phase, idle, loaded))
}

/// Stores `options.rss_objects` ConfigMaps in a server of its own and reads its resident memory.
async fn memory_phase(
    options: &Options,
    server: Option<&tokio::runtime::Handle>,
    payload: &Arc<str>,
    suffix: &str,
    out: &mut Collector,
) -> Result<Option<RssReport>, LoadError> {
    if options.rss_objects == 0 {
        out.note("memory phase skipped (--rss-objects 0)");
        return Ok(None);
    }
    let namespace = format!("ocm-load-{suffix}-rss");
    let work = Workload {
        namespace: namespace.clone(),
        payload: payload.clone(),
        deadline: Instant::now() + Duration::from_secs(options.timeout),
    };
    let report = |measured: String, idle, loaded| RssReport {
        objects: options.rss_objects,
        object_size: options.object_size,
        measured,
        idle,
        loaded,
    };

    if let Some(path) = &options.kubeconfig {
        if options.server_pid.is_empty() {
            out.note(
                "memory not measured: pass --server-pid PID (repeatable, e.g. kube-apiserver and etcd) to \
                 read the server's resident memory",
            );
            return Ok(None);
        }
        let target = Target::from_kubeconfig(path, options.context.as_deref()).await?;
        let clients = target.clients(options.concurrency)?;
        let (phase, idle, loaded) =
            store(options, &work, &clients, || rss::read_sum(&options.server_pid)).await?;
        out.phase(&phase);
        if let Err(e) = target::delete_namespace(first(&clients)?, &namespace).await {
            out.note(format!("cleanup: {e}"));
        }
        let pids: Vec<String> = options.server_pid.iter().map(u32::to_string).collect();
        return Ok(Some(report(
            format!("sum of VmRSS in /proc/<pid>/status of pids {}", pids.join(", ")),
            idle,
            loaded,
        )));
    }
    let Some(server) = server else {
        return Ok(None);
    };

    let mode = match options.rss_server {
        RssServer::InProcess => MemoryServer::InProcess,
        RssServer::Process => match find_server_binary(options.server_binary.as_deref()) {
            Some(binary) => MemoryServer::Child(binary),
            None => {
                return Err(LoadError::SpawnServer {
                    binary: "ocm-controlplane".into(),
                    message: "not found next to this binary; build it with `cargo build --release -p \
                              ocm-controlplane` or pass --server-binary"
                        .into(),
                });
            }
        },
        RssServer::Auto => match find_server_binary(options.server_binary.as_deref()) {
            Some(binary) => MemoryServer::Child(binary),
            None => {
                out.note(
                    "memory: no ocm-controlplane binary next to this one (`cargo build --release -p \
                     ocm-controlplane` builds it), so the server ran in-process",
                );
                MemoryServer::InProcess
            }
        },
    };
    match mode {
        MemoryServer::Child(binary) => {
            // The memory reading does not depend on the file system (redb reads and writes with
            // its own cache, no mmap), but a tmpfs makes the durable commits free, and the
            // creates take minutes on a disk.
            let tmpfs = PathBuf::from("/dev/shm");
            let parent = match &options.data_dir {
                Some(dir) => Some(dir.clone()),
                None => tmpfs.is_dir().then_some(tmpfs),
            };
            let child = ChildServer::spawn(&binary, parent.as_deref()).await?;
            let pid = child.pid();
            let target = child.target().await?;
            let clients = target.clients(options.concurrency)?;
            let (phase, idle, loaded) = store(options, &work, &clients, || rss::read(Some(pid))).await?;
            out.phase(&phase);
            drop(clients);
            let place = match &parent {
                Some(dir) => format!("data dir under {}", dir.display()),
                None => "data dir in the system's temporary directory".into(),
            };
            let measured = format!("VmRSS of /proc/{pid}/status: {} ({place})", target.description);
            child.stop().await;
            Ok(Some(report(measured, idle, loaded)))
        }
        MemoryServer::InProcess => {
            let target = Target::embedded(server, options.data_dir.as_deref()).await?;
            let clients = target.clients(options.concurrency)?;
            let (phase, idle, loaded) = store(options, &work, &clients, || rss::read(None)).await?;
            out.phase(&phase);
            let measured = format!(
                "VmRSS of /proc/self/status: the harness process, which runs the {} and its own kube clients \
                 (the client side is included)",
                target.description
            );
            Ok(Some(report(measured, idle, loaded)))
        }
    }
}
