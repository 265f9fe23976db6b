//! `fleet-sim`: N simulated managed clusters — the real registration and work agents of
//! `ocm_core`, all sharing one in-process managed-cluster store ([`ocm_testkit::sim`]) — joining
//! a hub (an embedded `ocm-controlplane` child process with our hub controllers, or
//! `--hub-kubeconfig`), with churn; reports the time to join and the simulator's memory per
//! cluster.
//!
//! ```text
//! cargo build --release -p ocm-controlplane -p ocm-benches --bin ocm-controlplane --bin fleet-sim
//! target/release/fleet-sim --clusters 1000 [--no-work-agents] [--lease-duration 2 --pause 10
//!     --remove 10] [--rotate-every 60] [--hold 30] [--output json] [--hub-kubeconfig FILE]
//! ```

use std::process::ExitCode;

use clap::Parser;
use ocm_benches::fleet::options::Output;
use ocm_benches::fleet::{Options, run_blocking};
use ocm_benches::join::controllers;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// The child mode: the hub controllers until standard input closes (as `join-load`'s).
fn run_controllers(options: &Options) -> ExitCode {
    let Some(kubeconfig) = &options.hub_controllers else {
        return ExitCode::FAILURE;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fleet-sim --hub-controllers: starting a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(controllers::run_child(
        kubeconfig,
        options.auto_approve_user.clone(),
    )) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fleet-sim --hub-controllers: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let options = Options::parse();
    init_logging();
    if options.hub_controllers.is_some() {
        return run_controllers(&options);
    }
    let result = run_blocking(&options).and_then(|report| match options.output {
        Output::Text => Ok(report.render_text()),
        Output::Json => report.render_json(),
    });
    match result {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fleet-sim: {e}");
            ExitCode::FAILURE
        }
    }
}
