//! The status the apply controller writes (ocm-core.md §3.3 steps 5–7): each manifest's
//! `Applied` condition, the merge of new manifest conditions into `resourceStatus.manifests`
//! (matching entries by resource meta, ordinal ignored when that is unique; keeping the other
//! writer's conditions and feedback), and the work's `Applied` condition.

use std::collections::HashMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use ocm_api::conditions::{self, ConditionList, Status};
use ocm_api::meta::Condition;
use ocm_api::names::conditions::work::{manifest, manifest_work};
use ocm_api::work::v1::{ManifestCondition, ManifestResourceMeta, ManifestWorkStatus};

/// How applying one manifest ended, for its `Applied` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Applied.
    Applied,
    /// Failed with this message.
    Failed(String),
    /// ignoreFields could not be processed (this message).
    IgnoreFieldsFailed(String),
}

/// The `Applied` condition of a manifest (observedGeneration = the work's generation).
pub(crate) fn applied_condition(outcome: &Outcome, generation: i64, now: Time) -> Condition {
    let (status, reason, message) = match outcome {
        Outcome::Applied => (
            Status::True,
            manifest::reasons::APPLIED_COMPLETE,
            "Apply manifest complete".to_string(),
        ),
        Outcome::Failed(error) => (
            Status::False,
            manifest::reasons::APPLIED_FAILED,
            format!("Failed to apply manifest: {error}"),
        ),
        Outcome::IgnoreFieldsFailed(error) => (
            Status::False,
            manifest::reasons::APPLIED_SSA_IGNORE_FIELD_ERROR,
            format!("Failed to process ignoreFields: {error}"),
        ),
    };
    Condition::new(manifest::APPLIED, status, reason, &message, now).with_observed_generation(generation)
}

fn without_ordinal(meta: &ManifestResourceMeta) -> ManifestResourceMeta {
    ManifestResourceMeta {
        ordinal: 0,
        ..meta.clone()
    }
}

fn key(meta: &ManifestResourceMeta) -> String {
    serde_json::to_string(meta).unwrap_or_default()
}

/// Sets `new` conditions into `old` ones: a condition whose observedGeneration changed is
/// replaced (its lastTransitionTime restarts); otherwise Kubernetes' set semantics.
pub(crate) fn merge_conditions(old: &[Condition], new: &[Condition]) -> Vec<Condition> {
    let mut merged = old.to_vec();
    for condition in new {
        if let Some(existing) = conditions::find(&merged, &condition.type_)
            && existing.observed_generation != condition.observed_generation
        {
            conditions::remove(&mut merged, &condition.type_);
        }
        conditions::set(&mut merged, condition.clone());
    }
    merged
}

/// The new `resourceStatus.manifests`: one entry per new manifest condition, merged with the
/// old entry of the same resource meta (or, if unique, the same meta but another ordinal).
/// Matched entries keep their status feedback and other conditions; new entries get `now` as
/// lastTransitionTime; entries of removed manifests go.
pub(crate) fn merge_manifest_conditions(
    old: &[ManifestCondition],
    new: Vec<ManifestCondition>,
    now: &Time,
) -> Vec<ManifestCondition> {
    let mut by_meta: HashMap<String, &ManifestCondition> = HashMap::new();
    let mut by_meta_without_ordinal: HashMap<String, &ManifestCondition> = HashMap::new();
    let mut duplicated = Vec::new();
    for condition in old {
        by_meta.insert(key(&condition.resource_meta), condition);
        let stripped = without_ordinal(&condition.resource_meta);
        if stripped != ManifestResourceMeta::default() {
            let stripped = key(&stripped);
            if by_meta_without_ordinal.contains_key(&stripped) {
                duplicated.push(stripped);
            } else {
                by_meta_without_ordinal.insert(stripped, condition);
            }
        }
    }
    for stripped in duplicated {
        by_meta_without_ordinal.remove(&stripped);
    }
    new.into_iter()
        .map(|mut condition| {
            let existing = by_meta
                .get(&key(&condition.resource_meta))
                .or_else(|| by_meta_without_ordinal.get(&key(&without_ordinal(&condition.resource_meta))));
            match existing {
                Some(existing) => ManifestCondition {
                    conditions: merge_conditions(&existing.conditions, &condition.conditions),
                    resource_meta: condition.resource_meta,
                    status_feedback: existing.status_feedback.clone(),
                },
                None => {
                    for c in &mut condition.conditions {
                        c.last_transition_time = now.clone();
                    }
                    condition
                }
            }
        })
        .collect()
}

/// Sets the work's `Applied` condition from the manifests' `Applied` conditions: True when all
/// are True, False when any is False; nothing when no manifest has one.
pub(crate) fn set_work_applied(
    status: &mut ManifestWorkStatus,
    manifests: &[ManifestCondition],
    generation: i64,
    now: Time,
) {
    let applied: Vec<&Condition> = manifests
        .iter()
        .filter_map(|m| conditions::find(&m.conditions, manifest::APPLIED))
        .collect();
    if applied.is_empty() {
        return;
    }
    let all = applied.iter().all(|c| c.status != Status::False.as_str());
    let condition = if all {
        Condition::new(
            manifest_work::APPLIED,
            Status::True,
            manifest_work::reasons::APPLIED_COMPLETE,
            "Apply manifest work complete",
            now,
        )
    } else {
        Condition::new(
            manifest_work::APPLIED,
            Status::False,
            manifest_work::reasons::APPLIED_FAILED,
            "Failed to apply manifest work",
            now,
        )
    };
    status
        .conditions
        .set_condition(condition.with_observed_generation(generation));
}

