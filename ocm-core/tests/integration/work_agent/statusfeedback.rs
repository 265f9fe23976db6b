//! `statusfeedback:` scenarios of ocm-core.md §6.2: status values of applied objects reported
//! back in `statusFeedback` (well-known statuses, JSONPaths, raw JSON, wildcards, Watch).
//!
//! No kubelet runs on the test clusters, so the tests write object status through the status
//! subresource themselves. On a real cluster kube-controller-manager may rewrite Deployment and
//! DaemonSet status in between, so those tests expect the feedback to match the object's live
//! status (whoever wrote it) rather than fixed numbers.

use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use ocm_api::meta::Condition;
use ocm_api::work::v1::{FeedbackValue, Manifest, ManifestCondition, ManifestConfigOption, ValueType};
use serde_json::{Value, json};

use super::support::{WorkEnv, eventually, eventually_within, manifest, manifest_conditions};

/// A Deployment manifest in the test namespace.
pub(super) fn deployment(env: &WorkEnv, name: &str) -> Manifest {
    manifest(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": env.namespace},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}
            }
        }
    }))
}

/// A manifest config for `resource` objects named `name` (wildcards allowed) in the test
/// namespace, with the given extra fields (`feedbackRules`, `conditionRules`, …).
pub(super) fn config(
    env: &WorkEnv,
    group: &str,
    resource: &str,
    name: &str,
    extra: Value,
) -> ManifestConfigOption {
    let mut value = json!({
        "resourceIdentifier": {"group": group, "resource": resource, "namespace": env.namespace, "name": name},
    });
    if let (Some(map), Value::Object(extra)) = (value.as_object_mut(), extra) {
        map.extend(extra);
    }
    serde_json::from_value(value).unwrap()
}

/// A spoke API for objects of `api_version`/`kind` in the test namespace.
pub(super) fn spoke_api(env: &WorkEnv, api_version: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    env.spoke_dynamic(api_version, kind, plural, Some(&env.namespace))
}

/// Writes `status` into object `name` through the status subresource (as a kubelet or
/// controller would).
pub(super) async fn write_status(api: &Api<DynamicObject>, name: &str, status: Value) {
    eventually(&format!("status of {name} written"), || async {
        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": status})),
        )
        .await
        .ok()
    })
    .await;
}

/// The manifest status entry of work `work` (the short name the test gave it) for the
/// object named `object`.
pub(super) async fn manifest_status(env: &WorkEnv, work: &str, object: &str) -> Option<ManifestCondition> {
    let work = env.work(work).await?;
    manifest_conditions(&work)
        .into_iter()
        .find(|m| m.resource_meta.name.as_deref() == Some(object))
}

/// The condition `type_` of a manifest status entry.
pub(super) fn condition<'a>(manifest: &'a ManifestCondition, type_: &str) -> Option<&'a Condition> {
    manifest.conditions.iter().find(|c| c.type_ == type_)
}

/// Waits until the manifest status entry of `object` in `work` satisfies `check`.
pub(super) async fn wait_manifest(
    env: &WorkEnv,
    work: &str,
    object: &str,
    what: &str,
    check: impl Fn(&ManifestCondition) -> bool,
) -> ManifestCondition {
    eventually(&format!("{work}/{object}: {what}"), || async {
        manifest_status(env, work, object).await.filter(|m| check(m))
    })
    .await
}

fn values(manifest: &ManifestCondition) -> Vec<FeedbackValue> {
    manifest
        .status_feedback
        .as_ref()
        .and_then(|f| f.values.clone())
        .unwrap_or_default()
}

fn integer(name: &str, value: i64) -> FeedbackValue {
    serde_json::from_value(json!({"name": name, "fieldValue": {"type": "Integer", "integer": value}}))
        .unwrap()
}

fn string(name: &str, value: &str) -> FeedbackValue {
    serde_json::from_value(json!({"name": name, "fieldValue": {"type": "String", "string": value}})).unwrap()
}

/// The integer feedback values of `fields` (`(feedback name, status field)`) in the live
/// object's status, in order, skipping absent fields.
async fn live_integers(api: &Api<DynamicObject>, name: &str, fields: &[(&str, &str)]) -> Vec<FeedbackValue> {
    let object = api.get(name).await.unwrap();
    let status = object.data.get("status").cloned().unwrap_or(Value::Null);
    fields
        .iter()
        .filter_map(|(feedback, field)| {
            status
                .get(field)
                .and_then(Value::as_i64)
                .map(|v| integer(feedback, v))
        })
        .collect()
}

