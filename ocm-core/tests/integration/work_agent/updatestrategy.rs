//! `updatestrategy:` scenarios of ocm-core.md §6.2: CreateOnly, ReadOnly, ServerSideApply
//! (updates, conflicts, two field managers, delete options, ignoreFields) and wildcards.
//!
//! ReadOnly's status feedback (values read from the live object) belongs to the status
//! controller's tests; here ReadOnly is checked for what the apply side does: nothing written,
//! the object recorded, no owner reference.

use ocm_api::work::v1::{
    DeleteOption, DeletePropagationPolicy, IgnoreField, IgnoreFieldsCondition, ManifestConfigOption,
    ResourceIdentifier, ServerSideApplyConfig, UpdateStrategy, UpdateStrategyType,
};
use serde_json::{Value, json};

use super::support::{WorkEnv, eventually, manifest, manifest_conditions, owner_uids};

const APPLIED: &str = "Applied";
const CONFIG_SPEC_HASH: &str = "open-cluster-management.io/config-spec-hash";

fn deployment(namespace: &str, replicas: Option<i64>) -> Value {
    let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "deploy1", "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}},
                "spec": {"serviceAccountName": "sa", "containers": [{"name": "c", "image": "busybox"}]}}}});
    if let Some(replicas) = replicas {
        d["spec"]["replicas"] = json!(replicas);
    }
    d
}

fn config(
    group: &str,
    resource: &str,
    namespace: &str,
    name: &str,
    type_: UpdateStrategyType,
    ssa: Option<ServerSideApplyConfig>,
) -> ManifestConfigOption {
    ManifestConfigOption {
        resource_identifier: ResourceIdentifier {
            group: Some(group.to_string()).filter(|g| !g.is_empty()),
            resource: resource.into(),
            namespace: Some(namespace.into()),
            name: name.into(),
        },
        update_strategy: Some(UpdateStrategy {
            type_: Some(type_),
            server_side_apply: ssa,
        }),
        ..ManifestConfigOption::default()
    }
}

fn deploy_config(
    env: &WorkEnv,
    type_: UpdateStrategyType,
    ssa: Option<ServerSideApplyConfig>,
) -> ManifestConfigOption {
    config("apps", "deployments", &env.namespace, "deploy1", type_, ssa)
}

async fn replicas(env: &WorkEnv) -> Option<i64> {
    let deployments = env.spoke_dynamic("apps/v1", "Deployment", "deployments", Some(&env.namespace));
    deployments.get_opt("deploy1").await.unwrap()?.data["spec"]["replicas"].as_i64()
}

async fn wait_replicas(env: &WorkEnv, expected: i64) {
    eventually(&format!("replicas {expected}"), || async {
        (replicas(env).await == Some(expected)).then_some(())
    })
    .await;
}

/// Sets the replicas of the live deployment as another client would (update, not apply).
async fn set_replicas_on_spoke(env: &WorkEnv, value: i64) {
    let deployments = env.spoke_dynamic("apps/v1", "Deployment", "deployments", Some(&env.namespace));
    let mut live = deployments.get("deploy1").await.unwrap();
    live.data["spec"]["replicas"] = json!(value);
    deployments
        .replace("deploy1", &kube::api::PostParams::default(), &live)
        .await
        .unwrap();
}

