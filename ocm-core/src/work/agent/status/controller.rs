//! The status controller (upstream's `AvailableStatusController`, ocm-core.md §3.5).
//!
//! It syncs a work whenever the shared ManifestWork store sees it change, whenever a watched
//! object of it changes (`Watch` scrape type), and otherwise every status sync interval
//! stretched by up to 90 % at random. Works without the cleanup finalizer or without an
//! `Applied` condition yet are left alone. The new status is computed by [`compute_status`] and
//! written as a merge patch carrying the resourceVersion only when it differs; a 409 Conflict
//! (the apply controller wrote in between) is retried from a fresh read.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::{ObjectRef, ReflectHandle};
use ocm_api::conditions;
use ocm_api::names::conditions::work::manifest_work;
use ocm_api::names::finalizers;
use ocm_api::work::v1::{
    FeedbackScrapeType, ManifestCondition, ManifestWork, ManifestWorkStatus, StatusFeedbackResult,
};
use serde_json::Value;
use tokio::sync::mpsc;

use super::aggregate::aggregate_manifest_conditions;
use super::feedback::FeedbackReader;
use super::reader::ObjectReader;
use super::rules::{evaluate_rules, prune_rule_conditions};
use crate::work::agent::manifest_config::find_manifest_config;
use crate::work::agent::{Backoff, Context, WorkAgentError, is_status, jitter, log_failure, now, patch};

const CONTROLLER: &str = "AvailableStatusController";

/// How often a conflicting status write is retried from a fresh read before giving up to the
/// error backoff.
const CONFLICT_RETRIES: usize = 3;

