//! `conditionrules:` scenarios of ocm-core.md §6.2: manifest conditions computed by condition
//! rules (well-known and CEL) and their aggregation into work conditions.
//!
//! The Jobs carry `spec.managedBy`, so that on a real cluster kube-controller-manager's Job
//! controller leaves their status to the test, which writes it as upstream's tests do.

use ocm_api::work::v1::Manifest;
use serde_json::{Value, json};

use super::statusfeedback::{condition, config, spoke_api, wait_manifest, write_status};
use super::support::{WorkEnv, eventually, manifest, work_condition};

fn job(env: &WorkEnv, name: &str) -> Manifest {
    manifest(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": env.namespace},
        "spec": {
            "managedBy": "example.com/ocm-tests",
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "command": ["true"]}]
            }}
        }
    }))
}

const START: &str = "2024-01-01T00:00:00Z";

fn running(active: i64) -> Value {
    json!({"active": active, "ready": 0, "startTime": START})
}

fn completed() -> Value {
    json!({
        "active": 0, "ready": 0, "succeeded": 1, "startTime": START, "completionTime": "2024-01-01T00:01:00Z",
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
             "message": "Reached expected number of succeeded pods",
             "lastProbeTime": START, "lastTransitionTime": START},
            {"type": "Complete", "status": "True", "reason": "CompletionsReached",
             "message": "Reached expected number of succeeded pods",
             "lastProbeTime": START, "lastTransitionTime": START},
        ],
    })
}

fn has(manifest: &ocm_api::work::v1::ManifestCondition, type_: &str, status: &str, reason: &str) -> bool {
    condition(manifest, type_).is_some_and(|c| c.status == status && c.reason == reason)
}

#[tokio::test]
async fn conditionrules_job_well_known_complete() {
    let env = WorkEnv::started("cr-job").await;
    let configs = vec![config(
        &env,
        "batch",
        "jobs",
        "job1",
        json!({
            "conditionRules": [{"type": "WellKnownConditions", "condition": "Complete"}],
        }),
    )];
    env.create_work_with("w", vec![job(&env, "job1")], None, configs)
        .await;
    let work = "w".to_string();
    env.wait_work_condition("w", "Applied", "True").await;
    let jobs = spoke_api(&env, "batch/v1", "Job", "jobs");

    write_status(&jobs, "job1", running(1)).await;
    let manifest = wait_manifest(&env, &work, "job1", "Complete False", |m| {
        has(m, "Complete", "False", "ConditionRuleEvaluated")
    })
    .await;
    let complete = condition(&manifest, "Complete").unwrap();
    assert_eq!(complete.message, "Job is not finished");
    let generation = env.work("w").await.unwrap().metadata.generation;
    assert_eq!(complete.observed_generation, generation);

    write_status(&jobs, "job1", completed()).await;
    let manifest = wait_manifest(&env, &work, "job1", "Complete True", |m| {
        has(m, "Complete", "True", "ConditionRuleEvaluated")
    })
    .await;
    assert_eq!(
        condition(&manifest, "Complete").unwrap().message,
        "Job is finished"
    );
    let work_object = env.wait_work_condition("w", "Complete", "True").await;
    let aggregated = work_condition(&work_object, "Complete").unwrap();
    assert_eq!(aggregated.reason, "ConditionRulesAggregated");
    assert_eq!(aggregated.message, "Job is finished");
    env.finish().await;
}

