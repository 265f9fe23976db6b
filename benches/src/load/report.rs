//! The report: the measured phases as one table (or JSON), the memory reading and remarks.

use serde::Serialize;

use super::LoadError;
use super::options::Options;
use super::rss::Memory;
use super::stats::Summary;
use super::table::{Align, Table, mebibytes, millis, rate, thousands};

/// The server's resident memory with many objects stored.
#[derive(Debug, Clone, Serialize)]
pub struct RssReport {
    /// ConfigMaps stored when `loaded` was read (besides the few built-in objects).
    pub objects: usize,
    /// Payload bytes of each.
    pub object_size: usize,
    /// Whose memory was read and how.
    pub measured: String,
    /// Right after the server started (for `in-process`: the harness before it started the server).
    pub idle: Memory,
    /// With the objects stored.
    pub loaded: Memory,
}

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// When the run started (RFC 3339, UTC).
    pub date: String,
    /// The server under test.
    pub target: String,
    /// Its URL.
    pub url: String,
    /// CPUs available to the harness.
    pub cpus: usize,
    /// The load average (1, 5, 15 minutes) when the run started, if readable.
    pub load_average: Option<String>,
    /// The options of the run.
    pub options: Options,
    /// One entry per phase.
    pub results: Vec<Summary>,
    /// The memory phase.
    pub rss: Option<RssReport>,
    /// Remarks: what a phase measured exactly, errors, skipped phases.
    pub notes: Vec<String>,
    /// Wall-clock seconds of the whole run.
    pub total_seconds: f64,
}

impl Report {
    /// The phases as a table.
    pub fn table(&self) -> Table {
        let mut table = Table::new(&[
            ("operation", Align::Left),
            ("count", Align::Right),
            ("concurrency", Align::Right),
            ("ops/s", Align::Right),
            ("p50 ms", Align::Right),
            ("p99 ms", Align::Right),
            ("max ms", Align::Right),
            ("errors", Align::Right),
        ]);
        for r in &self.results {
            table.push(vec![
                r.operation.clone(),
                thousands(r.count as u64),
                r.concurrency.to_string(),
                rate(r.ops_per_second),
                millis(r.p50_ms),
                millis(r.p99_ms),
                millis(r.max_ms),
                thousands(r.errors as u64),
            ]);
        }
        table
    }

    /// The report as text: a heading, the table, the memory reading and the notes.
    pub fn render_text(&self) -> String {
        let mut out = format!("apiserver-load: {} at {}\n", self.target, self.url);
        out.push_str(&format!("{}, {} CPUs", self.date, self.cpus));
        if let Some(load) = &self.load_average {
            out.push_str(&format!(", load average {load}"));
        }
        out.push_str(&format!(
            ", object payload {} B, total {:.0} s\n\n",
            self.options.object_size, self.total_seconds
        ));
        out.push_str(&self.table().render());
        if let Some(rss) = &self.rss {
            out.push_str(&format!(
                "\nresident memory with {} ConfigMaps stored: {} (peak {}; {} idle)\n  measured: {}\n",
                thousands(rss.objects as u64),
                mebibytes(rss.loaded.rss_bytes),
                mebibytes(rss.loaded.peak_bytes),
                mebibytes(rss.idle.rss_bytes),
                rss.measured,
            ));
        }
        if !self.notes.is_empty() {
            out.push_str("\nnotes:\n");
            for note in &self.notes {
                out.push_str(&format!("- {note}\n"));
            }
        }
        out
    }

    /// The report as pretty JSON.
    pub fn render_json(&self) -> Result<String, LoadError> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::stats::Summary;
    use std::time::Duration;

    fn report() -> Report {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        Report {
            date: "2026-01-01T00:00:00Z".into(),
            target: "embedded ocm-controlplane (in memory)".into(),
            url: "https://127.0.0.1:1234".into(),
            cpus: 2,
            load_average: Some("0.10 0.20 0.30".into()),
            options: Options::default(),
            results: vec![
                Summary::of("create", 16, &samples, 0, Duration::from_secs(2)),
                Summary::of(
                    "list (10,000 objects)",
                    2,
                    &samples[..10],
                    1,
                    Duration::from_secs(1),
                ),
            ],
            rss: Some(RssReport {
                objects: 100_000,
                object_size: 256,
                measured: "child process".into(),
                idle: Memory {
                    rss_bytes: 10 * 1024 * 1024,
                    peak_bytes: 10 * 1024 * 1024,
                },
                loaded: Memory {
                    rss_bytes: 200 * 1024 * 1024,
                    peak_bytes: 256 * 1024 * 1024,
                },
            }),
            notes: vec!["a note".into()],
            total_seconds: 12.3,
        }
    }

    #[test]
    fn the_text_report_has_the_table_memory_and_notes() {
        let text = report().render_text();
        let expected = "\
apiserver-load: embedded ocm-controlplane (in memory) at https://127.0.0.1:1234
2026-01-01T00:00:00Z, 2 CPUs, load average 0.10 0.20 0.30, object payload 256 B, total 12 s

operation              count  concurrency  ops/s  p50 ms  p99 ms  max ms  errors
create                   100           16   50.0   50.00   99.00   100.0       0
list (10,000 objects)     10            2   10.0    5.00   10.00   10.00       1

resident memory with 100,000 ConfigMaps stored: 200.0 MiB (peak 256.0 MiB; 10.0 MiB idle)
  measured: child process

notes:
- a note
";
        assert_eq!(text, expected);
    }

    #[test]
    fn the_json_report_names_every_figure() {
        let json: serde_json::Value = serde_json::from_str(&report().render_json().unwrap()).unwrap();
        assert_eq!(json["results"][0]["operation"], "create");
        assert_eq!(json["results"][0]["ops_per_second"], 50.0);
        assert_eq!(json["results"][0]["p99_ms"], 99.0);
        assert_eq!(json["results"][1]["errors"], 1);
        assert_eq!(json["rss"]["loaded"]["rss_bytes"], 200 * 1024 * 1024);
        assert_eq!(json["options"]["concurrency"], 16);
        assert_eq!(json["cpus"], 2);
    }
}
