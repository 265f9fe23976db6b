//! `helloworld-agent`: the helloworld add-on's agent on a managed cluster (see
//! [`ocm_examples::helloworld_agent`]).
//!
//! ```text
//! cargo run -p ocm-examples --bin helloworld-agent -- --hub-kubeconfig hub/kubeconfig \
//!     --cluster-name cluster1 --addon-namespace open-cluster-management-agent-addon
//! ```

use std::process::ExitCode;

use clap::Parser;
use ocm_examples::helloworld_agent::{AgentArgs, run};

fn main() -> ExitCode {
    let args = AgentArgs::parse();
    ocm_examples::process::init_tracing("info");
    ocm_examples::process::block_on(run(args))
}
