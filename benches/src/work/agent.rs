//! The work agent under test, in a child process of its own: by default this executable again
//! in its hidden child mode (`--agent-hub-kubeconfig …`, which runs `ocm_core::work::agent::run`
//! until standard input closes), or the command line of `--work-agent-cmd` with its
//! placeholders filled in. Its standard output and error go to a log file in the run's directory.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use super::WorkError;
use crate::audit::{AuditLine, read_lines};

/// The placeholders of `--work-agent-cmd`: the agent's hub kubeconfig, its spoke kubeconfig,
/// the cluster name, and a free loopback port (for an agent that serves metrics or health
/// checks, e.g. upstream's `--listen 127.0.0.1:{free_port}`).
pub const PLACEHOLDERS: [&str; 4] = [
    "{hub_kubeconfig}",
    "{spoke_kubeconfig}",
    "{cluster}",
    "{free_port}",
];

/// What the agent is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInputs {
    /// The agent's hub kubeconfig.
    pub hub_kubeconfig: PathBuf,
    /// The agent's spoke kubeconfig.
    pub spoke_kubeconfig: PathBuf,
    /// The managed cluster's name.
    pub cluster: String,
}

/// `template` split at whitespace with the placeholders replaced (`{free_port}` by `port`).
///
/// # Errors
/// The template is empty or holds an unknown `{placeholder}`.
pub fn command_line(template: &str, inputs: &AgentInputs, port: u16) -> Result<Vec<String>, WorkError> {
    let hub = inputs.hub_kubeconfig.display().to_string();
    let spoke = inputs.spoke_kubeconfig.display().to_string();
    let words: Vec<String> = template
        .split_whitespace()
        .map(|word| {
            let unknown = unknown_placeholder(word);
            match unknown {
                Some(p) => Err(WorkError::AgentCommand(format!(
                    "unknown placeholder {p} (known: {})",
                    PLACEHOLDERS.join(", ")
                ))),
                None => Ok(word
                    .replace(PLACEHOLDERS[0], &hub)
                    .replace(PLACEHOLDERS[1], &spoke)
                    .replace(PLACEHOLDERS[2], &inputs.cluster)
                    .replace(PLACEHOLDERS[3], &port.to_string())),
            }
        })
        .collect::<Result<_, _>>()?;
    if words.is_empty() {
        return Err(WorkError::AgentCommand("the command line is empty".into()));
    }
    Ok(words)
}

/// A loopback port nothing listens on now.
fn free_port() -> Result<u16, WorkError> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| WorkError::AgentCommand(format!("finding a free port: {e}")))
}

/// The first `{name}` in `word` (lowercase letters and `_`) that is not a placeholder.
fn unknown_placeholder(word: &str) -> Option<&str> {
    let mut rest = word;
    while let Some(open) = rest.find('{') {
        let after = &rest[open..];
        let close = after.find('}')?;
        let candidate = &after[..=close];
        let name = &candidate[1..candidate.len() - 1];
        if !name.is_empty()
            && name.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            && !PLACEHOLDERS.contains(&candidate)
        {
            return Some(candidate);
        }
        rest = &after[close + 1..];
    }
    None
}

/// The agent's running child process.
#[derive(Debug)]
pub struct AgentProcess {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    pid: u32,
    log: PathBuf,
    /// What the report calls the agent.
    pub description: String,
}

impl AgentProcess {
    /// Starts the agent: `command` (from `--work-agent-cmd`) or, without one, this executable in
    /// its child mode. Its output goes to `log`.
    pub fn spawn(command: Option<&str>, inputs: &AgentInputs, log: &Path) -> Result<Self, WorkError> {
        let (program, args, description) = match command {
            Some(template) => {
                let port = if template.contains(PLACEHOLDERS[3]) {
                    free_port()?
                } else {
                    0
                };
                let mut words = command_line(template, inputs, port)?;
                let program = words.remove(0);
                let description = format!("{program} (--work-agent-cmd)");
                (PathBuf::from(program), words, description)
            }
            None => {
                let exe = std::env::current_exe()
                    .map_err(|e| WorkError::Agent(format!("finding this executable: {e}")))?;
                let args = vec![
                    "--agent-hub-kubeconfig".to_string(),
                    inputs.hub_kubeconfig.display().to_string(),
                    "--agent-spoke-kubeconfig".to_string(),
                    inputs.spoke_kubeconfig.display().to_string(),
                    "--agent-cluster".to_string(),
                    inputs.cluster.clone(),
                ];
                (
                    exe,
                    args,
                    "ocm_core::work::agent (this binary's child mode)".to_string(),
                )
            }
        };
        let file = std::fs::File::create(log).map_err(|source| WorkError::File {
            what: "creating",
            path: log.display().to_string(),
            source,
        })?;
        let stderr = file.try_clone().map_err(|source| WorkError::File {
            what: "opening",
            path: log.display().to_string(),
            source,
        })?;
        let mut child = tokio::process::Command::new(&program)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| WorkError::Agent(format!("starting {}: {e}", program.display())))?;
        let pid = child
            .id()
            .ok_or_else(|| WorkError::Agent("exited at once".into()))?;
        let stdin = child.stdin.take();
        Ok(Self {
            child,
            stdin,
            pid,
            log: log.to_path_buf(),
            description,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// An error naming `what` happened, with the end of the agent's log.
    pub fn failure(&self, what: &str) -> WorkError {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        WorkError::Agent(format!(
            "{what}; {} ends with:\n{}",
            self.log.display(),
            tail.join("\n")
        ))
    }

    /// An error when the child has exited.
    pub fn check_running(&mut self) -> Result<(), WorkError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(self.failure(&format!("exited with {status}"))),
            Err(e) => Err(WorkError::Agent(format!("waiting for it: {e}"))),
        }
    }

