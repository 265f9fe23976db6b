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
use ocm_benches::join::options::Output;
use ocm_benches::join::{Options, controllers, run_blocking};

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

/// The child mode: the hub controllers until standard input closes.
fn run_controllers(options: &Options) -> ExitCode {
    let Some(kubeconfig) = &options.hub_controllers else {
        return ExitCode::FAILURE;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("join-load --hub-controllers: starting a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(controllers::run_child(
        kubeconfig,
        options.auto_approve_user.clone(),
    )) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("join-load --hub-controllers: {e}");
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
