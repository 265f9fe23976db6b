//! The work agent end to end, through its public API only, on a TestEnv hub and spoke (or the
//! real clusters of `OCM_TEST_HUB_KUBECONFIG` / `OCM_TEST_SPOKE_KUBECONFIG`): wire compatibility
//! with upstream's agent (`compat`) and restarts mid-apply (`restart`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers"
)]

mod compat;
mod normalize;
mod restart;

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use ocm_controlplane::TestEnv;
use serde_json::json;

use crate::support::unique;

/// A hub and a spoke with the OCM CRDs, and a cluster namespace of the test's own on the hub.
pub struct Clusters {
    pub hub: TestEnv,
    pub spoke: TestEnv,
    pub hub_client: kube::Client,
    pub spoke_client: kube::Client,
    /// The cluster's name (and hub namespace).
    pub cluster: String,
}

impl Clusters {
    pub async fn new(prefix: &str) -> Self {
        let hub = TestEnv::hub().await.unwrap();
        hub.install_ocm_crds().await.unwrap();
        let spoke = TestEnv::spoke().await.unwrap();
        spoke.install_ocm_crds().await.unwrap();
        let hub_client = hub.client().await.unwrap();
        let spoke_client = spoke.client().await.unwrap();
        let cluster = unique(prefix);
        let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": cluster}})).unwrap();
        Api::<Namespace>::all(hub_client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
        Self {
            hub,
            spoke,
            hub_client,
            spoke_client,
            cluster,
        }
    }

    /// A namespace of the test's own on the spoke.
    pub async fn spoke_namespace(&self, prefix: &str) -> String {
        let name = unique(prefix);
        let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        Api::<Namespace>::all(self.spoke_client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
        name
    }

    /// Deletes the cluster namespace on the hub (stop the agent first: works keep their
    /// finalizer otherwise).
    pub async fn finish(self) {
        let _ = Api::<Namespace>::all(self.hub_client.clone())
            .delete(&self.cluster, &DeleteParams::default())
            .await;
    }
}
