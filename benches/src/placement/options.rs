//! The command line of `placement-load`.

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
    name = "placement-load",
    about = "Placements decided per second, hub requests and the placement controller's memory, for \
             upstream's placement benchmark shapes"
)]
pub struct Options {
    /// ManagedClusters (each with an AddOnPlacementScore and allocatable CPU and memory), all in
    /// one ManagedClusterSet bound to the placements' namespace.
    #[arg(long, default_value_t = 100)]
    pub clusters: usize,
    /// Placements to create.
    #[arg(long, default_value_t = 100)]
    pub placements: usize,
    /// Clusters each placement asks for (`numberOfClusters`). With fewer `--clusters` (upstream's
    /// 100 placements × 1 cluster) a placement is decided when it holds every cluster and is
    /// PlacementSatisfied False.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub select: u16,
    /// Objects the harness creates at a time (clusters and their scores, then placements).
    #[arg(long, default_value_t = 16)]
    pub create_concurrency: usize,
    /// How long the placements may take to be decided before the run fails, seconds.
    #[arg(long, default_value = "600", value_parser = seconds)]
    pub timeout: Duration,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Use the API server of this kubeconfig as the hub (any server with the OCM hub CRDs; the
    /// run's objects get names of their own and are deleted afterwards) instead of starting one.
    /// The controller gets this kubeconfig; hub requests are not counted (no audit log).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Run this placement controller instead of ours: a command line split at whitespace (no
    /// quoting), in which `{kubeconfig}` and `{free_port}` are replaced by the controller's hub
    /// kubeconfig and a free loopback port. docs/performance.md gives the one for upstream's Go
    /// `placement controller`.
    #[arg(long)]
    pub placement_cmd: Option<String>,
    /// The `ocm-controlplane` binary run as the hub; default: next to this executable. Without
    /// one the hub runs in this process.
    #[arg(long, conflicts_with = "kubeconfig")]
    pub hub_binary: Option<PathBuf>,
    /// Where temporary directories go (the hub's redb database, logs, kubeconfigs).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Keep the run's directory (audit log, the controller's log, kubeconfigs) and print its path;
    /// with `--kubeconfig`, also leave the run's objects on the hub.
    #[arg(long)]
    pub keep_files: bool,
    /// How many (verb, resource) rows the request table shows.
    #[arg(long, default_value_t = 12)]
    pub top: usize,
    /// Workers of our placement controller (placements scheduled and written at once); default:
    /// `PlacementOptions::default()`'s. Not passed to a `--placement-cmd` controller.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub placement_workers: Option<u16>,
    /// Internal: run our placement controller with this hub kubeconfig (the harness starts this
    /// binary so; the process ends when its standard input closes).
    #[arg(long, hide = true)]
    pub run_placement_controller: Option<PathBuf>,
}

impl Options {
    /// Whether the options give a run that measures something.
    ///
    /// # Errors
    /// There is no placement or no cluster.
    pub fn check(&self) -> Result<(), String> {
        if self.placements == 0 {
            return Err("--placements must be at least 1".into());
        }
        if self.clusters == 0 {
            return Err("--clusters must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_flags_parse() {
        let o = Options::try_parse_from(["placement-load"]).unwrap();
        assert_eq!((o.clusters, o.placements, o.select), (100, 100, 10));
        assert_eq!((o.create_concurrency, o.output), (16, Output::Text));
        assert_eq!(o.timeout, Duration::from_secs(600));
        assert!(o.kubeconfig.is_none() && o.placement_cmd.is_none());
        assert!(o.run_placement_controller.is_none());
        o.check().unwrap();
        let o = Options::try_parse_from([
            "placement-load",
            "--clusters",
            "1000",
            "--placements",
            "10000",
            "--select",
            "5",
            "--create-concurrency",
            "64",
            "--timeout",
            "90.5",
            "--output",
            "json",
            "--kubeconfig",
            "/k/admin.kubeconfig",
            "--placement-cmd",
            "placement controller --kubeconfig {kubeconfig}",
            "--placement-workers",
            "1",
        ])
        .unwrap();
        assert_eq!((o.clusters, o.placements, o.select), (1000, 10_000, 5));
        assert_eq!(o.create_concurrency, 64);
        assert_eq!(o.timeout, Duration::from_millis(90_500));
        assert_eq!((o.output, o.placement_workers), (Output::Json, Some(1)));
        assert_eq!(o.kubeconfig, Some(PathBuf::from("/k/admin.kubeconfig")));
        assert_eq!(
            o.placement_cmd.as_deref(),
            Some("placement controller --kubeconfig {kubeconfig}")
        );
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(Options::try_parse_from(["placement-load", "--select", "0"]).is_err());
        assert!(Options::try_parse_from(["placement-load", "--placement-workers", "0"]).is_err());
        assert!(Options::try_parse_from(["placement-load", "--timeout", "-1"]).is_err());
        assert!(Options::try_parse_from(["placement-load", "--output", "yaml"]).is_err());
        // A given hub and a hub binary to start contradict each other.
        assert!(
            Options::try_parse_from(["placement-load", "--kubeconfig", "k", "--hub-binary", "b"]).is_err()
        );
        // Upstream's smallest shape: 10 asked of 1 cluster.
        let o = Options::try_parse_from(["placement-load", "--clusters", "1"]).unwrap();
        o.check().unwrap();
        let o = Options::try_parse_from(["placement-load", "--clusters", "0"]).unwrap();
        assert!(o.check().unwrap_err().contains("--clusters"));
        let o = Options::try_parse_from(["placement-load", "--placements", "0"]).unwrap();
        assert!(o.check().unwrap_err().contains("--placements"));
    }

    #[test]
    fn the_child_mode_takes_a_kubeconfig() {
        let o = Options::try_parse_from(["placement-load", "--run-placement-controller", "/d/c.kc"]).unwrap();
        assert_eq!(o.run_placement_controller, Some(PathBuf::from("/d/c.kc")));
    }
}
