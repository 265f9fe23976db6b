//! Resident memory of a process, from the `VmRSS` and `VmHWM` lines of `/proc/<pid>/status`.

use serde::Serialize;

use super::LoadError;

/// Resident memory of one process (or the sum over several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Memory {
    /// Resident set size now (`VmRSS`), bytes.
    pub rss_bytes: u64,
    /// The largest resident set size so far (`VmHWM`), bytes.
    pub peak_bytes: u64,
}

impl std::ops::Add for Memory {
    type Output = Memory;
    fn add(self, other: Memory) -> Memory {
        Memory {
            rss_bytes: self.rss_bytes + other.rss_bytes,
            peak_bytes: self.peak_bytes + other.peak_bytes,
        }
    }
}

/// The value of a `Name:   1234 kB` line, in bytes.
fn kib_field(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix(':')?;
        let mut parts = rest.split_whitespace();
        let value: u64 = parts.next()?.parse().ok()?;
        match parts.next() {
            Some("kB") | None => Some(value * 1024),
            Some(_) => None,
        }
    })
}

/// The memory figures of a `/proc/<pid>/status` text; `None` without a `VmRSS` line.
pub fn parse_status(status: &str) -> Option<Memory> {
    let rss_bytes = kib_field(status, "VmRSS")?;
    let peak_bytes = kib_field(status, "VmHWM").unwrap_or(rss_bytes);
    Some(Memory {
        rss_bytes,
        peak_bytes,
    })
}

/// The memory of process `pid`, or of this process for `None`.
pub fn read(pid: Option<u32>) -> Result<Memory, LoadError> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| LoadError::ReadMemory {
        what: path.clone(),
        message: e.to_string(),
    })?;
    parse_status(&text).ok_or_else(|| LoadError::ReadMemory {
        what: path,
        message: "no VmRSS line".into(),
    })
}

/// The summed memory of `pids`.
pub fn read_sum(pids: &[u32]) -> Result<Memory, LoadError> {
    pids.iter()
        .try_fold(Memory::default(), |sum, pid| Ok(sum + read(Some(*pid))?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\tocm-controlplane\nVmPeak:\t  900000 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t3\n";

    #[test]
    fn status_lines_are_read_in_bytes() {
        assert_eq!(
            parse_status(STATUS),
            Some(Memory {
                rss_bytes: 10 * 1024 * 1024,
                peak_bytes: 20 * 1024 * 1024
            })
        );
    }

    #[test]
    fn a_status_without_rss_is_none_and_without_peak_uses_rss() {
        assert_eq!(parse_status("Name:\tx\n"), None);
        assert_eq!(
            parse_status("VmRSS:\t4 kB\n"),
            Some(Memory {
                rss_bytes: 4096,
                peak_bytes: 4096
            })
        );
        // A field whose name merely starts the same is not taken.
        assert_eq!(parse_status("VmRSSX:\t4 kB\n"), None);
        assert_eq!(parse_status("VmRSS:\t4 MB\n"), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_can_be_read() {
        let m = read(None).unwrap();
        assert!(m.rss_bytes > 0);
        assert!(m.peak_bytes >= m.rss_bytes);
        assert_eq!(read_sum(&[]).unwrap(), Memory::default());
    }
}
