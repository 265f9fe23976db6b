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
use ocm_benches::cli;
use ocm_benches::fleet::options::Output;
use ocm_benches::fleet::{Options, run_blocking};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let options = Options::parse();
    cli::init_logging();
    if let Some(kubeconfig) = &options.hub_controllers {
        return cli::run_hub_controllers("fleet-sim", kubeconfig, options.auto_approve_user.clone());
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
