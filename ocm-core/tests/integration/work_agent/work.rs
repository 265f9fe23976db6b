//! `work:` scenarios of ocm-core.md §6.2: applying, updating and deleting works, several
//! manifests, CRD + CR, cluster-scoped resources, RBAC and workloads, conditions' generations
//! and transition times, foreground deletion, labels and invalid updates.
//!
//! (`work: completion` needs the status controller's condition rules and lives with them.)

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use ocm_api::work::v1::AppliedManifestWorkSpec;
use serde_json::json;

use super::support::{WorkEnv, eventually, manifest, manifest_conditions, owner_uids, work_condition};

const APPLIED: &str = "Applied";

#[tokio::test]
async fn work_single_manifest_create() {
    let env = WorkEnv::started("work-create").await;
    env.create_work("w", vec![env.configmap("cm1", json!({"a": "b"}))])
        .await;
    let cm = env.wait_configmap("cm1", |_| true).await;
    assert_eq!(cm.data.unwrap()["a"], "b");
    let managers: Vec<_> = cm
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(
        managers.iter().any(|m| m == "work-agent"),
        "field managers {managers:?}"
    );
    let work = env.wait_work_condition("w", APPLIED, "True").await;
    let applied = work_condition(&work, APPLIED).unwrap();
    assert_eq!(applied.reason, "AppliedManifestWorkComplete");
    assert_eq!(applied.message, "Apply manifest work complete");
    let manifests = manifest_conditions(&work);
    assert_eq!(manifests.len(), 1);
    let meta = &manifests[0].resource_meta;
    assert_eq!(
        (
            meta.ordinal,
            meta.group.as_deref(),
            meta.version.as_deref(),
            meta.kind.as_deref(),
            meta.resource.as_deref()
        ),
        (0, None, Some("v1"), Some("ConfigMap"), Some("configmaps"))
    );
    assert_eq!(
        (meta.namespace.as_deref(), meta.name.as_deref()),
        (Some(env.namespace.as_str()), Some("cm1"))
    );
    let condition = &manifests[0].conditions[0];
    assert_eq!(
        (condition.type_.as_str(), condition.status.as_str()),
        ("Applied", "True")
    );
    assert_eq!(condition.reason, "AppliedManifestComplete");
    // The AppliedManifestWork: upstream's name, spec, finalizer, and the ConfigMap owned by it.
    let amw = eventually("AppliedManifestWork records cm1", || async {
        env.applied_work("w").await.filter(|a| {
            a.status
                .as_ref()
                .and_then(|s| s.applied_resources.as_ref())
                .is_some_and(|r| r.len() == 1)
        })
    })
    .await;
    assert_eq!(
        amw.spec,
        AppliedManifestWorkSpec {
            agent_id: Some(env.agent_id.clone()),
            hub_hash: env.hub_hash(),
            manifest_work_name: env.work_name("w"),
        }
    );
    assert_eq!(
        amw.finalizers(),
        ["cluster.open-cluster-management.io/applied-manifest-work-cleanup"]
    );
    let cm = env.configmap_opt("cm1").await.unwrap();
    let owner = &cm.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str()
        ),
        (
            "work.open-cluster-management.io/v1",
            "AppliedManifestWork",
            amw.name_any().as_str()
        )
    );
    assert_eq!(Some(&owner.uid), amw.metadata.uid.as_ref());
    let resource = &amw.status.unwrap().applied_resources.unwrap()[0];
    assert_eq!(resource.uid, cm.metadata.uid);
    assert_eq!(
        (resource.resource.as_str(), resource.version.as_str()),
        ("configmaps", "v1")
    );
    env.finish().await;
}

#[tokio::test]
async fn work_single_manifest_update() {
    let env = WorkEnv::started("work-update").await;
    env.create_work("w", vec![env.configmap("cm1", json!({"a": "b"}))])
        .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    env.wait_configmap("cm1", |_| true).await;
    env.set_manifests("w", vec![env.configmap("cm2", json!({"x": "y"}))])
        .await;
    env.wait_configmap("cm2", |cm| cm.data.as_ref().is_some_and(|d| d["x"] == "y"))
        .await;
    env.wait_configmap_gone("cm1").await;
    let work = env.wait_work_condition("w", APPLIED, "True").await;
    assert_eq!(manifest_conditions(&work).len(), 1);
    assert_eq!(env.manifest_statuses("w", APPLIED).await, ["True"]);
    eventually("cm1 leaves the applied resources", || async {
        (env.applied_names("w").await == ["cm2"]).then_some(())
    })
    .await;
    env.finish().await;
}