#[tokio::test]
async fn updatestrategy_create_only() {
    let env = WorkEnv::started("strategy-createonly").await;
    env.create_work_with(
        "w",
        vec![manifest(deployment(&env.namespace, Some(1)))],
        None,
        vec![deploy_config(&env, UpdateStrategyType::CreateOnly, None)],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    wait_replicas(&env, 1).await;
    env.set_manifests("w", vec![manifest(deployment(&env.namespace, Some(3)))])
        .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    assert_eq!(replicas(&env).await, Some(1), "CreateOnly never updates");
    let deployments = env.spoke_dynamic("apps/v1", "Deployment", "deployments", Some(&env.namespace));
    assert_eq!(
        owner_uids(&deployments.get("deploy1").await.unwrap().metadata).len(),
        1
    );
    env.finish().await;
}

#[tokio::test]
async fn updatestrategy_read_only() {
    let env = WorkEnv::started("strategy-readonly").await;
    let existing: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "cm1"}, "data": {"test": "testdata"}})).unwrap();
    let existing = env
        .configmaps()
        .create(&kube::api::PostParams::default(), &existing)
        .await
        .unwrap();
    let mut readonly = config(
        "",
        "configmaps",
        &env.namespace,
        "cm1",
        UpdateStrategyType::ReadOnly,
        None,
    );
    readonly.resource_identifier.group = None;
    env.create_work_with(
        "w",
        vec![
            env.configmap("cm1", json!({"test": "from-the-work"})),
            env.configmap("cm-missing", json!({"a": "b"})),
        ],
        None,
        vec![
            readonly,
            config(
                "",
                "configmaps",
                &env.namespace,
                "cm-missing",
                UpdateStrategyType::ReadOnly,
                None,
            ),
        ],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    assert_eq!(env.manifest_statuses("w", APPLIED).await, ["True", "True"]);
    // Nothing written: the ConfigMap keeps its data and gets no owner; the missing one is not created.
    eventually("cm1 recorded", || async {
        (env.applied_names("w").await == ["cm1"]).then_some(())
    })
    .await;
    let cm = env.configmap_opt("cm1").await.unwrap();
    assert_eq!(cm.data.as_ref().unwrap()["test"], "testdata");
    assert_eq!(cm.metadata.resource_version, existing.metadata.resource_version);
    assert!(owner_uids(&cm.metadata).is_empty());
    assert!(env.configmap_opt("cm-missing").await.is_none());
    // Deleting the work never deletes what ReadOnly only read.
    env.delete_work("w").await;
    env.wait_work_gone("w").await;
    assert!(env.configmap_opt("cm1").await.is_some());
    env.finish().await;
}

#[tokio::test]
async fn updatestrategy_read_only_wildcard() {
    let env = WorkEnv::started("strategy-readonly-wild").await;
    for name in ["cm1", "cm2"] {
        let cm: k8s_openapi::api::core::v1::ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name}, "data": {"test1": "testdata"}}))
                .unwrap();
        env.configmaps()
            .create(&kube::api::PostParams::default(), &cm)
            .await
            .unwrap();
    }
    let mut all = config("", "configmaps", "*", "*", UpdateStrategyType::ReadOnly, None);
    all.resource_identifier.group = None;
    env.create_work_with(
        "w",
        vec![
            env.configmap("cm1", json!({"x": "y"})),
            env.configmap("cm2", json!({"x": "y"})),
        ],
        None,
        vec![all],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    eventually("both recorded", || async {
        (env.applied_names("w").await == ["cm1", "cm2"]).then_some(())
    })
    .await;
    for name in ["cm1", "cm2"] {
        let cm = env.configmap_opt(name).await.unwrap();
        assert!(cm.data.unwrap().contains_key("test1"), "{name} untouched");
    }
    env.finish().await;
}

#[tokio::test]
async fn updatestrategy_server_side_apply_update() {
    let env = WorkEnv::started("strategy-ssa").await;
    env.create_work_with(
        "w",
        vec![manifest(deployment(&env.namespace, Some(1)))],
        None,
        vec![deploy_config(&env, UpdateStrategyType::ServerSideApply, None)],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    let deployments = env.spoke_dynamic("apps/v1", "Deployment", "deployments", Some(&env.namespace));
    let live = deployments.get("deploy1").await.unwrap();
    let managers: Vec<_> = live
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        managers.contains(&("work-agent".into(), "Apply".into())),
        "{managers:?}"
    );
    assert_eq!(owner_uids(&live.metadata).len(), 1);
    env.set_manifests("w", vec![manifest(deployment(&env.namespace, Some(3)))])
        .await;
    wait_replicas(&env, 3).await;
    env.wait_work_condition("w", APPLIED, "True").await;
    env.finish().await;
}

