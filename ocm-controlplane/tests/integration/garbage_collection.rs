//! The garbage collector through kube-rs: background, foreground (with `blockOwnerDeletion`) and
//! orphan deletion, several owners, owners already gone, a namespaced owner named from another
//! namespace, and a custom resource owning namespaced and cluster-scoped objects.
//!
//! Every test uses its own namespaces and names and cleans up, so they also pass against a real
//! cluster (`OCM_TEST_HUB_KUBECONFIG`).

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, PropagationPolicy,
};
use kube::core::GroupVersionKind;
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

/// How long convergence may take (the namespace controller alone waits 5 s before it starts).
pub(crate) const DEADLINE: Duration = Duration::from_secs(60);

pub(crate) fn unique(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..8])
}

/// Polls `check` until it yields a value, failing after [`DEADLINE`] with `what`.
pub(crate) async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn create_namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let body: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &body).await.unwrap();
}

pub(crate) async fn delete_namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
}

/// A ConfigMap with the given owner references (`(kind, apiVersion, name, uid, block)`) and
/// finalizers.
pub(crate) fn config_map(
    name: &str,
    owners: &[(&str, &str, &str, &str, bool)],
    finalizers: &[&str],
) -> ConfigMap {
    let refs: Vec<Value> = owners
        .iter()
        .map(|(kind, api_version, owner, uid, block)| {
            json!({"apiVersion": api_version, "kind": kind, "name": owner, "uid": uid, "blockOwnerDeletion": block})
        })
        .collect();
    serde_json::from_value(
        json!({"metadata": {"name": name, "ownerReferences": refs, "finalizers": finalizers},
        "data": {"k": "v"}}),
    )
    .unwrap()
}

pub(crate) async fn create_cm(api: &Api<ConfigMap>, cm: ConfigMap) -> String {
    let created = api.create(&PostParams::default(), &cm).await.unwrap();
    created.metadata.uid.unwrap()
}