#[tokio::test]
async fn work_single_manifest_delete() {
    let env = WorkEnv::started("work-delete").await;
    env.create_work("w", vec![env.configmap("cm1", json!({"a": "b"}))])
        .await;
    eventually("finalizer added", || async {
        env.work("w").await.filter(|w| {
            w.finalizers()
                .iter()
                .any(|f| f == "cluster.open-cluster-management.io/manifest-work-cleanup")
        })
    })
    .await;
    env.wait_configmap("cm1", |_| true).await;
    env.wait_work_condition("w", APPLIED, "True").await;
    env.delete_work("w").await;
    env.wait_work_gone("w").await;
    env.wait_configmap_gone("cm1").await;
    assert!(env.applied_work("w").await.is_none());
    env.finish().await;
}

#[tokio::test]
async fn work_multiple_manifests() {
    let env = WorkEnv::started("work-multi").await;
    let missing_ns = format!("{}-missing", env.cluster);
    let in_missing = manifest(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm1", "namespace": missing_ns}, "data": {"a": "b"}}));
    env.create_work(
        "w",
        vec![
            in_missing,
            env.configmap("cm2", json!({"c": "d"})),
            env.configmap("cm3", json!({"e": "f"})),
        ],
    )
    .await;
    env.wait_configmap("cm2", |_| true).await;
    env.wait_configmap("cm3", |_| true).await;
    let work = env.wait_work_condition("w", APPLIED, "False").await;
    assert_eq!(
        work_condition(&work, APPLIED).unwrap().reason,
        "AppliedManifestWorkFailed"
    );
    assert_eq!(
        env.manifest_statuses("w", APPLIED).await,
        ["False", "True", "True"]
    );
    let failed = &manifest_conditions(&work)[0].conditions[0];
    assert_eq!(failed.reason, "AppliedManifestFailed");
    assert!(
        failed.message.starts_with("Failed to apply manifest: "),
        "{}",
        failed.message
    );
    assert!(
        failed.message.contains(&missing_ns),
        "the server's message names the namespace: {}",
        failed.message
    );
    // cm2 and cm3 are recorded; the failed one is not (it does not exist).
    eventually("cm2 and cm3 recorded", || async {
        (env.applied_names("w").await == ["cm2", "cm3"]).then_some(())
    })
    .await;

    env.set_manifests(
        "w",
        vec![
            env.configmap("cm1", json!({"a": "b"})),
            env.configmap("cm2", json!({"x": "y"})),
            env.configmap("cm4", json!({"e": "f"})),
        ],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    assert_eq!(
        env.manifest_statuses("w", APPLIED).await,
        ["True", "True", "True"]
    );
    env.wait_configmap("cm2", |cm| {
        cm.data
            .as_ref()
            .is_some_and(|d| d.get("x").is_some_and(|v| v == "y"))
    })
    .await;
    env.wait_configmap("cm1", |_| true).await;
    env.wait_configmap("cm4", |_| true).await;
    env.wait_configmap_gone("cm3").await;
    eventually("cm3 leaves the applied resources", || async {
        (env.applied_names("w").await == ["cm1", "cm2", "cm4"]).then_some(())
    })
    .await;
    env.delete_work("w").await;
    env.wait_work_gone("w").await;
    for cm in ["cm1", "cm2", "cm4"] {
        env.wait_configmap_gone(cm).await;
    }
    env.finish().await;
}

fn crd_manifest(group: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("guestbooks.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "guestbooks", "singular": "guestbook", "kind": "Guestbook", "listKind": "GuestbookList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    })
}

#[tokio::test]
async fn work_crd_and_cr() {
    let env = WorkEnv::started("work-crd").await;
    let group = format!("{}.example.com", env.cluster);
    let cr = |annotations: serde_json::Value| {
        manifest(json!({"apiVersion": format!("{group}/v1"), "kind": "Guestbook",
            "metadata": {"name": "guestbook1", "namespace": env.namespace, "annotations": annotations},
            "spec": {"size": 1}}))
    };
    // The CR comes first in the spec; the CRD is applied first (kind order).
    env.create_work("w", vec![cr(json!({})), manifest(crd_manifest(&group))])
        .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    assert_eq!(env.manifest_statuses("w", APPLIED).await, ["True", "True"]);
    let guestbooks = env.spoke_dynamic(
        &format!("{group}/v1"),
        "Guestbook",
        "guestbooks",
        Some(&env.namespace),
    );
    let live = guestbooks.get("guestbook1").await.unwrap();
    eventually("both recorded", || async {
        let mut names = env.applied_names("w").await;
        names.sort();
        (names == ["guestbook1", format!("guestbooks.{group}").as_str()]).then_some(())
    })
    .await;

    // Annotations set on the spoke are merged with the work's, and a finalizer set there stays.
    let mut changed = live.clone();
    changed.metadata.annotations = Some([("foo".to_string(), "bar".to_string())].into());
    changed.metadata.finalizers = Some(vec!["example.com/keep".into()]);
    guestbooks
        .replace("guestbook1", &PostParams::default(), &changed)
        .await
        .unwrap();
    let work = env.work("w").await.unwrap();
    let mut manifests = work.spec.workload.unwrap().manifests.unwrap();
    manifests[0] = cr(json!({"foo1": "bar1"}));
    env.set_manifests("w", manifests).await;
    let merged = eventually("annotations merged", || async {
        let live = guestbooks.get("guestbook1").await.unwrap();
        (live.annotations().len() == 2).then_some(live)
    })
    .await;
    assert_eq!(merged.annotations()["foo"], "bar");
    assert_eq!(merged.annotations()["foo1"], "bar1");
    assert_eq!(merged.finalizers(), ["example.com/keep"]);

    // Deleting the work deletes the CR (once its finalizer goes) and the CRD.
    env.delete_work("w").await;
    eventually("CR being deleted", || async {
        guestbooks
            .get("guestbook1")
            .await
            .ok()
            .filter(|g| g.metadata.deletion_timestamp.is_some())
    })
    .await;
    guestbooks
        .patch(
            "guestbook1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    env.wait_work_gone("w").await;
    let crds = env.spoke_dynamic(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        None,
    );
    eventually("CRD gone", || async {
        crds.get_opt(&format!("guestbooks.{group}"))
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    env.finish().await;
}

#[tokio::test]
async fn work_cluster_scoped() {
    let env = WorkEnv::started("work-clusterrole").await;
    let name = format!("{}-role", env.cluster);
    env.create_work(
        "w",
        vec![manifest(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "namespace": env.namespace},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
        )],
    )
    .await;
    let work = env.wait_work_condition("w", APPLIED, "True").await;
    let meta = &manifest_conditions(&work)[0].resource_meta;
    assert_eq!(
        meta.namespace, None,
        "cluster-scoped resources have no namespace in resourceMeta"
    );
    assert_eq!(meta.group.as_deref(), Some("rbac.authorization.k8s.io"));
    assert_eq!(meta.resource.as_deref(), Some("clusterroles"));
    let roles: Api<ClusterRole> = Api::all(env.spoke_client.clone());
    roles.get(&name).await.unwrap();
    env.delete_work("w").await;
    env.wait_work_gone("w").await;
    eventually("ClusterRole gone", || async {
        roles.get_opt(&name).await.unwrap().is_none().then_some(())
    })
    .await;
    env.finish().await;
}

fn deployment(namespace: &str, sa: &str, replicas: i64) -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "deploy1", "namespace": namespace},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}},
                "spec": {"serviceAccountName": sa, "containers": [{"name": "c", "image": "busybox"}]}}}})
}

