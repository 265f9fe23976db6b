//! Integration tests of the hub's cluster-set, cleanup and add-on status controllers
//! (ocm-core.md §6.1), against a TestEnv hub with the OCM CRDs installed.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail the test on any error"
)]

mod addon_status;
mod cleanup;
mod clusterset;

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

pub use crate::support::{eventually, unique};

/// A hub with the OCM CRDs and an admin client.
pub async fn hub() -> (TestEnv, kube::Client) {
    let env = TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    (env, client)
}

/// The ApiResource of a ManagedClusterAddOn.
pub fn addon_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "addon.open-cluster-management.io",
            "v1beta1",
            "ManagedClusterAddOn",
        ),
        "managedclusteraddons",
    )
}

/// The ApiResource of a ManifestWork.
pub fn work_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.open-cluster-management.io", "v1", "ManifestWork"),
        "manifestworks",
    )
}

/// Creates a namespaced object of `ar` from JSON.
pub async fn create_dynamic(
    client: &kube::Client,
    ar: &ApiResource,
    namespace: &str,
    object: Value,
) -> DynamicObject {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, ar);
    let object: DynamicObject = serde_json::from_value(object).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap()
}

/// Clears the finalizers of a namespaced object of `ar` (ignores a missing object).
pub async fn release(client: &kube::Client, ar: &ApiResource, namespace: &str, name: &str) {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, ar);
    let patch = json!({"metadata": {"finalizers": null}});
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => panic!("releasing {name}: {e}"),
    }
}

/// Whether a namespaced object of `ar` is being deleted (`None` when gone).
pub async fn deleting(client: &kube::Client, ar: &ApiResource, namespace: &str, name: &str) -> Option<bool> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, ar);
    api.get_opt(name)
        .await
        .unwrap()
        .map(|o| o.metadata.deletion_timestamp.is_some())
}
