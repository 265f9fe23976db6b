//! Work-level conditions aggregated from the manifests' conditions: `Available`, and one
//! condition per type that condition rules set on manifests (reason `ConditionRulesAggregated`).
//!
//! `Available` is `False` when any manifest is not available, else `Unknown` when any is
//! unknown or none is available, else `True`. A rule condition is `False` when any manifest's is
//! `False`, else `Unknown` when any is `Unknown` or none is `True`, else `True` — except
//! `Progressing`, which is `True` when any manifest progresses, else `Unknown` when any is
//! unknown, else `False`. A rule condition's message is its single manifest's message, or
//! `Aggregated from <n> manifest conditions`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use ocm_api::conditions::Status;
use ocm_api::meta::Condition;
use ocm_api::names::conditions::work::{manifest, manifest_work};
use ocm_api::work::v1::ManifestCondition;

use super::rules::is_rule_condition;

#[derive(Debug, Default)]
struct Counts {
    true_: usize,
    false_: usize,
    unknown: usize,
    message: String,
}

/// The work conditions aggregated from `manifests`, sorted by type, each with
/// `observedGeneration` = `generation`. `Available` is always among them.
#[must_use]
pub fn aggregate_manifest_conditions(
    generation: i64,
    manifests: &[ManifestCondition],
    now: &Time,
) -> Vec<Condition> {
    let mut counts: BTreeMap<&str, Counts> = BTreeMap::new();
    counts.insert(manifest::AVAILABLE, Counts::default());
    for condition in manifests.iter().flat_map(|m| &m.conditions) {
        if condition.type_ != manifest::AVAILABLE && !is_rule_condition(condition) {
            continue;
        }
        let entry = counts.entry(condition.type_.as_str()).or_default();
        match condition.status() {
            Some(Status::True) => entry.true_ += 1,
            Some(Status::False) => entry.false_ += 1,
            Some(Status::Unknown) => entry.unknown += 1,
            None => {}
        }
        if !condition.message.is_empty() {
            entry.message.clone_from(&condition.message);
        }
    }
    counts
        .into_iter()
        .map(|(type_, counts)| {
            if type_ == manifest::AVAILABLE {
                available(&counts, manifests.len(), now)
            } else {
                from_rules(type_, &counts, now)
            }
            .with_observed_generation(generation)
        })
        .collect()
}

fn available(counts: &Counts, total: usize, now: &Time) -> Condition {
    let (status, reason, message) = if counts.false_ > 0 {
        (
            Status::False,
            manifest_work::reasons::RESOURCES_NOT_AVAILABLE,
            format!("{} of {total} resources are not available", counts.false_),
        )
    } else if counts.unknown > 0 {
        (
            Status::Unknown,
            manifest_work::reasons::RESOURCES_STATUS_UNKNOWN,
            format!("{} of {total} resources have unknown status", counts.unknown),
        )
    } else if counts.true_ == 0 {
        (
            Status::Unknown,
            manifest_work::reasons::RESOURCES_STATUS_UNKNOWN,
            "cannot get any available resource ".to_string(),
        )
    } else {
        (
            Status::True,
            manifest_work::reasons::RESOURCES_AVAILABLE,
            "All resources are available".to_string(),
        )
    };
    Condition::new(manifest_work::AVAILABLE, status, reason, &message, now.clone())
}