fn synced(manifest: &ManifestCondition, status: &str) -> bool {
    condition(manifest, "StatusFeedbackSynced").is_some_and(|c| c.status == status)
}

/// Waits until the feedback of `object` equals the live integers of `fields`, with
/// `StatusFeedbackSynced` True.
async fn wait_live_feedback(
    env: &WorkEnv,
    work: &str,
    api: &Api<DynamicObject>,
    object: &str,
    fields: &[(&str, &str)],
) {
    eventually(
        &format!("{work}/{object}: feedback equals the live status"),
        || async {
            let expected = live_integers(api, object, fields).await;
            let manifest = manifest_status(env, work, object).await?;
            (!expected.is_empty() && values(&manifest) == expected && synced(&manifest, "True")).then_some(())
        },
    )
    .await;
}

const DEPLOYMENT_FIELDS: &[(&str, &str)] = &[
    ("ReadyReplicas", "readyReplicas"),
    ("Replicas", "replicas"),
    ("AvailableReplicas", "availableReplicas"),
];

#[tokio::test]
async fn statusfeedback_deployment_well_known() {
    let env = WorkEnv::started("sf-deploy").await;
    let configs = vec![config(
        &env,
        "apps",
        "deployments",
        "deploy1",
        json!({
            "feedbackRules": [{"type": "WellKnownStatus"}],
        }),
    )];
    env.create_work_with("w", vec![deployment(&env, "deploy1")], None, configs)
        .await;
    let work = "w".to_string();
    env.wait_work_condition("w", "Applied", "True").await;
    let deployments = spoke_api(&env, "apps/v1", "Deployment", "deployments");

    write_status(
        &deployments,
        "deploy1",
        json!({"replicas": 3, "readyReplicas": 2, "availableReplicas": 2}),
    )
    .await;
    wait_live_feedback(&env, &work, &deployments, "deploy1", DEPLOYMENT_FIELDS).await;
    let manifest = manifest_status(&env, &work, "deploy1").await.unwrap();
    assert_eq!(
        condition(&manifest, "StatusFeedbackSynced").unwrap().reason,
        "StatusFeedbackSynced"
    );

    write_status(
        &deployments,
        "deploy1",
        json!({"replicas": 3, "readyReplicas": 3, "availableReplicas": 3}),
    )
    .await;
    wait_live_feedback(&env, &work, &deployments, "deploy1", DEPLOYMENT_FIELDS).await;
    env.finish().await;
}

#[tokio::test]
async fn statusfeedback_json_paths() {
    let env = WorkEnv::started("sf-jsonpaths").await;
    let available = r#".status.conditions[?(@.type=="Available")].status"#;
    let configs = vec![config(
        &env,
        "apps",
        "deployments",
        "deploy1",
        json!({
            "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "Available", "path": available}]}],
        }),
    )];
    env.create_work_with("w", vec![deployment(&env, "deploy1")], None, configs)
        .await;
    let work = "w".to_string();
    env.wait_work_condition("w", "Applied", "True").await;
    let deployments = spoke_api(&env, "apps/v1", "Deployment", "deployments");
    write_status(
        &deployments,
        "deploy1",
        json!({"conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "ok",
             "lastUpdateTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z"}
        ]}),
    )
    .await;
    eventually("feedback Available equals the live condition", || async {
        let object = deployments.get("deploy1").await.unwrap();
        let live = object.data["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
            .and_then(|c| c["status"].as_str().map(str::to_string))?;
        let manifest = manifest_status(&env, &work, "deploy1").await?;
        (values(&manifest) == vec![string("Available", &live)] && synced(&manifest, "True")).then_some(())
    })
    .await;

    // A path that cannot be evaluated (indexing a number) turns the condition False.
    env.patch_spec("w", json!({"manifestConfigs": [config(&env, "apps", "deployments", "deploy1", json!({
        "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "Bad", "path": ".spec.replicas[0]"}]}],
    }))]}))
    .await;
    let manifest = wait_manifest(&env, &work, "deploy1", "StatusFeedbackSynced False", |m| {
        synced(m, "False")
    })
    .await;
    let synced_condition = condition(&manifest, "StatusFeedbackSynced").unwrap();
    assert_eq!(synced_condition.reason, "StatusFeedbackSyncFailed");
    assert!(
        synced_condition
            .message
            .starts_with("Sync status feedback failed with error "),
        "{}",
        synced_condition.message
    );
    assert!(values(&manifest).is_empty());
    env.finish().await;
}

