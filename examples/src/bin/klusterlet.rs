//! `klusterlet`: the OCM registration agent of a managed cluster as one process (see
//! [`ocm_examples::klusterlet`]).
//!
//! ```text
//! cargo run -p ocm-examples --bin klusterlet -- --cluster-name cluster1 \
//!     --bootstrap-kubeconfig ./bootstrap.kubeconfig --embedded ./cluster1-data
//! ```

use std::process::ExitCode;

use clap::Parser;
use ocm_examples::klusterlet::{KlusterletArgs, run};

fn main() -> ExitCode {
    let args = KlusterletArgs::parse();
    ocm_examples::process::init_tracing("info");
    ocm_examples::process::block_on(run(args))
}
