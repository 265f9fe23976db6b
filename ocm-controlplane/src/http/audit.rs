//! The audit log (`--audit-log-path`): one JSON line per request with the time, the user and
//! groups (after impersonation is not applied: the authenticated requester), the verb and
//! resource as the authorizer sees them, the path, the response code and the time the server took
//! to answer (`latencyMicros`, from the request's arrival to its response's start). A watch is
//! logged when its response starts.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::auth::Identity;
use crate::authorization::{Attributes, Target};

/// Appends audit lines to a file.
#[derive(Debug)]
pub struct AuditLog {
    file: Mutex<std::io::BufWriter<std::fs::File>>,
}

impl AuditLog {
    /// Opens (creating or appending to) the log file.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            file: Mutex::new(std::io::BufWriter::new(file)),
        })
    }

    /// One request.
    pub fn record(
        &self,
        identity: Option<&Identity>,
        method: &str,
        path: &str,
        attributes: &Attributes,
        code: u16,
        latency: std::time::Duration,
    ) {
        let mut line = entry(
            identity,
            method,
            path,
            attributes,
            code,
            &crate::fieldmanager::now_rfc3339(),
        );
        line["latencyMicros"] = json!(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let written = serde_json::to_writer(&mut *file, &line)
            .map_err(std::io::Error::other)
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.flush());
        if let Err(error) = written {
            tracing::warn!(%error, "could not write the audit log");
        }
    }
}

/// The JSON line of one request.
pub fn entry(
    identity: Option<&Identity>,
    method: &str,
    path: &str,
    attributes: &Attributes,
    code: u16,
    time: &str,
) -> Value {
    let mut line = json!({
        "time": time,
        "user": identity.map(|i| i.user.name.as_str()).unwrap_or_default(),
        "groups": identity.map(|i| i.user.groups.clone()).unwrap_or_default(),
        "method": method,
        "path": path,
        "verb": attributes.verb,
        "code": code,
    });
    if let Target::Resource {
        namespace,
        group,
        resource,
        subresource,
        name,
    } = &attributes.target
    {
        let fields = [
            ("namespace", namespace.clone().unwrap_or_default()),
            ("group", group.clone()),
            ("resource", resource.clone()),
            ("subresource", subresource.clone()),
            ("name", name.clone()),
        ];
        for (k, v) in fields {
            if !v.is_empty() {
                line[k] = json!(v);
            }
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;

    #[test]
    fn lines_name_user_verb_resource_and_code() {
        let identity = Identity::of(UserInfo {
            name: "alice".into(),
            groups: vec!["devs".into()],
        });
        let attributes = crate::authorization::request::attributes(
            "GET",
            "/api/v1/namespaces/a/configmaps/x",
            &Default::default(),
        );
        let line = entry(
            Some(&identity),
            "GET",
            "/api/v1/namespaces/a/configmaps/x",
            &attributes,
            403,
            "T",
        );
        assert_eq!(
            line,
            json!({"time": "T", "user": "alice", "groups": ["devs"], "method": "GET",
            "path": "/api/v1/namespaces/a/configmaps/x", "verb": "get", "code": 403,
            "namespace": "a", "resource": "configmaps", "name": "x"})
        );
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(&dir.path().join("audit.log")).unwrap();
        log.record(
            None,
            "GET",
            "/version",
            &crate::authorization::request::attributes("GET", "/version", &Default::default()),
            401,
            std::time::Duration::from_micros(1500),
        );
        log.record(
            Some(&identity),
            "GET",
            "/api",
            &crate::authorization::request::attributes("GET", "/api", &Default::default()),
            200,
            std::time::Duration::ZERO,
        );
        let text = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            (lines[0]["user"].as_str(), lines[0]["code"].as_u64()),
            (Some(""), Some(401))
        );
        assert_eq!(lines[0]["latencyMicros"], 1500);
        assert_eq!(lines[1]["user"], "alice");
    }
}
