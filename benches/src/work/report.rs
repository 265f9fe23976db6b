//! The report of a work run: as text tables or JSON.

use serde::Serialize;

use super::WorkError;
use super::options::Until;
use crate::audit::RequestTally;
use crate::join::memory::ProcessMemory;
use crate::join::report::Spread;
use crate::load::table::{Align, Table, mebibytes, rate, thousands};

/// Who sent a request to a control plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Requester {
    /// The work agent (its ServiceAccount).
    Agent,
    /// Everyone else: the harness (admin).
    Harness,
}

impl Requester {
    /// The requester of a request by `user`, the agent being `agent_user`.
    pub fn of(user: &str, agent_user: &str) -> Self {
        if user == agent_user {
            Requester::Agent
        } else {
            Requester::Harness
        }
    }
}

/// Requests to one control plane in one phase.
pub type Requests = RequestTally<Requester>;

/// The agent's requests in one phase, to the hub and to the spoke.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PhaseRequests {
    /// To the hub.
    pub hub: Requests,
    /// To the spoke.
    pub spoke: Requests,
}

/// The agent's resident memory over the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AgentMemory {
    /// `VmRSS` once it watched the works, before any was created, bytes.
    pub idle_bytes: u64,
    /// `VmRSS` when the last work was Available, bytes.
    pub done_bytes: u64,
    /// `VmRSS` after the settle period, bytes.
    pub steady_bytes: u64,
    /// `VmHWM` at the end: the largest resident set of its life, bytes.
    pub peak_bytes: u64,
}

/// CPU time used by a process, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuTime {
    /// From the first create to the last work Available.
    pub apply_s: f64,
    /// Over the settle period.
    pub settle_s: f64,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The agent under test.
    pub agent: String,
    /// The hub and the spoke.
    pub control_planes: String,
    /// ManifestWorks created.
    pub works: usize,
    /// ConfigMaps per work.
    pub manifests_per_work: usize,
    /// Payload bytes per ConfigMap.
    pub configmap_bytes: usize,
    /// Seconds from the agent's start until it watched the hub's works and the spoke's
    /// AppliedManifestWorks.
    pub agent_ready_s: f64,
    /// Seconds the harness took to create every work.
    pub create_s: f64,
    /// Seconds from the first create until every ConfigMap existed on the spoke.
    pub all_manifests_s: f64,
    /// Seconds from the first create until every work was Applied.
    pub all_applied_s: f64,
    /// What ended the apply phase.
    pub until: Until,
    /// Seconds from the first create to the end of the apply phase.
    pub apply_s: f64,
    /// Works Available at the end of the apply phase.
    pub available: usize,
    /// Seconds from the first create until every work was Available, if they all were.
    pub all_available_s: Option<f64>,
    /// ConfigMaps on the spoke per second, over `all_manifests_s`.
    pub manifests_per_s: f64,
    /// Per work, its create → Applied.
    pub applied_latency: Spread,
    /// Per work, its create → Available.
    pub available_latency: Spread,
    /// Requests from the first create to the end of the apply phase.
    pub apply_requests: PhaseRequests,
    /// The settle period, seconds.
    pub settle_s: f64,
    /// Requests over the settle period.
    pub settle_requests: PhaseRequests,
    /// The agent's resident memory.
    pub agent_memory: AgentMemory,
    /// The agent's CPU time.
    pub agent_cpu: CpuTime,
    /// The control planes' resident memory (start: when the agent watched; end: after settling).
    pub control_plane_memory: Vec<ProcessMemory>,
}

impl Report {
    /// Manifests in all works.
    pub fn manifests(&self) -> usize {
        self.works * self.manifests_per_work
    }

    /// The agent's hub requests per work while applying.
    pub fn hub_requests_per_work(&self) -> f64 {
        self.apply_requests.hub.of(Requester::Agent) as f64 / self.works.max(1) as f64
    }