/// The old manifest condition of the same resource meta (ordinal ignored; upstream
/// `FindManifestCondition`).
pub(crate) fn find_manifest<'a>(
    meta: &ManifestResourceMeta,
    old: &'a [ManifestCondition],
) -> Option<&'a ManifestCondition> {
    let stripped = without_ordinal(meta);
    old.iter().find(|c| without_ordinal(&c.resource_meta) == stripped)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    fn meta(ordinal: i32, name: &str) -> ManifestResourceMeta {
        ManifestResourceMeta {
            ordinal,
            group: None,
            version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            resource: Some("configmaps".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
        }
    }

    fn entry(ordinal: i32, name: &str, conditions: Vec<Condition>) -> ManifestCondition {
        ManifestCondition {
            conditions,
            resource_meta: meta(ordinal, name),
            status_feedback: None,
        }
    }

    #[test]
    fn applied_condition_messages_are_upstreams() {
        let ok = applied_condition(&Outcome::Applied, 3, at(1));
        assert_eq!(
            (ok.status.as_str(), ok.reason.as_str()),
            ("True", "AppliedManifestComplete")
        );
        assert_eq!(ok.message, "Apply manifest complete");
        assert_eq!(ok.observed_generation, Some(3));
        let failed = applied_condition(&Outcome::Failed("boom".into()), 3, at(1));
        assert_eq!(failed.reason, "AppliedManifestFailed");
        assert_eq!(failed.message, "Failed to apply manifest: boom");
        let ignore = applied_condition(&Outcome::IgnoreFieldsFailed("bad jq".into()), 3, at(1));
        assert_eq!(ignore.reason, "AppliedManifestSSAIgnoreFieldError");
        assert_eq!(ignore.message, "Failed to process ignoreFields: bad jq");
    }

    #[test]
    fn merge_keeps_feedback_and_other_conditions_and_matches_moved_ordinals() {
        let available = Condition::new("Available", Status::True, "ResourceAvailable", "ok", at(1));
        let old_applied = applied_condition(&Outcome::Applied, 1, at(1));
        let mut old = vec![entry(0, "a", vec![old_applied.clone(), available.clone()])];
        old[0].status_feedback = Some(Default::default());
        // "a" moved to ordinal 1; "b" is new.
        let new = vec![
            entry(0, "b", vec![applied_condition(&Outcome::Applied, 1, at(5))]),
            entry(1, "a", vec![applied_condition(&Outcome::Applied, 1, at(5))]),
        ];
        let merged = merge_manifest_conditions(&old, new, &at(9));
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].conditions[0].last_transition_time, at(9));
        assert_eq!(merged[1].resource_meta.ordinal, 1);
        assert!(merged[1].status_feedback.is_some());
        assert_eq!(merged[1].conditions.len(), 2);
        assert_eq!(
            merged[1].conditions[0].last_transition_time,
            at(1),
            "unchanged status keeps its time"
        );
    }

    #[test]
    fn a_new_generation_restarts_the_transition_time() {
        let old = vec![applied_condition(&Outcome::Applied, 1, at(1))];
        let merged = merge_conditions(&old, &[applied_condition(&Outcome::Applied, 2, at(7))]);
        assert_eq!(merged[0].last_transition_time, at(7));
        assert_eq!(merged[0].observed_generation, Some(2));
    }

    #[test]
    fn duplicate_metas_without_ordinal_do_not_match() {
        let old = vec![
            entry(0, "a", vec![applied_condition(&Outcome::Applied, 1, at(1))]),
            entry(1, "a", vec![applied_condition(&Outcome::Applied, 1, at(1))]),
        ];
        let merged = merge_manifest_conditions(
            &old,
            vec![entry(
                2,
                "a",
                vec![applied_condition(&Outcome::Applied, 1, at(5))],
            )],
            &at(9),
        );
        assert_eq!(merged[0].conditions[0].last_transition_time, at(9));
    }

    #[test]
    fn work_applied_follows_the_manifests() {
        let mut status = ManifestWorkStatus::default();
        set_work_applied(&mut status, &[], 1, at(1));
        assert!(status.conditions.is_none());
        let manifests = vec![
            entry(0, "a", vec![applied_condition(&Outcome::Applied, 1, at(1))]),
            entry(
                1,
                "b",
                vec![applied_condition(&Outcome::Failed("x".into()), 1, at(1))],
            ),
        ];
        set_work_applied(&mut status, &manifests, 4, at(1));
        let applied = status.conditions.find_condition("Applied").unwrap();
        assert_eq!(
            (applied.status.as_str(), applied.reason.as_str()),
            ("False", "AppliedManifestWorkFailed")
        );
        assert_eq!(applied.message, "Failed to apply manifest work");
        set_work_applied(&mut status, &manifests[..1], 4, at(2));
        let applied = status.conditions.find_condition("Applied").unwrap();
        assert_eq!(
            (applied.status.as_str(), applied.reason.as_str()),
            ("True", "AppliedManifestWorkComplete")
        );
        assert_eq!(applied.observed_generation, Some(4));
    }
}
