//! Tallying an `ocm-controlplane` audit log (`--audit-log-path`: one JSON line per request with
//! the user, verb, resource and response code) by client, verb and resource. What a "client" is
//! belongs to the harness: it passes a function from the request's user to its own client kind.

use std::collections::BTreeMap;
use std::io::{BufRead, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The fields of an audit line a tally needs.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct AuditLine {
    /// The authenticated user.
    pub user: String,
    /// The authorizer's verb.
    pub verb: String,
    /// The resource (plural), empty for non-resource paths.
    pub resource: String,
    /// The subresource, if any.
    pub subresource: String,
    /// The HTTP status code of the answer.
    pub code: u16,
}

/// Requests of one (verb, resource) by client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row<K: Ord> {
    /// The authorizer's verb (`get`, `list`, `watch`, `create`, `update`, `patch`, ...).
    pub verb: String,
    /// `resource` or `resource/subresource` (empty for non-resource paths).
    pub resource: String,
    /// Requests by client.
    pub by_client: BTreeMap<K, u64>,
    /// All of them.
    pub total: u64,
}

/// The tally of a part of an audit log, by client kind `K`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestTally<K: Ord> {
    /// Every request.
    pub total: u64,
    /// Requests by client.
    pub by_client: BTreeMap<K, u64>,
    /// Requests answered with a 4xx or 5xx code, by client.
    pub failed_by_client: BTreeMap<K, u64>,
    /// By verb and resource, most requests first.
    pub rows: Vec<Row<K>>,
    /// Lines that were not audit JSON.
    pub unreadable_lines: u64,
}

impl<K: Ord> Default for RequestTally<K> {
    fn default() -> Self {
        Self {
            total: 0,
            by_client: BTreeMap::new(),
            failed_by_client: BTreeMap::new(),
            rows: Vec::new(),
            unreadable_lines: 0,
        }
    }
}

impl<K: Ord + Copy> RequestTally<K> {
    /// Tallies audit `lines`, the client of each request being `classify(user)`.
    pub fn tally_by<'a>(lines: impl IntoIterator<Item = &'a str>, classify: impl Fn(&str) -> K) -> Self {
        let mut out = Self::default();
        let mut rows: BTreeMap<(String, String), Row<K>> = BTreeMap::new();
        for line in lines {
            if line.trim().is_empty() {
                continue;
            }
            let Ok(entry) = serde_json::from_str::<AuditLine>(line) else {
                out.unreadable_lines += 1;
                continue;
            };
            let client = classify(&entry.user);
            let resource = if entry.subresource.is_empty() {
                entry.resource
            } else {
                format!("{}/{}", entry.resource, entry.subresource)
            };
            out.total += 1;
            *out.by_client.entry(client).or_default() += 1;
            if entry.code >= 400 {
                *out.failed_by_client.entry(client).or_default() += 1;
            }
            let row = rows
                .entry((entry.verb.clone(), resource.clone()))
                .or_insert_with(|| Row {
                    verb: entry.verb,
                    resource,
                    by_client: BTreeMap::new(),
                    total: 0,
                });
            row.total += 1;
            *row.by_client.entry(client).or_default() += 1;
        }
        out.rows = rows.into_values().collect();
        out.rows.sort_by(|a, b| {
            b.total
                .cmp(&a.total)
                .then_with(|| (&a.verb, &a.resource).cmp(&(&b.verb, &b.resource)))
        });
        out
    }

    /// Tallies the lines of the audit log at `path` from byte `offset` on.
    ///
    /// # Errors
    /// The file cannot be opened or read.
    pub fn read_by(path: &Path, offset: u64, classify: impl Fn(&str) -> K) -> std::io::Result<Self> {
        let lines = read_lines(path, offset)?;
        Ok(Self::tally_by(lines.iter().map(String::as_str), classify))
    }

    /// The requests of `client`.
    pub fn of(&self, client: K) -> u64 {
        self.by_client.get(&client).copied().unwrap_or(0)
    }

    /// The failed requests of `client`.
    pub fn failed_of(&self, client: K) -> u64 {
        self.failed_by_client.get(&client).copied().unwrap_or(0)
    }
}

/// The lines of the audit log at `path` from byte `offset` on.
///
/// # Errors
/// The file cannot be opened or read.
pub fn read_lines(path: &Path, offset: u64) -> std::io::Result<Vec<String>> {
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    std::io::BufReader::new(file).lines().collect()
}

/// The audit log's length now (where the next phase's lines start); 0 when it does not exist yet.
pub fn log_length(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_tallied_by_the_callers_client_kind() {
        let lines = [
            r#"{"user":"a","verb":"get","resource":"manifestworks","code":200}"#,
            r#"{"user":"b","verb":"get","resource":"manifestworks","code":404}"#,
            r#"{"user":"a","verb":"patch","resource":"manifestworks","subresource":"status","code":200}"#,
            "{",
        ];
        let t = RequestTally::tally_by(lines, |user| user == "a");
        assert_eq!((t.total, t.unreadable_lines), (3, 1));
        assert_eq!((t.of(true), t.of(false)), (2, 1));
        assert_eq!((t.failed_of(true), t.failed_of(false)), (0, 1));
        assert_eq!(t.rows[0].resource, "manifestworks");
        assert_eq!(t.rows[0].total, 2);
        assert_eq!(t.rows[1].resource, "manifestworks/status");
    }

    #[test]
    fn a_log_is_read_from_an_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        assert_eq!(log_length(&path), 0);
        let first = "{\"user\":\"a\",\"verb\":\"list\",\"resource\":\"x\",\"code\":200}\n";
        std::fs::write(&path, format!("{first}{first}")).unwrap();
        let t = RequestTally::read_by(&path, first.len() as u64, |_| ()).unwrap();
        assert_eq!(t.total, 1);
        assert_eq!(log_length(&path), 2 * first.len() as u64);
        assert!(RequestTally::read_by(&dir.path().join("missing"), 0, |_| ()).is_err());
    }
}