#[tokio::test]
async fn statusfeedback_no_well_known_for_service_account() {
    let env = WorkEnv::started("sf-sa").await;
    let sa = manifest(json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "sa1", "namespace": env.namespace}}));
    let configs = vec![
        config(
            &env,
            "",
            "serviceaccounts",
            "sa1",
            json!({"feedbackRules": [{"type": "WellKnownStatus"}]}),
        ),
        config(
            &env,
            "apps",
            "deployments",
            "deploy1",
            json!({"feedbackRules": [{"type": "WellKnownStatus"}]}),
        ),
    ];
    env.create_work_with("w", vec![sa, deployment(&env, "deploy1")], None, configs)
        .await;
    let work = "w".to_string();
    let manifest = wait_manifest(&env, &work, "sa1", "StatusFeedbackSynced False", |m| {
        synced(m, "False")
    })
    .await;
    assert_eq!(
        condition(&manifest, "StatusFeedbackSynced").unwrap().message,
        "Sync status feedback failed with error cannot find the wellknown statuses for resource with gvk /v1, Kind=ServiceAccount"
    );
    let deployments = spoke_api(&env, "apps/v1", "Deployment", "deployments");
    write_status(
        &deployments,
        "deploy1",
        json!({"replicas": 3, "readyReplicas": 1, "availableReplicas": 1}),
    )
    .await;
    wait_live_feedback(&env, &work, &deployments, "deploy1", DEPLOYMENT_FIELDS).await;
    env.finish().await;
}

#[tokio::test]
async fn statusfeedback_raw_json_off_and_on() {
    let mut env = WorkEnv::started("sf-raw").await;
    let configs = vec![config(
        &env,
        "",
        "configmaps",
        "cm1",
        json!({
            "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "data", "path": ".data"}]}],
        }),
    )];
    env.create_work_with(
        "w",
        vec![env.configmap("cm1", json!({"b": "2", "a": "1"}))],
        None,
        configs,
    )
    .await;
    let work = "w".to_string();
    let manifest = wait_manifest(&env, &work, "cm1", "StatusFeedbackSynced False", |m| {
        synced(m, "False")
    })
    .await;
    assert_eq!(
        condition(&manifest, "StatusFeedbackSynced").unwrap().message,
        "Sync status feedback failed with error the type map[string]interface {} of the value for data is not found"
    );

    let mut options = env.options();
    options.raw_feedback_json_string = true;
    env.start_agent(options);
    let manifest = wait_manifest(&env, &work, "cm1", "JsonRaw feedback", |m| synced(m, "True")).await;
    let value = &values(&manifest)[0];
    assert_eq!(value.name, "data");
    assert_eq!(value.field_value.type_, ValueType::JsonRaw);
    assert_eq!(
        value.field_value.json_raw.as_deref(),
        Some(r#"{"a":"1","b":"2"}"#)
    );
    env.finish().await;
}

#[tokio::test]
async fn statusfeedback_daemonset_well_known() {
    let env = WorkEnv::started("sf-ds").await;
    let ds = manifest(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "ds1", "namespace": env.namespace},
        "spec": {
            "selector": {"matchLabels": {"app": "ds1"}},
            "template": {"metadata": {"labels": {"app": "ds1"}},
                         "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        }
    }));
    let configs = vec![config(
        &env,
        "apps",
        "daemonsets",
        "ds1",
        json!({
            "feedbackRules": [{"type": "WellKnownStatus"}],
        }),
    )];
    env.create_work_with("w", vec![ds], None, configs).await;
    let work = "w".to_string();
    env.wait_work_condition("w", "Applied", "True").await;
    let daemonsets = spoke_api(&env, "apps/v1", "DaemonSet", "daemonsets");
    write_status(
        &daemonsets,
        "ds1",
        json!({
            "numberReady": 2, "desiredNumberScheduled": 3, "numberAvailable": 1,
            "currentNumberScheduled": 3, "numberMisscheduled": 0,
        }),
    )
    .await;
    wait_live_feedback(
        &env,
        &work,
        &daemonsets,
        "ds1",
        &[
            ("NumberReady", "numberReady"),
            ("DesiredNumberScheduled", "desiredNumberScheduled"),
            ("NumberAvailable", "numberAvailable"),
        ],
    )
    .await;
    env.finish().await;
}