/// Whether the object is gone (polled until it is).
pub(crate) async fn gone<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(&format!("{name} to be deleted"), || async {
        api.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
}

fn delete_with(policy: PropagationPolicy) -> DeleteParams {
    DeleteParams {
        propagation_policy: Some(policy),
        ..DeleteParams::default()
    }
}

async fn drop_finalizers(api: &Api<ConfigMap>, name: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn background_deletion_collects_dependents() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("gc-bg");
    create_namespace(&client, &ns).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let owner = create_cm(&cms, config_map("owner", &[], &[])).await;
    create_cm(
        &cms,
        config_map("dep", &[("ConfigMap", "v1", "owner", &owner, false)], &[]),
    )
    .await;
    create_cm(
        &cms,
        config_map("dep-block", &[("ConfigMap", "v1", "owner", &owner, true)], &[]),
    )
    .await;
    cms.delete("owner", &delete_with(PropagationPolicy::Background))
        .await
        .unwrap();
    // The owner goes at once; its dependents follow.
    assert!(cms.get_opt("owner").await.unwrap().is_none());
    gone(&cms, "dep").await;
    gone(&cms, "dep-block").await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("gc-fg");
    create_namespace(&client, &ns).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let owner = create_cm(&cms, config_map("owner", &[], &[])).await;
    create_cm(
        &cms,
        config_map("free", &[("ConfigMap", "v1", "owner", &owner, false)], &[]),
    )
    .await;
    // The blocking dependent is held by a finalizer of its own, so the wait can be seen.
    create_cm(
        &cms,
        config_map(
            "blocking",
            &[("ConfigMap", "v1", "owner", &owner, true)],
            &["example.com/hold"],
        ),
    )
    .await;
    cms.delete("owner", &delete_with(PropagationPolicy::Foreground))
        .await
        .unwrap();
    gone(&cms, "free").await;
    eventually("the blocking dependent to be deleting", || async {
        let cm = cms.get("blocking").await.unwrap();
        cm.metadata.deletion_timestamp.is_some().then_some(())
    })
    .await;
    // The owner waits, marked for foreground deletion.
    let waiting = cms.get("owner").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert_eq!(
        waiting.metadata.finalizers.as_deref(),
        Some(&["foregroundDeletion".to_string()][..])
    );
    drop_finalizers(&cms, "blocking").await;
    gone(&cms, "blocking").await;
    gone(&cms, "owner").await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_without_the_reference() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("gc-orphan");
    create_namespace(&client, &ns).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let owner = create_cm(&cms, config_map("owner", &[], &[])).await;
    let other = create_cm(&cms, config_map("other", &[], &[])).await;
    create_cm(
        &cms,
        config_map(
            "dep",
            &[
                ("ConfigMap", "v1", "owner", &owner, true),
                ("ConfigMap", "v1", "other", &other, false),
            ],
            &[],
        ),
    )
    .await;
    let deleting = cms
        .delete("owner", &delete_with(PropagationPolicy::Orphan))
        .await
        .unwrap();
    let marked = deleting.left().expect("the owner is kept while orphaning");
    assert_eq!(
        marked.metadata.finalizers.as_deref(),
        Some(&["orphan".to_string()][..])
    );
    gone(&cms, "owner").await;
    let dep = cms.get("dep").await.unwrap();
    let refs = dep.metadata.owner_references.unwrap_or_default();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(refs[0].uid, other);
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn dependents_with_several_owners_go_with_the_last() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("gc-multi");
    create_namespace(&client, &ns).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let a = create_cm(&cms, config_map("a", &[], &[])).await;
    let b = create_cm(&cms, config_map("b", &[], &[])).await;
    create_cm(
        &cms,
        config_map(
            "dep",
            &[
                ("ConfigMap", "v1", "a", &a, false),
                ("ConfigMap", "v1", "b", &b, false),
            ],
            &[],
        ),
    )
    .await;
    cms.delete("a", &DeleteParams::background()).await.unwrap();
    // The reference to the deleted owner is dropped; the dependent stays with the other.
    let left = eventually("the dangling reference to be removed", || async {
        let dep = cms.get("dep").await.unwrap();
        let refs = dep.metadata.owner_references.unwrap_or_default();
        (refs.len() == 1).then_some(refs)
    })
    .await;
    assert_eq!(left[0].uid, b);
    cms.delete("b", &DeleteParams::background()).await.unwrap();
    gone(&cms, "dep").await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn dependents_of_owners_already_gone_are_deleted() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("gc-dangling");
    create_namespace(&client, &ns).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let ghost = uuid::Uuid::new_v4().to_string();
    create_cm(
        &cms,
        config_map("orphaned", &[("ConfigMap", "v1", "ghost", &ghost, false)], &[]),
    )
    .await;
    // An owner of that name with another uid is not the owner either.
    create_cm(&cms, config_map("impostor", &[], &[])).await;
    let stranger = uuid::Uuid::new_v4().to_string();
    create_cm(
        &cms,
        config_map(
            "misled",
            &[("ConfigMap", "v1", "impostor", &stranger, false)],
            &[],
        ),
    )
    .await;
    gone(&cms, "orphaned").await;
    gone(&cms, "misled").await;
    assert!(cms.get_opt("impostor").await.unwrap().is_some());
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn an_owner_in_another_namespace_counts_as_absent() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let home = unique("gc-home");
    let away = unique("gc-away");
    create_namespace(&client, &home).await;
    create_namespace(&client, &away).await;
    let home_cms: Api<ConfigMap> = Api::namespaced(client.clone(), &home);
    let away_cms: Api<ConfigMap> = Api::namespaced(client.clone(), &away);
    let owner = create_cm(&home_cms, config_map("owner", &[], &[])).await;
    // Owner references carry no namespace: the owner is looked for in the dependent's.
    create_cm(
        &away_cms,
        config_map("dep", &[("ConfigMap", "v1", "owner", &owner, false)], &[]),
    )
    .await;
    gone(&away_cms, "dep").await;
    assert!(home_cms.get_opt("owner").await.unwrap().is_some());
    delete_namespace(&client, &home).await;
    delete_namespace(&client, &away).await;
}

#[tokio::test]
async fn a_custom_resource_owns_namespaced_and_cluster_scoped_objects() {
    let env = TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("gc-cr");
    create_namespace(&client, &ns).await;
    let gvk = GroupVersionKind::gvk("cluster.open-cluster-management.io", "v1", "ManagedCluster");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "managedclusters");
    let clusters: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let name = unique("gc-owner");
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": name}, "spec": {"hubAcceptsClient": true}}))
    .unwrap();
    let owner = clusters
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let api_version = "cluster.open-cluster-management.io/v1";
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    create_cm(
        &cms,
        config_map(
            "owned",
            &[("ManagedCluster", api_version, &name, &owner, false)],
            &[],
        ),
    )
    .await;
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let role_name = unique("gc-owned-role");
    let role: ClusterRole = serde_json::from_value(json!({"metadata": {"name": role_name,
        "ownerReferences": [{"apiVersion": api_version, "kind": "ManagedCluster", "name": name, "uid": owner}]},
        "rules": []}))
    .unwrap();
    roles.create(&PostParams::default(), &role).await.unwrap();
    clusters.delete(&name, &DeleteParams::default()).await.unwrap();
    gone(&cms, "owned").await;
    gone(&roles, &role_name).await;
    delete_namespace(&client, &ns).await;
}
