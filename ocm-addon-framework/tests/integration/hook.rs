//! Pre-delete hooks in Default mode (addon-framework.md §8.1 scenario 8).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::collections::BTreeMap;

use kube::ResourceExt;
use ocm_addon_framework::agent::{AgentAddonOptions, HealthProber};
use ocm_api::names::{annotations, finalizers};
use serde_json::{Value, json};

use crate::deploy_support::{
    TestAddon, deployment, eventually, feedback, manifest, manifests_of, start, unique,
};

/// A pre-delete hook Job `default/test`.
pub fn hook_job(extra_annotations: &[(&str, &str)]) -> ocm_api::work::v1::Manifest {
    let mut job_annotations = serde_json::Map::new();
    job_annotations.insert(annotations::ADDON_PRE_DELETE.to_owned(), json!(""));
    for (key, value) in extra_annotations {
        job_annotations.insert((*key).to_owned(), json!(value));
    }
    manifest(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "test", "namespace": "default", "annotations": job_annotations},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "cleanup", "image": "quay.io/test/cleanup:latest"}]}}}
    }))
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_hook_deploy_install_and_uninstall() {
    let (name, cluster) = (unique("test"), unique("cluster"));
    let addon = TestAddon::new(
        AgentAddonOptions {
            addon_name: name.clone(),
            health_prober: Some(HealthProber::Work(None)),
            ..Default::default()
        },
        vec![deployment("default", "nginx-deployment", 1), hook_job(&[])],
    );
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_mca(&cluster, &name, BTreeMap::new()).await;
    let work_name = format!("addon-{name}-deploy-0");
    let work = hub
        .work_where(&cluster, &work_name, "the deploy work", |w| {
            manifests_of(w).len() == 1
        })
        .await;
    assert_eq!(manifests_of(&work)[0].kind(), Some("Deployment"));
    let api = hub.addons(&cluster);
    eventually("the pre-delete finalizer", || async {
        let mca = api.get(&name).await.unwrap();
        mca.finalizers()
            .iter()
            .any(|f| f == finalizers::ADDON_PRE_DELETE)
            .then_some(())
    })
    .await;
    hub.set_work_status(
        &cluster,
        &work_name,
        &[("Applied", "True"), ("Available", "True")],
        Value::Null,
    )
    .await;
    hub.addon_condition(
        &cluster,
        &name,
        "ManifestApplied",
        "True",
        Some("AddonManifestApplied"),
    )
    .await;
    // The hook work is not created before the add-on is deleted.
    let hook_name = format!("addon-{name}-pre-delete");
    assert!(hub.works(&cluster).get_opt(&hook_name).await.unwrap().is_none());

    api.delete(&name, &Default::default()).await.unwrap();
    let hook = hub
        .work_where(&cluster, &hook_name, "the hook work", |w| {
            manifests_of(w).len() == 1
        })
        .await;
    assert_eq!(manifests_of(&hook)[0].kind(), Some("Job"));
    let config = &hook.spec.manifest_configs.as_ref().unwrap()[0];
    assert_eq!(config.resource_identifier.resource, "jobs");
    assert_eq!(hook.owner_references()[0].kind, "ManagedClusterAddOn");
    hub.addon_condition(
        &cluster,
        &name,
        "HookManifestCompleted",
        "False",
        Some("HookManifestIsNotCompleted"),
    )
    .await;

    let complete = json!([feedback(
        "batch",
        "jobs",
        "default",
        "test",
        &[("JobComplete", json!("True"))]
    )]);
    hub.set_work_status(
        &cluster,
        &hook_name,
        &[("Applied", "True"), ("Available", "True")],
        complete,
    )
    .await;
    eventually("the add-on deleted after its hook completed", || async {
        api.get_opt(&name).await.unwrap().is_none().then_some(())
    })
    .await;
    // The works go with their owner (garbage collection).
    hub.work_gone(&cluster, &work_name).await;
    hub.work_gone(&cluster, &hook_name).await;
    hub.cleanup(&[&cluster], &name).await;
}
