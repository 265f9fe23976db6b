//! Runs the placement controller alone against the cluster of `$KUBECONFIG` (or the in-cluster
//! configuration) until interrupted: `cargo run -p ocm-core --example placement_controller`.
//!
//! The `hub` binary runs it beside the other hub controllers; this example is for comparing it with
//! upstream's `placement controller` on the same hub (docs/placement.md).

use ocm_core::metrics::ControllerMetrics;
use ocm_core::placement::{PlacementOptions, run};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = kube::Client::try_default().await?;
    tokio::select! {
        result = run(client, PlacementOptions::default(), ControllerMetrics::default()) => result?,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
