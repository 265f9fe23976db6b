//! The status of a ManifestWorkReplicaSet: its conditions, `placementSummary[]` and `summary`,
//! computed as upstream computes them.
//!
//! | condition | True | False |
//! |---|---|---|
//! | `PlacementVerified` | `AsExpected`: works exist | `PlacementDecisionNotFound` (a Placement is missing), `PlacementDecisionEmpty` (no work), `NotAsExpected` (a rollout strategy is invalid) |
//! | `PlacementRolledOut` | `Complete`: every selected cluster succeeded | `Progressing` |
//! | `ManifestworkApplied` | `AsExpected`: every work Available, none Progressing or Degraded | `Processing` (some Progressing, none Degraded), `NotAsExpected`, `PlacementDecisionEmpty`, `InvalidManifestWorkName` |
//!
//! Counts: `total` is the number of works carrying the current template (after this
//! reconcile's rollout step), `applied` / `available` / `progressing` / `degraded` the works
//! with that condition True; `desiredTotal` and `updated` stay 0, as upstream leaves them.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use ocm_api::conditions::{self, Status};
use ocm_api::meta::Condition;
use ocm_api::names::conditions::work::manifest_work_replica_set::{
    MANIFESTWORK_APPLIED, PLACEMENT_ROLLED_OUT, PLACEMENT_VERIFIED, reasons,
};
use ocm_api::work::v1::{ManifestWork, ManifestWorkSpec};
use ocm_api::work::v1alpha1::{
    ManifestWorkReplicaSetStatus, ManifestWorkReplicaSetSummary, PlacementSummary,
};

use super::works::{Counts, count};

/// The longest label value.
const MAX_LABEL_VALUE: usize = 63;

/// A condition that is True only with the reason `true_reason`.
fn condition(type_: &str, reason: &str, true_reason: &str, message: &str, now: Time) -> Condition {
    Condition::new(type_, Status::from(reason == true_reason), reason, message, now)
}

/// Sets `condition` in `status`.
pub fn set(status: &mut ManifestWorkReplicaSetStatus, condition: Condition) {
    conditions::set(status.conditions.get_or_insert_with(Vec::new), condition);
}

/// `PlacementVerified` with `reason` (True for `AsExpected`).
#[must_use]
pub fn placement_verified(reason: &str, now: Time) -> Condition {
    condition(PLACEMENT_VERIFIED, reason, reasons::AS_EXPECTED, "", now)
}

/// `PlacementRolledOut`: True `Complete` when `complete`, else False `Progressing`.
#[must_use]
pub fn rolled_out(complete: bool, now: Time) -> Condition {
    let reason = if complete {
        reasons::COMPLETE
    } else {
        reasons::PROGRESSING
    };
    condition(PLACEMENT_ROLLED_OUT, reason, reasons::COMPLETE, "", now)
}

/// `ManifestworkApplied` with `reason` (True for `AsExpected`).
#[must_use]
pub fn manifestwork_applied(reason: &str, message: &str, now: Time) -> Condition {
    condition(MANIFESTWORK_APPLIED, reason, reasons::AS_EXPECTED, message, now)
}

/// Why `key` (`<namespace>.<name>`) cannot be the owner label of the works, if it cannot: the
/// message of `ManifestworkApplied` False `InvalidManifestWorkName`.
#[must_use]
pub fn invalid_owner_key(key: &str) -> Option<String> {
    let mut problems = Vec::new();
    if key.len() > MAX_LABEL_VALUE {
        problems.push(format!("must be no more than {MAX_LABEL_VALUE} characters"));
    }
    let bytes = key.as_bytes();
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    let well_formed = bytes.is_empty()
        || (bytes.iter().all(allowed)
            && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric));
    if !well_formed {
        problems.push(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', \
             and must start and end with an alphanumeric character"
                .to_owned(),
        );
    }
    (!problems.is_empty()).then(|| {
        format!(
            "ManifestWork owner reference {key:?} (namespace.name) is not a valid label value: {}; recreate the \
             ManifestWorkReplicaSet with a shorter namespace and/or name so the combined length is at most 63 characters",
            problems.join("; ")
        )
    })
}

/// A summary with every count written (upstream writes zeros too).
#[must_use]
pub fn summary(total: usize, counts: Counts) -> ManifestWorkReplicaSetSummary {
    let n = |v: usize| Some(i64::try_from(v).unwrap_or(i64::MAX));
    ManifestWorkReplicaSetSummary {
        applied: n(counts.applied),
        available: n(counts.available),
        degraded: n(counts.degraded),
        desired_total: Some(0),
        progressing: n(counts.progressing),
        total: n(total),
        updated: Some(0),
    }
}

/// `availableDecisionGroups` of a Placement summary: `<groups> (<works> / <selected> clusters applied)`.
#[must_use]
pub fn available_decision_groups(groups: usize, works: usize, selected: i32) -> String {
    format!("{groups} ({works} / {selected} clusters applied)")
}

/// The total of a summary.
fn total_of(summary: Option<&ManifestWorkReplicaSetSummary>) -> i64 {
    summary.and_then(|s| s.total).unwrap_or_default()
}

