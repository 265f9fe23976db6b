//! `ocm-controlplane`: the embedded Kubernetes-API-compatible control plane as a standalone server.
//!
//! ```text
//! ocm-controlplane serve --data-dir ./hub-data [--port 6443] [--bind 127.0.0.1]
//! ```
//!
//! Serves HTTPS until SIGTERM or Ctrl-C, keeps objects, certificates and `admin.kubeconfig` in the
//! data directory, and logs with `tracing` (`RUST_LOG` or `--log-level`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use ocm_controlplane::ControlPlane;
use tracing_subscriber::EnvFilter;

/// mimalloc instead of the system allocator: the server allocates and frees many small JSON nodes
/// per request, where glibc's malloc costs a third of a large list's time (see docs/performance.md).
/// Built with `no_thp`: mimalloc would otherwise advise transparent huge pages for its arenas,
/// and a hub at 1 000 clusters held 60 MiB of partly used 2 MiB pages.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// An embedded, Kubernetes-API-compatible control plane for Open Cluster Management.
#[derive(Debug, Parser)]
#[command(name = "ocm-controlplane", version, about, long_about = None)]
struct Cli {
    /// Log filter, e.g. `info`, `debug` or `ocm_controlplane=debug,info` (tracing-subscriber's
    /// env-filter syntax). Overrides RUST_LOG; without either, `info`.
    #[arg(long, global = true, value_name = "FILTER")]
    log_level: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the Kubernetes API over HTTPS until SIGTERM or Ctrl-C.
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Directory for the database (state.redb), the certificates (serving CA, client CA, serving
    /// and admin certificates, created on first start and reused) and admin.kubeconfig. Created
    /// if missing; every acknowledged write is durable there.
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,

    /// Address to listen on. The serving certificate names localhost, 127.0.0.1 and ::1 only, and
    /// admin.kubeconfig points at 127.0.0.1 when this is 0.0.0.0.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    bind: String,

    /// Port to listen on (0 picks a free port; the chosen one is printed and written into
    /// admin.kubeconfig).
    #[arg(long, value_name = "PORT", default_value_t = 6443)]
    port: u16,

    /// Serve as an OCM hub: admit ManagedClusters and ManagedClusterSetBindings (once their CRDs
    /// are installed) as upstream's cluster-manager admission webhooks do — accept and join
    /// permissions, taint times, the default cluster-set label.
    #[arg(long)]
    cluster_admission: bool,

    /// How many changes the watch history keeps: a watch or an exact-revision list from an older
    /// resourceVersion gets 410 Gone (Expired), as after an etcd compaction.
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    history_capacity: usize,

    /// How often the history is compacted, as kube-apiserver's flag of the same name has etcd
    /// compact it (a Go duration: `5m`, `30s`, `1h30m`; `0` never compacts). After each round,
    /// exact-resourceVersion lists and `continue` tokens older than the previous round answer 410
    /// Gone (Expired), as do watches from before the retained history.
    #[arg(long, value_name = "DURATION", default_value = "5m0s", value_parser = parse_go_duration)]
    etcd_compaction_interval: Duration,

    /// On SIGTERM or Ctrl-C, how long requests in flight may take to finish before their
    /// connections are dropped (watches are ended at once). A second signal stops at once.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    shutdown_grace_period: u64,
    /// Serve requests without credentials as system:anonymous (kube-apiserver's
    /// `--anonymous-auth`); `--anonymous-auth=false` answers them 401 Unauthorized.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    anonymous_auth: bool,

    /// Append one JSON line per request (user, verb, resource, status) to this file.
    #[arg(long, value_name = "FILE")]
    audit_log_path: Option<PathBuf>,
}

fn init_logging(level: Option<&str>) -> Result<(), String> {
    let filter = match level {
        Some(level) => EnvFilter::try_new(level).map_err(|e| format!("--log-level {level:?}: {e}"))?,
        None => match std::env::var("RUST_LOG") {
            Ok(v) if !v.trim().is_empty() => {
                EnvFilter::try_new(&v).map_err(|e| format!("RUST_LOG={v:?}: {e}"))?
            }
            _ => EnvFilter::new("info"),
        },
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    Ok(())
}

/// Resolves on the first SIGTERM or SIGINT (Ctrl-C); names the signal.
async fn shutdown_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = tokio::signal::ctrl_c() => "SIGINT",
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; stopping on Ctrl-C only");
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
}

/// Parses a Go duration (`time.ParseDuration`): a sequence of decimal numbers, each with a unit
/// (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), e.g. `5m0s` or `1.5h`; a bare `0` is zero.
fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.starts_with('-') {
        return Err(format!("negative duration {text:?}"));
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => return Err(format!("time: missing unit in duration {text:?}")),
            unit => return Err(format!("time: unknown unit {unit:?} in duration {text:?}")),
        };
        rest = &rest[unit_len..];
        nanos += number * scale;
    }
    Ok(Duration::from_nanos(nanos as u64))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let data_dir = absolute(&args.data_dir);
    std::fs::create_dir_all(&data_dir).map_err(|e| format!("creating {}: {e}", data_dir.display()))?;
    let handle = ControlPlane::builder()
        .data_dir(&data_dir)
        .bind(args.bind.clone())
        .port(args.port)
        .cluster_admission(
            args.cluster_admission
                .then(ocm_controlplane::admission::ClusterAdmission::default),
        )
        .history_capacity(args.history_capacity)
        .compaction_interval(Some(args.etcd_compaction_interval))
        .anonymous_auth(args.anonymous_auth)
        .audit_log(args.audit_log_path.as_deref().map(absolute))
        .start()
        .await
        .map_err(|e| e.to_string())?;
    let kubeconfig = data_dir.join("admin.kubeconfig");
    println!("ocm-controlplane serving at {}", handle.url());
    println!("data directory: {}", data_dir.display());
    println!();
    println!("Point kubectl (or any Kubernetes client) at it:");
    println!("  export KUBECONFIG={}", kubeconfig.display());
    println!("  kubectl get namespaces");
    println!();
    println!("Stop with Ctrl-C (or SIGTERM); objects are kept in the data directory.");
    let signal = shutdown_signal().await;
    let grace = Duration::from_secs(args.shutdown_grace_period);
    tracing::info!(signal, grace_seconds = args.shutdown_grace_period, "stopping");
    tokio::select! {
        _ = handle.shutdown_gracefully(grace) => tracing::info!("stopped"),
        second = shutdown_signal() => tracing::warn!(signal = second, "second signal: stopping at once"),
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = init_logging(cli.log_level.as_deref()) {
        eprintln!("ocm-controlplane: {e}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ocm-controlplane: starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve(args).await,
        }
    });
    // Connections that outlived the grace period are not waited for.
    runtime.shutdown_timeout(Duration::from_millis(100));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ocm-controlplane: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("5m0s"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_go_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_go_duration("5").is_err());
        assert!(parse_go_duration("5x").is_err());
        assert!(parse_go_duration("").is_err());
        assert!(parse_go_duration("-1s").is_err());
    }

    #[test]
    fn the_compaction_flag_defaults_to_five_minutes() {
        let cli = Cli::parse_from(["ocm-controlplane", "serve", "--data-dir", "/tmp/x"]);
        let Command::Serve(args) = cli.command;
        assert_eq!(args.etcd_compaction_interval, Duration::from_secs(300));
        let cli = Cli::parse_from([
            "ocm-controlplane",
            "serve",
            "--data-dir",
            "/tmp/x",
            "--etcd-compaction-interval=0",
        ]);
        let Command::Serve(args) = cli.command;
        assert_eq!(args.etcd_compaction_interval, Duration::ZERO);
    }
}
