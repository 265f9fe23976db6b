//! `apiserver-load`: throughput, latency and memory of a Kubernetes API server under load.
//!
//! ```text
//! cargo run -p ocm-benches --release --bin apiserver-load -- [--kubeconfig PATH] [--json]
//! ```
//!
//! The harness lives in [`ocm_benches::load`]; `--help` lists every flag.

use std::process::ExitCode;

use clap::Parser;
use ocm_benches::load::{self, Options};

/// The allocator the `ocm-controlplane` binary uses, so that the embedded server measured here
/// allocates as the shipped server does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let options = Options::parse();
    let rendered = load::run_blocking(&options).and_then(|report| {
        if options.json {
            report.render_json()
        } else {
            Ok(report.render_text())
        }
    });
    match rendered {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("apiserver-load: {e}");
            ExitCode::FAILURE
        }
    }
}
