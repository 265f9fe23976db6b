//! The placement's conditions: `PlacementMisconfigured` from the scheduling status and
//! `PlacementSatisfied` from what was found, with upstream's reasons and messages.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use ocm_api::conditions::Status as ConditionStatus;
use ocm_api::meta::Condition;
use ocm_api::names::conditions::cluster::placement::{MISCONFIGURED, SATISFIED, reasons};

use super::{Code, Status};

/// `PlacementMisconfigured`: True with `<plugin>:<message>` when the status is Misconfigured.
#[must_use]
pub fn misconfigured(status: &Status, now: Timestamp) -> Condition {
    if status.code == Code::Misconfigured {
        Condition::new(
            MISCONFIGURED,
            ConditionStatus::True,
            reasons::MISCONFIGURED,
            &format!("{}:{}", status.plugin, status.message),
            Time(now),
        )
    } else {
        Condition::new(
            MISCONFIGURED,
            ConditionStatus::False,
            reasons::SUCCEED_CONFIGURED,
            "Placement configurations check pass",
            Time(now),
        )
    }
}

/// `PlacementSatisfied`, from the first of: no valid binding, no eligible set, no candidate
/// cluster, an Error status, nothing chosen, everything scheduled, some decisions unscheduled.
#[must_use]
#[allow(clippy::too_many_arguments)]
pub fn satisfied(
    sets_in_spec: &[String],
    eligible_sets: &[String],
    bindings: usize,
    candidates: usize,
    selected: usize,
    unscheduled: i64,
    status: &Status,
    now: Timestamp,
) -> Condition {
    let (status, reason, message) = if bindings == 0 {
        (
            ConditionStatus::False,
            reasons::NO_MANAGED_CLUSTER_SET_BINDINGS,
            "No valid ManagedClusterSetBindings found in placement namespace".to_string(),
        )
    } else if eligible_sets.is_empty() {
        (
            ConditionStatus::False,
            reasons::NO_INTERSECTION,
            format!(
                "None of ManagedClusterSets [{}] is bound to placement namespace",
                sets_in_spec.join(",")
            ),
        )
    } else if candidates == 0 {
        (
            ConditionStatus::False,
            reasons::ALL_MANAGED_CLUSTER_SETS_EMPTY,
            format!(
                "All ManagedClusterSets [{}] have no member ManagedCluster",
                eligible_sets.join(",")
            ),
        )
    } else if status.code == Code::Error {
        (
            ConditionStatus::False,
            reasons::NOT_ALL_DECISIONS_SCHEDULED,
            status.message.clone(),
        )
    } else if selected == 0 {
        (
            ConditionStatus::False,
            reasons::NO_MANAGED_CLUSTER_MATCHED,
            "No ManagedCluster matches any of the cluster predicate".to_string(),
        )
    } else if unscheduled == 0 {
        (
            ConditionStatus::True,
            reasons::ALL_DECISIONS_SCHEDULED,
            "All cluster decisions scheduled".to_string(),
        )
    } else {
        (
            ConditionStatus::False,
            reasons::NOT_ALL_DECISIONS_SCHEDULED,
            format!("{unscheduled} cluster decisions unscheduled"),
        )
    };
    Condition::new(SATISFIED, status, reason, &message, Time(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::schedule::testing::now;

    fn reason(c: &Condition) -> (&str, &str, &str) {
        (c.status.as_str(), c.reason.as_str(), c.message.as_str())
    }

    #[test]
    fn misconfigured_names_the_plugin() {
        let c = misconfigured(&Status::new("TaintToleration", Code::Misconfigured, "bad"), now());
        assert_eq!(reason(&c), ("True", "Misconfigured", "TaintToleration:bad"));
        let c = misconfigured(&Status::new("AddOn/a/b", Code::Warning, "expired"), now());
        assert_eq!(
            reason(&c),
            (
                "False",
                "Succeedconfigured",
                "Placement configurations check pass"
            )
        );
    }

    #[test]
    fn satisfied_reasons_in_order() {
        let ok = Status::default();
        let sets = |s: &[&str]| s.iter().map(|x| (*x).to_string()).collect::<Vec<_>>();
        let c = satisfied(&[], &[], 0, 0, 0, 0, &ok, now());
        assert_eq!(reason(&c).1, "NoManagedClusterSetBindings");
        let c = satisfied(&sets(&["a", "b"]), &[], 1, 0, 0, 0, &ok, now());
        assert_eq!(
            reason(&c),
            (
                "False",
                "NoIntersection",
                "None of ManagedClusterSets [a,b] is bound to placement namespace"
            )
        );
        let c = satisfied(&[], &sets(&["a", "b"]), 2, 0, 0, 0, &ok, now());
        assert_eq!(
            reason(&c),
            (
                "False",
                "AllManagedClusterSetsEmpty",
                "All ManagedClusterSets [a,b] have no member ManagedCluster"
            )
        );
        let err = Status::new("Balance", Code::Error, "boom");
        let c = satisfied(&[], &sets(&["a"]), 1, 3, 0, 0, &err, now());
        assert_eq!(reason(&c), ("False", "NotAllDecisionsScheduled", "boom"));
        let c = satisfied(&[], &sets(&["a"]), 1, 3, 0, 2, &ok, now());
        assert_eq!(reason(&c).1, "NoManagedClusterMatched");
        let c = satisfied(&[], &sets(&["a"]), 1, 3, 3, 0, &ok, now());
        assert_eq!(
            reason(&c),
            ("True", "AllDecisionsScheduled", "All cluster decisions scheduled")
        );
        let c = satisfied(&[], &sets(&["a"]), 1, 3, 3, 7, &ok, now());
        assert_eq!(
            reason(&c),
            (
                "False",
                "NotAllDecisionsScheduled",
                "7 cluster decisions unscheduled"
            )
        );
    }
}
