//! `kubectl delete namespace` with content (kubectl waits until the namespace is gone) and
//! `kubectl delete --cascade=background|foreground|orphan` with their effect on dependents.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

use super::*;
use crate::garbage_collection::{
    config_map, create_cm, create_namespace, delete_namespace, eventually, gone,
};

#[tokio::test]
async fn kubectl_delete_namespace_waits_for_its_content() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_delete_namespace_waits_for_its_content").await else {
        return;
    };
    let client = env.client().await.unwrap();
    let ns = unique("kubectl-nsdel");
    create_namespace(&client, &ns).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let owner = create_cm(&cms, config_map("owner", &[], &[])).await;
    create_cm(
        &cms,
        config_map("dep", &[("ConfigMap", "v1", "owner", &owner, true)], &[]),
    )
    .await;
    for i in 0..5 {
        create_cm(&cms, config_map(&format!("item-{i}"), &[], &[])).await;
    }
    let out = k.ok(&["delete", "namespace", &ns]).await;
    assert_eq!(out.trim(), format!("namespace \"{ns}\" deleted"));
    // kubectl returned once the namespace was gone.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert!(namespaces.get_opt(&ns).await.unwrap().is_none());
    let err = k.fails(&["get", "namespace", &ns]).await;
    assert!(err.contains(&format!("namespaces \"{ns}\" not found")), "{err}");
}

/// A namespace with `owner` and two dependents (`dep`, and `dep-block` with
/// `blockOwnerDeletion`).
async fn family(client: &kube::Client, prefix: &str) -> (String, Api<ConfigMap>) {
    let ns = unique(prefix);
    create_namespace(client, &ns).await;
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
    (ns, cms)
}

#[tokio::test]
async fn kubectl_delete_cascade_background_and_foreground() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_delete_cascade_background_and_foreground").await else {
        return;
    };
    let client = env.client().await.unwrap();

    let (ns, cms) = family(&client, "kubectl-bg").await;
    let out = k
        .ok(&["delete", "configmap", "owner", "-n", &ns, "--cascade=background"])
        .await;
    assert_eq!(out.trim(), "configmap \"owner\" deleted");
    gone(&cms, "dep").await;
    gone(&cms, "dep-block").await;
    delete_namespace(&client, &ns).await;

    // Foreground: kubectl waits for the owner, which waits for its blocking dependent.
    let (ns, cms) = family(&client, "kubectl-fg").await;
    let out = k
        .ok(&["delete", "configmap", "owner", "-n", &ns, "--cascade=foreground"])
        .await;
    assert_eq!(out.trim(), "configmap \"owner\" deleted");
    assert!(cms.get_opt("owner").await.unwrap().is_none());
    assert!(cms.get_opt("dep-block").await.unwrap().is_none());
    gone(&cms, "dep").await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn kubectl_delete_cascade_orphan() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_delete_cascade_orphan").await else {
        return;
    };
    let client = env.client().await.unwrap();
    let (ns, cms) = family(&client, "kubectl-orphan").await;
    let out = k
        .ok(&["delete", "configmap", "owner", "-n", &ns, "--cascade=orphan"])
        .await;
    assert_eq!(out.trim(), "configmap \"owner\" deleted");
    gone(&cms, "owner").await;
    for name in ["dep", "dep-block"] {
        eventually(&format!("{name} to lose its owner reference"), || async {
            let cm = cms.get(name).await.unwrap();
            cm.metadata
                .owner_references
                .is_none_or(|r| r.is_empty())
                .then_some(())
        })
        .await;
    }
    delete_namespace(&client, &ns).await;
}
