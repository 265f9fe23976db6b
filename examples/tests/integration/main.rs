//! Integration tests of the example binaries: flag parsing, `hub`, `klusterlet` and
//! `quickstart` run as processes (`CARGO_BIN_EXE_*`), the helloworld agent, and the OCM blog's
//! helloworld flow end to end on an `ocm-testkit` fleet.
//!
//! With `OCM_TEST_HUB_KUBECONFIG` / `OCM_TEST_SPOKE_KUBECONFIG` set, `hub` and `klusterlet` run
//! against those clusters (`--kubeconfig`, `--spoke-kubeconfig`) instead of `--embedded`, with
//! unique names, and clean up after themselves. `quickstart` always runs its own embedded
//! clusters.

// Test code: failing loudly is what a test wants.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod binaries;
mod flags;
mod helloworld_agent;
mod helloworld_e2e;
mod quickstart;
mod support;
