//! Registration end to end: the agent and the hub controllers together on a TestEnv hub and
//! spoke (or the real clusters of `OCM_TEST_HUB_KUBECONFIG` / `OCM_TEST_SPOKE_KUBECONFIG`),
//! joined the way a user does it with `kubectl`, killed and restarted at every step of the join,
//! and the §6.1 scenarios that need both sides (lease expiry and recovery, hub-approved renewal).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers"
)]

mod kubectl_join;
mod restart;
mod scenarios;
pub(crate) mod support;