#[tokio::test]
async fn statusfeedback_wildcard_and_first_match() {
    let env = WorkEnv::started("sf-wildcard").await;
    let configs = vec![
        config(
            &env,
            "apps",
            "deployments",
            "deploy1",
            json!({
                "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "replicas", "path": ".spec.replicas"}]}],
            }),
        ),
        config(
            &env,
            "apps",
            "deployments",
            "deploy*",
            json!({
                "feedbackRules": [{"type": "WellKnownStatus"}],
            }),
        ),
    ];
    let manifests = vec![
        deployment(&env, "deploy1"),
        deployment(&env, "deploy2"),
        deployment(&env, "deploy3"),
    ];
    env.create_work_with("w", manifests, None, configs).await;
    let work = "w".to_string();
    env.wait_work_condition("w", "Applied", "True").await;
    let deployments = spoke_api(&env, "apps/v1", "Deployment", "deployments");
    for name in ["deploy2", "deploy3"] {
        write_status(
            &deployments,
            name,
            json!({"replicas": 3, "readyReplicas": 1, "availableReplicas": 1}),
        )
        .await;
    }
    // deploy1 takes only the first matching rules, the others the wildcard's.
    let manifest = wait_manifest(&env, &work, "deploy1", "JSONPaths feedback", |m| {
        synced(m, "True")
    })
    .await;
    assert_eq!(values(&manifest), vec![integer("replicas", 3)]);
    for name in ["deploy2", "deploy3"] {
        wait_live_feedback(&env, &work, &deployments, name, DEPLOYMENT_FIELDS).await;
    }
    env.finish().await;
}

#[tokio::test]
async fn statusfeedback_watch() {
    let mut env = WorkEnv::new("sf-watch").await;
    let mut options = env.options();
    // Polling would take minutes: only the watch can deliver the changes in time.
    options.status_sync_interval = Duration::from_secs(600);
    env.start_agent(options);
    let label = r".metadata.labels.feedback";
    let namespace = format!("{}-watched", env.cluster);
    let watched_ns =
        manifest(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}));
    let mut namespace_config: ManifestConfigOption = serde_json::from_value(json!({
        "resourceIdentifier": {"group": "", "resource": "namespaces", "name": namespace},
        "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "label", "path": label}]}],
    }))
    .unwrap();
    namespace_config.feedback_scrape_type = Some(ocm_api::work::v1::FeedbackScrapeType::Watch);
    let configs = vec![
        config(
            &env,
            "",
            "configmaps",
            "cm1",
            json!({
                "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "label", "path": label}]}],
                "feedbackScrapeType": "Watch",
            }),
        ),
        namespace_config,
    ];
    env.create_work_with(
        "w",
        vec![env.configmap("cm1", json!({"a": "1"})), watched_ns],
        None,
        configs,
    )
    .await;
    let work = "w".to_string();
    env.wait_work_condition("w", "Available", "True").await;

    let configmaps = spoke_api(&env, "v1", "ConfigMap", "configmaps");
    let namespaces = env.spoke_dynamic("v1", "Namespace", "namespaces", None);
    for step in ["one", "two"] {
        let patch = json!({"metadata": {"labels": {"feedback": step}}});
        configmaps
            .patch("cm1", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        namespaces
            .patch(&namespace, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        for object in ["cm1", namespace.as_str()] {
            eventually_within(
                20,
                &format!("{object} feedback label={step} through the watch"),
                || async {
                    let manifest = manifest_status(&env, &work, object).await?;
                    (values(&manifest) == vec![string("label", step)]).then_some(())
                },
            )
            .await;
        }
    }
    let _ = namespaces.delete(&namespace, &Default::default()).await;
    env.finish().await;
}