#[tokio::test]
async fn updatestrategy_server_side_apply_conflict() {
    let env = WorkEnv::started("strategy-ssa-conflict").await;
    env.create_work_with(
        "w",
        vec![manifest(deployment(&env.namespace, Some(1)))],
        None,
        vec![deploy_config(&env, UpdateStrategyType::ServerSideApply, None)],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    // Another manager takes replicas.
    let deployments = env.spoke_dynamic("apps/v1", "Deployment", "deployments", Some(&env.namespace));
    deployments
        .patch(
            "deploy1",
            &kube::api::PatchParams::apply("test-integration").force(),
            &kube::api::Patch::Apply(deployment(&env.namespace, Some(2))),
        )
        .await
        .unwrap();
    env.set_manifests("w", vec![manifest(deployment(&env.namespace, Some(3)))])
        .await;
    let work = env.wait_work_condition("w", APPLIED, "False").await;
    let condition = &manifest_conditions(&work)[0].conditions[0];
    assert_eq!(condition.reason, "AppliedManifestFailed");
    assert!(condition.message.contains("conflict"), "{}", condition.message);
    assert_eq!(replicas(&env).await, Some(2));
    // Leaving replicas out of the manifest resolves it.
    env.set_manifests("w", vec![manifest(deployment(&env.namespace, None))])
        .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    env.finish().await;
}

fn another_manager() -> ServerSideApplyConfig {
    ServerSideApplyConfig {
        field_manager: Some("work-agent-another".into()),
        force: Some(true),
        ignore_fields: None,
    }
}

#[tokio::test]
async fn updatestrategy_two_works_different_managers() {
    let env = WorkEnv::started("strategy-ssa-two").await;
    env.create_work_with(
        "w",
        vec![manifest(deployment(&env.namespace, Some(1)))],
        None,
        vec![deploy_config(&env, UpdateStrategyType::ServerSideApply, None)],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    // The other work does not want replicas.
    env.create_work_with(
        "another",
        vec![manifest(deployment(&env.namespace, None))],
        None,
        vec![deploy_config(
            &env,
            UpdateStrategyType::ServerSideApply,
            Some(another_manager()),
        )],
    )
    .await;
    env.wait_work_condition("another", APPLIED, "True").await;
    // The first still owns replicas...
    env.set_manifests("w", vec![manifest(deployment(&env.namespace, Some(3)))])
        .await;
    wait_replicas(&env, 3).await;
    env.wait_work_condition("w", APPLIED, "True").await;
    // ...but the service account now belongs to both, so changing it conflicts.
    let mut changed = deployment(&env.namespace, Some(3));
    changed["spec"]["template"]["spec"]["serviceAccountName"] = json!("another-sa");
    env.set_manifests("w", vec![manifest(changed)]).await;
    env.wait_work_condition("w", APPLIED, "False").await;
    env.finish().await;
}

#[tokio::test]
async fn updatestrategy_server_side_apply_delete_options() {
    let env = WorkEnv::started("strategy-ssa-delopt").await;
    env.create_work_with(
        "w",
        vec![manifest(deployment(&env.namespace, Some(1)))],
        None,
        vec![deploy_config(&env, UpdateStrategyType::ServerSideApply, None)],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    env.create_work_with(
        "another",
        vec![manifest(deployment(&env.namespace, None))],
        None,
        vec![deploy_config(
            &env,
            UpdateStrategyType::ServerSideApply,
            Some(another_manager()),
        )],
    )
    .await;
    env.wait_work_condition("another", APPLIED, "True").await;
    let deployments = env.spoke_dynamic("apps/v1", "Deployment", "deployments", Some(&env.namespace));
    eventually("two owners", || async {
        (owner_uids(&deployments.get("deploy1").await.unwrap().metadata).len() == 2).then_some(())
    })
    .await;
    let orphan = serde_json::to_value(DeleteOption {
        propagation_policy: Some(DeletePropagationPolicy::Orphan),
        ..DeleteOption::default()
    })
    .unwrap();
    env.patch_spec("w", json!({"deleteOption": orphan})).await;
    eventually("one owner", || async {
        (owner_uids(&deployments.get("deploy1").await.unwrap().metadata).len() == 1).then_some(())
    })
    .await;
    // Deleting the orphaning work keeps the shared deployment.
    env.delete_work("w").await;
    env.wait_work_gone("w").await;
    assert!(deployments.get_opt("deploy1").await.unwrap().is_some());
    env.finish().await;
}

fn ignoring(condition: IgnoreFieldsCondition, field: IgnoreField) -> ServerSideApplyConfig {
    ServerSideApplyConfig {
        field_manager: None,
        force: None,
        ignore_fields: Some(vec![IgnoreField {
            condition: Some(condition),
            ..field
        }]),
    }
}

async fn wait_hash_annotation(env: &WorkEnv) {
    let deployments = env.spoke_dynamic("apps/v1", "Deployment", "deployments", Some(&env.namespace));
    eventually("config-spec-hash annotation", || async {
        deployments.get_opt("deploy1").await.unwrap().filter(|d| {
            d.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(CONFIG_SPEC_HASH))
        })
    })
    .await;
}

#[tokio::test]
async fn updatestrategy_ignore_fields_on_spoke_change() {
    let env = WorkEnv::started("strategy-ignore-change").await;
    let ssa = ignoring(
        IgnoreFieldsCondition::OnSpokeChange,
        IgnoreField {
            json_paths: Some(vec![".spec.replicas".into()]),
            ..IgnoreField::default()
        },
    );
    env.create_work_with(
        "w",
        vec![manifest(deployment(&env.namespace, Some(1)))],
        None,
        vec![deploy_config(
            &env,
            UpdateStrategyType::ServerSideApply,
            Some(ssa.clone()),
        )],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    wait_hash_annotation(&env).await;
    set_replicas_on_spoke(&env, 2).await;
    // A reconcile with the same manifest keeps the spoke's value.
    let mut forced = ssa;
    forced.force = Some(true);
    let forced = vec![deploy_config(
        &env,
        UpdateStrategyType::ServerSideApply,
        Some(forced),
    )];
    env.patch_spec("w", json!({"manifestConfigs": forced})).await;
    env.wait_work_condition("w", APPLIED, "True").await;
    assert_eq!(replicas(&env).await, Some(2));
    // A changed manifest is applied.
    env.set_manifests("w", vec![manifest(deployment(&env.namespace, Some(3)))])
        .await;
    wait_replicas(&env, 3).await;
    env.finish().await;
}

async fn ignore_on_spoke_present(prefix: &str, field: IgnoreField) {
    let env = WorkEnv::started(prefix).await;
    let ssa = ignoring(IgnoreFieldsCondition::OnSpokePresent, field);
    env.create_work_with(
        "w",
        vec![manifest(deployment(&env.namespace, Some(1)))],
        None,
        vec![deploy_config(
            &env,
            UpdateStrategyType::ServerSideApply,
            Some(ssa),
        )],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    // Created with the ignored field set.
    wait_replicas(&env, 1).await;
    wait_hash_annotation(&env).await;
    set_replicas_on_spoke(&env, 2).await;
    env.set_manifests("w", vec![manifest(deployment(&env.namespace, Some(3)))])
        .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    let deployments = env.spoke_dynamic("apps/v1", "Deployment", "deployments", Some(&env.namespace));
    // The manifest change was applied (its hash is on the object) without replicas.
    let hash_before = deployments
        .get("deploy1")
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap()[CONFIG_SPEC_HASH]
        .clone();
    let mut labelled = deployment(&env.namespace, Some(4));
    labelled["metadata"]["labels"] = json!({"changed": "yes"});
    env.set_manifests("w", vec![manifest(labelled)]).await;
    eventually("label applied", || async {
        let d = deployments.get("deploy1").await.unwrap();
        d.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.get("changed").map(String::as_str) == Some("yes"))
            .then_some(d)
    })
    .await;
    let after = deployments.get("deploy1").await.unwrap();
    assert_ne!(after.metadata.annotations.unwrap()[CONFIG_SPEC_HASH], hash_before);
    assert_eq!(replicas(&env).await, Some(2), "the spoke's replicas stay");
    env.finish().await;
}

#[tokio::test]
async fn updatestrategy_ignore_fields_on_spoke_present() {
    ignore_on_spoke_present(
        "strategy-ignore-present",
        IgnoreField {
            json_paths: Some(vec![".spec.replicas".into()]),
            ..IgnoreField::default()
        },
    )
    .await;
}

#[tokio::test]
async fn updatestrategy_ignore_fields_json_pointer() {
    ignore_on_spoke_present(
        "strategy-ignore-pointer",
        IgnoreField {
            json_pointers: Some(vec!["/spec/replicas".into()]),
            ..IgnoreField::default()
        },
    )
    .await;
}

fn deployment_with_env(namespace: &str, java_opts: &str) -> Value {
    let mut d = deployment(namespace, Some(1));
    d["spec"]["template"]["spec"]["containers"] = json!([{"name": "app", "image": "myapp:v1", "env": [
        {"name": "APP_ENV", "value": "production"},
        {"name": "JAVA_OPTS", "value": java_opts},
    ]}]);
    d
}

async fn java_opts(env: &WorkEnv) -> Option<String> {
    let deployments = env.spoke_dynamic("apps/v1", "Deployment", "deployments", Some(&env.namespace));
    let d = deployments.get("deploy1").await.unwrap();
    d.data["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == "JAVA_OPTS")
        .and_then(|e| e["value"].as_str().map(str::to_string))
}

#[tokio::test]
async fn updatestrategy_ignore_fields_jq() {
    let env = WorkEnv::started("strategy-ignore-jq").await;
    let ssa = ignoring(
        IgnoreFieldsCondition::OnSpokePresent,
        IgnoreField {
            jq_path_expressions: Some(vec![
                r#".spec.template.spec.containers[].env[] | select(.name == "JAVA_OPTS")"#.into(),
            ]),
            ..IgnoreField::default()
        },
    );
    env.create_work_with(
        "w",
        vec![manifest(deployment_with_env(&env.namespace, "-Xmx512m"))],
        None,
        vec![deploy_config(
            &env,
            UpdateStrategyType::ServerSideApply,
            Some(ssa),
        )],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    assert_eq!(
        java_opts(&env).await.as_deref(),
        Some("-Xmx512m"),
        "set at creation"
    );
    wait_hash_annotation(&env).await;
    // The spoke changes JAVA_OPTS; the work changes it too and changes APP_ENV's neighbour image.
    let deployments = env.spoke_dynamic("apps/v1", "Deployment", "deployments", Some(&env.namespace));
    let mut live = deployments.get("deploy1").await.unwrap();
    live.data["spec"]["template"]["spec"]["containers"][0]["env"][1]["value"] = json!("-Xmx1024m");
    deployments
        .replace("deploy1", &kube::api::PostParams::default(), &live)
        .await
        .unwrap();
    let mut updated = deployment_with_env(&env.namespace, "-Xmx2048m");
    updated["spec"]["template"]["spec"]["containers"][0]["image"] = json!("myapp:v2");
    env.set_manifests("w", vec![manifest(updated)]).await;
    eventually("image updated", || async {
        let d = deployments.get("deploy1").await.unwrap();
        (d.data["spec"]["template"]["spec"]["containers"][0]["image"] == "myapp:v2").then_some(())
    })
    .await;
    assert_eq!(
        java_opts(&env).await.as_deref(),
        Some("-Xmx1024m"),
        "the spoke's value stays"
    );
    env.finish().await;
}

#[tokio::test]
async fn updatestrategy_ignore_fields_invalid_jq() {
    let env = WorkEnv::started("strategy-ignore-badjq").await;
    let ssa = ignoring(
        IgnoreFieldsCondition::OnSpokePresent,
        IgnoreField {
            jq_path_expressions: Some(vec![".spec.containers[] | invalid syntax here".into()]),
            ..IgnoreField::default()
        },
    );
    env.create_work_with(
        "w",
        vec![
            manifest(deployment(&env.namespace, Some(1))),
            env.configmap("cm1", json!({"a": "b"})),
        ],
        None,
        vec![deploy_config(
            &env,
            UpdateStrategyType::ServerSideApply,
            Some(ssa),
        )],
    )
    .await;
    let work = env.wait_work_condition("w", APPLIED, "False").await;
    let condition = &manifest_conditions(&work)[0].conditions[0];
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "AppliedManifestSSAIgnoreFieldError")
    );
    assert!(
        condition
            .message
            .starts_with("Failed to process ignoreFields: JQ expression error in"),
        "{}",
        condition.message
    );
    assert_eq!(env.manifest_statuses("w", APPLIED).await, ["False", "True"]);
    assert_eq!(replicas(&env).await, None, "nothing applied");
    env.finish().await;
}

#[tokio::test]
async fn updatestrategy_no_generation_bump() {
    let env = WorkEnv::started("strategy-nested").await;
    let nested_name = format!("{}-nested", env.cluster);
    let nested = json!({"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": nested_name, "namespace": env.namespace, "creationTimestamp": null},
        "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm-test", "namespace": "default", "creationTimestamp": null}, "data": {"a": "b"}}]}}});
    env.create_work_with(
        "w",
        vec![manifest(nested)],
        None,
        vec![config(
            "work.open-cluster-management.io",
            "manifestworks",
            &env.namespace,
            &nested_name,
            UpdateStrategyType::ServerSideApply,
            Some(ServerSideApplyConfig {
                field_manager: None,
                force: Some(true),
                ignore_fields: None,
            }),
        )],
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    let nested_works = env.spoke_dynamic(
        "work.open-cluster-management.io/v1",
        "ManifestWork",
        "manifestworks",
        Some(&env.namespace),
    );
    assert_eq!(
        nested_works.get(&nested_name).await.unwrap().metadata.generation,
        Some(1)
    );
    // More reconciles, each made visible by a label reaching the AppliedManifestWork (reconciles
    // of one work run one at a time, so round n's label proves round n-1's apply finished).
    for round in ["1", "2", "3"] {
        env.works()
            .patch(
                &env.work_name("w"),
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"metadata": {"labels": {"round": round}}})),
            )
            .await
            .unwrap();
        eventually("reconciled", || async {
            let amw = env.applied_work("w").await?;
            (amw.metadata.labels?.get("round").map(String::as_str) == Some(round)).then_some(())
        })
        .await;
        assert_eq!(
            nested_works.get(&nested_name).await.unwrap().metadata.generation,
            Some(1)
        );
    }
    env.finish().await;
}
