//! CPU time of a process (user + system), from fields 14 and 15 of `/proc/<pid>/stat`.

use std::time::Duration;

/// Clock ticks per second of `/proc/<pid>/stat` (`USER_HZ`, 100 on every Linux architecture
/// the project builds for).
const TICKS_PER_SECOND: u64 = 100;

/// The user + system CPU time of a `/proc/<pid>/stat` line; `None` when it cannot be read.
pub fn parse_stat(stat: &str) -> Option<Duration> {
    // The command name (field 2) is in parentheses and may hold spaces: count from its end.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    // after_name starts at field 3 (state); utime and stime are fields 14 and 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = utime + stime;
    Some(Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND))
}

/// The CPU time process `pid` has used so far; `None` when it is gone.
pub fn read(pid: u32) -> Option<Duration> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_and_system_ticks_are_added() {
        let stat = "4242 (work agent) S 1 4242 4242 0 -1 4194304 1200 0 0 0 250 50 0 0 20 0 12 0 \
                    100 1000000 2000 18446744073709551615";
        assert_eq!(parse_stat(stat), Some(Duration::from_secs(3)));
        assert_eq!(parse_stat("4242 (x) S 1"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_can_be_read() {
        assert!(read(std::process::id()).is_some());
    }
}
