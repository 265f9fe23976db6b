//! The command line of `fleet-sim`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

pub use crate::join::options::Output;

fn seconds(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{s:?} is not a number of seconds"))
}

/// The command line.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "fleet-sim",
    about = "N simulated managed clusters (real registration and work agents, one shared store) joining a hub, with churn"
)]
pub struct Options {
    /// Simulated managed clusters.
    #[arg(long, default_value_t = 100)]
    pub clusters: usize,
    /// Join this hub instead of starting one (its CRDs and bootstrap RBAC installed when
    /// missing); the run's clusters are deleted from it at the end.
    #[arg(long)]
    pub hub_kubeconfig: Option<PathBuf>,
    /// With `--hub-kubeconfig`: a hub process whose memory to report (repeatable).
    #[arg(long = "server-pid")]
    pub server_pids: Vec<u32>,
    /// Start no hub controllers (the hub of `--hub-kubeconfig` runs its own).
    #[arg(long)]
    pub no_hub_controllers: bool,
    /// The `ocm-controlplane` binary run as the embedded hub; default: next to this executable.
    #[arg(long)]
    pub hub_binary: Option<PathBuf>,
    /// Run the embedded hub in this process (its memory then counts as the simulator's).
    #[arg(long)]
    pub in_process_hub: bool,
    /// Registration agents only, no work agents.
    #[arg(long)]
    pub no_work_agents: bool,
    /// The registration agents' status period, seconds.
    #[arg(long, default_value = "60", value_parser = seconds)]
    pub healthcheck_period: Duration,
    /// The work agents' status read-back period, seconds.
    #[arg(long, default_value = "10", value_parser = seconds)]
    pub status_sync_interval: Duration,
    /// Clusters bootstrapping at a time; 0: all at once.
    #[arg(long, default_value_t = 0)]
    pub concurrency: usize,
    /// How long joining (and each churn step) may take, seconds.
    #[arg(long, default_value = "900", value_parser = seconds)]
    pub timeout: Duration,
    /// Churn, after all joined: set every cluster's `spec.leaseDurationSeconds` to this (the hub
    /// marks a cluster Unknown after 5 lease durations without renewal).
    #[arg(long)]
    pub lease_duration: Option<u32>,
    /// Churn: this many clusters stop renewing their leases until the hub marks them
    /// unavailable, then come back.
    #[arg(long, default_value_t = 0)]
    pub pause: usize,
    /// Churn: this many (other) clusters go away for good (agents stopped, credentials
    /// dropped); waits until the hub marks them unavailable.
    #[arg(long, default_value_t = 0)]
    pub remove: usize,
    /// Churn: every cluster rotates its client certificate this often, seconds.
    #[arg(long, value_parser = seconds)]
    pub rotate_every: Option<Duration>,
    /// After joining and churn, keep running this long before the last memory reading, seconds.
    #[arg(long, default_value = "0", value_parser = seconds)]
    pub hold: Duration,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Where temporary directories go (the hub's redb database, the hub controllers' log).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Where the simulated clusters' hub-kubeconfig files go (default: /dev/shm, a tmpfs as a
    /// real agent's mounted Secret is, when present; else the temporary directory).
    #[arg(long)]
    pub agents_dir: Option<PathBuf>,
    /// Internal: run the hub controllers against this admin kubeconfig (see `join-load`).
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
    fn defaults_and_churn_flags_parse() {
        let o = Options::try_parse_from(["fleet-sim"]).unwrap();
        assert_eq!((o.clusters, o.pause, o.remove), (100, 0, 0));
        assert!(!o.no_work_agents && o.rotate_every.is_none() && o.lease_duration.is_none());
        let o = Options::try_parse_from([
            "fleet-sim",
            "--clusters",
            "5000",
            "--pause",
            "10",
            "--remove",
            "5",
            "--rotate-every",
            "30",
            "--lease-duration",
            "2",
            "--no-work-agents",
            "--hold",
            "1.5",
        ])
        .unwrap();
        assert_eq!((o.clusters, o.pause, o.remove), (5000, 10, 5));
        assert_eq!(o.rotate_every, Some(Duration::from_secs(30)));
        assert_eq!((o.lease_duration, o.no_work_agents), (Some(2), true));
        assert_eq!(o.hold, Duration::from_millis(1500));
        assert!(Options::try_parse_from(["fleet-sim", "--rotate-every", "x"]).is_err());
    }
}
