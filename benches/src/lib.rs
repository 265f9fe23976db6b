//! Benchmarks and the scale harness of OCM for Rust.
//!
//! Criterion benchmarks of the pure helpers and load harnesses for the control plane and the
//! controllers live in this package as they are built; their numbers are recorded, with the
//! commands that produced them, in `docs/performance.md`.
//!
//! | module | what it holds |
//! |---|---|
//! | [`load`] | the API server load harness of the `apiserver-load` binary |
//! | [`join`] | the cluster-join harness of the `join-load` binary |
//! | [`fleet`] | the fleet simulator run of the `fleet-sim` binary ([`ocm_testkit::sim`]) |
//! | [`work`] | the work-distribution harness of the `work-load` binary |
//! | [`placement`] | the placement harness of the `placement-load` binary (upstream's placement benchmark shapes) |
//! | [`cli`] | what the harness binaries share: logging set-up, the hub-controllers child mode |
//! | [`audit`] | tallying a control plane's audit log (shared by `join`, `work` and `placement`) |

pub mod audit;
pub mod cli;
pub mod fleet;
pub mod join;
pub mod load;
pub mod placement;
pub mod work;
