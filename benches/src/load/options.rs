//! The command line of `apiserver-load`: the target, the workload sizes and the concurrency.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use serde::Serialize;

/// Where the memory phase runs the embedded server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RssServer {
    /// `process` when the `ocm-controlplane` binary is found, else `in-process`.
    Auto,
    /// Run `ocm-controlplane serve` as a child process (redb in a temporary data directory) and
    /// read its `/proc/<pid>/status`: the server alone.
    Process,
    /// Run the server inside the harness and read /proc/self/status: includes the harness's own
    /// clients and runtimes.
    InProcess,
}

fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Measures a Kubernetes API server over HTTPS with kube-rs clients: create, get, update, list and
/// watch fan-out throughput and latency, and the server's memory with many ConfigMaps stored.
///
/// By default a fresh embedded ocm-controlplane (in memory) is started inside the harness; with
/// --kubeconfig any server on this machine is measured instead. Every phase stops by itself
/// after its count of operations (or at --timeout).
#[derive(Debug, Clone, Parser, Serialize)]
#[command(name = "apiserver-load", version, about, long_about)]
pub struct Options {
    /// Measure the server this kubeconfig names (its current context) instead of a fresh
    /// embedded ocm-controlplane. The server must listen on a loopback address. The harness
    /// creates namespaces named ocm-load-* and deletes their ConfigMaps and the namespaces at the end.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use instead of its current context.
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    pub context: Option<String>,

    /// Print the report as JSON (the table is not printed).
    #[arg(long)]
    pub json: bool,

    /// Persist the embedded server's objects with redb in a fresh temporary directory under DIR
    /// (removed afterwards), so writes include a durable commit. Without it the embedded
    /// server keeps everything in memory. DIR is created if missing.
    #[arg(long, value_name = "DIR", conflicts_with = "kubeconfig")]
    pub data_dir: Option<PathBuf>,

    /// Concurrent workers (one kube client each) for create, get, update, the memory phase's
    /// creates and the watch fan-out's writers.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = at_least_one)]
    pub concurrency: usize,

    /// ConfigMaps created in the create phase; the get, update and list phases work on them.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub objects: usize,

    /// Get requests (0 skips the phase).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub gets: usize,

    /// Update (PUT with resourceVersion) requests (0 skips the phase).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub updates: usize,

    /// List requests, each returning all --objects ConfigMaps (0 skips the phase).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub lists: usize,

    /// Concurrent list requests.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = at_least_one)]
    pub list_concurrency: usize,

    /// Watchers of the watch fan-out; each must receive every event of the write stream (0 skips
    /// the phase).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub watchers: usize,

    /// ConfigMaps created during the watch fan-out (events each watcher receives).
    #[arg(long, value_name = "N", default_value_t = 1_000)]
    pub watch_events: usize,

    /// Bytes of payload in each ConfigMap's data (the stored object is a few hundred bytes larger
    /// with its metadata).
    #[arg(long, value_name = "BYTES", default_value_t = 256)]
    pub object_size: usize,

    /// ConfigMaps stored before the server's resident memory is read (0 skips the memory phase).
    /// For --kubeconfig targets the phase runs only with --server-pid.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub rss_objects: usize,

    /// Where the memory phase runs the embedded server.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = RssServer::Auto)]
    pub rss_server: RssServer,

    /// The ocm-controlplane binary for `--rss-server process` (default: `ocm-controlplane` next
    /// to this binary, i.e. in the same target directory; build it with
    /// `cargo build --release -p ocm-controlplane`).
    #[arg(long, value_name = "PATH")]
    pub server_binary: Option<PathBuf>,

    /// With --kubeconfig: a process id of the server under test whose resident memory the memory
    /// phase reads; repeat it to add up several (e.g. kube-apiserver and etcd).
    #[arg(long, value_name = "PID", requires = "kubeconfig")]
    pub server_pid: Vec<u32>,

    /// Worker threads of the embedded server's runtime (0: one per CPU).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub server_threads: usize,

    /// Worker threads of the harness's client runtime (0: one per CPU).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub client_threads: usize,

    /// Upper bound, in seconds, on each phase; operations not done by then are reported as errors.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            kubeconfig: None,
            context: None,
            json: false,
            data_dir: None,
            concurrency: 16,
            objects: 10_000,
            gets: 10_000,
            updates: 10_000,
            lists: 20,
            list_concurrency: 2,
            watchers: 100,
            watch_events: 1_000,
            object_size: 256,
            rss_objects: 100_000,
            rss_server: RssServer::Auto,
            server_binary: None,
            server_pid: Vec::new(),
            server_threads: 0,
            client_threads: 0,
            timeout: 600,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Options::command().debug_assert();
    }

    #[test]
    fn defaults_match_the_parser() {
        let parsed = Options::try_parse_from(["apiserver-load"]).unwrap();
        let defaults = Options::default();
        assert_eq!(
            serde_json::to_value(&parsed).unwrap(),
            serde_json::to_value(&defaults).unwrap()
        );
    }

    #[test]
    fn zero_concurrency_is_refused() {
        assert!(Options::try_parse_from(["apiserver-load", "--concurrency", "0"]).is_err());
        assert!(Options::try_parse_from(["apiserver-load", "--timeout", "0"]).is_err());
    }

    #[test]
    fn server_pids_need_a_kubeconfig() {
        assert!(Options::try_parse_from(["apiserver-load", "--server-pid", "1"]).is_err());
        let o = Options::try_parse_from([
            "apiserver-load",
            "--kubeconfig",
            "k",
            "--server-pid",
            "1",
            "--server-pid",
            "2",
        ])
        .unwrap();
        assert_eq!(o.server_pid, vec![1, 2]);
        assert!(Options::try_parse_from(["apiserver-load", "--kubeconfig", "k", "--data-dir", "d"]).is_err());
    }
}
