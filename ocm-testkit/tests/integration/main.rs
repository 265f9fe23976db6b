//! Integration tests of ocm-testkit: a fleet joins, runs work, and hands add-on credentials out
//! (embedded, or the real clusters named by `OCM_TEST_HUB_KUBECONFIG` /
//! `OCM_TEST_SPOKE_KUBECONFIG`).

mod fleet;
mod sim;
