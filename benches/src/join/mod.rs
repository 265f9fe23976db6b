//! The cluster-join harness behind the `join-load` binary.
//!
//! One hub — `ocm-controlplane serve` in a child process, so that its resident memory is its own
//! — with the OCM CRDs, the bootstrap RBAC and the hub's registration controllers
//! (`ocm_core::registration::hub::run`, in a second child process: this binary re-executed with
//! `--hub-controllers`) auto-approving the bootstrap user's CSRs and auto-accepting clusters.
//! Then `--agents` registration agents (`ocm_core::registration::agent::run`) in this process,
//! run by the fleet simulator ([`ocm_testkit::sim`], without work agents) against one shared
//! in-process spoke control plane, each with a namespace of its own for its hub-kubeconfig
//! secret. Measured: the time until every ManagedCluster is Joined and
//! Available (and per-cluster percentiles), the hub's API requests from its audit log (total,
//! per cluster, by client, verb and resource), and the hub's resident memory.
//!
//! With `--hub-kubeconfig` the hub is an external one (e.g. a real kube-apiserver, its processes'
//! memory read from `--server-pid`), and with `--hub-controllers-cmd` the hub controllers are an
//! external command (e.g. upstream's Go registration controller); the run's clusters are then
//! named `join-<run id>-<n>` and deleted at the end.
//!
//! | module | what it holds |
//! |---|---|
//! | [`options`] | the command line |
//! | [`hub`] | the hub control plane (child process or in-process), CRDs, bootstrap kubeconfig |
//! | [`controllers`] | the hub controllers' child process and its entry point |
//! | [`spoke`] | the shared spoke control plane |
//! | [`cleanup`] | removing a run's clusters from an external hub |
//! | [`progress`] | watching the ManagedClusters until all are Joined and Available |
//! | [`memory`] | sampling the resident memory of the processes |
//! | [`requests`] | tallying the hub's audit log |
//! | [`report`] | the report, as text tables or JSON |
//! | [`run`] | the order of the phases |

pub mod cleanup;
pub mod controllers;
pub mod hub;
pub mod memory;
pub mod options;
pub mod progress;
pub mod report;
pub mod requests;
pub mod run;
pub mod spoke;

pub use options::Options;
pub use report::Report;
pub use run::run_blocking;

/// A failure that stops the join harness.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// A failure shared with the load harness (runtimes, child server, kubeconfigs, memory).
    #[error(transparent)]
    Load(#[from] crate::load::LoadError),
    /// Preparing the hub (CRDs, bootstrap RBAC, bootstrap kubeconfig) failed.
    #[error("preparing the hub: {0}")]
    PrepareHub(String),
    /// A file or directory of the harness could not be written or read.
    #[error("{what} {path}: {source}")]
    File {
        /// What the harness was doing.
        what: &'static str,
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Starting or running the hub controllers' child process failed.
    #[error("the hub controllers: {0}")]
    Controllers(String),
    /// The fleet simulator could not start the agents.
    #[error(transparent)]
    Simulator(#[from] ocm_testkit::sim::SimError),
    /// Not every cluster joined in time.
    #[error("{joined} of {agents} clusters Joined and Available after {timeout:?}")]
    Timeout {
        /// Clusters that made it.
        joined: usize,
        /// Agents started.
        agents: usize,
        /// The limit.
        timeout: std::time::Duration,
    },
    /// Removing the run's objects from an external hub failed.
    #[error("cleaning up the run on the hub: {0}")]
    Cleanup(String),
    /// Watching the ManagedClusters ended.
    #[error("watching ManagedClusters: {0}")]
    Watch(String),
    /// Encoding the JSON report failed.
    #[error("encoding the JSON report: {0}")]
    EncodeReport(#[from] serde_json::Error),
}
