//! The agent deploy controller: deploy works, probers and health, external triggers, deletion
//! options (addon-framework.md §8.1 scenarios 1–7).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::collections::BTreeMap;

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use ocm_addon_framework::agent::probers::{all_deployments_prober, deployment_prober};
use ocm_addon_framework::agent::{AgentAddonOptions, HealthProber};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::annotations;
use ocm_api::work::v1::DeletePropagationPolicy;
use serde_json::{Value, json};

use crate::deploy_support::{
    TestAddon, condition, configs_of, consistently, deployment, feedback, manifest, manifests_of, start,
    unique,
};

/// An install-namespace annotation as upstream's tests put on the add-on.
fn install_namespace() -> BTreeMap<String, String> {
    BTreeMap::from([(
        annotations::V1ALPHA1_INSTALL_NAMESPACE.to_owned(),
        "default".to_owned(),
    )])
}

fn options(name: &str, prober: HealthProber) -> AgentAddonOptions {
    AgentAddonOptions {
        addon_name: name.to_owned(),
        health_prober: Some(prober),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn deploy_agent_when_cma_is_managed_by_self() {
    let (name, cluster) = (unique("test"), unique("cluster"));
    let addon = TestAddon::new(
        options(&name, HealthProber::Work(None)),
        vec![deployment("default", "nginx-deployment", 1)],
    );
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    let mca = hub.create_mca(&cluster, &name, install_namespace()).await;
    let work_name = format!("addon-{name}-deploy-0");
    let work = hub
        .work_where(&cluster, &work_name, "the deploy work", |w| {
            manifests_of(w).len() == 1
        })
        .await;
    let owner = &work.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("ManagedClusterAddOn", name.as_str())
    );
    assert_eq!(owner.uid, mca.uid().unwrap());
    assert_eq!(owner.controller, Some(true));
    assert_eq!(work.labels()["open-cluster-management.io/addon-name"], name);

    hub.set_work_status(&cluster, &work_name, &[("Applied", "True")], Value::Null)
        .await;
    let applied = hub
        .addon_condition(
            &cluster,
            &name,
            "ManifestApplied",
            "True",
            Some("AddonManifestApplied"),
        )
        .await;
    assert!(condition(&applied, "Progressing").is_none());
    assert_eq!(
        applied
            .status
            .as_ref()
            .unwrap()
            .health_check
            .as_ref()
            .unwrap()
            .mode,
        Some(ocm_api::addon::v1beta1::HealthCheckMode::Customized)
    );
    hub.set_work_status(
        &cluster,
        &work_name,
        &[("Applied", "True"), ("Available", "True")],
        Value::Null,
    )
    .await;
    let available = hub
        .addon_condition(&cluster, &name, "Available", "True", Some("WorkApplied"))
        .await;
    assert_eq!(
        condition(&available, "Available").unwrap().message,
        "Addon manifestWork is applied"
    );

    // A cluster being deleted keeps its deploy works.
    let clusters: Api<ManagedCluster> = Api::all(hub.client.clone());
    let hold = json!({"metadata": {"finalizers": ["test.open-cluster-management.io/hold"]}});
    clusters
        .patch(&cluster, &PatchParams::default(), &Patch::Merge(&hold))
        .await
        .unwrap();
    clusters.delete(&cluster, &Default::default()).await.unwrap();
    let works = hub.works(&cluster);
    consistently(5, "the deploy work of a cluster being deleted exists", || async {
        works.get_opt(&work_name).await.unwrap().is_some()
    })
    .await;
    hub.cleanup(&[&cluster], &name).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deploy_with_prober_func() {
    let (name, cluster) = (unique("test"), unique("cluster"));
    let addon = TestAddon::new(
        options(&name, deployment_prober([("default", "nginx-deployment")])),
        vec![deployment("default", "nginx-deployment", 1)],
    );
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_mca(&cluster, &name, install_namespace()).await;
    let work_name = format!("addon-{name}-deploy-0");
    hub.work_where(&cluster, &work_name, "the deploy work", |w| {
        manifests_of(w).len() == 1 && configs_of(w) == 1
    })
    .await;
    let only_replicas = json!([feedback(
        "apps",
        "deployments",
        "default",
        "nginx-deployment",
        &[("Replicas", json!(1))]
    )]);
    hub.set_work_status(
        &cluster,
        &work_name,
        &[("Applied", "True"), ("Available", "True")],
        only_replicas,
    )
    .await;
    hub.addon_condition(&cluster, &name, "Available", "False", Some("ProbeUnavailable"))
        .await;
    let ready = json!([feedback(
        "apps",
        "deployments",
        "default",
        "nginx-deployment",
        &[("Replicas", json!(1)), ("ReadyReplicas", json!(1))]
    )]);
    hub.set_work_status(
        &cluster,
        &work_name,
        &[("Applied", "True"), ("Available", "True")],
        ready,
    )
    .await;
    let available = hub
        .addon_condition(&cluster, &name, "Available", "True", Some("ProbeAvailable"))
        .await;
    assert_eq!(
        condition(&available, "Available").unwrap().message,
        format!("{name} add-on is available.")
    );
    hub.cleanup(&[&cluster], &name).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deploy_with_prober_with_wildcard() {
    let (name, cluster) = (unique("test"), unique("cluster"));
    let addon = TestAddon::new(
        options(&name, all_deployments_prober()),
        vec![
            deployment("ns1", "deployment1", 1),
            deployment("ns2", "deployment2", 1),
        ],
    );
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_mca(&cluster, &name, install_namespace()).await;
    let work_name = format!("addon-{name}-deploy-0");
    let work = hub
        .work_where(&cluster, &work_name, "the deploy work", |w| {
            manifests_of(w).len() == 2 && configs_of(w) == 1
        })
        .await;
    let id = &work.spec.manifest_configs.as_ref().unwrap()[0].resource_identifier;
    assert_eq!((id.namespace.as_deref(), id.name.as_str()), (Some("*"), "*"));
    let both = [("Replicas", json!(1)), ("ReadyReplicas", json!(1))];
    let partial = json!([
        feedback(
            "apps",
            "deployments",
            "ns1",
            "deployment1",
            &[("Replicas", json!(1))]
        ),
        feedback("apps", "deployments", "ns2", "deployment2", &both),
    ]);
    hub.set_work_status(
        &cluster,
        &work_name,
        &[("Applied", "True"), ("Available", "True")],
        partial,
    )
    .await;
    hub.addon_condition(&cluster, &name, "Available", "False", Some("ProbeUnavailable"))
        .await;
    let complete = json!([
        feedback("apps", "deployments", "ns1", "deployment1", &both),
        feedback("apps", "deployments", "ns2", "deployment2", &both),
    ]);
    hub.set_work_status(
        &cluster,
        &work_name,
        &[("Applied", "True"), ("Available", "True")],
        complete,
    )
    .await;
    hub.addon_condition(&cluster, &name, "Available", "True", Some("ProbeAvailable"))
        .await;
    hub.cleanup(&[&cluster], &name).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deploy_with_deployment_availability_prober() {
    let (name, cluster) = (unique("test"), unique("cluster"));
    let addon = TestAddon::new(
        options(&name, HealthProber::DeploymentAvailability),
        vec![
            deployment("default", "nginx-deployment", 1),
            deployment("default", "zero-deployment", 0),
        ],
    );
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_mca(&cluster, &name, install_namespace()).await;
    let work_name = format!("addon-{name}-deploy-0");
    hub.work_where(&cluster, &work_name, "the deploy work", |w| {
        manifests_of(w).len() == 2 && configs_of(w) == 2
    })
    .await;
    let replicas = json!([feedback(
        "apps",
        "deployments",
        "default",
        "nginx-deployment",
        &[("Replicas", json!(1))]
    )]);
    hub.set_work_status(
        &cluster,
        &work_name,
        &[("Applied", "True"), ("Available", "True")],
        replicas,
    )
    .await;
    hub.addon_condition(&cluster, &name, "Available", "False", Some("ProbeUnavailable"))
        .await;
    let ready = json!([feedback(
        "apps",
        "deployments",
        "default",
        "nginx-deployment",
        &[("Replicas", json!(1)), ("ReadyReplicas", json!(1))]
    )]);
    hub.set_work_status(
        &cluster,
        &work_name,
        &[("Applied", "True"), ("Available", "True")],
        ready,
    )
    .await;
    hub.addon_condition(&cluster, &name, "Available", "True", Some("ProbeAvailable"))
        .await;
    hub.cleanup(&[&cluster], &name).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deploy_with_workload_availability_prober() {
    let (name, cluster) = (unique("test"), unique("cluster"));
    let daemonset = manifest(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "nginx-daemonset", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "ds"}},
                 "template": {"metadata": {"labels": {"app": "ds"}},
                              "spec": {"containers": [{"name": "ds", "image": "quay.io/test/ds:latest"}]}}}
    }));
    let addon = TestAddon::new(
        options(&name, HealthProber::WorkloadAvailability),
        vec![deployment("default", "nginx-deployment", 1), daemonset],
    );
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_mca(&cluster, &name, install_namespace()).await;
    let work_name = format!("addon-{name}-deploy-0");
    hub.work_where(&cluster, &work_name, "the deploy work", |w| {
        manifests_of(w).len() == 2 && configs_of(w) == 2
    })
    .await;
    let deployment_ready = [("Replicas", json!(1)), ("ReadyReplicas", json!(1))];
    let wrong = json!([
        feedback(
            "apps",
            "deployments",
            "default",
            "nginx-deployment",
            &deployment_ready
        ),
        feedback(
            "apps",
            "daemonsets",
            "default",
            "nginx-daemonset",
            &[("Replicas", json!(1))]
        ),
    ]);
    hub.set_work_status(
        &cluster,
        &work_name,
        &[("Applied", "True"), ("Available", "True")],
        wrong,
    )
    .await;
    hub.addon_condition(&cluster, &name, "Available", "False", Some("ProbeUnavailable"))
        .await;
    let right = json!([
        feedback(
            "apps",
            "deployments",
            "default",
            "nginx-deployment",
            &deployment_ready
        ),
        feedback(
            "apps",
            "daemonsets",
            "default",
            "nginx-daemonset",
            &[("NumberReady", json!(1)), ("DesiredNumberScheduled", json!(1))]
        ),
    ]);
    hub.set_work_status(
        &cluster,
        &work_name,
        &[("Applied", "True"), ("Available", "True")],
        right,
    )
    .await;
    hub.addon_condition(&cluster, &name, "Available", "True", Some("ProbeAvailable"))
        .await;
    hub.cleanup(&[&cluster], &name).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deploy_trigger_externally() {
    let (name, cluster) = (unique("test"), unique("cluster"));
    let addon = TestAddon::new(
        options(&name, HealthProber::Work(None)),
        vec![deployment("default", "nginx-deployment", 1)],
    );
    let hub = start(addon.clone()).await;
    hub.create_cluster(&cluster).await;
    hub.create_mca(&cluster, &name, install_namespace()).await;
    let work_name = format!("addon-{name}-deploy-0");
    let replicas = |w: &ocm_api::work::v1::ManifestWork| {
        manifests_of(w).first().and_then(|m| {
            m.as_object()
                .get("spec")
                .and_then(|s| s.get("replicas"))
                .and_then(Value::as_i64)
        })
    };
    hub.work_where(&cluster, &work_name, "the deploy work", |w| {
        replicas(w) == Some(1)
    })
    .await;
    // Nothing but the trigger makes the manager render the add-on again.
    addon.settled().await;
    addon.set_manifests(vec![deployment("default", "nginx-deployment", 2)]);
    hub.manager.trigger(&cluster, &name);
    hub.work_where(&cluster, &work_name, "the deploy work with 2 replicas", |w| {
        replicas(w) == Some(2)
    })
    .await;
    hub.cleanup(&[&cluster], &name).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deploy_with_deletion_options() {
    let (name, cluster) = (unique("test"), unique("cluster"));
    let hub_cr = manifest(json!({
        "apiVersion": "operator.open-cluster-management.io/v1",
        "kind": "MultiClusterHub",
        "metadata": {"name": "multiclusterhub", "namespace": "open-cluster-management",
                     "annotations": {annotations::DELETION_ORPHAN: ""}},
        "spec": {}
    }));
    let addon = TestAddon::new(
        options(&name, HealthProber::Work(None)),
        vec![deployment("default", "nginx-deployment", 1), hub_cr],
    );
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_mca(&cluster, &name, install_namespace()).await;
    let work_name = format!("addon-{name}-deploy-0");
    let work = hub
        .work_where(&cluster, &work_name, "the deploy work", |w| {
            manifests_of(w).len() == 2
        })
        .await;
    let option = work.spec.delete_option.unwrap();
    assert_eq!(
        option.propagation_policy,
        Some(DeletePropagationPolicy::SelectivelyOrphan)
    );
    let rules = option.selectively_orphans.unwrap().orphaning_rules.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0].group.as_deref(),
        Some("operator.open-cluster-management.io")
    );
    assert_eq!(rules[0].resource, "multiclusterhubs");
    assert_eq!(rules[0].namespace.as_deref(), Some("open-cluster-management"));
    assert_eq!(rules[0].name, "multiclusterhub");
    hub.cleanup(&[&cluster], &name).await;
}

