//! Integration tests of ocm-core, against `ocm_controlplane::TestEnv` (or the real clusters named
//! by `OCM_TEST_HUB_KUBECONFIG` / `OCM_TEST_SPOKE_KUBECONFIG`). One module per area.

mod addon_manager;
mod crds;
mod hub_lock;
mod placement;
mod registration_admission;
mod registration_agent;
mod registration_e2e;
mod registration_hub;
mod registration_sets;
mod support;
mod work_agent;
mod work_e2e;
mod work_hub;
