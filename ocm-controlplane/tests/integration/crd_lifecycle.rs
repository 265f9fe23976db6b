//! CustomResourceDefinitions as kube-apiserver handles them over their life: the API approval
//! annotation of protected groups (`*.k8s.io`, `*.kubernetes.io`) and deletion (the cleanup
//! finalizer, the `Terminating` condition, creates refused, the custom resources deleted before
//! the CRD goes, waiting for their own finalizers).
//!
//! Every test uses its own group and namespace and cleans up, so they also pass against a real
//! cluster (`OCM_TEST_HUB_KUBECONFIG`).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition,
};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

use crate::garbage_collection::{create_namespace, delete_namespace, eventually, unique};

const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// A one-version CRD `widgets.<group>` whose spec takes any fields.
fn widget_crd(group: &str, namespaced: bool, annotations: Option<Value>) -> CustomResourceDefinition {
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {"group": group, "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    });
    if let Some(a) = annotations {
        crd["metadata"]["annotations"] = a;
    }
    serde_json::from_value(crd).unwrap()
}

fn widgets(client: &kube::Client, group: &str, namespace: Option<&str>) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, "v1", "Widget"));
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

fn widget(group: &str, name: &str, finalizers: &[&str]) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
        "metadata": {"name": name, "finalizers": finalizers}, "spec": {"size": 1}}))
    .unwrap()
}

fn condition<'a>(
    crd: &'a CustomResourceDefinition,
    kind: &str,
) -> Option<&'a CustomResourceDefinitionCondition> {
    crd.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
}

/// Creates `widget` as soon as the new CRD serves it.
async fn create_when_served(api: &Api<DynamicObject>, widget: &DynamicObject) {
    eventually("the CRD to serve its resource", || async {
        api.create(&PostParams::default(), widget).await.ok()
    })
    .await;
}

