//! `join-load`: how long `--agents` registration agents (in this process, against one shared
//! spoke) take to join one embedded hub, how many API requests the hub serves for it, and the
//! hub's resident memory.
//!
//! ```text
//! cargo build --release -p ocm-controlplane   # the hub runs as a child process
//! cargo run -p ocm-benches --release --bin join-load -- --agents 1000 [--healthcheck-period 60]
//!     [--concurrency 0] [--output json]      # RUST_LOG=warn shows the agents' and controllers' warnings
//! ```

use std::process::ExitCode;

use clap::Parser;
use ocm_benches::cli;
use ocm_benches::join::options::Output;
use ocm_benches::join::{Options, run_blocking};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let options = Options::parse();
    cli::init_logging();
    if let Some(kubeconfig) = &options.hub_controllers {
        return cli::run_hub_controllers("join-load", kubeconfig, options.auto_approve_user.clone());
    }
    let result = run_blocking(&options).and_then(|report| match options.output {
        Output::Text => Ok(report.render_text(options.top)),
        Output::Json => report.render_json(),
    });
    match result {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("join-load: {e}");
            ExitCode::FAILURE
        }
    }
}