/// Redeploys when the cluster's `test.io/redeploy` label changes.
struct LabelChanged;

impl ocm_addon_framework::agent::ClusterFilter for LabelChanged {
    fn redeploy(&self, old: &ManagedCluster, new: &ManagedCluster) -> bool {
        old.labels().get("test.io/redeploy") != new.labels().get("test.io/redeploy")
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn deploy_trigger_by_cluster_filter() {
    let (name, cluster) = (unique("test"), unique("cluster"));
    let mut options = options(&name, HealthProber::Work(None));
    options.deploy_trigger_cluster_filter = Some(std::sync::Arc::new(LabelChanged));
    let addon = TestAddon::new(options, vec![deployment("default", "nginx-deployment", 1)]);
    let hub = start(addon.clone()).await;
    hub.create_cluster(&cluster).await;
    hub.create_mca(&cluster, &name, install_namespace()).await;
    let work_name = format!("addon-{name}-deploy-0");
    let replicas = |w: &ocm_api::work::v1::ManifestWork| {
        manifests_of(w).first().and_then(|m| {
            m.as_object()
                .get("spec")
                .and_then(|s| s.get("replicas"))
                .and_then(Value::as_i64)
        })
    };
    hub.work_where(&cluster, &work_name, "the deploy work", |w| {
        replicas(w) == Some(1)
    })
    .await;
    // Once nothing reconciles the add-on any more, only the filter can make it render again.
    addon.settled().await;
    addon.set_manifests(vec![deployment("default", "nginx-deployment", 3)]);
    let clusters: Api<ManagedCluster> = Api::all(hub.client.clone());
    // A change the filter ignores does not redeploy.
    let other = json!({"metadata": {"labels": {"test.io/other": "1"}}});
    clusters
        .patch(&cluster, &PatchParams::default(), &Patch::Merge(&other))
        .await
        .unwrap();
    let works = hub.works(&cluster);
    consistently(2, "the deploy work keeps 1 replica", || async {
        replicas(&works.get(&work_name).await.unwrap()) == Some(1)
    })
    .await;
    let label = json!({"metadata": {"labels": {"test.io/redeploy": "1"}}});
    clusters
        .patch(&cluster, &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    hub.work_where(&cluster, &work_name, "the deploy work with 3 replicas", |w| {
        replicas(w) == Some(3)
    })
    .await;
    hub.cleanup(&[&cluster], &name).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deploy_waits_for_configured_and_annotates_spec_hashes() {
    let (name, cluster) = (unique("test"), unique("cluster"));
    let mut options = options(&name, HealthProber::Work(None));
    options.config_check_enabled = true;
    let addon = TestAddon::new(options, vec![deployment("default", "nginx-deployment", 1)]);
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_mca(&cluster, &name, install_namespace()).await;
    let work_name = format!("addon-{name}-deploy-0");
    let works = hub.works(&cluster);
    consistently(3, "no deploy work before Configured", || async {
        works.get_opt(&work_name).await.unwrap().is_none()
    })
    .await;
    let api = hub.addons(&cluster);
    crate::deploy_support::eventually("Configured and config references set", || async {
        let current = api.get(&name).await.unwrap();
        let mut conditions = current
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        conditions.retain(|c| c.type_ != "Configured");
        conditions.push(crate::deploy_support::new_condition(
            "Configured",
            "True",
            "ConfigurationsConfigured",
            "set by the test",
        ));
        let patch = json!({
            "metadata": {"resourceVersion": current.resource_version()},
            "status": {
                "conditions": conditions,
                "configReferences": [
                    {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                     "desiredConfig": {"name": "config", "namespace": cluster.clone(), "specHash": "abc"}},
                    {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                     "desiredConfig": {"name": "tmpl", "specHash": "def"}}
                ]
            }
        });
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    let work = hub
        .work_where(&cluster, &work_name, "the deploy work", |w| {
            manifests_of(w).len() == 1
        })
        .await;
    assert_eq!(
        work.annotations()["open-cluster-management.io/config-spec-hash"],
        format!(
            r#"{{"addondeploymentconfigs.addon.open-cluster-management.io/{cluster}/config":"abc","addontemplates.addon.open-cluster-management.io//tmpl":"def"}}"#
        )
    );
    hub.cleanup(&[&cluster], &name).await;
}
