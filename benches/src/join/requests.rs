//! The hub's API requests, from its audit log ([`crate::audit`]), tallied by client (bootstrapping
//! agent, agent, hub controllers), verb and resource.

use std::path::Path;

use serde::Serialize;

use super::JoinError;
use super::hub::BOOTSTRAP_USER;
use crate::audit;

pub use crate::audit::log_length;

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

/// Requests of one (verb, resource) by client.
pub type Row = audit::Row<Client>;

/// The tally of a part of the audit log.
pub type Requests = audit::RequestTally<Client>;

impl audit::RequestTally<Client> {
    /// Tallies audit `lines`.
    pub fn tally<'a>(lines: impl IntoIterator<Item = &'a str>) -> Self {
        Self::tally_by(lines, Client::of)
    }

    /// Tallies the lines of the audit log at `path` from byte `offset` on.
    pub fn read(path: &Path, offset: u64) -> Result<Self, JoinError> {
        Self::read_by(path, offset, Client::of).map_err(|source| JoinError::File {
            what: "reading the audit log",
            path: path.display().to_string(),
            source,
        })
    }
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
