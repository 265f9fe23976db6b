//! The integration tests of ocm-addon-framework, one module per area, named after the scenarios
//! of upstream's addon-framework integration tests (addon-framework.md §8.1). They run against an
//! embedded hub, or the hub of `OCM_TEST_HUB_KUBECONFIG`.

mod deploy;
mod deploy_support;
mod hook;
mod hosted;
mod multi_works;
