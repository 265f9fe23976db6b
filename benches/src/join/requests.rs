//! The hub's API requests, from its audit log (`--audit-log-path`: one JSON line per request with
//! the user, verb, resource and response code), tallied by client, verb and resource.

use std::collections::BTreeMap;
use std::io::{BufRead, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::JoinError;
use super::hub::BOOTSTRAP_USER;

/// Who sent a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Client {
    /// An agent with the bootstrap token (before it has its own certificate).
    AgentBootstrap,
    /// An agent with its cluster's certificate (`system:open-cluster-management:<cluster>:<agent>`).
    Agent,
    /// Everyone else: the hub controllers and the harness (both admin).
    HubControllers,
}

impl Client {
    /// The client of a request by `user`.
    pub fn of(user: &str) -> Self {
        if user == BOOTSTRAP_USER {
            Client::AgentBootstrap
        } else if user
            .strip_prefix("system:open-cluster-management:")
            .is_some_and(|rest| rest.contains(':'))
        {
            Client::Agent
        } else {
            Client::HubControllers
        }
    }

    /// The report's name for it.
    pub fn label(self) -> &'static str {
        match self {
            Client::AgentBootstrap => "agents (bootstrap token)",
            Client::Agent => "agents (cluster certificate)",
            Client::HubControllers => "hub controllers + harness",
        }
    }
}

/// The fields of an audit line the tally needs.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AuditLine {
    user: String,
    verb: String,
    resource: String,
    subresource: String,
    code: u16,
}

/// Requests of one (verb, resource) by client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Row {
    /// The authorizer's verb (`get`, `list`, `watch`, `create`, `update`, `patch`, ...).
    pub verb: String,
    /// `resource` or `resource/subresource` (empty for non-resource paths).
    pub resource: String,
    /// Requests by client.
    pub by_client: BTreeMap<Client, u64>,
    /// All of them.
    pub total: u64,
}

/// The tally of a part of the audit log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Requests {
    /// Every request.
    pub total: u64,
    /// Requests by client.
    pub by_client: BTreeMap<Client, u64>,
    /// Requests answered with a 4xx or 5xx code, by client.
    pub failed_by_client: BTreeMap<Client, u64>,
    /// By verb and resource, most requests first.
    pub rows: Vec<Row>,
    /// Lines that were not audit JSON.
    pub unreadable_lines: u64,
}

impl Requests {
    /// Tallies audit `lines`.
    pub fn tally<'a>(lines: impl IntoIterator<Item = &'a str>) -> Self {
        let mut out = Requests::default();
        let mut rows: BTreeMap<(String, String), Row> = BTreeMap::new();
        for line in lines {
            if line.trim().is_empty() {
                continue;
            }
            let Ok(entry) = serde_json::from_str::<AuditLine>(line) else {
                out.unreadable_lines += 1;
                continue;
            };
            let client = Client::of(&entry.user);
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
                    ..Row::default()
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
    pub fn read(path: &Path, offset: u64) -> Result<Self, JoinError> {
        let file_error = |source| JoinError::File {
            what: "reading the audit log",
            path: path.display().to_string(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(file_error)?;
        file.seek(SeekFrom::Start(offset)).map_err(file_error)?;
        let lines: Vec<String> = std::io::BufReader::new(file)
            .lines()
            .collect::<Result<_, _>>()
            .map_err(file_error)?;
        Ok(Self::tally(lines.iter().map(String::as_str)))
    }
}

/// The audit log's length now (where the next phase's lines start); 0 when it does not exist yet.
pub fn log_length(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_told_apart_by_user() {
        assert_eq!(Client::of(BOOTSTRAP_USER), Client::AgentBootstrap);
        assert_eq!(
            Client::of("system:open-cluster-management:c1:agent1"),
            Client::Agent
        );
        assert_eq!(
            Client::of("system:open-cluster-management:c1"),
            Client::HubControllers
        );
        assert_eq!(Client::of("admin"), Client::HubControllers);
    }

    #[test]
    fn lines_are_tallied_by_client_verb_and_resource() {
        let lines = [
            r#"{"user":"admin","verb":"patch","resource":"managedclusters","code":200}"#,
            r#"{"user":"admin","verb":"patch","resource":"managedclusters","code":409}"#,
            r#"{"user":"system:open-cluster-management:c:a","verb":"patch","resource":"managedclusters","subresource":"status","code":200}"#,
            r#"{"user":"system:serviceaccount:open-cluster-management:agent-registration-bootstrap","verb":"create","resource":"certificatesigningrequests","code":201}"#,
            "not json",
            "",
        ];
        let t = Requests::tally(lines);
        assert_eq!(t.total, 4);
        assert_eq!(t.unreadable_lines, 1);
        assert_eq!(t.by_client[&Client::HubControllers], 2);
        assert_eq!(t.failed_by_client[&Client::HubControllers], 1);
        assert_eq!(t.rows[0].verb, "patch");
        assert_eq!(t.rows[0].resource, "managedclusters");
        assert_eq!(t.rows[0].total, 2);
        assert!(
            t.rows
                .iter()
                .any(|r| r.resource == "managedclusters/status" && r.by_client[&Client::Agent] == 1)
        );
    }
}