/// Fills in the condition counts of every Placement summary and of the overall summary from
/// the works (`works_of(placement)`), and sets `ManifestworkApplied`.
pub fn count_works<'a>(
    status: &mut ManifestWorkReplicaSetStatus,
    works_of: impl Fn(&str) -> &'a [Arc<ManifestWork>],
    template: &ManifestWorkSpec,
    now: &Time,
) {
    let total = total_of(status.summary.as_ref());
    if total == 0 {
        let empty = status
            .conditions
            .as_deref()
            .and_then(|c| conditions::find(c, PLACEMENT_VERIFIED))
            .is_some_and(|c| c.reason == reasons::PLACEMENT_DECISION_EMPTY);
        let reason = if empty {
            reasons::PLACEMENT_DECISION_EMPTY
        } else {
            reasons::NOT_AS_EXPECTED
        };
        set(status, manifestwork_applied(reason, "", now.clone()));
        return;
    }
    let mut all = Counts::default();
    for placement in status.placement_summary.iter_mut().flatten() {
        let counts = count(works_of(placement.name.as_deref().unwrap_or_default()), template);
        let placement_total = usize::try_from(total_of(placement.summary.as_ref())).unwrap_or_default();
        placement.summary = Some(summary(placement_total, counts));
        all += counts;
    }
    status.summary = Some(summary(usize::try_from(total).unwrap_or_default(), all));
    let total = usize::try_from(total).unwrap_or_default();
    let reason = if all.available == total && all.progressing == 0 && all.degraded == 0 {
        reasons::AS_EXPECTED
    } else if all.progressing > 0 && all.degraded == 0 {
        reasons::PROCESSING
    } else {
        reasons::NOT_AS_EXPECTED
    };
    set(status, manifestwork_applied(reason, "", now.clone()));
}

/// The Placement summary of `name` after the rollout step.
#[must_use]
pub fn placement_summary(name: &str, groups: usize, works: usize, selected: i32) -> PlacementSummary {
    PlacementSummary {
        available_decision_groups: Some(available_decision_groups(groups, works, selected)),
        name: Some(name.to_owned()),
        summary: Some(summary(works, Counts::default())),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use ocm_api::work::v1::ManifestWorkStatus;

    use super::*;

    fn now() -> Time {
        Time(Timestamp::from_second(1000).unwrap_or_default())
    }

    fn work(conditions: &[(&str, Status)]) -> Arc<ManifestWork> {
        let mut w = ManifestWork::new("w", ManifestWorkSpec::default());
        w.status = Some(ManifestWorkStatus {
            conditions: Some(
                conditions
                    .iter()
                    .map(|(t, s)| Condition::new(t, *s, "Test", "", now()))
                    .collect(),
            ),
            ..ManifestWorkStatus::default()
        });
        Arc::new(w)
    }

    fn applied_reason(status: &ManifestWorkReplicaSetStatus) -> (String, String) {
        let c = conditions::find(
            status.conditions.as_deref().unwrap_or_default(),
            MANIFESTWORK_APPLIED,
        );
        c.map(|c| (c.status.clone(), c.reason.clone()))
            .unwrap_or_default()
    }

    fn status_with(works: usize) -> ManifestWorkReplicaSetStatus {
        ManifestWorkReplicaSetStatus {
            conditions: None,
            placement_summary: Some(vec![placement_summary("p", 1, works, 2)]),
            summary: Some(summary(works, Counts::default())),
        }
    }

    #[test]
    fn counts_and_manifestwork_applied_follow_the_works() {
        let template = ManifestWorkSpec::default();
        let done = [
            work(&[
                ("Applied", Status::True),
                ("Available", Status::True),
                ("Progressing", Status::False),
            ]),
            work(&[("Applied", Status::True), ("Available", Status::True)]),
        ];
        let mut status = status_with(2);
        count_works(&mut status, |_| &done, &template, &now());
        assert_eq!(applied_reason(&status), ("True".into(), "AsExpected".into()));
        let s = status.summary.clone().unwrap_or_default();
        assert_eq!(
            (s.total, s.applied, s.available, s.progressing, s.degraded),
            (Some(2), Some(2), Some(2), Some(0), Some(0))
        );
        assert_eq!(status.placement_summary.unwrap_or_default()[0].summary, Some(s));

        let progressing = [work(&[("Applied", Status::True), ("Progressing", Status::True)])];
        let mut status = status_with(1);
        count_works(&mut status, |_| &progressing, &template, &now());
        assert_eq!(applied_reason(&status), ("False".into(), "Processing".into()));

        let degraded = [work(&[("Progressing", Status::True), ("Degraded", Status::True)])];
        let mut status = status_with(1);
        count_works(&mut status, |_| &degraded, &template, &now());
        assert_eq!(applied_reason(&status), ("False".into(), "NotAsExpected".into()));
    }

    #[test]
    fn no_works_reports_the_empty_decision() {
        let mut status = status_with(0);
        set(
            &mut status,
            placement_verified(reasons::PLACEMENT_DECISION_EMPTY, now()),
        );
        count_works(&mut status, |_| &[], &ManifestWorkSpec::default(), &now());
        assert_eq!(
            applied_reason(&status),
            ("False".into(), "PlacementDecisionEmpty".into())
        );
        let mut status = status_with(0);
        count_works(&mut status, |_| &[], &ManifestWorkSpec::default(), &now());
        assert_eq!(applied_reason(&status), ("False".into(), "NotAsExpected".into()));
    }

    #[test]
    fn owner_keys_must_be_label_values() {
        assert_eq!(invalid_owner_key("ns.set"), None);
        let long = format!("ns.{}", "a".repeat(70));
        assert!(invalid_owner_key(&long).is_some_and(|m| m.contains("no more than 63")));
        assert!(invalid_owner_key("ns.set-").is_some());
    }

    #[test]
    fn decision_group_progress_reads_as_upstream() {
        assert_eq!(available_decision_groups(2, 3, 5), "2 (3 / 5 clusters applied)");
    }
}
