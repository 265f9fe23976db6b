//! The report of a join run: as text tables or JSON.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::Serialize;

use super::JoinError;
use super::memory::ProcessMemory;
use super::progress::Milestones;
use super::requests::{Client, Requests};
use crate::load::stats::percentile;
use crate::load::table::{Align, Table, rate, thousands};

/// Percentiles of one milestone over the clusters, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spread {
    /// Median.
    pub p50_s: f64,
    /// 90th percentile.
    pub p90_s: f64,
    /// 99th percentile.
    pub p99_s: f64,
    /// The last cluster.
    pub max_s: f64,
}

impl Spread {
    /// The spread of `samples` (none: all zero).
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        let p = |q| percentile(&samples, q).map_or(0.0, |d| d.as_secs_f64());
        Self {
            p50_s: p(50.0),
            p90_s: p(90.0),
            p99_s: p(99.0),
            max_s: p(100.0),
        }
    }
}

/// The per-cluster milestones, spread over the clusters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct JoinTimes {
    /// Agent start → HubAcceptedManagedCluster.
    pub accepted: Spread,
    /// Agent start → ManagedClusterJoined.
    pub joined: Spread,
    /// Agent start → Joined and Available.
    pub available: Spread,
}

impl JoinTimes {
    /// The spreads of `milestones`.
    pub fn of(milestones: &HashMap<String, Milestones>) -> Self {
        let collect = |f: fn(&Milestones) -> Option<Duration>| milestones.values().filter_map(f).collect();
        Self {
            accepted: Spread::of(collect(|m| m.accepted)),
            joined: Spread::of(collect(|m| m.joined)),
            available: Spread::of(collect(|m| m.available)),
        }
    }
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The hub.
    pub hub: String,
    /// Agents started.
    pub agents: usize,
    /// Their status period, seconds.
    pub healthcheck_period_s: f64,
    /// Bootstrapping agents at a time (0: all).
    pub concurrency: usize,
    /// First agent start → last cluster Joined and Available, seconds.
    pub all_joined_s: f64,
    /// Per-cluster milestones.
    pub per_cluster: JoinTimes,
    /// Hub API requests from the first agent start to the last cluster Available.
    pub requests: Requests,
    /// Whether the requests were counted (an external hub has no audit log to count them in).
    pub requests_counted: bool,
    /// Resident memory of the processes.
    pub memory: Vec<ProcessMemory>,
    /// Agent runs that failed (and were run again).
    pub agent_failed_runs: usize,
    /// Agent runs that ended to bootstrap again.
    pub agent_rebootstraps: usize,
    /// Reconciliations of each hub controller over the whole run (from the controllers' start).
    pub reconciles: BTreeMap<String, u64>,
}

impl Report {
    /// Requests per cluster.
    pub fn requests_per_cluster(&self) -> f64 {
        self.requests.total as f64 / self.agents.max(1) as f64
    }

    /// The report as text; `top` (verb, resource) rows.
    pub fn render_text(&self, top: usize) -> String {
        let mut out = format!(
            "join-load: {} agents (healthcheck period {} s, {} bootstrapping at a time) joining {}\n\n",
            self.agents,
            self.healthcheck_period_s,
            if self.concurrency == 0 {
                "all".to_string()
            } else {
                self.concurrency.to_string()
            },
            self.hub
        );
        out += &format!(
            "all Joined and Available after {:.1} s; agent runs failed {}, re-bootstrapped {}\n\n",
            self.all_joined_s, self.agent_failed_runs, self.agent_rebootstraps
        );
        let mut t = Table::new(&[
            ("per cluster, since its agent started", Align::Left),
            ("p50 s", Align::Right),
            ("p90 s", Align::Right),
            ("p99 s", Align::Right),
            ("max s", Align::Right),
        ]);
        for (name, s) in [
            ("accepted", self.per_cluster.accepted),
            ("joined", self.per_cluster.joined),
            ("joined and available", self.per_cluster.available),
        ] {
            t.push(vec![
                name.into(),
                format!("{:.1}", s.p50_s),
                format!("{:.1}", s.p90_s),
                format!("{:.1}", s.p99_s),
                format!("{:.1}", s.max_s),
            ]);
        }
        out += &t.render();
        out += "\n";
        if self.requests_counted {
            out += &self.render_requests(top);
        }
        if !self.reconciles.is_empty() {
            out += &self.render_reconciles();
        }
        out += &ProcessMemory::table("resident memory", &self.memory);
        out
    }