fn from_rules(type_: &str, counts: &Counts, now: &Time) -> Condition {
    let status = if type_ == manifest_work::PROGRESSING {
        if counts.true_ > 0 {
            Status::True
        } else if counts.unknown > 0 {
            Status::Unknown
        } else {
            Status::False
        }
    } else if counts.false_ > 0 {
        Status::False
    } else if counts.unknown > 0 || counts.true_ == 0 {
        Status::Unknown
    } else {
        Status::True
    };
    let total = counts.true_ + counts.false_ + counts.unknown;
    let message = if total == 1 && !counts.message.is_empty() {
        counts.message.clone()
    } else {
        format!("Aggregated from {total} manifest conditions")
    };
    Condition::new(
        type_,
        status,
        manifest_work::reasons::CONDITION_RULES_AGGREGATED,
        &message,
        now.clone(),
    )
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use ocm_api::work::v1::ManifestResourceMeta;

    use super::*;

    fn now() -> Time {
        Time(Timestamp::from_second(1_700_000_000).unwrap())
    }

    fn manifest_with(conditions: &[(&str, Status, &str, &str)]) -> ManifestCondition {
        ManifestCondition {
            conditions: conditions
                .iter()
                .map(|(t, s, reason, message)| Condition::new(t, *s, reason, message, now()))
                .collect(),
            resource_meta: ManifestResourceMeta::default(),
            status_feedback: None,
        }
    }

    fn summary(conditions: &[Condition]) -> Vec<(String, String, String, String)> {
        conditions
            .iter()
            .map(|c| {
                assert_eq!(c.observed_generation, Some(3));
                (
                    c.type_.clone(),
                    c.status.clone(),
                    c.reason.clone(),
                    c.message.clone(),
                )
            })
            .collect()
    }

    fn row(t: &str, s: &str, r: &str, m: &str) -> (String, String, String, String) {
        (t.into(), s.into(), r.into(), m.into())
    }

    #[test]
    fn available_without_manifests_is_unknown() {
        assert_eq!(
            summary(&aggregate_manifest_conditions(3, &[], &now())),
            vec![row(
                "Available",
                "Unknown",
                "ResourcesStatusUnknown",
                "cannot get any available resource "
            )]
        );
    }

    #[test]
    fn available_false_beats_unknown_beats_true() {
        let ok = manifest_with(&[("Available", Status::True, "ResourceAvailable", "")]);
        let gone = manifest_with(&[("Available", Status::False, "ResourceNotAvailable", "")]);
        let unknown = manifest_with(&[("Available", Status::Unknown, "FetchingResourceFailed", "")]);
        let all = [ok.clone(), gone, unknown.clone()];
        assert_eq!(
            summary(&aggregate_manifest_conditions(3, &all, &now()))[0].3,
            "1 of 3 resources are not available"
        );
        assert_eq!(
            summary(&aggregate_manifest_conditions(3, &[ok.clone(), unknown], &now()))[0],
            row(
                "Available",
                "Unknown",
                "ResourcesStatusUnknown",
                "1 of 2 resources have unknown status"
            )
        );
        assert_eq!(
            summary(&aggregate_manifest_conditions(3, &[ok.clone(), ok], &now()))[0],
            row(
                "Available",
                "True",
                "ResourcesAvailable",
                "All resources are available"
            )
        );
    }

    #[test]
    fn rule_conditions_aggregate_by_type() {
        let a = manifest_with(&[
            ("Available", Status::True, "ResourceAvailable", "ok"),
            ("Applied", Status::True, "AppliedManifestComplete", ""),
            (
                "Complete",
                Status::True,
                "ConditionRuleEvaluated",
                "Job is finished",
            ),
            ("Progressing", Status::False, "ConditionRuleEvaluated", ""),
        ]);
        let b = manifest_with(&[
            ("Available", Status::True, "ResourceAvailable", ""),
            ("Progressing", Status::True, "ConditionRuleEvaluated", ""),
            ("Degraded", Status::Unknown, "ConditionRuleInternalError", ""),
        ]);
        assert_eq!(
            summary(&aggregate_manifest_conditions(3, &[a, b], &now())),
            vec![
                row(
                    "Available",
                    "True",
                    "ResourcesAvailable",
                    "All resources are available"
                ),
                row("Complete", "True", "ConditionRulesAggregated", "Job is finished"),
                row(
                    "Degraded",
                    "Unknown",
                    "ConditionRulesAggregated",
                    "Aggregated from 1 manifest conditions"
                ),
                row(
                    "Progressing",
                    "True",
                    "ConditionRulesAggregated",
                    "Aggregated from 2 manifest conditions"
                ),
            ]
        );
    }

    #[test]
    fn one_false_rule_condition_wins() {
        let a = manifest_with(&[("Complete", Status::True, "ConditionRuleEvaluated", "")]);
        let b = manifest_with(&[("Complete", Status::False, "ConditionRuleExpressionError", "x")]);
        let conditions = aggregate_manifest_conditions(3, &[a, b], &now());
        assert_eq!(conditions[1].type_, "Complete");
        assert_eq!(conditions[1].status, "False");
    }
}
