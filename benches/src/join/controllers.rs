//! The hub's registration controllers in a child process of their own: this executable started
//! again with `--hub-controllers <admin kubeconfig>`, so that their memory and CPU are apart from
//! both the hub's API server and the agents. The child runs until its standard input closes (the
//! harness ends or drops it) or a controller stops; then it prints its reconcile counters
//! (`ocm_controller_reconcile_total`, Prometheus text) on standard output.

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
        Ok(Self { child, stdin, pid })
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
    let client = kube::Client::try_from(config)
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
}
