//! ManifestWork garbage collection: a finished work goes `ttlSecondsAfterFinished` after its
//! `Complete` condition turned True; works without a TTL, not complete, or owned by a
//! ManifestWorkReplicaSet stay.

#![allow(clippy::unwrap_used, reason = "test")]

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use ocm_api::names::labels;
use ocm_api::work::v1::ManifestWork;
use ocm_controlplane::TestEnv;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::work::hub::garbage_collection;
use serde_json::json;

use crate::support::{eventually, unique};

async fn create(api: &Api<ManifestWork>, name: &str, ttl: Option<i64>, mwrs: bool) {
    let mut work = json!({"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": name},
        "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}}]}}});
    if let Some(ttl) = ttl {
        work["spec"]["deleteOption"] =
            json!({"propagationPolicy": "Foreground", "ttlSecondsAfterFinished": ttl});
    }
    if mwrs {
        work["metadata"]["labels"] = json!({labels::MANIFEST_WORK_REPLICA_SET: "ns.set"});
    }
    let work: ManifestWork = serde_json::from_value(work).unwrap();
    api.create(&PostParams::default(), &work).await.unwrap();
}

/// Sets the work's `Complete` condition (as the agent's condition rules would).
async fn complete(api: &Api<ManifestWork>, name: &str, status: &str) {
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let patch = json!({"status": {"conditions": [{"type": "Complete", "status": status,
        "reason": "ConditionRulesAggregated", "message": "", "lastTransitionTime": now}]}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

#[tokio::test]
async fn finished_works_are_deleted_after_their_ttl() {
    let env = TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("work-gc");
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let controller = tokio::spawn(garbage_collection::run(
        client.clone(),
        ControllerMetrics::default(),
    ));
    let api = Api::<ManifestWork>::namespaced(client.clone(), &ns);
    create(&api, "ttl", Some(5), false).await;
    create(&api, "no-ttl", None, false).await;
    create(&api, "not-complete", Some(0), false).await;
    create(&api, "ttl-zero", Some(0), false).await;
    create(&api, "replica-set", Some(0), true).await;
    complete(&api, "ttl", "True").await;
    complete(&api, "no-ttl", "True").await;
    complete(&api, "not-complete", "False").await;
    complete(&api, "ttl-zero", "True").await;
    complete(&api, "replica-set", "True").await;
    // TTL 0: deleted at once; the 5 s TTL is not up yet.
    eventually("the TTL-0 work to be deleted", || async {
        api.get_opt("ttl-zero").await.unwrap().is_none().then_some(())
    })
    .await;
    assert!(
        api.get_opt("ttl").await.unwrap().is_some(),
        "deleted before its TTL"
    );
    eventually("the 5 s TTL work to be deleted", || async {
        api.get_opt("ttl").await.unwrap().is_none().then_some(())
    })
    .await;
    for kept in ["no-ttl", "not-complete", "replica-set"] {
        assert!(api.get_opt(kept).await.unwrap().is_some(), "{kept} was deleted");
    }
    controller.abort();
    Api::<Namespace>::all(client)
        .delete(&ns, &DeleteParams::default())
        .await
        .unwrap();
}
