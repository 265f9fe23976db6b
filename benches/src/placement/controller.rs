//! The placement controller under test, in a child process of its own: by default this executable
//! again in its hidden child mode (`--run-placement-controller <kubeconfig>`, which runs
//! `ocm_core::placement::run` until standard input closes), or the command line of
//! `--placement-cmd` with its placeholders filled in. Its standard output and error go to a log
//! file in the run's directory.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use ocm_core::placement::PlacementOptions;

use super::PlacementLoadError;
use crate::work::agent::{client_for, stdin_closed};

/// The placeholders of `--placement-cmd`: the controller's hub kubeconfig, and a free loopback
/// port (for a controller that serves metrics or health checks, e.g. upstream's
/// `--listen 127.0.0.1:{free_port}`).
pub const PLACEHOLDERS: [&str; 2] = ["{kubeconfig}", "{free_port}"];

/// `template` split at whitespace with the placeholders replaced.
///
/// # Errors
/// The template is empty or holds an unknown `{placeholder}`.
pub fn command_line(template: &str, kubeconfig: &Path, port: u16) -> Result<Vec<String>, PlacementLoadError> {
    let kubeconfig = kubeconfig.display().to_string();
    let words: Vec<String> = template
        .split_whitespace()
        .map(|word| match unknown_placeholder(word) {
            Some(p) => Err(PlacementLoadError::ControllerCommand(format!(
                "unknown placeholder {p} (known: {})",
                PLACEHOLDERS.join(", ")
            ))),
            None => Ok(word
                .replace(PLACEHOLDERS[0], &kubeconfig)
                .replace(PLACEHOLDERS[1], &port.to_string())),
        })
        .collect::<Result<_, _>>()?;
    if words.is_empty() {
        return Err(PlacementLoadError::ControllerCommand(
            "the command line is empty".into(),
        ));
    }
    Ok(words)
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

/// A loopback port nothing listens on now.
fn free_port() -> Result<u16, PlacementLoadError> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| PlacementLoadError::ControllerCommand(format!("finding a free port: {e}")))
}

/// The controller's running child process.
#[derive(Debug)]
pub struct ControllerProcess {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    pid: u32,
    log: PathBuf,
    /// What the report calls the controller.
    pub description: String,
}

impl ControllerProcess {
    /// Starts the controller with hub kubeconfig `kubeconfig`: `command` (from `--placement-cmd`)
    /// or, without one, this executable in its child mode. Its output goes to `log`.
    /// `workers` is passed to ours (`--placement-workers`).
    pub fn spawn(
        command: Option<&str>,
        workers: Option<u16>,
        kubeconfig: &Path,
        log: &Path,
    ) -> Result<Self, PlacementLoadError> {
        let (program, args, description) = match command {
            Some(template) => {
                let port = if template.contains(PLACEHOLDERS[1]) {
                    free_port()?
                } else {
                    0
                };
                let mut words = command_line(template, kubeconfig, port)?;
                let program = words.remove(0);
                let description = format!("{program} (--placement-cmd)");
                (PathBuf::from(program), words, description)
            }
            None => {
                let exe = std::env::current_exe()
                    .map_err(|e| PlacementLoadError::Controller(format!("finding this executable: {e}")))?;
                let mut args = vec![
                    "--run-placement-controller".to_string(),
                    kubeconfig.display().to_string(),
                ];
                let workers = workers.unwrap_or(PlacementOptions::default().workers);
                args.extend(["--placement-workers".to_string(), workers.to_string()]);
                (
                    exe,
                    args,
                    format!("ocm_core::placement, {workers} workers (this binary's child mode)"),
                )
            }
        };
        let file_error = |what, source| PlacementLoadError::File {
            what,
            path: log.display().to_string(),
            source,
        };
        let file = std::fs::File::create(log).map_err(|e| file_error("creating", e))?;
        let stderr = file.try_clone().map_err(|e| file_error("opening", e))?;
        let mut child = tokio::process::Command::new(&program)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| PlacementLoadError::Controller(format!("starting {}: {e}", program.display())))?;
        let pid = child
            .id()
            .ok_or_else(|| PlacementLoadError::Controller("exited at once".into()))?;
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

    /// An error naming `what` happened, with the end of the controller's log.
    pub fn failure(&self, what: &str) -> PlacementLoadError {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        PlacementLoadError::Controller(format!(
            "{what}; {} ends with:\n{}",
            self.log.display(),
            tail.join("\n")
        ))
    }

    /// An error when the child has exited.
    pub fn check_running(&mut self) -> Result<(), PlacementLoadError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(self.failure(&format!("exited with {status}"))),
            Err(e) => Err(PlacementLoadError::Controller(format!("waiting for it: {e}"))),
        }
    }

    /// Closes the child's standard input (our child mode ends then), waits up to 5 s for it to
    /// exit, and kills it otherwise (upstream's controller does not read its standard input).
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

/// The child mode: our placement controller with the hub of `kubeconfig` (and `workers`, or the
/// default) until standard input closes or the controller stops.
pub async fn run_child(kubeconfig: &Path, workers: Option<u16>) -> Result<(), PlacementLoadError> {
    let (client, _) = client_for(kubeconfig).await?;
    let mut options = PlacementOptions::default();
    if let Some(workers) = workers {
        options.workers = workers;
    }
    tokio::select! {
        result = ocm_core::placement::run(
            client,
            options,
            ocm_core::metrics::ControllerMetrics::default(),
        ) => result.map_err(|e| PlacementLoadError::Controller(e.to_string())),
        () = stdin_closed() => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_in() {
        let words = command_line(
            "placement controller --kubeconfig={kubeconfig}  --disable-leader-election \
             --listen 127.0.0.1:{free_port} --feature-gates={A=true}",
            Path::new("/d/hub.kc"),
            8443,
        )
        .unwrap();
        assert_eq!(
            words,
            [
                "placement",
                "controller",
                "--kubeconfig=/d/hub.kc",
                "--disable-leader-election",
                "--listen",
                "127.0.0.1:8443",
                "--feature-gates={A=true}",
            ]
        );
    }

    #[test]
    fn empty_commands_and_unknown_placeholders_are_refused() {
        assert!(command_line("  ", Path::new("k"), 0).is_err());
        let e = command_line("placement --kubeconfig {hub_kubeconfig}", Path::new("k"), 0).unwrap_err();
        assert!(e.to_string().contains("{hub_kubeconfig}"), "{e}");
        assert_eq!(unknown_placeholder("{kubeconfig}:{free_port}"), None);
        assert_eq!(unknown_placeholder("a{b"), None);
        assert_ne!(free_port().unwrap(), 0);
    }
}
