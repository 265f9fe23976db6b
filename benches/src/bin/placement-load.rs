//! `placement-load`: upstream's placement benchmark shapes — `--placements` placements, each
//! asking for `--select` of `--clusters` clusters with prioritizer mode Exact and weights on an
//! add-on score, ResourceAllocatableCPU and Balance — against a placement controller in a child
//! process: ours (this binary in a child mode) or any command line (`--placement-cmd`). It
//! measures the time until every placement is decided, placements per second, the controller's
//! hub requests (on the embedded hub, from its audit log) and its resident memory and CPU time.
//!
//! ```text
//! cargo build --release -p ocm-controlplane   # the hub runs as a child process
//! cargo run -p ocm-benches --release --bin placement-load -- --clusters 1000 --placements 1000
//! cargo run -p ocm-benches --release --bin placement-load -- --clusters 1000 --placements 1000 \
//!     --placement-cmd "$HOME/.cache/ocm-real-kube/ocm-bin/placement controller \
//!       --kubeconfig {kubeconfig} --disable-leader-election --namespace default \
//!       --listen 127.0.0.1:{free_port}"
//! cargo run -p ocm-benches --release --bin placement-load -- --kubeconfig hub.kubeconfig ...
//! ```

use std::process::ExitCode;

use clap::Parser;
use ocm_benches::placement::controller::run_child;
use ocm_benches::placement::options::Output;
use ocm_benches::placement::{Options, run_blocking};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The child mode: our placement controller until standard input closes.
fn run_controller(kubeconfig: &std::path::Path, workers: Option<u16>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("placement-load (controller): starting a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run_child(kubeconfig, workers)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("placement-load (controller): {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let options = Options::parse();
    ocm_benches::cli::init_logging();
    if let Some(kubeconfig) = &options.run_placement_controller {
        return run_controller(kubeconfig, options.placement_workers);
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
            eprintln!("placement-load: {e}");
            ExitCode::FAILURE
        }
    }
}
