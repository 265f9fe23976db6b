//! The hub's registration controllers in a child process of their own: this executable started
//! again with `--hub-controllers <admin kubeconfig>`, so that their memory and CPU are apart from
//! both the hub's API server and the agents. The child runs until its standard input closes (the
//! harness ends or drops it) or a controller stops; then it prints its reconcile counters
//! (`ocm_controller_reconcile_total`, Prometheus text) on standard output.
//!
//! Or an external command (`--hub-controllers-cmd`, e.g. upstream's Go `registration
//! controller`), run through `sh -c 'exec …'` so that its process id is the command's own; it is
//! killed at the end and reports no reconcile counts.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use ocm_core::registration::hub::{self, HubOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::JoinError;

/// The running child process of the hub controllers.
#[derive(Debug)]
pub struct ControllersProcess {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    pid: u32,
    /// This executable in `--hub-controllers` mode (prints its counters when stdin closes).
    ours: bool,
}

/// `template` with `{kubeconfig}` and `{bootstrap_user}` replaced.
pub fn expand_command(template: &str, kubeconfig: &Path, bootstrap_user: &str) -> String {
    template
        .replace("{kubeconfig}", &kubeconfig.display().to_string())
        .replace("{bootstrap_user}", bootstrap_user)
}

impl ControllersProcess {
    /// Starts this executable with `--hub-controllers kubeconfig --auto-approve-user user`.
    pub fn spawn(kubeconfig: &Path, auto_approve_user: &str, log: &Path) -> Result<Self, JoinError> {
        let exe = std::env::current_exe()
            .map_err(|e| JoinError::Controllers(format!("finding this executable: {e}")))?;
        let log = std::fs::File::create(log).map_err(|source| JoinError::File {
            what: "creating",
            path: log.display().to_string(),
            source,
        })?;
        let mut child = tokio::process::Command::new(exe)
            .arg("--hub-controllers")
            .arg(kubeconfig)
            .args(["--auto-approve-user", auto_approve_user])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| JoinError::Controllers(format!("starting: {e}")))?;
        let pid = child
            .id()
            .ok_or_else(|| JoinError::Controllers("exited at once".into()))?;
        let stdin = child.stdin.take();
        Ok(Self {
            child,
            stdin,
            pid,
            ours: true,
        })
    }

    /// Starts `command` (already expanded, see [`expand_command`]) through `sh -c 'exec …'`,
    /// its output going to `log`.
    pub fn spawn_command(command: &str, log: &Path) -> Result<Self, JoinError> {
        let out = std::fs::File::create(log).map_err(|source| JoinError::File {
            what: "creating",
            path: log.display().to_string(),
            source,
        })?;
        let err = out.try_clone().map_err(|source| JoinError::File {
            what: "opening",
            path: log.display().to_string(),
            source,
        })?;
        let child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(format!("exec {command}"))
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| JoinError::Controllers(format!("starting {command:?}: {e}")))?;
        let pid = child
            .id()
            .ok_or_else(|| JoinError::Controllers(format!("{command:?} exited at once")))?;
        Ok(Self {
            child,
            stdin: None,
            pid,
            ours: false,
        })
    }

    /// Whether this is our hub controllers' child (else an external command).
    pub fn is_ours(&self) -> bool {
        self.ours
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the child has exited (with its status).
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(e.to_string()),
        }
    }

    /// Closes the child's standard input and collects the reconcile counts it prints on its way
    /// out (controller → reconciliations, successful or not); killed if it takes over 10 s.
    pub async fn stop(mut self) -> BTreeMap<String, u64> {
        if !self.ours {
            let _ = self.child.kill().await;
            return BTreeMap::new();
        }
        drop(self.stdin.take());
        let mut stdout = self.child.stdout.take();
        let read = async {
            let mut text = String::new();
            if let Some(out) = stdout.as_mut() {
                let _ = out.read_to_string(&mut text).await;
            }
            text
        };
        let text = tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .unwrap_or_default();
        let _ = self.child.kill().await;
        reconcile_counts(&text)
    }
}

/// The reconciliations per controller (successes and errors together) in Prometheus text.
pub fn reconcile_counts(text: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("ocm_controller_reconcile_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let controller = labels
            .split(',')
            .find_map(|l| l.strip_prefix("controller=\"")?.strip_suffix('"'));
        if let (Some(controller), Ok(value)) = (controller, value.trim().parse::<f64>()) {
            *counts.entry(controller.to_string()).or_default() += value as u64;
        }
    }
    counts
}

/// The child's side: runs every hub registration controller against the hub of `kubeconfig`,
/// approving the CSRs of `auto_approve_users` and accepting every cluster, until standard input
/// closes or a controller stops.
pub async fn run_child(kubeconfig: &Path, auto_approve_users: Vec<String>) -> Result<(), JoinError> {
    let kc = Kubeconfig::read_from(kubeconfig)
        .map_err(|e| JoinError::Controllers(format!("reading {}: {e}", kubeconfig.display())))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| JoinError::Controllers(format!("reading {}: {e}", kubeconfig.display())))?;
    let client = ocm_addon_framework::client::client_for(config)
        .map_err(|e| JoinError::Controllers(format!("building a client: {e}")))?;
    let options = HubOptions {
        auto_approved_csr_users: auto_approve_users,
        auto_accept: true,
        ..HubOptions::default()
    };
    let metrics = ocm_core::metrics::ControllerMetrics::default();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let controllers = hub::run(client, options, metrics);
    let parent_gone = async {
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 64];
        while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    let result = tokio::select! {
        result = controllers => result.map_err(|e| JoinError::Controllers(e.to_string())),
        () = parent_gone => Ok(()),
    };
    let mut text = String::new();
    if prometheus_client::encoding::text::encode(&mut text, &registry).is_ok() {
        let mut stdout = tokio::io::stdout();
        let _ = stdout.write_all(text.as_bytes()).await;
        let _ = stdout.flush().await;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconcile_counts_add_successes_and_errors() {
        let text = "# HELP ocm_controller_reconcile Reconciliations\n\
            ocm_controller_reconcile_total{controller=\"managednamespace\",result=\"success\"} 1200\n\
            ocm_controller_reconcile_total{controller=\"managednamespace\",result=\"error\"} 3\n\
            ocm_controller_reconcile_total{controller=\"managedclusterset\",result=\"success\"} 7\n\
            # EOF\n";
        let counts = reconcile_counts(text);
        assert_eq!(counts["managednamespace"], 1203);
        assert_eq!(counts["managedclusterset"], 7);
        assert_eq!(counts.len(), 2);
    }

    #[test]
    fn commands_get_the_kubeconfig_and_the_bootstrap_user() {
        let cmd = expand_command(
            "registration controller --kubeconfig {kubeconfig} --auto-approved-csr-users {bootstrap_user}",
            Path::new("/tmp/k"),
            "u",
        );
        assert_eq!(
            cmd,
            "registration controller --kubeconfig /tmp/k --auto-approved-csr-users u"
        );
    }

    #[tokio::test]
    async fn an_external_command_runs_as_its_own_process_and_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("c.log");
        let mut process = ControllersProcess::spawn_command("sleep 30", &log).unwrap();
        assert!(!process.is_ours());
        // The shell replaces itself with the command (exec), keeping the process id.
        let comm = || std::fs::read_to_string(format!("/proc/{}/comm", process.pid())).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while comm().trim() != "sleep" && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(comm().trim(), "sleep", "exec replaces the shell");
        assert_eq!(process.exited(), None);
        assert!(process.stop().await.is_empty());
    }
}
