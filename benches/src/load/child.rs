//! `ocm-controlplane serve` as a child process, so the server's memory can be read apart from the
//! harness's (`/proc/<pid>/status`).
//!
//! The child serves on a free loopback port with a fresh temporary data directory (the binary
//! always persists with redb) and is killed when the [`ChildServer`] is dropped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::time::Instant;

use super::LoadError;
use super::target::Target;

/// How long the child may take to start serving.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The binary `--rss-server auto|process` uses: `explicit`, else `ocm-controlplane` next to the
/// running executable (the same cargo target directory). `None` when that file does not exist.
pub fn find_server_binary(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = explicit {
        return Some(path.to_path_buf());
    }
    let exe = std::env::current_exe().ok()?;
    let candidate = exe
        .parent()?
        .join(format!("ocm-controlplane{}", std::env::consts::EXE_SUFFIX));
    candidate.is_file().then_some(candidate)
}

/// A running `ocm-controlplane serve` child process.
#[derive(Debug)]
pub struct ChildServer {
    child: tokio::process::Child,
    pid: u32,
    binary: PathBuf,
    kubeconfig: PathBuf,
    // Last: removed after the child is gone.
    dir: tempfile::TempDir,
}

impl ChildServer {
    /// Starts `binary serve --data-dir <fresh temp dir> --port 0` (the temporary directory under
    /// `parent` when given) and waits until it answers `/version`.
    pub async fn spawn(binary: &Path, parent: Option<&Path>) -> Result<Self, LoadError> {
        Self::spawn_with_args(binary, parent, &[]).await
    }

    /// [`Self::spawn`] with `extra` arguments after the harness's own (e.g. `--audit-log-path`).
    pub async fn spawn_with_args(
        binary: &Path,
        parent: Option<&Path>,
        extra: &[std::ffi::OsString],
    ) -> Result<Self, LoadError> {
        let spawn_err = |message: String| LoadError::SpawnServer {
            binary: binary.display().to_string(),
            message,
        };
        let mut tmp = tempfile::Builder::new();
        tmp.prefix("apiserver-load-serve-");
        let dir = match parent {
            Some(parent) => {
                std::fs::create_dir_all(parent)
                    .map_err(|e| spawn_err(format!("creating {}: {e}", parent.display())))?;
                tmp.tempdir_in(parent)
            }
            None => tmp.tempdir(),
        }
        .map_err(|e| spawn_err(format!("creating a data directory: {e}")))?;
        let log_path = dir.path().join("server.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| spawn_err(format!("creating {}: {e}", log_path.display())))?;
        let data_dir = dir.path().join("data");
        let child = tokio::process::Command::new(binary)
            .arg("serve")
            .arg("--data-dir")
            .arg(&data_dir)
            .args(["--port", "0", "--bind", "127.0.0.1", "--log-level", "warn"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| spawn_err(e.to_string()))?;
        let pid = child
            .id()
            .ok_or_else(|| spawn_err("the child exited at once".into()))?;
        let mut server = Self {
            child,
            pid,
            binary: binary.to_path_buf(),
            kubeconfig: data_dir.join("admin.kubeconfig"),
            dir,
        };
        server.wait_ready().await?;
        Ok(server)
    }

    /// Polls until the kubeconfig exists and the server answers, the child exits, or the start
    /// timeout passes.
    async fn wait_ready(&mut self) -> Result<(), LoadError> {
        let deadline = Instant::now() + START_TIMEOUT;
        let mut last = String::from("no admin.kubeconfig yet");
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(self.failure(format!("exited with {status} while starting")));
            }
            if self.kubeconfig.is_file() {
                match self.target().await {
                    Ok(target) => match target.clients(1)?.first() {
                        Some(client) => match client.apiserver_version().await {
                            Ok(_) => return Ok(()),
                            Err(e) => last = e.to_string(),
                        },
                        None => last = "no client".into(),
                    },
                    Err(e) => last = e.to_string(),
                }
            }
            if Instant::now() >= deadline {
                return Err(self.failure(format!("not serving after {}s ({last})", START_TIMEOUT.as_secs())));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn failure(&self, message: String) -> LoadError {
        let log = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(10).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        let message = if tail.is_empty() {
            message
        } else {
            format!("{message}; its log ends with:\n{}", tail.join("\n"))
        };
        LoadError::SpawnServer {
            binary: self.binary.display().to_string(),
            message,
        }
    }

    /// The child's `admin.kubeconfig`.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The process id (for `/proc/<pid>/status`).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// A [`Target`] for the child (through its `admin.kubeconfig`).
    pub async fn target(&self) -> Result<Target, LoadError> {
        let mut target = Target::from_kubeconfig(&self.kubeconfig, None).await?;
        target.description = format!(
            "child process {} serve (pid {}, redb in a fresh data dir)",
            self.binary.display(),
            self.pid
        );
        Ok(target)
    }

    /// Kills the child (SIGKILL: every acknowledged write is durable anyway) and waits for it.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}