    /// Waits until the agent's user has started watching `hub_resource` in the hub's audit log
    /// and `spoke_resource` in the spoke's (each read from its offset), the agent exits, or
    /// `timeout` passes.
    pub async fn wait_watching(
        &mut self,
        user: &str,
        hub: (&Path, u64, &str),
        spoke: (&Path, u64, &str),
        timeout: Duration,
    ) -> Result<(), WorkError> {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_running()?;
            if watches(user, hub.0, hub.1, hub.2) && watches(user, spoke.0, spoke.1, spoke.2) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.failure(&format!(
                    "not watching {} on the hub and {} on the spoke after {}s",
                    hub.2,
                    spoke.2,
                    timeout.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Closes the child's standard input (our agent's child mode ends then), waits up to 5 s for
    /// it to exit, and kills it otherwise.
    pub async fn stop(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// Whether the audit log at `path` (from `offset`) has a watch of `resource` by `user`.
fn watches(user: &str, path: &Path, offset: u64, resource: &str) -> bool {
    read_lines(path, offset).is_ok_and(|lines| {
        lines.iter().any(|line| {
            serde_json::from_str::<AuditLine>(line)
                .is_ok_and(|l| l.user == user && l.verb == "watch" && l.resource == resource)
        })
    })
}

/// A client for the kubeconfig at `path`, and the URL of its server.
pub async fn client_for(path: &Path) -> Result<(kube::Client, String), WorkError> {
    let read_error = |message: String| WorkError::Agent(format!("reading {}: {message}", path.display()));
    let kubeconfig = Kubeconfig::read_from(path).map_err(|e| read_error(e.to_string()))?;
    let url = kubeconfig
        .clusters
        .first()
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.clone())
        .ok_or_else(|| read_error("no server".into()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| read_error(e.to_string()))?;
    let client = kube::Client::try_from(config).map_err(|e| read_error(e.to_string()))?;
    Ok((client, url))
}

/// Resolves when standard input closes (the harness ended or dropped the child); the child modes
/// of the harnesses end then.
pub async fn stdin_closed() {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
}

/// The child mode: our work agent for `inputs` until standard input closes or the agent stops.
pub async fn run_child(inputs: &AgentInputs) -> Result<(), WorkError> {
    let (hub, hub_url) = client_for(&inputs.hub_kubeconfig).await?;
    let (spoke, _) = client_for(&inputs.spoke_kubeconfig).await?;
    let options = ocm_core::work::agent::WorkAgentOptions::new(inputs.cluster.clone());
    tokio::select! {
        result = ocm_core::work::agent::run(hub, &hub_url, spoke, options) => {
            result.map_err(|e| WorkError::Agent(e.to_string()))
        }
        () = stdin_closed() => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> AgentInputs {
        AgentInputs {
            hub_kubeconfig: "/d/hub.kc".into(),
            spoke_kubeconfig: "/d/spoke.kc".into(),
            cluster: "c1".into(),
        }
    }

    #[test]
    fn placeholders_are_filled_in() {
        let words = command_line(
            "work agent --hub-kubeconfig={hub_kubeconfig}  --spoke-kubeconfig {spoke_kubeconfig} \
             --spoke-cluster-name {cluster} --feature-gates={A=true} --listen=127.0.0.1:{free_port}",
            &inputs(),
            8443,
        )
        .unwrap();
        assert_eq!(
            words,
            [
                "work",
                "agent",
                "--hub-kubeconfig=/d/hub.kc",
                "--spoke-kubeconfig",
                "/d/spoke.kc",
                "--spoke-cluster-name",
                "c1",
                "--feature-gates={A=true}",
                "--listen=127.0.0.1:8443"
            ]
        );
    }

    #[test]
    fn empty_commands_and_unknown_placeholders_are_refused() {
        assert!(command_line("  ", &inputs(), 0).is_err());
        let e = command_line("work --x {hub}", &inputs(), 0).unwrap_err();
        assert!(e.to_string().contains("{hub}"), "{e}");
        assert_eq!(unknown_placeholder("{cluster}-{spoke_kubeconfig}"), None);
        assert_eq!(unknown_placeholder("a{b"), None);
        assert_ne!(free_port().unwrap(), 0);
    }

    #[test]
    fn watches_are_found_by_user_verb_and_resource() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::write(
            &path,
            "{\"user\":\"u\",\"verb\":\"list\",\"resource\":\"manifestworks\",\"code\":200}\n\
             {\"user\":\"admin\",\"verb\":\"watch\",\"resource\":\"manifestworks\",\"code\":200}\n",
        )
        .unwrap();
        assert!(!watches("u", &path, 0, "manifestworks"));
        assert!(watches("admin", &path, 0, "manifestworks"));
        assert!(!watches("admin", &path, 1000, "manifestworks"));
        assert!(!watches("u", &dir.path().join("missing"), 0, "manifestworks"));
    }
}