fn rbac(namespace: &str, sa: &str) -> Vec<serde_json::Value> {
    vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "role1", "namespace": namespace},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "rolebinding1", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "role1"},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]}),
    ]
}

#[tokio::test]
async fn work_sa_role_rolebinding_deployment() {
    let env = WorkEnv::started("work-rbac").await;
    let ns = env.namespace.clone();
    let sa = |name: &str| json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}});
    // Workload first in the spec: the kind order applies the ServiceAccount and RBAC before it.
    let mut manifests = vec![manifest(deployment(&ns, "sa1", 1)), manifest(sa("sa1"))];
    manifests.extend(rbac(&ns, "sa1").into_iter().map(manifest));
    env.create_work("w", manifests).await;
    let work = env.wait_work_condition("w", APPLIED, "True").await;
    let before = manifest_conditions(&work);
    assert_eq!(before.len(), 4);
    let deployments = env.spoke_dynamic("apps/v1", "Deployment", "deployments", Some(&ns));
    let sas = env.spoke_dynamic("v1", "ServiceAccount", "serviceaccounts", Some(&ns));
    deployments.get("deploy1").await.unwrap();
    sas.get("sa1").await.unwrap();

    // Rename the ServiceAccount, swap the order, scale the deployment.
    let update_time = k8s_openapi::jiff::Timestamp::now();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut manifests = vec![manifest(sa("sa2")), manifest(deployment(&ns, "sa2", 2))];
    manifests.extend(rbac(&ns, "sa2").into_iter().map(manifest));
    env.set_manifests("w", manifests).await;
    let work = env.wait_work_condition("w", APPLIED, "True").await;
    eventually("deployment updated", || async {
        let d = deployments.get("deploy1").await.unwrap();
        (d.data["spec"]["replicas"] == 2 && d.data["spec"]["template"]["spec"]["serviceAccountName"] == "sa2")
            .then_some(())
    })
    .await;
    sas.get("sa2").await.unwrap();
    eventually("sa1 deleted", || async {
        sas.get_opt("sa1").await.unwrap().is_none().then_some(())
    })
    .await;
    eventually("sa1 leaves the applied resources", || async {
        let names = env.applied_names("w").await;
        (!names.iter().any(|n| n == "sa1") && names.iter().any(|n| n == "sa2")).then_some(())
    })
    .await;
    // The renamed ServiceAccount's entry is new (its condition's transition time is after the
    // update); the deployment's entry was matched by its meta at another ordinal.
    let after = manifest_conditions(&work);
    let find = |list: &[ocm_api::work::v1::ManifestCondition], name: &str| {
        list.iter()
            .find(|m| m.resource_meta.name.as_deref() == Some(name))
            .unwrap()
            .conditions[0]
            .clone()
    };
    assert!(find(&after, "sa2").last_transition_time.0 > update_time);
    assert!(find(&before, "deploy1").last_transition_time.0 < update_time);
    assert_eq!(
        after
            .iter()
            .find(|m| m.resource_meta.name.as_deref() == Some("deploy1"))
            .unwrap()
            .resource_meta
            .ordinal,
        1
    );
    assert!(
        after
            .iter()
            .all(|m| m.resource_meta.name.as_deref() != Some("sa1"))
    );
    env.finish().await;
}

