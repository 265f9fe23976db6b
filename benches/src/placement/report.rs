//! The report of a placement run: as text tables or JSON.

use serde::Serialize;

use super::PlacementLoadError;
use crate::audit::RequestTally;
use crate::join::memory::ProcessMemory;
use crate::join::report::Spread;
use crate::load::table::{Align, Table, mebibytes, rate, thousands};

/// Who sent a request to the hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Requester {
    /// The placement controller (its ServiceAccount).
    Controller,
    /// Everyone else: the harness (admin).
    Harness,
}

impl Requester {
    /// The requester of a request by `user`, the controller being `controller_user`.
    pub fn of(user: &str, controller_user: &str) -> Self {
        if user == controller_user {
            Requester::Controller
        } else {
            Requester::Harness
        }
    }
}

/// Requests to the hub in one phase.
pub type Requests = RequestTally<Requester>;

/// The controller's resident memory over the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ControllerMemory {
    /// `VmRSS` once it decided the first placement, before the measured ones, bytes.
    pub ready_bytes: u64,
    /// `VmRSS` when the last placement was decided, bytes.
    pub done_bytes: u64,
    /// `VmHWM` then: the largest resident set of its life, bytes.
    pub peak_bytes: u64,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The placement controller under test.
    pub controller: String,
    /// The hub.
    pub hub: String,
    /// ManagedClusters.
    pub clusters: usize,
    /// Placements created.
    pub placements: usize,
    /// Clusters per placement.
    pub select: usize,
    /// Objects the harness created at a time.
    pub create_concurrency: usize,
    /// Seconds the harness took to create the clusters, their namespaces and scores.
    pub fleet_s: f64,
    /// Seconds from the controller's start until it decided a first placement.
    pub controller_ready_s: f64,
    /// Seconds the harness took to create every placement.
    pub create_s: f64,
    /// Seconds from the first create until every placement was decided.
    pub all_decided_s: f64,
    /// Placements decided per second, over `all_decided_s`.
    pub placements_per_s: f64,
    /// Per placement, its create → decisions with `select` clusters and PlacementSatisfied.
    pub latency: Spread,
    /// Hub requests from the first create until every placement was decided (with an audit log).
    pub requests: Option<Requests>,
    /// The controller's resident memory.
    pub controller_memory: ControllerMemory,
    /// The controller's CPU time from the first create until every placement was decided, seconds.
    pub controller_cpu_s: f64,
    /// The hub's resident memory, when it is a child process (start: when the controller was
    /// ready; end: when every placement was decided).
    pub hub_memory: Vec<ProcessMemory>,
}

impl Report {
    /// The controller's hub requests per placement (with an audit log).
    pub fn requests_per_placement(&self) -> Option<f64> {
        self.requests
            .as_ref()
            .map(|r| r.of(Requester::Controller) as f64 / self.placements.max(1) as f64)
    }