fn api_error(result: Result<CustomResourceDefinition, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn protected_groups_need_the_api_approval_annotation() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let group = format!("{}.k8s.io", unique("approval"));
    let name = format!("widgets.{group}");

    let missing = api_error(
        crds.create(&PostParams::default(), &widget_crd(&group, false, None))
            .await,
    );
    assert_eq!(missing.code, 422);
    assert_eq!(missing.reason, "Invalid");
    assert_eq!(
        missing.message,
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"{name}\" is invalid: metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
        )
    );
    let invalid = api_error(
        crds.create(
            &PostParams::default(),
            &widget_crd(
                &group,
                false,
                Some(json!({"api-approved.kubernetes.io": "maybe later"})),
            ),
        )
        .await,
    );
    assert_eq!(invalid.code, 422);
    assert_eq!(
        invalid.message,
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"{name}\" is invalid: metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"maybe later\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
        )
    );

    // "unapproved…" is accepted and reported as not conformant.
    crds.create(
        &PostParams::default(),
        &widget_crd(
            &group,
            false,
            Some(json!({"api-approved.kubernetes.io": "unapproved, testing only"})),
        ),
    )
    .await
    .unwrap();
    let unapproved = eventually("the approval condition", || async {
        let crd = crds.get(&name).await.unwrap();
        condition(&crd, "KubernetesAPIApprovalPolicyConformant").cloned()
    })
    .await;
    assert_eq!(unapproved.status, "False");
    assert_eq!(unapproved.reason.as_deref(), Some("UnapprovedAnnotation"));
    assert_eq!(
        unapproved.message.as_deref(),
        Some("not approved: \"unapproved, testing only\"")
    );

    // A URL approves it; the condition follows the annotation.
    let url = "https://github.com/kubernetes/enhancements/pull/1111";
    crds.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"api-approved.kubernetes.io": url}}})),
    )
    .await
    .unwrap();
    let approved = eventually("the condition to say approved", || async {
        let crd = crds.get(&name).await.unwrap();
        condition(&crd, "KubernetesAPIApprovalPolicyConformant")
            .filter(|c| c.status == "True")
            .cloned()
    })
    .await;
    assert_eq!(approved.reason.as_deref(), Some("ApprovedAnnotation"));
    assert_eq!(
        approved.message.as_deref(),
        Some(format!("approved in {url}").as_str())
    );

    // Removing it changes the state: refused. Keeping the state (a label change) is not checked.
    let removed = api_error(
        crds.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"api-approved.kubernetes.io": null}}})),
        )
        .await,
    );
    assert_eq!(removed.code, 422);
    crds.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .unwrap();

    // Other groups need nothing.
    let plain = format!("{}.example.com", unique("approval"));
    let created = crds
        .create(&PostParams::default(), &widget_crd(&plain, false, None))
        .await
        .unwrap();
    assert!(created.metadata.annotations.is_none());
    crds.delete(&name, &DeleteParams::default()).await.unwrap();
    crds.delete(&format!("widgets.{plain}"), &DeleteParams::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn deleting_a_crd_deletes_its_custom_resources_before_it_goes() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let group = format!("{}.example.com", unique("cleanup"));
    let name = format!("widgets.{group}");
    let namespace = unique("crd-cleanup");
    create_namespace(&client, &namespace).await;
    crds.create(&PostParams::default(), &widget_crd(&group, true, None))
        .await
        .unwrap();
    let created = crds.get(&name).await.unwrap();
    assert!(
        created.metadata.finalizers.is_none(),
        "the cleanup finalizer comes with the first DELETE"
    );
    let api = widgets(&client, &group, Some(&namespace));
    create_when_served(&api, &widget(&group, "plain", &[])).await;
    api.create(
        &PostParams::default(),
        &widget(&group, "held", &["example.com/hold"]),
    )
    .await
    .unwrap();

    // The first DELETE keeps the CRD: deletionTimestamp, the finalizer, Terminating.
    let deleted = crds.delete(&name, &DeleteParams::default()).await.unwrap();
    let terminating = deleted.left().expect("the CRD is kept while its resources go");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(
        terminating.metadata.finalizers,
        Some(vec![CLEANUP_FINALIZER.to_string()])
    );
    let pending = condition(&terminating, "Terminating").unwrap();
    assert_eq!(pending.status, "True");
    assert_eq!(pending.reason.as_deref(), Some("InstanceDeletionPending"));
    assert_eq!(
        pending.message.as_deref(),
        Some("CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon")
    );

    // The resources are deleted; the one with a finalizer is only marked and holds the CRD.
    eventually("the plain widget to go", || async {
        api.get_opt("plain").await.unwrap().is_none().then_some(())
    })
    .await;
    let held = api.get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    let in_progress = eventually("deletion in progress", || async {
        let crd = crds.get(&name).await.unwrap();
        condition(&crd, "Terminating")
            .filter(|c| c.reason.as_deref() == Some("InstanceDeletionInProgress"))
            .cloned()
    })
    .await;
    assert_eq!(in_progress.status, "True");
    assert_eq!(
        in_progress.message.as_deref(),
        Some("CustomResource deletion is in progress")
    );

    // No new resources while terminating, and discovery lists no create.
    let refused = eventually("creates to be refused", || async {
        match api
            .create(&PostParams::default(), &widget(&group, "late", &[]))
            .await
        {
            Err(kube::Error::Api(status)) => Some(status),
            Ok(_) => {
                api.delete("late", &DeleteParams::default()).await.ok();
                None
            }
            Err(other) => panic!("{other:?}"),
        }
    })
    .await;
    assert_eq!(refused.code, 403);
    assert_eq!(refused.reason, "Forbidden");
    assert_eq!(
        refused.message,
        format!(
            "widgets.{group} \"late\" is forbidden: create not allowed while custom resource definition is terminating"
        )
    );
    let verbs = eventually("discovery to drop create", || async {
        let resources = client
            .list_api_group_resources(&format!("{group}/v1"))
            .await
            .ok()?;
        let widgets = resources.resources.into_iter().find(|r| r.name == "widgets")?;
        (!widgets.verbs.iter().any(|v| v == "create")).then_some(widgets.verbs)
    })
    .await;
    assert_eq!(verbs, ["delete", "deletecollection", "get", "list", "watch"]);
    assert!(crds.get_opt(&name).await.unwrap().is_some());

    // Once the last finalizer goes, the resource and then the CRD are gone.
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("the CRD to be deleted", || async {
        crds.get_opt(&name).await.unwrap().is_none().then_some(())
    })
    .await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .delete(&namespace, &DeleteParams::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn deleting_a_crd_honours_preconditions_and_dry_run() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let group = format!("{}.example.com", unique("precond"));
    let name = format!("widgets.{group}");
    let created = crds
        .create(&PostParams::default(), &widget_crd(&group, false, None))
        .await
        .unwrap();

    let wrong_uid = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("00000000-0000-0000-0000-000000000000".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let refused = match crds.delete(&name, &wrong_uid).await {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("{other:?}"),
    };
    assert_eq!(refused.code, 409);
    assert_eq!(
        refused.message,
        format!(
            "Operation cannot be fulfilled on customresourcedefinitions.apiextensions.k8s.io \"{name}\": Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: {}",
            created.metadata.uid.clone().unwrap()
        )
    );

    let dry = crds
        .delete(&name, &DeleteParams::default().dry_run())
        .await
        .unwrap()
        .left()
        .expect("the CRD as it would be");
    assert!(dry.metadata.deletion_timestamp.is_some());
    assert_eq!(dry.metadata.finalizers, Some(vec![CLEANUP_FINALIZER.to_string()]));
    let kept = crds.get(&name).await.unwrap();
    assert!(kept.metadata.deletion_timestamp.is_none());
    assert!(condition(&kept, "Terminating").is_none());

    // A CRD without resources goes at once after its DELETE, Terminating false on the way.
    crds.delete(&name, &DeleteParams::default()).await.unwrap();
    eventually("the CRD to be deleted", || async {
        crds.get_opt(&name).await.unwrap().is_none().then_some(())
    })
    .await;
}

/// kube-apiserver negotiates the response's media type before a handler runs: a create of a
/// custom resource asking for protobuf only (which custom resources are never served in) is
/// refused 406 and creates nothing — a client told 406 must not find the object written.
#[tokio::test]
async fn a_create_refused_406_for_its_accept_header_writes_nothing() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let group = format!("{}.example.com", unique("accept"));
    let namespace = unique("crd-accept");
    create_namespace(&client, &namespace).await;
    crds.create(&PostParams::default(), &widget_crd(&group, true, None))
        .await
        .unwrap();
    let api = widgets(&client, &group, Some(&namespace));
    create_when_served(&api, &widget(&group, "served", &[])).await;

    let body = serde_json::to_vec(&widget(&group, "refused", &[])).unwrap();
    let request = hyper::http::Request::builder()
        .method("POST")
        .uri(format!("/apis/{group}/v1/namespaces/{namespace}/widgets"))
        .header("content-type", "application/json")
        .header("accept", "application/vnd.kubernetes.protobuf")
        .body(kube::client::Body::from(body))
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert_eq!(response.status().as_u16(), 406);
    assert!(
        api.get_opt("refused").await.unwrap().is_none(),
        "a create answered 406 created the object"
    );

    crds.delete(&format!("widgets.{group}"), &DeleteParams::default())
        .await
        .unwrap();
    delete_namespace(&client, &namespace).await;
}
