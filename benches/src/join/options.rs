//! The command line of `join-load`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

fn seconds(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{s:?} is not a number of seconds"))
}

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Aligned text tables.
    Text,
    /// One JSON document.
    Json,
}

/// The command line.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "join-load",
    about = "Time, hub API requests and hub memory for many registration agents joining one hub (embedded, or any with --hub-kubeconfig)"
)]
pub struct Options {
    /// Simulated agents (one ManagedCluster each).
    #[arg(long, default_value_t = 1000)]
    pub agents: usize,
    /// The agents' `cluster_healthcheck_period` (the status loop's period), seconds.
    #[arg(long, default_value = "60", value_parser = seconds)]
    pub healthcheck_period: Duration,
    /// How many agents may be bootstrapping at once (started but without hub credentials yet);
    /// 0 starts them all at once.
    #[arg(long, default_value_t = 0)]
    pub concurrency: usize,
    /// How long the join may take before the run fails, seconds.
    #[arg(long, default_value = "900", value_parser = seconds)]
    pub timeout: Duration,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// The `ocm-controlplane` binary run as the hub; default: next to this executable. Without
    /// one the hub runs in this process and its memory cannot be told apart.
    #[arg(long)]
    pub hub_binary: Option<PathBuf>,
    /// Run the hub in this process even when the binary exists.
    #[arg(long)]
    pub in_process_hub: bool,
    /// Where temporary directories go (the hub's redb database, the hub controllers' log).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Where the agents' hub-kubeconfig files go (default: /dev/shm, a tmpfs as a real agent's
    /// mounted Secret is, when present; else the temporary directory).
    #[arg(long)]
    pub agents_dir: Option<PathBuf>,
    /// Copy the hub's audit log of the join (one JSON line per request) to this file.
    #[arg(long)]
    pub keep_audit_log: Option<PathBuf>,
    /// How many (verb, resource) rows the request table shows.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Join this hub instead of starting one (any hub with the OCM CRDs, e.g. a real
    /// kube-apiserver; hub CRDs and bootstrap RBAC are installed when missing). Its requests are not
    /// counted (no audit log); the run's ManagedClusters, namespaces and CSRs are deleted at the end.
    #[arg(long)]
    pub hub_kubeconfig: Option<PathBuf>,
    /// With `--hub-kubeconfig`: a process of the hub whose memory (`VmRSS`, `VmHWM`) to report,
    /// e.g. kube-apiserver and etcd; repeatable.
    #[arg(long = "server-pid")]
    pub server_pids: Vec<u32>,
    /// Run this command (through `sh -c`) as the hub controllers instead of ours, `{kubeconfig}`
    /// replaced by the hub's admin kubeconfig and `{bootstrap_user}` by the bootstrap user whose
    /// CSRs it must approve, e.g. upstream's `registration controller --kubeconfig {kubeconfig}
    /// --auto-approved-csr-users {bootstrap_user} --feature-gates ManagedClusterAutoApproval=true
    /// --disable-leader-election --namespace open-cluster-management-hub`.
    #[arg(long)]
    pub hub_controllers_cmd: Option<String>,
    /// Internal: run the hub controllers against this admin kubeconfig (the harness starts this
    /// binary so with it; the process ends when its standard input closes).
    #[arg(long, hide = true)]
    pub hub_controllers: Option<PathBuf>,
    /// Internal, with `--hub-controllers`: the user whose CSRs are approved automatically.
    #[arg(long, hide = true)]
    pub auto_approve_user: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_flags_parse() {
        let o = Options::try_parse_from(["join-load"]).unwrap();
        assert_eq!(o.agents, 1000);
        assert_eq!(o.healthcheck_period, Duration::from_secs(60));
        assert_eq!(o.concurrency, 0);
        assert_eq!(o.output, Output::Text);
        let o = Options::try_parse_from([
            "join-load",
            "--agents",
            "100",
            "--healthcheck-period",
            "0.5",
            "--concurrency",
            "10",
            "--output",
            "json",
        ])
        .unwrap();
        assert_eq!(
            (o.agents, o.healthcheck_period, o.concurrency, o.output),
            (100, Duration::from_millis(500), 10, Output::Json)
        );
        assert!(Options::try_parse_from(["join-load", "--healthcheck-period", "-1"]).is_err());
        let o = Options::try_parse_from([
            "join-load",
            "--hub-kubeconfig",
            "/k",
            "--server-pid",
            "10",
            "--server-pid",
            "11",
            "--hub-controllers-cmd",
            "registration controller --kubeconfig {kubeconfig}",
        ])
        .unwrap();
        assert_eq!(o.hub_kubeconfig.as_deref(), Some(std::path::Path::new("/k")));
        assert_eq!(o.server_pids, [10, 11]);
        assert!(o.hub_controllers_cmd.unwrap().contains("{kubeconfig}"));
    }
}
