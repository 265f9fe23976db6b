//! `hub`: the OCM hub registration controllers as one process (see [`ocm_examples::hub`]).
//!
//! ```text
//! cargo run -p ocm-examples --bin hub -- --embedded ./hub-data --bootstrap-kubeconfig-out ./bootstrap.kubeconfig
//! ```

use std::process::ExitCode;

use clap::Parser;
use ocm_examples::hub::{HubArgs, run};

fn main() -> ExitCode {
    let args = HubArgs::parse();
    ocm_examples::process::init_tracing("info");
    ocm_examples::process::block_on(run(args))
}
