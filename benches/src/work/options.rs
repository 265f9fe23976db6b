//! The command line of `work-load`.

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

/// The milestone that ends the apply phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Until {
    /// Every ConfigMap exists on the spoke and every work is `Applied` (the apply path alone).
    Applied,
    /// Also every work `Available` (the status controller's condition).
    Available,
}

/// The command line.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "work-load",
    about = "Manifests applied per second, hub requests per work and the work agent's memory, for many \
             ManifestWorks on an embedded hub and spoke"
)]
pub struct Options {
    /// ManifestWorks to create in the cluster namespace.
    #[arg(long, default_value_t = 100)]
    pub works: usize,
    /// ConfigMaps in each ManifestWork.
    #[arg(long, default_value_t = 10)]
    pub manifests_per_work: usize,
    /// Bytes of payload in each ConfigMap's data.
    #[arg(long, default_value_t = 256)]
    pub configmap_bytes: usize,
    /// What ends the apply phase: every work Applied, or Applied and Available.
    #[arg(long, value_enum, default_value_t = Until::Available)]
    pub until: Until,
    /// ManifestWorks the harness creates at a time.
    #[arg(long, default_value_t = 16)]
    pub create_concurrency: usize,
    /// How long the works may take to be applied before the run fails, seconds.
    #[arg(long, default_value = "600", value_parser = seconds)]
    pub timeout: Duration,
    /// How long the agent is then left with nothing to do before its steady memory and its idle
    /// requests are read, seconds.
    #[arg(long, default_value = "30", value_parser = seconds)]
    pub settle: Duration,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Run this work agent instead of ours: a command line split at whitespace (no quoting), in
    /// which `{hub_kubeconfig}`, `{spoke_kubeconfig}`, `{cluster}` and `{free_port}` are replaced
    /// by the agent's hub kubeconfig, spoke kubeconfig, the cluster name and a free loopback port.
    /// docs/performance.md gives the one for upstream's Go `work agent`.
    #[arg(long)]
    pub work_agent_cmd: Option<String>,
    /// The `ocm-controlplane` binary run as hub and spoke; default: next to this executable.
    /// Without one both run in this process.
    #[arg(long)]
    pub hub_binary: Option<PathBuf>,
    /// Where temporary directories go (the control planes' redb databases, logs, kubeconfigs).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Keep the run's directory (audit logs, the agent's log, kubeconfigs) and print its path.
    #[arg(long)]
    pub keep_files: bool,
    /// How many (verb, resource) rows the request tables show.
    #[arg(long, default_value_t = 12)]
    pub top: usize,
    /// Internal: run our work agent with this hub kubeconfig (the harness starts this binary so;
    /// the process ends when its standard input closes).
    #[arg(long, hide = true, requires_all = ["agent_spoke_kubeconfig", "agent_cluster"])]
    pub agent_hub_kubeconfig: Option<PathBuf>,
    /// Internal, with `--agent-hub-kubeconfig`: the spoke kubeconfig.
    #[arg(long, hide = true)]
    pub agent_spoke_kubeconfig: Option<PathBuf>,
    /// Internal, with `--agent-hub-kubeconfig`: the cluster name.
    #[arg(long, hide = true)]
    pub agent_cluster: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_flags_parse() {
        let o = Options::try_parse_from(["work-load"]).unwrap();
        assert_eq!((o.works, o.manifests_per_work, o.configmap_bytes), (100, 10, 256));
        assert_eq!((o.output, o.until), (Output::Text, Until::Available));
        assert!(o.work_agent_cmd.is_none() && o.agent_hub_kubeconfig.is_none());
        let o = Options::try_parse_from([
            "work-load",
            "--works",
            "1000",
            "--manifests-per-work",
            "1",
            "--timeout",
            "90.5",
            "--output",
            "json",
            "--until",
            "applied",
            "--work-agent-cmd",
            "work agent --spoke-cluster-name {cluster}",
        ])
        .unwrap();
        assert_eq!((o.works, o.manifests_per_work), (1000, 1));
        assert_eq!(o.timeout, Duration::from_millis(90_500));
        assert_eq!((o.output, o.until), (Output::Json, Until::Applied));
        assert_eq!(
            o.work_agent_cmd.as_deref(),
            Some("work agent --spoke-cluster-name {cluster}")
        );
        assert!(Options::try_parse_from(["work-load", "--settle", "-1"]).is_err());
        // The child mode needs all three.
        assert!(Options::try_parse_from(["work-load", "--agent-hub-kubeconfig", "h"]).is_err());
    }
}
