//! `helloworld`: the helloworld add-on's hub controller (see [`ocm_examples::helloworld`]).
//!
//! ```text
//! cargo run -p ocm-examples --bin helloworld -- --kubeconfig hub.kubeconfig
//! ```

use std::process::ExitCode;

use clap::Parser;
use ocm_examples::helloworld::{HelloworldArgs, run};

fn main() -> ExitCode {
    let args = HelloworldArgs::parse();
    ocm_examples::process::init_tracing("info");
    ocm_examples::process::block_on(run(args))
}