/// Why syncing a work's status failed.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// Writing the work status on the hub failed.
    #[error("failed to patch the status of ManifestWork {work}: {source}")]
    PatchStatus {
        /// The work.
        work: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Reading the work again after a conflict failed.
    #[error("failed to read ManifestWork {work} after a conflict: {source}")]
    ReadWork {
        /// The work.
        work: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// What the reconciler shares.
struct State {
    ctx: Arc<Context>,
    reader: ObjectReader,
    feedback: FeedbackReader,
    errors: Backoff,
}

/// Runs the status controller until its event stream ends.
pub(crate) async fn run(ctx: Arc<Context>, works: ReflectHandle<ManifestWork>) -> Result<(), WorkAgentError> {
    let (wake, woken) = mpsc::unbounded_channel::<String>();
    let namespace = ctx.cluster.clone();
    let wakes = futures::stream::unfold(woken, |mut woken| async move {
        woken.recv().await.map(|name| (name, woken))
    })
    .map(move |name| ObjectRef::<ManifestWork>::new(&name).within(&namespace));
    let state = Arc::new(State {
        reader: ObjectReader::new(ctx.spoke.clone(), ctx.options.max_feedback_watch, wake),
        feedback: FeedbackReader {
            raw_json: ctx.options.raw_feedback_json_string,
            max_json_raw_length: ctx.options.max_json_raw_length,
        },
        errors: Backoff::new(Duration::from_millis(5), Duration::from_secs(1000)),
        ctx: ctx.clone(),
    });
    Controller::for_shared_stream(works, ctx.works.clone())
        .with_config(Config::default().concurrency(ctx.options.workers))
        .reconcile_on(wakes)
        .run(
            |work, state: Arc<State>| async move {
                let result = reconcile(&work, &state).await;
                state.ctx.metrics.reconciled(CONTROLLER, result.is_ok());
                if result.is_ok() {
                    state.errors.forget(&work.name_any());
                }
                result
            },
            |work, error: &StatusError, state: Arc<State>| {
                log_failure(&work.name_any(), error, "syncing the ManifestWork status failed");
                Action::requeue(state.errors.failed(&work.name_any()))
            },
            state,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(WorkAgentError::ControllerStopped(CONTROLLER))
}

#[tracing::instrument(skip_all, fields(work = %work.name_any()))]
async fn reconcile(work: &ManifestWork, state: &State) -> Result<Action, StatusError> {
    let ctx = &state.ctx;
    let namespace = ctx.cluster.clone();
    state
        .reader
        .retain_works(|name| ctx.works.get(&ObjectRef::new(name).within(&namespace)).is_some());
    let name = work.name_any();
    let api = ctx.works_api();
    let mut current = work.clone();
    for attempt in 0..=CONFLICT_RETRIES {
        match sync(state, &current).await {
            Ok(()) => break,
            Err(source) if is_status(&source, 409) && attempt < CONFLICT_RETRIES => {
                current = api.get(&name).await.map_err(|source| StatusError::ReadWork {
                    work: name.clone(),
                    source,
                })?;
            }
            Err(source) if is_status(&source, 404) => return Ok(Action::await_change()),
            Err(source) => {
                return Err(StatusError::PatchStatus { work: name, source });
            }
        }
    }
    Ok(Action::requeue(jitter(ctx.options.status_sync_interval, 0.9)))
}

/// Reads the work's objects, computes its status and writes it if it changed.
async fn sync(state: &State, work: &ManifestWork) -> Result<(), kube::Error> {
    if !work
        .finalizers()
        .iter()
        .any(|f| f == finalizers::MANIFEST_WORK_CLEANUP)
    {
        return Ok(());
    }
    let old = work.status.clone().unwrap_or_default();
    if conditions::find(
        old.conditions.as_deref().unwrap_or_default(),
        manifest_work::APPLIED,
    )
    .is_none()
    {
        return Ok(());
    }
    let name = work.name_any();
    let now = now();
    let manifests = old
        .resource_status
        .as_ref()
        .and_then(|r| r.manifests.as_deref())
        .unwrap_or_default();
    let configs = work.spec.manifest_configs.as_deref().unwrap_or_default();
    let mut objects = Vec::with_capacity(manifests.len());
    for manifest in manifests {
        let (object, available) = state.reader.get(&manifest.resource_meta, &now).await;
        if object.is_some() {
            let watch = find_manifest_config(&manifest.resource_meta, configs)
                .is_some_and(|c| c.feedback_scrape_type == Some(FeedbackScrapeType::Watch));
            if watch {
                state.reader.register(&name, &manifest.resource_meta);
            } else {
                state.reader.unregister(&name, &manifest.resource_meta);
            }
        }
        objects.push((object, available));
    }
    let new = compute_status(work, &state.feedback, objects, &now);
    patch::patch_status(&state.ctx.works_api(), work, &old, &new).await?;
    Ok(())
}

/// The work status after reading its objects: for each manifest status entry (in order) the
/// object read (`None` when missing or unreadable) and its `Available` condition.
#[must_use]
pub fn compute_status(
    work: &ManifestWork,
    feedback: &FeedbackReader,
    objects: Vec<(Option<Value>, ocm_api::meta::Condition)>,
    now: &Time,
) -> ManifestWorkStatus {
    let generation = work.metadata.generation.unwrap_or_default();
    let mut status = work.status.clone().unwrap_or_default();
    let configs = work.spec.manifest_configs.as_deref().unwrap_or_default();
    let manifests: &mut [ManifestCondition] = status
        .resource_status
        .as_mut()
        .and_then(|r| r.manifests.as_deref_mut())
        .unwrap_or_default();
    for (manifest, (object, available)) in manifests.iter_mut().zip(objects) {
        conditions::set(&mut manifest.conditions, available);
        let Some(object) = object else { continue };
        let option = find_manifest_config(&manifest.resource_meta, configs);
        let (values, synced) = feedback.feedback(&object, option.as_ref(), now);
        let old_values = manifest
            .status_feedback
            .as_ref()
            .and_then(|f| f.values.as_deref())
            .unwrap_or_default();
        if old_values != values.as_slice() {
            conditions::remove(&mut manifest.conditions, &synced.type_);
            manifest.status_feedback = Some(StatusFeedbackResult {
                values: (!values.is_empty()).then_some(values),
            });
        }
        conditions::set(&mut manifest.conditions, synced);
        let rules = option
            .as_ref()
            .and_then(|o| o.condition_rules.as_deref())
            .unwrap_or_default();
        if !rules.is_empty() {
            for condition in evaluate_rules(&object, rules, now) {
                conditions::set(
                    &mut manifest.conditions,
                    condition.with_observed_generation(generation),
                );
            }
        }
        prune_rule_conditions(&mut manifest.conditions, generation);
    }
    let aggregated = aggregate_manifest_conditions(generation, manifests, now);
    let work_conditions = status.conditions.get_or_insert_with(Vec::new);
    for condition in aggregated {
        conditions::set(work_conditions, condition);
    }
    prune_rule_conditions(work_conditions, generation);
    status
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use ocm_api::conditions::Status;
    use ocm_api::meta::Condition;
    use serde_json::json;

    use super::*;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(1_700_000_000 + second).unwrap())
    }

    fn available(status: Status) -> Condition {
        let reason = if status == Status::True {
            "ResourceAvailable"
        } else {
            "ResourceNotAvailable"
        };
        Condition::new("Available", status, reason, "", at(0))
    }

    fn work(generation: i64, status: Value) -> ManifestWork {
        serde_json::from_value(json!({
            "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": "w", "namespace": "c", "generation": generation},
            "spec": {"manifestConfigs": [{
                "resourceIdentifier": {"group": "apps", "resource": "deployments", "namespace": "ns", "name": "d"},
                "feedbackRules": [{"type": "WellKnownStatus"}],
                "conditionRules": [{"type": "CEL", "condition": "Ready", "celExpressions": ["object.status.readyReplicas == 1"]}],
            }]},
            "status": status,
        }))
        .unwrap()
    }

    fn meta(name: &str, ordinal: i32) -> Value {
        json!({"group": "apps", "version": "v1", "kind": "Deployment", "resource": "deployments",
               "namespace": "ns", "name": name, "ordinal": ordinal})
    }

    fn deployment(ready: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "status": {"readyReplicas": ready}})
    }

    fn applied_status(extra: Value) -> Value {
        let applied = json!({"type": "Applied", "status": "True", "reason": "AppliedManifestComplete",
            "message": "", "lastTransitionTime": "2023-01-01T00:00:00Z"});
        let mut manifests = vec![
            json!({"resourceMeta": meta("d", 0), "conditions": [applied.clone()]}),
            json!({"resourceMeta": meta("gone", 1), "conditions": [applied.clone()]}),
        ];
        if let (Value::Object(extra), Some(map)) = (extra, manifests[0].as_object_mut()) {
            map.extend(extra);
        }
        json!({"conditions": [applied], "resourceStatus": {"manifests": manifests}})
    }

    fn manifest_condition<'a>(status: &'a ManifestWorkStatus, index: usize, type_: &str) -> &'a Condition {
        let manifests = status
            .resource_status
            .as_ref()
            .unwrap()
            .manifests
            .as_ref()
            .unwrap();
        manifests[index]
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap()
    }

    #[test]
    fn status_of_feedback_rules_and_availability() {
        let work = work(2, applied_status(json!({})));
        let objects = vec![
            (Some(deployment(1)), available(Status::True)),
            (None, available(Status::False)),
        ];
        let status = compute_status(&work, &FeedbackReader::default(), objects, &at(10));
        let manifests = status
            .resource_status
            .as_ref()
            .unwrap()
            .manifests
            .as_ref()
            .unwrap();
        let values = manifests[0]
            .status_feedback
            .as_ref()
            .unwrap()
            .values
            .as_ref()
            .unwrap();
        assert_eq!(values.len(), 1);
        assert_eq!(values[0].name, "ReadyReplicas");
        assert_eq!(
            manifest_condition(&status, 0, "StatusFeedbackSynced").reason,
            "StatusFeedbackSynced"
        );
        let ready = manifest_condition(&status, 0, "Ready");
        assert_eq!(
            (ready.status.as_str(), ready.observed_generation),
            ("True", Some(2))
        );
        assert!(manifests[1].status_feedback.is_none());
        assert_eq!(manifest_condition(&status, 1, "Available").status, "False");
        let conditions = status.conditions.as_ref().unwrap();
        let types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, vec!["Applied", "Available", "Ready"]);
        assert_eq!(conditions[1].message, "1 of 2 resources are not available");
        assert_eq!(conditions[2].reason, "ConditionRulesAggregated");
    }

    #[test]
    fn unchanged_values_keep_the_synced_condition_and_changed_ones_refresh_it() {
        let first = compute_status(
            &work(2, applied_status(json!({}))),
            &FeedbackReader::default(),
            vec![
                (Some(deployment(1)), available(Status::True)),
                (None, available(Status::True)),
            ],
            &at(10),
        );
        let mut again = work(2, serde_json::to_value(&first).unwrap());
        let same = compute_status(
            &again,
            &FeedbackReader::default(),
            vec![
                (Some(deployment(1)), available(Status::True)),
                (None, available(Status::True)),
            ],
            &at(20),
        );
        assert_eq!(same, first);
        again.status = Some(first);
        let changed = compute_status(
            &again,
            &FeedbackReader::default(),
            vec![
                (Some(deployment(2)), available(Status::True)),
                (None, available(Status::True)),
            ],
            &at(30),
        );
        let synced = manifest_condition(&changed, 0, "StatusFeedbackSynced");
        assert_eq!(synced.last_transition_time, at(30));
        assert_eq!(manifest_condition(&changed, 0, "Ready").status, "False");
    }

    #[test]
    fn rule_conditions_of_older_generations_are_pruned() {
        let stale = json!({"conditions": [{"type": "Old", "status": "True", "reason": "ConditionRuleEvaluated",
            "message": "", "observedGeneration": 1, "lastTransitionTime": "2023-01-01T00:00:00Z"}]});
        let mut status = applied_status(stale);
        status["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "Old", "status": "True",
            "reason": "ConditionRulesAggregated", "message": "", "observedGeneration": 1,
            "lastTransitionTime": "2023-01-01T00:00:00Z"}));
        let result = compute_status(
            &work(2, status),
            &FeedbackReader::default(),
            vec![
                (Some(deployment(1)), available(Status::True)),
                (None, available(Status::True)),
            ],
            &at(10),
        );
        let manifests = result
            .resource_status
            .as_ref()
            .unwrap()
            .manifests
            .as_ref()
            .unwrap();
        assert!(manifests[0].conditions.iter().all(|c| c.type_ != "Old"));
        assert!(
            result
                .conditions
                .as_ref()
                .unwrap()
                .iter()
                .all(|c| c.type_ != "Old")
        );
    }
}
