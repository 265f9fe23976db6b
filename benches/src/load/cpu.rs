//! CPU time of a process, from the `utime` and `stime` fields of `/proc/<pid>/stat` (every thread
//! of the process, those already ended included).

use std::time::Duration;

use super::LoadError;

/// Clock ticks per second of `/proc/<pid>/stat` (`USER_HZ`: 100 in the Linux ABI on every
/// architecture this runs on).
const TICKS_PER_SECOND: u64 = 100;

/// User plus system time of a `/proc/<pid>/stat` line; `None` when the line is malformed.
pub fn parse_stat(stat: &str) -> Option<Duration> {
    // The command name (field 2) is in parentheses and may hold spaces: count from its end.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); utime and stime are fields 14 and 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let ticks = utime + stime;
    Some(Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND))
}

/// The CPU time process `pid` (this process for `None`) has used so far.
pub fn read(pid: Option<u32>) -> Result<Duration, LoadError> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| LoadError::ReadCpu {
        what: path.clone(),
        message: e.to_string(),
    })?;
    parse_stat(&text).ok_or_else(|| LoadError::ReadCpu {
        what: path,
        message: "no utime and stime fields".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_and_system_ticks_are_summed_past_a_name_with_spaces() {
        let stat = "4242 (ocm hub (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 9 0 \
                    1000 1000000 2000 18446744073709551615";
        assert_eq!(parse_stat(stat), Some(Duration::from_millis(3800)));
        assert_eq!(parse_stat("4242 (x) S 1 2"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_can_be_read() {
        let before = read(None).unwrap();
        assert!(read(None).unwrap() >= before);
    }
}
