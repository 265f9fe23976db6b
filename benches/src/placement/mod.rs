//! The placement harness behind the `placement-load` binary: upstream's placement benchmark
//! shapes (`test/benchmark/placement` of OCM) against a placement controller in a child process.
//!
//! The hub is a fresh `ocm-controlplane serve` child writing an audit log (or, with
//! `--kubeconfig`, any API server, where the run's objects go into names of their own and are
//! deleted afterwards). The harness creates `--clusters` ManagedClusters with allocatable CPU and
//! memory in their status, each with an AddOnPlacementScore in its namespace, in one
//! ManagedClusterSet bound to the placements' namespace. Then it starts the placement
//! controller: by default this binary re-executed in a hidden mode running
//! `ocm_core::placement::run`, or any command line (`--placement-cmd`, e.g. upstream's Go
//! `placement controller`), so that its memory and CPU are its own. Once a first placement has
//! its decisions (the controller is ready), the harness creates `--placements` placements, each
//! asking for `--select` clusters with prioritizer mode Exact and weights on the add-on score,
//! ResourceAllocatableCPU and Balance, and measures the time until every placement has
//! PlacementDecisions holding `--select` clusters and is PlacementSatisfied (with fewer clusters
//! than `--select`: holding all of them, PlacementSatisfied False); the controller's hub requests
//! (from the audit log), its resident memory and its CPU time.
//!
//! | module | what it holds |
//! |---|---|
//! | [`options`] | the command line |
//! | [`fleet`] | the objects of a run: names, builders, creating and deleting them |
//! | [`controller`] | the placement controller's child process (ours or a command line) and the child mode |
//! | [`progress`] | watching placements and decisions until every placement is decided |
//! | [`report`] | the report, as text tables or JSON |
//! | [`run`] | the order of the phases |

pub mod controller;
pub mod fleet;
pub mod options;
pub mod progress;
pub mod report;
pub mod run;

pub use options::Options;
pub use report::Report;
pub use run::run_blocking;

/// A failure that stops the placement harness.
#[derive(Debug, thiserror::Error)]
pub enum PlacementLoadError {
    /// A failure shared with the join harness (the hub, CRDs).
    #[error(transparent)]
    Join(#[from] crate::join::JoinError),
    /// A failure shared with the load harness (runtimes, namespaces, memory).
    #[error(transparent)]
    Load(#[from] crate::load::LoadError),
    /// A failure shared with the work harness (the controller's identity, kubeconfigs).
    #[error(transparent)]
    Work(#[from] crate::work::WorkError),
    /// The options cannot give a run that ends.
    #[error("{0}")]
    Options(String),
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
    /// Creating an object of the run failed.
    #[error("creating {what}: {message}")]
    Create {
        /// The object.
        what: String,
        /// The error.
        message: String,
    },
    /// Deleting the run's objects failed.
    #[error("cleaning up {what}: {message}")]
    Cleanup {
        /// The objects.
        what: String,
        /// The error.
        message: String,
    },
    /// `--placement-cmd` cannot be used.
    #[error("--placement-cmd: {0}")]
    ControllerCommand(String),
    /// Starting, or running, the placement controller's child process failed.
    #[error("the placement controller: {0}")]
    Controller(String),
    /// The placements were not all decided in time.
    #[error(
        "after {timeout:?}: {decided} of {placements} placements have {want} decisions and their \
         PlacementSatisfied condition ({satisfied} satisfied, {decisions} decisions seen)"
    )]
    Timeout {
        /// Placements done.
        decided: usize,
        /// Placements PlacementSatisfied, done or not.
        satisfied: usize,
        /// Decisions seen over all placements.
        decisions: usize,
        /// Placements created.
        placements: usize,
        /// Decisions each placement should end with.
        want: usize,
        /// The limit.
        timeout: std::time::Duration,
    },
    /// A watch or request the harness needs failed.
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
