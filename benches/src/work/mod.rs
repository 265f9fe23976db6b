//! The work-distribution harness behind the `work-load` binary.
//!
//! Two control planes — a hub and a spoke, each `ocm-controlplane serve` in a child process
//! writing an audit log, the hub with the hub's OCM CRDs and the spoke with the managed
//! cluster's — and one work agent in a child process of its own, so that its memory and CPU
//! are its own: by default this binary re-executed in a hidden mode running
//! `ocm_core::work::agent::run`, or any other agent given as a command line
//! (`--work-agent-cmd`, e.g. upstream's Go `work agent`). The agent talks to both control planes
//! as ServiceAccounts of its own (bound to `cluster-admin`), so the audit logs tell its requests
//! apart from the harness's. Once the agent watches the hub's ManifestWorks, the harness creates
//! `--works` ManifestWorks of `--manifests-per-work` ConfigMaps each and measures the time until
//! every ConfigMap exists on the spoke and every work is Applied and Available, the agent's
//! requests to the hub and the spoke per work, and its resident memory and CPU time; then,
//! after `--settle` seconds with nothing to do, its requests, memory and CPU again.
//!
//! | module | what it holds |
//! |---|---|
//! | [`options`] | the command line |
//! | [`identity`] | the agent's ServiceAccount and token kubeconfig on a control plane |
//! | [`agent`] | the agent's child process (ours or a command line) and the child mode |
//! | [`works`] | the ManifestWorks the harness creates |
//! | [`progress`] | watching the works on the hub and the ConfigMaps on the spoke |
//! | [`cpu`] | CPU time of a process from `/proc/<pid>/stat` |
//! | [`report`] | the report, as text tables or JSON |
//! | [`run`] | the order of the phases |

pub mod agent;
pub mod cpu;
pub mod identity;
pub mod options;
pub mod progress;
pub mod report;
pub mod run;
pub mod works;

pub use options::Options;
pub use report::Report;
pub use run::run_blocking;

/// A failure that stops the work harness.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// A failure shared with the join harness (control planes, CRDs, files).
    #[error(transparent)]
    Join(#[from] crate::join::JoinError),
    /// A failure shared with the load harness (runtimes, kubeconfigs, memory).
    #[error(transparent)]
    Load(#[from] crate::load::LoadError),
    /// A request that prepares the run failed.
    #[error("{what}: {message}")]
    Prepare {
        /// What the harness was doing.
        what: String,
        /// The error.
        message: String,
    },
    /// A file of the harness could not be written or read.
    #[error("{what} {path}: {source}")]
    File {
        /// What the harness was doing.
        what: &'static str,
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `--work-agent-cmd` cannot be used.
    #[error("--work-agent-cmd: {0}")]
    AgentCommand(String),
    /// Starting, or running, the work agent's child process failed.
    #[error("the work agent: {0}")]
    Agent(String),
    /// Creating a ManifestWork failed.
    #[error("creating ManifestWork {name}: {message}")]
    CreateWork {
        /// The work.
        name: String,
        /// The error.
        message: String,
    },
    /// The works did not all finish in time.
    #[error(
        "after {timeout:?}: {configmaps} of {expected_configmaps} ConfigMaps on the spoke, {applied} of \
         {works} works Applied, {available} Available"
    )]
    Timeout {
        /// ConfigMaps seen on the spoke.
        configmaps: usize,
        /// ConfigMaps expected.
        expected_configmaps: usize,
        /// Works Applied.
        applied: usize,
        /// Works Available.
        available: usize,
        /// Works created.
        works: usize,
        /// The limit.
        timeout: std::time::Duration,
    },
    /// A watch the harness needs ended.
    #[error("watching {what}: {message}")]
    Watch {
        /// What was watched.
        what: &'static str,
        /// Why it ended.
        message: String,
    },
    /// Encoding the JSON report failed.
    #[error("encoding the JSON report: {0}")]
    EncodeReport(#[from] serde_json::Error),
}
