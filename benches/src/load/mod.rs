//! The API server load harness behind the `apiserver-load` binary.
//!
//! It measures create, get, update, list and watch fan-out over HTTPS with kube-rs clients —
//! throughput and latency percentiles — against a fresh embedded `ocm-controlplane` (by default)
//! or any server a kubeconfig names, and the server's resident memory with many ConfigMaps stored.
//!
//! | module | what it holds |
//! |---|---|
//! | [`options`] | the command line |
//! | [`target`] | the server under test: embedded, or named by a kubeconfig (loopback only) |
//! | [`child`] | `ocm-controlplane serve` as a child process, for a clean memory reading |
//! | [`ops`] | the create, get, update and list phases |
//! | [`watch`] | the watch fan-out phase |
//! | [`rss`] | resident memory from `/proc/<pid>/status` and the memory phase |
//! | [`stats`] | latency samples, percentiles, throughput |
//! | [`table`] | aligned text tables and number formats |
//! | [`report`] | the report, as a table or JSON |
//! | [`run`] | the order of the phases and the runtimes they run on |

pub mod child;
pub mod ops;
pub mod options;
pub mod report;
pub mod rss;
pub mod run;
pub mod stats;
pub mod table;
pub mod target;
pub mod watch;

pub use options::Options;
pub use report::Report;
pub use run::run_blocking;

/// A failure that stops the harness (failed requests are counted in the report instead).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Building a tokio runtime failed.
    #[error("starting the {name} runtime: {source}")]
    StartRuntime {
        /// Which runtime.
        name: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The embedded control plane did not start.
    #[error("starting the embedded control plane: {0}")]
    StartServer(String),
    /// Preparing the data directory of the embedded server failed.
    #[error("preparing the data directory {path}: {source}")]
    PrepareDataDir {
        /// The directory.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Reading or interpreting a kubeconfig failed.
    #[error("reading the kubeconfig {path}: {message}")]
    ReadKubeconfig {
        /// The file (or `embedded`).
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The kubeconfig names a server that is not on a loopback address.
    #[error(
        "the kubeconfig names {url}, which is not a loopback address; the harness only loads servers on \
         this machine (127.0.0.0/8, ::1, localhost)"
    )]
    NotLoopback {
        /// The server URL.
        url: String,
    },
    /// Building a kube client failed.
    #[error("building a kube client: {0}")]
    BuildClient(String),
    /// A request the harness needs (not a measured one) failed.
    #[error("{what}: {message}")]
    Prepare {
        /// What the harness was doing.
        what: String,
        /// The error.
        message: String,
    },
    /// Starting `ocm-controlplane serve` as a child process failed.
    #[error("starting {binary} serve: {message}")]
    SpawnServer {
        /// The binary.
        binary: String,
        /// What went wrong (with the tail of its log when it exited).
        message: String,
    },
    /// Reading a process's memory from /proc failed.
    #[error("reading the memory of {what}: {message}")]
    ReadMemory {
        /// `/proc/<pid>/status`.
        what: String,
        /// What went wrong.
        message: String,
    },
    /// Encoding the JSON report failed.
    #[error("encoding the JSON report: {0}")]
    EncodeReport(#[from] serde_json::Error),
}
