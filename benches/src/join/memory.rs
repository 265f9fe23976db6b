//! Resident memory of the processes of a run: read when the agents start and when the last
//! cluster is Available; the peak is the kernel's high-water mark (`VmHWM`) at the end, which
//! no sampling interval can miss. And the CPU time each used in between.

use serde::Serialize;

use super::JoinError;
use crate::load::rss;
use crate::load::table::{Align, Table, mebibytes};
use crate::work::cpu;

/// One process's memory over the join.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessMemory {
    /// What the process is.
    pub process: String,
    /// `VmRSS` when the agents started, bytes.
    pub start_bytes: u64,
    /// `VmHWM` at the end: the largest resident set of the process's life, bytes.
    pub peak_bytes: u64,
    /// `VmRSS` when the last cluster became Available, bytes.
    pub end_bytes: u64,
    /// CPU time (user and system) the process used from start to end, seconds.
    pub cpu_s: f64,
}

impl ProcessMemory {
    /// A table of `processes`' start, peak and end, its first column headed `heading`.
    #[must_use]
    pub fn table(heading: &str, processes: &[Self]) -> String {
        let mut t = Table::new(&[
            (heading, Align::Left),
            ("start", Align::Right),
            ("peak", Align::Right),
            ("end", Align::Right),
            ("CPU", Align::Right),
        ]);
        for m in processes {
            t.push(vec![
                m.process.clone(),
                mebibytes(m.start_bytes),
                mebibytes(m.peak_bytes),
                mebibytes(m.end_bytes),
                format!("{:.1} s", m.cpu_s),
            ]);
        }
        t.render()
    }
}

/// The CPU time process `pid` (this process for `None`) has used; zero once it is gone (its
/// memory reading, taken beside, reports that).
fn cpu_time(pid: Option<u32>) -> std::time::Duration {
    cpu::read(pid.unwrap_or_else(std::process::id)).unwrap_or_default()
}

/// The processes to watch and their first readings.
#[derive(Debug, Clone)]
pub struct MemoryWatch {
    processes: Vec<(String, Option<u32>, u64, std::time::Duration)>,
}

impl MemoryWatch {
    /// Reads the memory of `processes` (name, pid; `None` for this process) now.
    pub fn start(processes: Vec<(String, Option<u32>)>) -> Result<Self, JoinError> {
        let processes = processes
            .into_iter()
            .map(|(name, pid)| Ok((name, pid, rss::read(pid)?.rss_bytes, cpu_time(pid))))
            .collect::<Result<Vec<_>, JoinError>>()?;
        Ok(Self { processes })
    }

    /// Reads them again: start, peak and end of each.
    pub fn finish(&self) -> Result<Vec<ProcessMemory>, JoinError> {
        self.processes
            .iter()
            .map(|(name, pid, start_bytes, start_cpu)| {
                let now = rss::read(*pid)?;
                let cpu = cpu_time(*pid).saturating_sub(*start_cpu);
                Ok(ProcessMemory {
                    process: name.clone(),
                    start_bytes: *start_bytes,
                    peak_bytes: now.peak_bytes,
                    end_bytes: now.rss_bytes,
                    cpu_s: cpu.as_secs_f64(),
                })
            })
            .collect()
    }
}
