//! The report of a `fleet-sim` run: as text or JSON.

use serde::Serialize;

use super::SimRunError;
use super::churn::{ChurnStep, CsrCounts};
use crate::join::memory::ProcessMemory;
use crate::join::report::JoinTimes;
use crate::load::table::mebibytes;

/// The simulator process's own memory (agents and the shared store).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SimMemory {
    /// `VmRSS` before the clusters started (the store, empty, and the runtimes), bytes.
    pub before_bytes: u64,
    /// `VmRSS` when all were Joined and Available, bytes.
    pub joined_bytes: u64,
    /// `VmRSS` at the end (after churn and `--hold`), bytes.
    pub end_bytes: u64,
    /// `VmHWM` at the end, bytes.
    pub peak_bytes: u64,
}

impl SimMemory {
    /// (joined − before) / clusters, bytes.
    pub fn per_cluster_bytes(&self, clusters: usize) -> u64 {
        self.joined_bytes.saturating_sub(self.before_bytes) / clusters.max(1) as u64
    }
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The hub.
    pub hub: String,
    /// Simulated clusters.
    pub clusters: usize,
    /// Whether the work agents ran.
    pub work_agents: bool,
    /// The registration agents' status period, seconds.
    pub healthcheck_period_s: f64,
    /// First cluster start → last cluster Joined and Available, seconds.
    pub all_joined_s: f64,
    /// Per-cluster milestones.
    pub per_cluster: JoinTimes,
    /// The simulator's own memory.
    pub memory: SimMemory,
    /// (joined − before) / clusters, bytes.
    pub memory_per_cluster_bytes: u64,
    /// The hub's processes (hub, controllers, `--server-pid`s).
    pub hub_processes: Vec<ProcessMemory>,
    /// `--pause`: leases stopped, then back.
    pub pause: Option<ChurnStep>,
    /// `--remove`: clusters gone for good.
    pub remove: Option<ChurnStep>,
    /// `--rotate-every`: CSRs per cluster at the end (1 = never rotated).
    pub csrs_per_cluster: Option<CsrCounts>,
    /// Registration agent runs that failed (and were run again).
    pub agent_failed_runs: usize,
    /// Registration agent runs that ended to bootstrap again.
    pub agent_rebootstraps: usize,
}

impl Report {
    /// The report as text.
    pub fn render_text(&self) -> String {
        let mut out = format!(
            "fleet-sim: {} simulated clusters ({}, healthcheck period {} s) joining {}\n\n",
            self.clusters,
            if self.work_agents {
                "registration + work agents"
            } else {
                "registration agents"
            },
            self.healthcheck_period_s,
            self.hub
        );
        out += &format!(
            "all Joined and Available after {:.1} s (per cluster p50 {:.1} s, p99 {:.1} s); agent runs failed {}, re-bootstrapped {}\n\n",
            self.all_joined_s,
            self.per_cluster.available.p50_s,
            self.per_cluster.available.p99_s,
            self.agent_failed_runs,
            self.agent_rebootstraps
        );
        out += &format!(
            "simulator memory: {} before the clusters, {} all joined, {} at the end, peak {}; {:.1} KiB per cluster\n\n",
            mebibytes(self.memory.before_bytes),
            mebibytes(self.memory.joined_bytes),
            mebibytes(self.memory.end_bytes),
            mebibytes(self.memory.peak_bytes),
            self.memory_per_cluster_bytes as f64 / 1024.0
        );
        out += &ProcessMemory::table("hub process", &self.hub_processes);
        for (name, step) in [("paused", self.pause), ("removed", self.remove)] {
            if let Some(step) = step {
                out += &format!(
                    "\n{} {name}: all not Available after {:.1} s",
                    step.clusters, step.unavailable_after_s
                );
                if let Some(again) = step.available_again_after_s {
                    out += &format!(", Available again {again:.1} s after resuming");
                }
            }
        }
        if let Some(csrs) = self.csrs_per_cluster {
            out += &format!(
                "\ncertificates signed per cluster (bootstrap + rotations): min {}, max {}, total {}",
                csrs.min, csrs.max, csrs.total
            );
        }
        out
    }

    /// The report as pretty JSON.
    pub fn render_json(&self) -> Result<String, SimRunError> {
        Ok(serde_json::to_string_pretty(self)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_memory_per_cluster_and_churn() {
        let memory = SimMemory {
            before_bytes: 100 << 20,
            joined_bytes: 200 << 20,
            end_bytes: 210 << 20,
            peak_bytes: 220 << 20,
        };
        let report = Report {
            hub: "test hub".into(),
            clusters: 1024,
            work_agents: true,
            healthcheck_period_s: 60.0,
            all_joined_s: 12.0,
            per_cluster: JoinTimes::default(),
            memory,
            memory_per_cluster_bytes: memory.per_cluster_bytes(1024),
            hub_processes: Vec::new(),
            pause: Some(ChurnStep {
                clusters: 3,
                unavailable_after_s: 6.0,
                available_again_after_s: Some(2.0),
            }),
            remove: None,
            csrs_per_cluster: Some(CsrCounts {
                min: 2,
                max: 3,
                total: 2500,
            }),
            agent_failed_runs: 0,
            agent_rebootstraps: 0,
        };
        assert_eq!(report.memory_per_cluster_bytes, 100 * 1024);
        let text = report.render_text();
        assert!(text.contains("100.0 KiB per cluster"), "{text}");
        assert!(text.contains("3 paused: all not Available after 6.0 s, Available again 2.0 s"));
        assert!(text.contains("min 2, max 3"));
        let json: serde_json::Value = serde_json::from_str(&report.render_json().unwrap()).unwrap();
        assert_eq!(json["memory_per_cluster_bytes"], 100 * 1024);
        assert_eq!(json["remove"], serde_json::Value::Null);
    }
}
