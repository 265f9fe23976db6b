//! `quickstart`: an embedded hub and an embedded managed cluster, joined step by step (see
//! [`ocm_examples::quickstart`]).
//!
//! ```text
//! cargo run -p ocm-examples --bin quickstart
//! ```

use std::process::ExitCode;

use clap::Parser;
use ocm_examples::quickstart::{QuickstartArgs, run};

fn main() -> ExitCode {
    let args = QuickstartArgs::parse();
    // The demo prints its steps; logs only say what went wrong unless RUST_LOG asks for more.
    // The agent's warnings are left out: until the cluster is accepted (in manual mode, until
    // you accept it) its loops are Forbidden on the hub, which is expected; a step that does not
    // happen still ends the demo with an error.
    ocm_examples::process::init_tracing("warn,ocm_core::registration::agent=error");
    ocm_examples::process::block_on(run(args))
}
