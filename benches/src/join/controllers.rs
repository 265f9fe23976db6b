//! The hub's registration controllers in a child process of their own: this executable started
//! again with `--hub-controllers <admin kubeconfig>`, so that their memory and CPU are apart from
//! both the hub's API server and the agents. The child runs until its standard input closes (the
//! harness ends or drops it) or a controller stops.

use std::path::Path;
use std::process::Stdio;

use kube::config::{KubeConfigOptions, Kubeconfig};
use ocm_core::registration::hub::{self, HubOptions};
use tokio::io::AsyncReadExt;

use super::JoinError;

/// The running child process of the hub controllers.
#[derive(Debug)]
pub struct ControllersProcess {
    child: tokio::process::Child,
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
        let child = tokio::process::Command::new(exe)
            .arg("--hub-controllers")
            .arg(kubeconfig)
            .args(["--auto-approve-user", auto_approve_user])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| JoinError::Controllers(format!("starting: {e}")))?;
        let pid = child
            .id()
            .ok_or_else(|| JoinError::Controllers("exited at once".into()))?;
        Ok(Self { child, pid })
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

    /// Kills the child and waits for it.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
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
    let controllers = hub::run(client, options, ocm_core::metrics::ControllerMetrics::default());
    let parent_gone = async {
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 64];
        while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    tokio::select! {
        result = controllers => result.map_err(|e| JoinError::Controllers(e.to_string())),
        () = parent_gone => Ok(()),
    }
}