#[tokio::test]
async fn work_observed_generation_and_last_transition_time() {
    let env = WorkEnv::started("work-generation").await;
    env.create_work("w", vec![env.configmap("cm1", json!({"a": "b"}))])
        .await;
    let first = env.wait_work_condition("w", APPLIED, "True").await;
    let first_applied = work_condition(&first, APPLIED).unwrap().clone();
    assert_eq!(first_applied.observed_generation, first.metadata.generation);
    let first_manifest = manifest_conditions(&first)[0].conditions[0].clone();

    env.set_manifests("w", vec![env.configmap("cm1", json!({"a": "c"}))])
        .await;
    let second = eventually("observedGeneration follows the generation", || async {
        let work = env.work("w").await?;
        let applied = work_condition(&work, APPLIED)?;
        (work.metadata.generation > first.metadata.generation
            && applied.observed_generation == work.metadata.generation
            && manifest_conditions(&work)[0].conditions[0].observed_generation == work.metadata.generation)
            .then_some(work)
    })
    .await;
    // A new generation replaces the manifest condition, so its transition time moves.
    let second_manifest = manifest_conditions(&second)[0].conditions[0].clone();
    assert!(second_manifest.last_transition_time.0 >= first_manifest.last_transition_time.0);

    // Changing the resource on the spoke: the agent restores it; conditions stay as they are.
    let cms = env.configmaps();
    cms.patch(
        "cm1",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "changed"}})),
    )
    .await
    .unwrap();
    env.wait_configmap("cm1", |cm| cm.data.as_ref().is_some_and(|d| d["a"] == "c"))
        .await;
    let third = env.work("w").await.unwrap();
    assert_eq!(work_condition(&third, APPLIED), work_condition(&second, APPLIED));
    assert_eq!(manifest_conditions(&third)[0].conditions[0], second_manifest);
    env.finish().await;
}

async fn remove_finalizers(cms: &Api<ConfigMap>, name: &str) {
    let _ = cms
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await;
}

