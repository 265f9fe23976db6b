//! `work-load`: how fast a work agent applies `--works` ManifestWorks of
//! `--manifests-per-work` ConfigMaps from an embedded hub to an embedded spoke (both
//! `ocm-controlplane serve` child processes), how many hub and spoke requests it makes per work,
//! and its resident memory and CPU time. The agent is ours (this binary in a child mode) or any
//! command line (`--work-agent-cmd`).
//!
//! ```text
//! cargo build --release -p ocm-controlplane   # hub and spoke run as child processes
//! cargo run -p ocm-benches --release --bin work-load -- --works 100 --manifests-per-work 10
//! cargo run -p ocm-benches --release --bin work-load -- --works 1000 --manifests-per-work 1 \
//!     --work-agent-cmd "$HOME/.cache/ocm-real-kube/ocm-bin/work agent \
//!       --hub-kubeconfig {hub_kubeconfig} --workload-source-config {hub_kubeconfig} \
//!       --spoke-kubeconfig {spoke_kubeconfig} --kubeconfig {spoke_kubeconfig} \
//!       --spoke-cluster-name {cluster} --namespace work-load-agent \
//!       --disable-leader-election --listen 127.0.0.1:{free_port}"
//! ```

use std::process::ExitCode;

use clap::Parser;
use ocm_benches::work::agent::{AgentInputs, run_child};
use ocm_benches::work::options::Output;
use ocm_benches::work::{Options, run_blocking};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The child mode: our work agent until standard input closes.
fn run_agent(inputs: &AgentInputs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("work-load (agent): starting a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run_child(inputs)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("work-load (agent): {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let options = Options::parse();
    ocm_benches::cli::init_logging();
    if let (Some(hub), Some(spoke), Some(cluster)) = (
        &options.agent_hub_kubeconfig,
        &options.agent_spoke_kubeconfig,
        &options.agent_cluster,
    ) {
        return run_agent(&AgentInputs {
            hub_kubeconfig: hub.clone(),
            spoke_kubeconfig: spoke.clone(),
            cluster: cluster.clone(),
        });
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
            eprintln!("work-load: {e}");
            ExitCode::FAILURE
        }
    }
}
