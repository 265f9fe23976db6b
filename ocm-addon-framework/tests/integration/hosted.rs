//! Hosted mode: deploy and hook works on the hosting cluster (addon-framework.md §8.1
//! scenarios 9–12).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use ocm_addon_framework::agent::probers::deployment_prober;
use ocm_addon_framework::agent::{AgentAddonOptions, HealthProber, HostedMode, HostedModeInfo, InstallMode};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::{annotations, finalizers};
use serde_json::{Value, json};

use crate::deploy_support::{
    TestAddon, configs_of, consistently, eventually, feedback, manifest, manifests_of, start, unique,
};
use crate::hook::hook_job;

/// A Deployment located on the hosting cluster.
fn hosted_deployment() -> ocm_api::work::v1::Manifest {
    manifest(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx-deployment", "namespace": "default",
                     "annotations": {annotations::HOSTED_MANIFEST_LOCATION: "hosting"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "nginx"}},
                 "template": {"metadata": {"labels": {"app": "nginx"}},
                              "spec": {"containers": [{"name": "nginx", "image": "quay.io/test/nginx:latest"}]}}}
    }))
}

fn hosted_options(name: &str, prober: Option<HealthProber>, hosted: HostedMode) -> AgentAddonOptions {
    AgentAddonOptions {
        addon_name: name.to_owned(),
        health_prober: prober,
        hosted_mode: Some(hosted),
        ..Default::default()
    }
}

fn hosting_annotation(hosting: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(annotations::HOSTING_CLUSTER_NAME.to_owned(), hosting.to_owned())])
}

