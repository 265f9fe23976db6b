//! The `fleet-sim` binary's harness: N simulated managed clusters ([`ocm_testkit::sim`]: the real
//! registration and work agents, one shared in-process managed-cluster store) joining a hub —
//! an embedded `ocm-controlplane` in a child process with our hub controllers in another (as
//! `join-load` starts them), or any hub given by `--hub-kubeconfig` — then optional churn
//! (leases stopping and coming back, clusters going away, certificate rotation). Reported: the
//! time until all are Joined and Available, the simulator's own memory per cluster, the hub
//! processes' memory, and what the churn did.
//!
//! | module | what it holds |
//! |---|---|
//! | [`options`] | the command line |
//! | [`churn`] | pausing, removing and watching clusters go unavailable and come back |
//! | [`report`] | the report, as text or JSON |
//! | [`run`] | the order of the phases |

pub mod churn;
pub mod options;
pub mod report;
pub mod run;

pub use options::Options;
pub use report::Report;
pub use run::run_blocking;

/// A failure that stops the simulator's run.
#[derive(Debug, thiserror::Error)]
pub enum SimRunError {
    /// Starting the hub, its controllers or the spoke, or joining, failed.
    #[error(transparent)]
    Join(#[from] crate::join::JoinError),
    /// The simulator could not start.
    #[error(transparent)]
    Simulator(#[from] ocm_testkit::sim::SimError),
    /// A hub API call of the churn phase failed.
    #[error("{what}: {source}")]
    Hub {
        /// What was being done.
        what: String,
        /// The API error.
        source: kube::Error,
    },
    /// Churn did not show on the hub in time.
    #[error("{what}: {done} of {expected} after {timeout:?}")]
    ChurnTimeout {
        /// What was awaited.
        what: &'static str,
        /// How many did.
        done: usize,
        /// How many should have.
        expected: usize,
        /// The limit.
        timeout: std::time::Duration,
    },
    /// Encoding the JSON report failed.
    #[error("encoding the JSON report: {0}")]
    EncodeReport(#[from] serde_json::Error),
}