    /// The report as text; `top` (verb, resource) rows in the request table.
    pub fn render_text(&self, top: usize) -> String {
        let n = self.placements.max(1) as f64;
        let mut out = format!(
            "placement-load: {} placements × {} of {} clusters (Exact: AddOn score, \
             ResourceAllocatableCPU, Balance)\ncontroller: {}\nhub: {}\n\n",
            thousands(self.placements as u64),
            self.select,
            thousands(self.clusters as u64),
            self.controller,
            self.hub,
        );
        out += &format!(
            "clusters created in {:.1} s; controller ready (first placement decided) after {:.1} s\n\
             placements created in {:.2} s ({} at a time)\n\
             all placements decided after {:.2} s: {} placements/s\n\n",
            self.fleet_s,
            self.controller_ready_s,
            self.create_s,
            self.create_concurrency,
            self.all_decided_s,
            rate(self.placements_per_s),
        );
        let mut t = Table::new(&[
            ("per placement, since its create", Align::Left),
            ("p50 s", Align::Right),
            ("p90 s", Align::Right),
            ("p99 s", Align::Right),
            ("max s", Align::Right),
        ]);
        let s = self.latency;
        t.push(vec![
            "decided and PlacementSatisfied".into(),
            format!("{:.2}", s.p50_s),
            format!("{:.2}", s.p90_s),
            format!("{:.2}", s.p99_s),
            format!("{:.2}", s.max_s),
        ]);
        out += &t.render();
        out += "\n";
        match &self.requests {
            Some(requests) => {
                let controller = requests.of(Requester::Controller);
                out += &format!(
                    "the controller's hub requests: {} ({} per placement, {} failed)\n",
                    thousands(controller),
                    rate(controller as f64 / n),
                    thousands(requests.failed_of(Requester::Controller)),
                );
                let mut t = Table::new(&[
                    ("verb", Align::Left),
                    ("resource", Align::Left),
                    ("count", Align::Right),
                    ("per placement", Align::Right),
                ]);
                let rows = requests
                    .rows
                    .iter()
                    .filter(|r| r.by_client.contains_key(&Requester::Controller));
                for row in rows.take(top) {
                    let count = row.by_client.get(&Requester::Controller).copied().unwrap_or(0);
                    t.push(vec![
                        row.verb.clone(),
                        row.resource.clone(),
                        thousands(count),
                        format!("{:.2}", count as f64 / n),
                    ]);
                }
                out += &t.render();
            }
            None => out += "hub requests: not counted (the hub has no audit log the harness reads)\n",
        }
        out += "\n";
        let mut t = Table::new(&[
            ("the controller", Align::Left),
            ("RSS when ready", Align::Right),
            ("RSS when done", Align::Right),
            ("peak (VmHWM)", Align::Right),
            ("CPU s", Align::Right),
        ]);
        t.push(vec![
            "resident memory, CPU time".into(),
            mebibytes(self.controller_memory.ready_bytes),
            mebibytes(self.controller_memory.done_bytes),
            mebibytes(self.controller_memory.peak_bytes),
            format!("{:.2}", self.controller_cpu_s),
        ]);
        out += &t.render();
        if !self.hub_memory.is_empty() {
            out += "\n";
            out += &ProcessMemory::table("hub", &self.hub_memory);
        }
        out
    }

    /// The report as pretty JSON.
    pub fn render_json(&self) -> Result<String, PlacementLoadError> {
        Ok(serde_json::to_string_pretty(self)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(requests: Option<Requests>) -> Report {
        Report {
            controller: "test controller".into(),
            hub: "test hub".into(),
            clusters: 100,
            placements: 4,
            select: 10,
            create_concurrency: 16,
            fleet_s: 1.0,
            controller_ready_s: 0.5,
            create_s: 0.1,
            all_decided_s: 2.0,
            placements_per_s: 2.0,
            latency: Spread::default(),
            requests,
            controller_memory: ControllerMemory {
                ready_bytes: 1 << 20,
                done_bytes: 2 << 20,
                peak_bytes: 3 << 20,
            },
            controller_cpu_s: 0.25,
            hub_memory: vec![],
        }
    }

    #[test]
    fn the_report_names_rates_requests_and_memory() {
        let controller = |user: &str| Requester::of(user, "sa");
        let hub = Requests::tally_by(
            [
                r#"{"user":"sa","verb":"create","resource":"placementdecisions","code":201}"#,
                r#"{"user":"sa","verb":"patch","resource":"placements","subresource":"status","code":409}"#,
                r#"{"user":"admin","verb":"create","resource":"placements","code":201}"#,
            ],
            controller,
        );
        let r = report(Some(hub));
        assert_eq!(r.requests_per_placement(), Some(0.5));
        let text = r.render_text(10);
        assert!(text.contains("4 placements × 10 of 100 clusters"), "{text}");
        assert!(
            text.contains("all placements decided after 2.00 s: 2.0 placements/s"),
            "{text}"
        );
        assert!(text.contains("placements/status"), "{text}");
        assert!(text.contains("2 (0.5 per placement, 1 failed)"), "{text}");
        assert!(
            !text.lines().any(|l| l.starts_with("create  placements ")),
            "the harness's rows are not the controller's: {text}"
        );
        assert!(text.contains("3.0 MiB"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&r.render_json().unwrap()).unwrap();
        assert_eq!(json["requests"]["by_client"]["controller"], 2);
        assert_eq!(json["requests"]["failed_by_client"]["controller"], 1);
        assert_eq!(json["controller_memory"]["peak_bytes"], 3 << 20);
    }

    #[test]
    fn without_an_audit_log_requests_are_not_counted() {
        let r = report(None);
        assert_eq!(r.requests_per_placement(), None);
        assert!(r.render_text(10).contains("not counted"));
        let json: serde_json::Value = serde_json::from_str(&r.render_json().unwrap()).unwrap();
        assert!(json["requests"].is_null());
    }
}