    /// The report as text; `top` (verb, resource) rows per table.
    pub fn render_text(&self, top: usize) -> String {
        let n = self.works.max(1) as f64;
        let mut out = format!(
            "work-load: {} works × {} ConfigMaps of {} B = {} manifests\nagent: {}\ncontrol planes: {}\n\n",
            thousands(self.works as u64),
            self.manifests_per_work,
            self.configmap_bytes,
            thousands(self.manifests() as u64),
            self.agent,
            self.control_planes,
        );
        out += &format!(
            "agent watching after {:.1} s; works created in {:.2} s\n\
             all ConfigMaps on the spoke after {:.2} s: {} manifests/s\n\
             all works Applied after {:.2} s; {}\n\n",
            self.agent_ready_s,
            self.create_s,
            self.all_manifests_s,
            rate(self.manifests_per_s),
            self.all_applied_s,
            match self.all_available_s {
                Some(s) => format!("all Available after {s:.2} s"),
                None => format!(
                    "{} of {} Available when the apply phase ended (--until applied) after {:.2} s",
                    self.available, self.works, self.apply_s
                ),
            },
        );
        let mut t = Table::new(&[
            ("per work, since its create", Align::Left),
            ("p50 s", Align::Right),
            ("p90 s", Align::Right),
            ("p99 s", Align::Right),
            ("max s", Align::Right),
        ]);
        for (name, s) in [
            ("Applied", self.applied_latency),
            ("Available", self.available_latency),
        ] {
            t.push(vec![
                name.into(),
                format!("{:.2}", s.p50_s),
                format!("{:.2}", s.p90_s),
                format!("{:.2}", s.p99_s),
                format!("{:.2}", s.max_s),
            ]);
        }
        out += &t.render();
        out += "\n";
        let mut t = Table::new(&[
            ("the agent's requests", Align::Left),
            ("hub", Align::Right),
            ("hub per work", Align::Right),
            ("hub failed", Align::Right),
            ("spoke", Align::Right),
            ("spoke per work", Align::Right),
            ("spoke failed", Align::Right),
        ]);
        let settle = format!("settle ({:.0} s idle)", self.settle_s);
        for (name, phase) in [
            ("apply (first create → done)", &self.apply_requests),
            (settle.as_str(), &self.settle_requests),
        ] {
            let hub = phase.hub.of(Requester::Agent);
            let spoke = phase.spoke.of(Requester::Agent);
            t.push(vec![
                name.into(),
                thousands(hub),
                rate(hub as f64 / n),
                thousands(phase.hub.failed_of(Requester::Agent)),
                thousands(spoke),
                rate(spoke as f64 / n),
                thousands(phase.spoke.failed_of(Requester::Agent)),
            ]);
        }
        out += &t.render();
        out += "\n";
        for (side, tally) in [
            ("hub", &self.apply_requests.hub),
            ("spoke", &self.apply_requests.spoke),
        ] {
            let heading = format!("{side} requests by the agent, apply");
            let mut t = Table::new(&[
                (heading.as_str(), Align::Left),
                ("resource", Align::Left),
                ("count", Align::Right),
                ("per work", Align::Right),
            ]);
            let rows = tally
                .rows
                .iter()
                .filter(|r| r.by_client.contains_key(&Requester::Agent));
            for row in rows.take(top) {
                let count = row.by_client.get(&Requester::Agent).copied().unwrap_or(0);
                t.push(vec![
                    row.verb.clone(),
                    row.resource.clone(),
                    thousands(count),
                    format!("{:.2}", count as f64 / n),
                ]);
            }
            out += &t.render();
            out += "\n";
        }
        let mut t = Table::new(&[
            ("the agent", Align::Left),
            ("idle RSS", Align::Right),
            ("peak (VmHWM)", Align::Right),
            ("RSS when done", Align::Right),
            ("steady RSS", Align::Right),
            ("CPU s, apply", Align::Right),
            ("CPU s, settle", Align::Right),
        ]);
        t.push(vec![
            "resident memory, CPU time".into(),
            mebibytes(self.agent_memory.idle_bytes),
            mebibytes(self.agent_memory.peak_bytes),
            mebibytes(self.agent_memory.done_bytes),
            mebibytes(self.agent_memory.steady_bytes),
            format!("{:.2}", self.agent_cpu.apply_s),
            format!("{:.2}", self.agent_cpu.settle_s),
        ]);
        out += &t.render();
        out += "\n";
        out += &ProcessMemory::table("control plane", &self.control_plane_memory);
        out
    }

    /// The report as pretty JSON.
    pub fn render_json(&self) -> Result<String, WorkError> {
        Ok(serde_json::to_string_pretty(self)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_rates_requests_per_work_and_memory() {
        let agent = |line: &str| Requester::of(line, "sa");
        let hub = Requests::tally_by(
            [
                r#"{"user":"sa","verb":"patch","resource":"manifestworks","subresource":"status","code":200}"#,
                r#"{"user":"sa","verb":"patch","resource":"manifestworks","subresource":"status","code":409}"#,
                r#"{"user":"admin","verb":"create","resource":"manifestworks","code":201}"#,
            ],
            agent,
        );
        let report = Report {
            agent: "test agent".into(),
            control_planes: "two".into(),
            works: 2,
            manifests_per_work: 10,
            configmap_bytes: 256,
            agent_ready_s: 0.5,
            create_s: 0.1,
            all_manifests_s: 4.0,
            all_applied_s: 4.5,
            until: Until::Available,
            apply_s: 5.0,
            available: 2,
            all_available_s: Some(5.0),
            manifests_per_s: 5.0,
            applied_latency: Spread::default(),
            available_latency: Spread::default(),
            apply_requests: PhaseRequests {
                hub,
                spoke: Requests::default(),
            },
            settle_s: 30.0,
            settle_requests: PhaseRequests::default(),
            agent_memory: AgentMemory {
                idle_bytes: 1 << 20,
                done_bytes: 2 << 20,
                steady_bytes: 2 << 20,
                peak_bytes: 3 << 20,
            },
            agent_cpu: CpuTime::default(),
            control_plane_memory: vec![],
        };
        assert_eq!(report.hub_requests_per_work(), 1.0);
        let text = report.render_text(10);
        assert!(
            text.contains("2 works × 10 ConfigMaps of 256 B = 20 manifests"),
            "{text}"
        );
        assert!(text.contains("manifests/s"), "{text}");
        assert!(text.contains("all Available after 5.00 s"), "{text}");
        assert!(text.contains("manifestworks/status"), "{text}");
        assert!(
            !text.lines().any(|l| l.starts_with("create")),
            "the harness's rows are not the agent's: {text}"
        );
        assert!(text.contains("3.0 MiB"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&report.render_json().unwrap()).unwrap();
        assert_eq!(json["apply_requests"]["hub"]["by_client"]["agent"], 2);
        assert_eq!(json["apply_requests"]["hub"]["failed_by_client"]["agent"], 1);
        assert_eq!(json["agent_memory"]["peak_bytes"], 3 << 20);
    }
}