#[tokio::test]
async fn conditionrules_custom_cel() {
    let env = WorkEnv::started("cr-cel").await;
    let configs = vec![config(
        &env,
        "batch",
        "jobs",
        "*1",
        json!({
            "conditionRules": [{
                "type": "CEL",
                "condition": "OneActive",
                "celExpressions": ["object.status.active == 1"],
                "messageExpression": "result ? 'One pod is active' : 'There is not only one pod active'",
            }],
        }),
    )];
    env.create_work_with("w", vec![job(&env, "job1")], None, configs)
        .await;
    let work = "w".to_string();
    env.wait_work_condition("w", "Applied", "True").await;
    let jobs = spoke_api(&env, "batch/v1", "Job", "jobs");

    write_status(&jobs, "job1", running(3)).await;
    let manifest = wait_manifest(&env, &work, "job1", "OneActive False", |m| {
        has(m, "OneActive", "False", "ConditionRuleEvaluated")
    })
    .await;
    assert_eq!(
        condition(&manifest, "OneActive").unwrap().message,
        "There is not only one pod active"
    );

    write_status(&jobs, "job1", running(1)).await;
    let manifest = wait_manifest(&env, &work, "job1", "OneActive True", |m| {
        has(m, "OneActive", "True", "ConditionRuleEvaluated")
    })
    .await;
    assert_eq!(
        condition(&manifest, "OneActive").unwrap().message,
        "One pod is active"
    );
    let work_object = env.wait_work_condition("w", "OneActive", "True").await;
    assert_eq!(
        work_condition(&work_object, "OneActive").unwrap().reason,
        "ConditionRulesAggregated"
    );

    // Removing the rule prunes its conditions from the manifest and the work.
    env.patch_spec("w", json!({"manifestConfigs": null})).await;
    eventually("OneActive pruned", || async {
        let work_object = env.work("w").await?;
        let manifest = super::statusfeedback::manifest_status(&env, &work, "job1").await?;
        (work_condition(&work_object, "OneActive").is_none() && condition(&manifest, "OneActive").is_none())
            .then_some(())
    })
    .await;
    env.finish().await;
}

#[tokio::test]
async fn conditionrules_unknown_well_known() {
    let env = WorkEnv::started("cr-unknown").await;
    let configs = vec![config(
        &env,
        "batch",
        "jobs",
        "job1",
        json!({
            "conditionRules": [{"type": "WellKnownConditions", "condition": "Progressing"}],
        }),
    )];
    env.create_work_with("w", vec![job(&env, "job1")], None, configs)
        .await;
    let work = "w".to_string();
    env.wait_work_condition("w", "Available", "True").await;
    let jobs = spoke_api(&env, "batch/v1", "Job", "jobs");
    write_status(&jobs, "job1", running(1)).await;
    let manifest = wait_manifest(&env, &work, "job1", "status synced", |m| {
        condition(m, "StatusFeedbackSynced").is_some()
    })
    .await;
    assert!(condition(&manifest, "Progressing").is_none(), "{manifest:?}");
    let work_object = env.work("w").await.unwrap();
    assert!(work_condition(&work_object, "Progressing").is_none());
    env.finish().await;
}

#[tokio::test]
async fn conditionrules_wildcard_and_first_match() {
    let env = WorkEnv::started("cr-wildcard").await;
    let configs = vec![
        config(
            &env,
            "batch",
            "jobs",
            "job1",
            json!({
                "conditionRules": [{"type": "WellKnownConditions", "condition": "Complete"}],
            }),
        ),
        config(
            &env,
            "batch",
            "jobs",
            "job*",
            json!({
                "conditionRules": [{"type": "CEL", "condition": "Complete", "celExpressions": ["object.status.("]}],
            }),
        ),
    ];
    env.create_work_with("w", vec![job(&env, "job1"), job(&env, "job2")], None, configs)
        .await;
    let work = "w".to_string();
    env.wait_work_condition("w", "Applied", "True").await;
    let jobs = spoke_api(&env, "batch/v1", "Job", "jobs");
    write_status(&jobs, "job1", completed()).await;
    write_status(&jobs, "job2", running(1)).await;
    // job1: the first matching config's well-known rule; job2: only the broken wildcard rule.
    wait_manifest(&env, &work, "job1", "Complete True", |m| {
        has(m, "Complete", "True", "ConditionRuleEvaluated")
    })
    .await;
    let manifest = wait_manifest(&env, &work, "job2", "Complete expression error", |m| {
        has(m, "Complete", "False", "ConditionRuleExpressionError")
    })
    .await;
    assert!(!condition(&manifest, "Complete").unwrap().message.is_empty());
    let work_object = env.wait_work_condition("w", "Complete", "False").await;
    let aggregated = work_condition(&work_object, "Complete").unwrap();
    assert_eq!(aggregated.reason, "ConditionRulesAggregated");
    assert_eq!(aggregated.message, "Aggregated from 2 manifest conditions");
    env.finish().await;
}
