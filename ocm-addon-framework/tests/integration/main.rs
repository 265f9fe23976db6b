//! Integration tests of ocm-addon-framework, against `ocm_controlplane::TestEnv` (or the real hub
//! named by `OCM_TEST_HUB_KUBECONFIG`). One module per area, the tests named after the scenarios
//! of addon-framework.md §8.1. As in upstream's addon-framework tests there is no work agent and
//! no ocm addon-manager: the tests set the ClusterManagementAddOn owner on each
//! ManagedClusterAddOn themselves and move statuses by hand. The blog's flow with the real agents
//! is `ocm-examples`' `helloworld_e2e`.

mod client;
mod config;
mod csr;
mod deploy;
mod deploy_support;
mod hook;
mod hosted;
mod manager;
mod multi_works;
mod registration;
mod support;
