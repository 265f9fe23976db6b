//! The hub's general add-on manager (addon-framework.md §5.5), on a TestEnv hub (or the real hub
//! of `OCM_TEST_HUB_KUBECONFIG`).

mod owner;