#[tokio::test]
async fn work_foreground_deletion() {
    let env = WorkEnv::started("work-foreground").await;
    let finalizer = "cluster.open-cluster-management.io/testing";
    let cm = |name: &str| {
        manifest(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": env.namespace, "finalizers": [finalizer]}, "data": {"a": "b"}}))
    };
    env.create_work("w", vec![cm("cm1"), cm("cm2"), cm("cm3")]).await;
    env.wait_work_condition("w", APPLIED, "True").await;
    eventually("three recorded", || async {
        (env.applied_names("w").await.len() == 3).then_some(())
    })
    .await;

    // A dropped manifest's resource stays recorded while its finalizer holds it.
    env.set_manifests("w", vec![cm("cm2"), cm("cm3")]).await;
    let cms = env.configmaps();
    eventually("cm1 being deleted", || async {
        cms.get_opt("cm1")
            .await
            .unwrap()
            .filter(|c| c.metadata.deletion_timestamp.is_some())
    })
    .await;
    assert!(
        env.applied_names("w").await.iter().any(|n| n == "cm1"),
        "pending deletion stays recorded"
    );
    remove_finalizers(&cms, "cm1").await;
    env.wait_configmap_gone("cm1").await;
    eventually("cm1 leaves the applied resources", || async {
        (env.applied_names("w").await == ["cm2", "cm3"]).then_some(())
    })
    .await;

    // Deleting the work: Deleting True, and the work stays until every resource is gone.
    env.delete_work("w").await;
    env.wait_work_condition("w", "Deleting", "True").await;
    let deleting = env.work("w").await.unwrap();
    let condition = work_condition(&deleting, "Deleting").unwrap();
    assert_eq!(
        (condition.reason.as_str(), condition.message.as_str()),
        ("WorkDeleting", "ManifestWork is being deleted")
    );
    remove_finalizers(&cms, "cm2").await;
    env.wait_configmap_gone("cm2").await;
    assert!(env.work("w").await.is_some(), "the work waits for cm3");
    remove_finalizers(&cms, "cm3").await;
    env.wait_configmap_gone("cm3").await;
    env.wait_work_gone("w").await;
    assert!(env.applied_work("w").await.is_none());
    env.finish().await;
}

#[tokio::test]
async fn work_orphan_applied_work_deleted() {
    let mut env = WorkEnv::new("work-orphan").await;
    let mut options = env.options();
    options.eviction_grace_period = Duration::from_secs(2);
    env.start_agent(options);
    let name = env.applied_name(&env.work_name("fakework"));
    let amw = ocm_api::work::v1::AppliedManifestWork::new(
        &name,
        AppliedManifestWorkSpec {
            agent_id: Some(env.agent_id.clone()),
            hub_hash: env.hub_hash(),
            manifest_work_name: env.work_name("fakework"),
        },
    );
    env.applied().create(&PostParams::default(), &amw).await.unwrap();
    eventually("orphan AppliedManifestWork deleted", || async {
        env.applied()
            .get_opt(&name)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    env.finish().await;
}

#[tokio::test]
async fn work_labels_to_applied_work() {
    let env = WorkEnv::started("work-labels").await;
    env.create_work("w", vec![env.configmap("cm1", json!({"a": "b"}))])
        .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    env.works()
        .patch(
            &env.work_name("w"),
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"test-label": "test-value", "test-label-2": "test-value-2"}}}),
            ),
        )
        .await
        .unwrap();
    eventually("labels on the AppliedManifestWork", || async {
        let amw = env.applied_work("w").await?;
        (amw.labels().get("test-label").map(String::as_str) == Some("test-value")
            && amw.labels().get("test-label-2").map(String::as_str) == Some("test-value-2"))
        .then_some(())
    })
    .await;
    env.finish().await;
}

#[tokio::test]
async fn work_roleref_change() {
    let env = WorkEnv::started("work-roleref").await;
    let ns = env.namespace.clone();
    let binding = |role: &str| {
        manifest(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "rb1", "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]}),
        )
    };
    env.create_work(
        "w",
        vec![binding("role1"), env.configmap("cm1", json!({"a": "b"}))],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    // roleRef is immutable: the update is refused, the other manifest still applies.
    env.set_manifests(
        "w",
        vec![binding("role2"), env.configmap("cm1", json!({"a": "c"}))],
    )
    .await;
    let work = env.wait_work_condition("w", APPLIED, "False").await;
    assert_eq!(env.manifest_statuses("w", APPLIED).await, ["False", "True"]);
    let manifests = manifest_conditions(&work);
    assert!(
        manifests[0].conditions[0].message.contains("roleRef"),
        "{}",
        manifests[0].conditions[0].message
    );
    assert_eq!(
        manifests[0].conditions[0].observed_generation,
        work.metadata.generation
    );
    env.wait_configmap("cm1", |cm| cm.data.as_ref().is_some_and(|d| d["a"] == "c"))
        .await;
    let rb = env.spoke_dynamic(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "rolebindings",
        Some(&ns),
    );
    assert_eq!(rb.get("rb1").await.unwrap().data["roleRef"]["name"], "role1");
    assert!(owner_uids(&rb.get("rb1").await.unwrap().metadata).len() == 1);
    env.finish().await;
}
