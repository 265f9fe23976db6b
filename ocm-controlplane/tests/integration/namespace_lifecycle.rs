//! Namespace deletion through kube-rs: the Terminating phase, creates refused while it lasts, the
//! content deleted (an object with a finalizer holds the namespace until the finalizer goes), the
//! namespace's conditions, and the built-in namespaces that cannot be deleted.
//!
//! Every test uses its own namespace and cleans up, so they also pass against a real cluster
//! (`OCM_TEST_HUB_KUBECONFIG`).

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

use crate::garbage_collection::{config_map, create_cm, create_namespace, eventually, gone, unique};

fn condition<'a>(
    namespace: &'a Namespace,
    kind: &str,
) -> Option<&'a k8s_openapi::api::core::v1::NamespaceCondition> {
    namespace
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
}

#[tokio::test]
async fn deleting_a_namespace_removes_its_content_then_itself() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let name = unique("ns-delete");
    create_namespace(&client, &name).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &name);
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &name);
    create_cm(&cms, config_map("plain", &[], &[])).await;
    create_cm(&cms, config_map("held", &[], &["example.com/hold"])).await;
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "robot"}})).unwrap();
    accounts.create(&PostParams::default(), &account).await.unwrap();

    let deleted = namespaces.delete(&name, &DeleteParams::default()).await.unwrap();
    let terminating = deleted.left().expect("the namespace is kept while terminating");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(
        terminating.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Terminating")
    );
    assert_eq!(
        terminating.spec.as_ref().and_then(|s| s.finalizers.clone()),
        Some(vec!["kubernetes".to_string()])
    );

    // No new content while terminating: kube-apiserver's NamespaceLifecycle answer.
    let refused = cms
        .create(&PostParams::default(), &config_map("late", &[], &[]))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        format!(
            "configmaps \"late\" is forbidden: unable to create new content in namespace {name} because it is being terminated"
        )
    );

    gone(&cms, "plain").await;
    gone(&accounts, "robot").await;
    // The object with a finalizer is marked and holds the namespace, which says so.
    let waiting = eventually("the namespace to report the remaining finalizer", || async {
        let ns = namespaces.get(&name).await.unwrap();
        let remaining = condition(&ns, "NamespaceFinalizersRemaining")?;
        (remaining.status == "True").then_some(ns)
    })
    .await;
    let finalizers = condition(&waiting, "NamespaceFinalizersRemaining").unwrap();
    assert_eq!(finalizers.reason.as_deref(), Some("SomeFinalizersRemain"));
    assert_eq!(
        finalizers.message.as_deref(),
        Some(
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
        )
    );
    let content = condition(&waiting, "NamespaceContentRemaining").unwrap();
    assert_eq!(
        content.message.as_deref(),
        Some("Some resources are remaining: configmaps. has 1 resource instances")
    );
    assert_eq!(
        condition(&waiting, "NamespaceDeletionContentFailure")
            .unwrap()
            .status,
        "False"
    );
    let held = cms.get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());

    // The test's controller finishes its work: the namespace goes.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    gone(&cms, "held").await;
    gone(&namespaces, &name).await;
}

#[tokio::test]
async fn built_in_namespaces_exist_and_cannot_be_deleted() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let ns = namespaces.get(name).await.unwrap();
        assert_eq!(
            ns.status.and_then(|s| s.phase).as_deref(),
            Some("Active"),
            "{name}"
        );
    }
    for name in ["default", "kube-system", "kube-public"] {
        let err = namespaces
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_err();
        let kube::Error::Api(status) = err else {
            panic!("{err:?}")
        };
        assert_eq!(status.code, 403, "{name}");
        assert_eq!(
            status.message,
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
        let still: Value = serde_json::to_value(namespaces.get(name).await.unwrap()).unwrap();
        assert!(still.pointer("/metadata/deletionTimestamp").is_none());
    }
}
