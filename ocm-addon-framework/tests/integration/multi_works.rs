//! Deploying add-ons too large for one ManifestWork (addon-framework.md §8.1 scenarios 17, 18).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use ocm_addon_framework::agent::probers::deployment_prober;
use ocm_addon_framework::agent::{AgentAddonOptions, HealthProber};
use ocm_api::work::v1::{Manifest, ManifestWork};
use serde_json::{Value, json};

use crate::deploy_support::{
    TestAddon, condition, consistently, deployment, feedback, manifest, manifests_of, start, unique,
};

/// `object` with an annotation of `kib` KiB.
fn padded(mut object: Manifest, kib: usize) -> Manifest {
    let metadata = object
        .as_object_mut()
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .unwrap();
    metadata.insert(
        "annotations".into(),
        json!({"test.io/padding": "x".repeat(kib * 1024)}),
    );
    object
}

fn crd() -> Manifest {
    manifest(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.test.io"},
        "spec": {"group": "test.io", "scope": "Namespaced",
                 "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}
    }))
}

fn cr() -> Manifest {
    manifest(
        json!({"apiVersion": "test.io/v1", "kind": "Foo", "metadata": {"name": "foo", "namespace": "default"}}),
    )
}

fn config_map() -> Manifest {
    manifest(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}}),
    )
}

fn kinds(work: &ManifestWork) -> Vec<String> {
    let mut kinds: Vec<String> = manifests_of(work)
        .iter()
        .map(|m| m.kind().unwrap_or_default().to_owned())
        .collect();
    kinds.sort();
    kinds
}

#[tokio::test(flavor = "multi_thread")]
async fn multi_works_deploy() {
    let (name, cluster) = (unique("test-multi-works"), unique("cluster"));
    let big_deployment = padded(deployment("default", "nginx-deployment", 1), 150);
    let addon = TestAddon::new(
        AgentAddonOptions {
            addon_name: name.clone(),
            health_prober: Some(HealthProber::WorkloadAvailability),
            ..Default::default()
        },
        vec![big_deployment.clone(), padded(crd(), 200), padded(cr(), 50)],
    );
    let hub = start(addon.clone()).await;
    hub.create_cluster(&cluster).await;
    hub.create_mca(&cluster, &name, Default::default()).await;
    let (first, second) = (format!("addon-{name}-deploy-0"), format!("addon-{name}-deploy-1"));
    let work0 = hub
        .work_where(&cluster, &first, "work -0 with 2 manifests", |w| {
            manifests_of(w).len() == 2
        })
        .await;
    assert_eq!(kinds(&work0), ["CustomResourceDefinition", "Deployment"]);
    let work1 = hub
        .work_where(&cluster, &second, "work -1 with 1 manifest", |w| {
            manifests_of(w).len() == 1
        })
        .await;
    assert_eq!(kinds(&work1), ["Foo"]);

    // An 80 KiB ConfigMap goes to the work with the most room.
    addon.settled().await;
    addon.set_manifests(vec![
        big_deployment,
        padded(crd(), 200),
        padded(cr(), 50),
        padded(config_map(), 80),
    ]);
    hub.manager.trigger(&cluster, &name);
    let work1 = hub
        .work_where(&cluster, &second, "work -1 with 2 manifests", |w| {
            manifests_of(w).len() == 2
        })
        .await;
    assert_eq!(kinds(&work1), ["ConfigMap", "Foo"]);
    assert_eq!(
        manifests_of(&hub.works(&cluster).get(&first).await.unwrap()).len(),
        2
    );

    // Removing the Deployment leaves the others where they are.
    addon.settled().await;
    addon.set_manifests(vec![
        padded(crd(), 200),
        padded(cr(), 50),
        padded(config_map(), 80),
    ]);
    hub.manager.trigger(&cluster, &name);
    let work0 = hub
        .work_where(&cluster, &first, "work -0 with 1 manifest", |w| {
            manifests_of(w).len() == 1
        })
        .await;
    assert_eq!(kinds(&work0), ["CustomResourceDefinition"]);
    assert_eq!(
        manifests_of(&hub.works(&cluster).get(&second).await.unwrap()).len(),
        2
    );

    for work in [&first, &second] {
        hub.set_work_status(&cluster, work, &[("Applied", "True")], Value::Null)
            .await;
    }
    hub.addon_condition(
        &cluster,
        &name,
        "ManifestApplied",
        "True",
        Some("AddonManifestApplied"),
    )
    .await;
    hub.cleanup(&[&cluster], &name).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn multi_works_prober() {
    let (name, cluster) = (unique("test-multi-works"), unique("cluster"));
    let addon = TestAddon::new(
        AgentAddonOptions {
            addon_name: name.clone(),
            health_prober: Some(deployment_prober([
                ("default", "deployment1"),
                ("default", "deployment2"),
            ])),
            ..Default::default()
        },
        vec![
            padded(deployment("default", "deployment1", 1), 250),
            padded(deployment("default", "deployment2", 1), 250),
        ],
    );
    let hub = start(addon).await;
    hub.create_cluster(&cluster).await;
    hub.create_mca(&cluster, &name, Default::default()).await;
    let (first, second) = (format!("addon-{name}-deploy-0"), format!("addon-{name}-deploy-1"));
    let work0 = hub
        .work_where(&cluster, &first, "work -0", |w| manifests_of(w).len() == 1)
        .await;
    let work1 = hub
        .work_where(&cluster, &second, "work -1", |w| manifests_of(w).len() == 1)
        .await;
    let deployment_of = |w: &ManifestWork| manifests_of(w)[0].name().unwrap().to_owned();
    let (d0, d1) = (deployment_of(&work0), deployment_of(&work1));
    let ready = [("Replicas", json!(1)), ("ReadyReplicas", json!(1))];
    let wrong = [("Replicas", json!(1)), ("AvailableReplicas", json!(0))];
    let status = |deployment: &str, values: &[(&str, Value)]| {
        json!([feedback("apps", "deployments", "default", deployment, values)])
    };
    let applied = [("Applied", "True"), ("Available", "True")];
    hub.set_work_status(&cluster, &first, &applied, status(&d0, &wrong))
        .await;
    hub.set_work_status(&cluster, &second, &applied, status(&d1, &wrong))
        .await;
    hub.addon_condition(&cluster, &name, "Available", "False", Some("ProbeUnavailable"))
        .await;
    hub.set_work_status(&cluster, &first, &applied, status(&d0, &ready))
        .await;
    let api = hub.addons(&cluster);
    consistently(3, "Available False with one deployment ready", || async {
        let mca = api.get(&name).await.unwrap();
        condition(&mca, "Available").is_some_and(|c| c.status == "False")
    })
    .await;
    hub.set_work_status(&cluster, &second, &applied, status(&d1, &ready))
        .await;
    hub.addon_condition(&cluster, &name, "Available", "True", Some("ProbeAvailable"))
        .await;
    hub.cleanup(&[&cluster], &name).await;
}