async fn wait_gone(api: &Api<ManagedClusterAddOn>, name: &str) {
    eventually("the add-on deleted", || async {
        api.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hosted_deploy_and_delete_on_hosting_cluster() {
    let (name, cluster, hosting) = (unique("test-hosted"), unique("cluster"), unique("hosting"));
    let addon = TestAddon::new(
        hosted_options(&name, None, HostedMode::by_annotation()),
        vec![hosted_deployment()],
    );
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_cluster(&hosting).await;
    hub.create_mca(&cluster, &name, hosting_annotation(&hosting))
        .await;
    let work_name = format!("addon-{name}-deploy-hosting-{cluster}-0");
    let work = hub
        .work_where(&hosting, &work_name, "the hosting deploy work", |w| {
            manifests_of(w).len() == 1
        })
        .await;
    assert_eq!(
        work.labels()["open-cluster-management.io/addon-namespace"],
        cluster
    );
    assert!(work.owner_references().is_empty());
    assert!(
        hub.works(&cluster)
            .get_opt(&format!("addon-{name}-deploy-0"))
            .await
            .unwrap()
            .is_none()
    );
    hub.addon_condition(
        &cluster,
        &name,
        "HostingClusterValidity",
        "True",
        Some("HostingClusterValid"),
    )
    .await;
    hub.set_work_status(&hosting, &work_name, &[("Applied", "True")], Value::Null)
        .await;
    hub.addon_condition(
        &cluster,
        &name,
        "HostingManifestApplied",
        "True",
        Some("AddonManifestApplied"),
    )
    .await;

    // Deleting the managed cluster leaves the hosting work.
    let clusters: Api<ManagedCluster> = Api::all(hub.client.clone());
    let hold = json!({"metadata": {"finalizers": ["test.open-cluster-management.io/hold"]}});
    clusters
        .patch(&cluster, &PatchParams::default(), &Patch::Merge(&hold))
        .await
        .unwrap();
    clusters.delete(&cluster, &Default::default()).await.unwrap();
    let works = hub.works(&hosting);
    consistently(
        3,
        "the hosting work of a cluster being deleted exists",
        || async { works.get_opt(&work_name).await.unwrap().is_some() },
    )
    .await;

    let api = hub.addons(&cluster);
    api.delete(&name, &Default::default()).await.unwrap();
    hub.work_gone(&hosting, &work_name).await;
    wait_gone(&api, &name).await;
    hub.cleanup(&[&cluster, &hosting], &name).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hosted_deploy_with_prober_func() {
    let (name, cluster, hosting) = (unique("test-hosted"), unique("cluster"), unique("hosting"));
    let addon = TestAddon::new(
        hosted_options(
            &name,
            Some(deployment_prober([("default", "nginx-deployment")])),
            HostedMode::by_annotation(),
        ),
        vec![hosted_deployment()],
    );
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_cluster(&hosting).await;
    hub.create_mca(&cluster, &name, hosting_annotation(&hosting))
        .await;
    let work_name = format!("addon-{name}-deploy-hosting-{cluster}-0");
    hub.work_where(&hosting, &work_name, "the hosting deploy work", |w| {
        manifests_of(w).len() == 1 && configs_of(w) == 1
    })
    .await;
    hub.set_work_status(&hosting, &work_name, &[("Applied", "True")], Value::Null)
        .await;
    hub.addon_condition(
        &cluster,
        &name,
        "HostingManifestApplied",
        "True",
        Some("AddonManifestApplied"),
    )
    .await;
    let api = hub.addons(&cluster);
    api.delete(&name, &Default::default()).await.unwrap();
    hub.work_gone(&hosting, &work_name).await;
    wait_gone(&api, &name).await;
    hub.cleanup(&[&cluster, &hosting], &name).await;
}

/// Always Hosted on one cluster, whatever the add-on says.
struct AlwaysHosted(String);

impl HostedModeInfo for AlwaysHosted {
    fn mode(&self, _addon: &ManagedClusterAddOn, _cluster: &ManagedCluster) -> InstallMode {
        InstallMode::Hosted {
            hosting_cluster: self.0.clone(),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn hosted_deploy_with_customized_hosted_mode_info() {
    let (name, cluster, hosting) = (unique("test-hosted"), unique("cluster"), unique("hosting"));
    let hosted = HostedMode {
        info: Arc::new(AlwaysHosted(hosting.clone())),
    };
    let addon = TestAddon::new(hosted_options(&name, None, hosted), vec![hosted_deployment()]);
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_cluster(&hosting).await;
    hub.create_mca(&cluster, &name, BTreeMap::new()).await;
    let work_name = format!("addon-{name}-deploy-hosting-{cluster}-0");
    hub.work_where(&hosting, &work_name, "the hosting deploy work", |w| {
        manifests_of(w).len() == 1
    })
    .await;
    let api = hub.addons(&cluster);
    api.delete(&name, &Default::default()).await.unwrap();
    hub.work_gone(&hosting, &work_name).await;
    wait_gone(&api, &name).await;
    hub.cleanup(&[&cluster, &hosting], &name).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hosted_hook_deploy_and_delete() {
    let (name, cluster, hosting) = (unique("test-hosted"), unique("cluster"), unique("hosting"));
    let hook = hook_job(&[(annotations::HOSTED_MANIFEST_LOCATION, "hosting")]);
    let addon = TestAddon::new(
        hosted_options(&name, None, HostedMode::by_annotation()),
        vec![hosted_deployment(), hook],
    );
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_cluster(&hosting).await;
    hub.create_mca(&cluster, &name, hosting_annotation(&hosting))
        .await;
    let api = hub.addons(&cluster);
    const PENDING: &str = "test.open-cluster-management.io/pending";
    eventually("the pending finalizer added", || async {
        let mca = api.get(&name).await.unwrap();
        let mut list = mca.finalizers().to_vec();
        if list.iter().any(|f| f == PENDING) {
            return Some(());
        }
        list.push(PENDING.to_owned());
        let patch = json!({"metadata": {"finalizers": list, "resourceVersion": mca.resource_version()}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .ok()
            .map(|_| ())
    })
    .await;

    let work_name = format!("addon-{name}-deploy-hosting-{cluster}-0");
    let work = hub
        .work_where(&hosting, &work_name, "the hosting deploy work", |w| {
            manifests_of(w).len() == 1
        })
        .await;
    assert_eq!(manifests_of(&work)[0].kind(), Some("Deployment"));
    eventually("the hosting pre-delete finalizer", || async {
        let mca = api.get(&name).await.unwrap();
        mca.finalizers()
            .iter()
            .any(|f| f == finalizers::ADDON_HOSTING_PRE_DELETE)
            .then_some(())
    })
    .await;
    hub.set_work_status(&hosting, &work_name, &[("Applied", "True")], Value::Null)
        .await;
    hub.addon_condition(
        &cluster,
        &name,
        "HostingManifestApplied",
        "True",
        Some("AddonManifestApplied"),
    )
    .await;

    api.delete(&name, &Default::default()).await.unwrap();
    let hook_name = format!("addon-{name}-pre-delete-hosting-{cluster}");
    let hook = hub
        .work_where(&hosting, &hook_name, "the hosting hook work", |w| {
            manifests_of(w).len() == 1
        })
        .await;
    assert_eq!(
        hook.labels()["open-cluster-management.io/addon-namespace"],
        cluster
    );
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
        &hosting,
        &hook_name,
        &[("Applied", "True"), ("Available", "True")],
        complete,
    )
    .await;
    hub.addon_condition(
        &cluster,
        &name,
        "HookManifestCompleted",
        "True",
        Some("HookManifestIsCompleted"),
    )
    .await;
    eventually("only the pending finalizer left", || async {
        let mca = api.get(&name).await.unwrap();
        (mca.finalizers() == [PENDING]).then_some(())
    })
    .await;
    hub.work_gone(&hosting, &hook_name).await;
    // Touching the add-on never brings the hook work back.
    for round in 0..3 {
        let patch = json!({"metadata": {"labels": {"test": format!("{round}")}}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        let works = hub.works(&hosting);
        consistently(1, "the hook work stays deleted", || async {
            works.get_opt(&hook_name).await.unwrap().is_none()
        })
        .await;
    }
    let patch = json!({"metadata": {"finalizers": null}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    wait_gone(&api, &name).await;
    hub.cleanup(&[&cluster, &hosting], &name).await;
}