    /// The reconciles of our hub controllers (an external command reports none).
    fn render_reconciles(&self) -> String {
        let n = self.agents.max(1) as f64;
        let mut t = Table::new(&[
            ("hub controller", Align::Left),
            ("reconciles", Align::Right),
            ("per cluster", Align::Right),
        ]);
        let mut reconciles: Vec<(&String, &u64)> = self.reconciles.iter().collect();
        reconciles.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        for (controller, count) in reconciles {
            t.push(vec![
                controller.clone(),
                thousands(*count),
                rate(*count as f64 / n),
            ]);
        }
        t.render() + "\n"
    }

    /// The request tables: by client, and the top `top` (verb, resource) rows.
    fn render_requests(&self, top: usize) -> String {
        let mut out = String::new();
        let clients = [Client::AgentBootstrap, Client::Agent, Client::HubControllers];
        let mut t = Table::new(&[
            ("hub requests", Align::Left),
            ("total", Align::Right),
            ("per cluster", Align::Right),
            ("failed (4xx/5xx)", Align::Right),
        ]);
        let n = self.agents.max(1) as f64;
        for client in clients {
            let count = self.requests.by_client.get(&client).copied().unwrap_or(0);
            let failed = self.requests.failed_by_client.get(&client).copied().unwrap_or(0);
            t.push(vec![
                client.label().into(),
                thousands(count),
                rate(count as f64 / n),
                thousands(failed),
            ]);
        }
        let failed: u64 = self.requests.failed_by_client.values().sum();
        t.push(vec![
            "all".into(),
            thousands(self.requests.total),
            rate(self.requests_per_cluster()),
            thousands(failed),
        ]);
        out += &t.render();
        out += "\n";
        let mut t = Table::new(&[
            ("verb", Align::Left),
            ("resource", Align::Left),
            ("agents (bootstrap)", Align::Right),
            ("agents", Align::Right),
            ("controllers", Align::Right),
            ("total", Align::Right),
        ]);
        for row in self.requests.rows.iter().take(top) {
            let by = |c| thousands(row.by_client.get(&c).copied().unwrap_or(0));
            t.push(vec![
                row.verb.clone(),
                row.resource.clone(),
                by(Client::AgentBootstrap),
                by(Client::Agent),
                by(Client::HubControllers),
                thousands(row.total),
            ]);
        }
        out += &t.render();
        out += "\n";
        out
    }

    /// The report as pretty JSON.
    pub fn render_json(&self) -> Result<String, JoinError> {
        Ok(serde_json::to_string_pretty(self)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_time_requests_reconciles_and_memory() {
        let requests = Requests::tally([
            r#"{"user":"admin","verb":"patch","resource":"clusterroles","code":200}"#,
            r#"{"user":"system:open-cluster-management:c:a","verb":"get","resource":"leases","code":200}"#,
        ]);
        let report = Report {
            hub: "test hub".into(),
            agents: 2,
            healthcheck_period_s: 60.0,
            concurrency: 0,
            all_joined_s: 12.5,
            per_cluster: JoinTimes::default(),
            requests,
            requests_counted: true,
            memory: vec![ProcessMemory {
                process: "hub".into(),
                start_bytes: 1 << 20,
                peak_bytes: 3 << 20,
                end_bytes: 2 << 20,
                cpu_s: 41.25,
            }],
            agent_failed_runs: 0,
            agent_rebootstraps: 0,
            reconciles: [("managednamespace".to_string(), 20)].into(),
        };
        let text = report.render_text(10);
        assert!(text.contains("all Joined and Available after 12.5 s"), "{text}");
        assert!(text.contains("clusterroles"));
        assert!(text.contains("managednamespace"));
        assert!(text.contains("3.0 MiB"));
        assert!(text.contains("41.2 s") || text.contains("41.3 s"), "{text}");
        assert_eq!(report.requests_per_cluster(), 1.0);
        let json: serde_json::Value = serde_json::from_str(&report.render_json().unwrap()).unwrap();
        assert_eq!(json["all_joined_s"], 12.5);
        assert_eq!(json["requests"]["by_client"]["agent"], 1);
        assert_eq!(json["reconciles"]["managednamespace"], 20);
    }

    #[test]
    fn spreads_use_nearest_rank_percentiles() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_secs).collect();
        let s = Spread::of(samples);
        assert_eq!((s.p50_s, s.p90_s, s.p99_s, s.max_s), (50.0, 90.0, 99.0, 100.0));
        assert_eq!(Spread::of(Vec::new()), Spread::default());
    }
}
