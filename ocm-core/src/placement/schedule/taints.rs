//! The TaintToleration filter: a cluster passes when each of its taints is tolerated.
//!
//! - `PreferNoSelect` taints are always tolerated;
//! - `NoSelectIfNew` taints are tolerated for clusters already in the placement's decisions;
//! - otherwise the first toleration that matches the taint (effect empty or equal, key empty or
//!   equal, `Exists` or an equal value) and has not expired tolerates it; a toleration with
//!   `tolerationSeconds` expires at the taint's `timeAdded` plus that many seconds.
//!
//! The placement is scheduled again when the earliest such expiry among the taints of its current
//! decisions' clusters comes ([`requeue_after`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use ocm_api::cluster::v1::{ManagedCluster, Taint, TaintEffect};
use ocm_api::cluster::v1beta1::{Placement, Toleration};

use super::{Code, Status, cluster_name};

/// The name of the filter, as upstream reports it.
pub const NAME: &str = "TaintToleration";

/// The toleration operator that ignores the value.
const EXISTS: &str = "Exists";
/// The toleration operator comparing values (also when empty).
const EQUAL: &str = "Equal";

/// Checks the tolerations: an empty key needs `Exists`, and `Exists` takes no value.
///
/// # Errors
/// A Misconfigured status with upstream's message.
pub fn validate(tolerations: &[Toleration]) -> Result<(), Status> {
    for t in tolerations {
        let key_empty = t.key.as_deref().unwrap_or_default().is_empty();
        let exists = t.operator.as_deref() == Some(EXISTS);
        if key_empty && !exists {
            return Err(Status::new(
                NAME,
                Code::Misconfigured,
                "If the key is empty, operator must be Exists.",
            ));
        }
        if exists && !t.value.as_deref().unwrap_or_default().is_empty() {
            return Err(Status::new(
                NAME,
                Code::Misconfigured,
                "If the operator is Exists, the value should be empty.",
            ));
        }
    }
    Ok(())
}

/// When `toleration` tolerates `taint` until, if it does at `now`: `Some(None)` for ever,
/// `Some(Some(t))` until `t`, `None` when it does not.
fn tolerates(taint: &Taint, toleration: &Toleration, now: Timestamp) -> Option<Option<Timestamp>> {
    if let Some(effect) = toleration.effect
        && effect != taint.effect
    {
        return None;
    }
    if let Some(key) = toleration.key.as_deref()
        && !key.is_empty()
        && key != taint.key
    {
        return None;
    }
    let matched = match toleration.operator.as_deref().unwrap_or_default() {
        "" | EQUAL => {
            toleration.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
        }
        EXISTS => true,
        _ => false,
    };
    if !matched {
        return None;
    }
    let Some(seconds) = toleration.toleration_seconds else {
        return Some(None);
    };
    // A taint without timeAdded counts from the zero time, as upstream: long expired.
    let added = taint.time_added.as_ref().map_or(Timestamp::MIN, |t| t.0);
    let until = added
        .checked_add(SignedDuration::from_secs(seconds))
        .unwrap_or(Timestamp::MIN);
    (now < until).then_some(Some(until))
}

/// Whether `taint` is tolerated, and until when.
fn taint_tolerated(
    taint: &Taint,
    tolerations: &[Toleration],
    in_decisions: bool,
    now: Timestamp,
) -> Option<Option<Timestamp>> {
    if taint.effect == TaintEffect::PreferNoSelect {
        return Some(None);
    }
    if taint.effect == TaintEffect::NoSelectIfNew && in_decisions {
        return Some(None);
    }
    tolerations.iter().find_map(|t| tolerates(taint, t, now))
}

/// Whether every taint of `cluster` is tolerated, and the earliest expiry among them (`None`
/// inside when none expires).
#[must_use]
pub fn cluster_tolerated(
    cluster: &ManagedCluster,
    tolerations: &[Toleration],
    in_decisions: bool,
    now: Timestamp,
) -> Option<Option<Timestamp>> {
    let mut earliest: Option<Timestamp> = None;
    for taint in cluster.spec.taints.iter().flatten() {
        let until = taint_tolerated(taint, tolerations, in_decisions, now)?;
        earliest = earlier(earliest, until);
    }
    Some(earliest)
}

/// The earlier of two optional expiries; an absent one (no expiry) is ignored.
fn earlier(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The clusters of `clusters` whose taints `placement` tolerates; `existing` are the clusters of
/// its current decisions.
///
/// # Errors
/// A Misconfigured status for invalid tolerations (checked only when there are clusters).
pub fn filter(
    placement: &Placement,
    clusters: Vec<Arc<ManagedCluster>>,
    existing: &HashSet<&str>,
    now: Timestamp,
) -> Result<Vec<Arc<ManagedCluster>>, Status> {
    if clusters.is_empty() {
        return Ok(clusters);
    }
    let tolerations = placement.spec.tolerations.as_deref().unwrap_or_default();
    validate(tolerations)?;
    Ok(clusters
        .into_iter()
        .filter(|c| cluster_tolerated(c, tolerations, existing.contains(cluster_name(c)), now).is_some())
        .collect())
}

/// How long until a toleration of a cluster in the current decisions (`existing`) expires, if one
/// does: the earliest expiry over those clusters that are still tolerated.
#[must_use]
pub fn requeue_after(
    placement: &Placement,
    clusters: &[Arc<ManagedCluster>],
    existing: &HashSet<&str>,
    now: Timestamp,
) -> Option<Duration> {
    if existing.is_empty() {
        return None;
    }
    let tolerations = placement.spec.tolerations.as_deref().unwrap_or_default();
    let by_name: HashMap<&str, &Arc<ManagedCluster>> = clusters
        .iter()
        .filter(|c| existing.contains(cluster_name(c)))
        .map(|c| (cluster_name(c), c))
        .collect();
    let mut earliest: Option<Timestamp> = None;
    for cluster in by_name.values() {
        if let Some(until) = cluster_tolerated(cluster, tolerations, true, now) {
            earliest = earlier(earliest, until);
        }
    }
    let until = earliest?;
    let wait = now.duration_until(until);
    Some(Duration::try_from(wait).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::schedule::testing::*;

    fn toleration(
        key: &str,
        op: &str,
        value: &str,
        effect: Option<TaintEffect>,
        seconds: Option<i64>,
    ) -> Toleration {
        Toleration {
            effect,
            key: (!key.is_empty()).then(|| key.to_string()),
            operator: (!op.is_empty()).then(|| op.to_string()),
            toleration_seconds: seconds,
            value: (!value.is_empty()).then(|| value.to_string()),
        }
    }

    fn with(tolerations: Vec<Toleration>) -> Placement {
        let mut p = placement("ns", "p");
        p.spec.tolerations = Some(tolerations);
        p
    }

    fn run(p: &Placement, clusters: &[ManagedCluster], existing: &[&str], now: Timestamp) -> Vec<String> {
        let clusters: Vec<_> = clusters.iter().cloned().map(Arc::new).collect();
        let existing: HashSet<&str> = existing.iter().copied().collect();
        names(&filter(p, clusters, &existing, now).unwrap())
    }

    #[test]
    fn invalid_tolerations_are_misconfigured() {
        let err = validate(&[toleration("", "Equal", "", None, None)]).unwrap_err();
        assert_eq!(err.message, "If the key is empty, operator must be Exists.");
        let err = validate(&[toleration("k", "Exists", "v", None, None)]).unwrap_err();
        assert_eq!(
            err.message,
            "If the operator is Exists, the value should be empty."
        );
        assert_eq!(err.code, Code::Misconfigured);
        assert!(validate(&[toleration("", "Exists", "", None, None)]).is_ok());
    }

    #[test]
    fn no_select_taints_need_a_matching_toleration() {
        let clusters = [
            cluster("c1").taint("gpu", "true", TaintEffect::NoSelect, now()),
            cluster("c2").taint("gpu", "false", TaintEffect::NoSelect, now()),
            cluster("c3").taint("zone", "x", TaintEffect::NoSelect, now()),
            cluster("c4"),
        ];
        assert_eq!(run(&placement("ns", "p"), &clusters, &[], now()), ["c4"]);
        let equal = with(vec![toleration("gpu", "Equal", "true", None, None)]);
        assert_eq!(run(&equal, &clusters, &[], now()), ["c1", "c4"]);
        let default_op = with(vec![toleration("gpu", "", "true", None, None)]);
        assert_eq!(run(&default_op, &clusters, &[], now()), ["c1", "c4"]);
        let exists = with(vec![toleration("gpu", "Exists", "", None, None)]);
        assert_eq!(run(&exists, &clusters, &[], now()), ["c1", "c2", "c4"]);
        let everything = with(vec![toleration("", "Exists", "", None, None)]);
        assert_eq!(run(&everything, &clusters, &[], now()), ["c1", "c2", "c3", "c4"]);
    }

    #[test]
    fn effects_must_match_when_given() {
        let clusters = [
            cluster("c1").taint("k", "v", TaintEffect::NoSelect, now()),
            cluster("c2").taint("k", "v", TaintEffect::NoSelectIfNew, now()),
            cluster("c3").taint("k", "v", TaintEffect::PreferNoSelect, now()),
        ];
        let p = with(vec![toleration(
            "k",
            "Equal",
            "v",
            Some(TaintEffect::NoSelectIfNew),
            None,
        )]);
        assert_eq!(run(&p, &clusters, &[], now()), ["c2", "c3"]);
        // PreferNoSelect is always tolerated; NoSelectIfNew is tolerated for clusters already decided.
        assert_eq!(run(&placement("ns", "p"), &clusters, &[], now()), ["c3"]);
        assert_eq!(
            run(&placement("ns", "p"), &clusters, &["c2"], now()),
            ["c2", "c3"]
        );
        assert_eq!(run(&placement("ns", "p"), &clusters, &["c1"], now()), ["c3"]);
    }

    #[test]
    fn toleration_seconds_expire_from_the_time_added() {
        let clusters = [
            cluster("c1").taint("k", "", TaintEffect::NoSelect, at(-10)),
            cluster("c2").taint("k", "", TaintEffect::NoSelect, at(-100)),
        ];
        let p = with(vec![toleration("k", "Exists", "", None, Some(60))]);
        assert_eq!(run(&p, &clusters, &[], now()), ["c1"]);
        assert_eq!(run(&p, &clusters, &[], at(50)), Vec::<String>::new());
        // An expired toleration gives way to a later one.
        let p = with(vec![
            toleration("k", "Exists", "", None, Some(60)),
            toleration("k", "Exists", "", None, None),
        ]);
        assert_eq!(run(&p, &clusters, &[], now()), ["c1", "c2"]);
    }

    #[test]
    fn requeue_at_the_earliest_expiry_of_decided_clusters() {
        let clusters: Vec<_> = [
            cluster("c1").taint("k", "", TaintEffect::NoSelect, at(-10)),
            cluster("c2").taint("k", "", TaintEffect::NoSelect, at(-30)),
            cluster("c3").taint("k", "", TaintEffect::NoSelect, at(-59)),
            cluster("c4"),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let p = with(vec![toleration("k", "Exists", "", None, Some(60))]);
        let existing: HashSet<&str> = ["c1", "c2"].into_iter().collect();
        assert_eq!(
            requeue_after(&p, &clusters, &existing, now()),
            Some(Duration::from_secs(30))
        );
        let existing: HashSet<&str> = ["c4"].into_iter().collect();
        assert_eq!(requeue_after(&p, &clusters, &existing, now()), None);
        // Only clusters in the decisions count.
        assert_eq!(requeue_after(&p, &clusters, &HashSet::new(), now()), None);
        let existing: HashSet<&str> = ["c3"].into_iter().collect();
        assert_eq!(
            requeue_after(&p, &clusters, &existing, now()),
            Some(Duration::from_secs(1))
        );
    }

    #[test]
    fn taints_tolerated_for_ever_do_not_hide_an_expiring_one() {
        let c = cluster("c1")
            .taint("a", "", TaintEffect::NoSelect, at(-10))
            .taint("b", "", TaintEffect::PreferNoSelect, at(-10))
            .taint("c", "", TaintEffect::NoSelect, at(-20));
        let p = [
            toleration("a", "Exists", "", None, Some(60)),
            toleration("c", "Exists", "", None, None),
        ];
        assert_eq!(cluster_tolerated(&c, &p, false, now()), Some(Some(at(50))));
        let c = cluster("c1").taint("c", "", TaintEffect::NoSelect, at(-10));
        assert_eq!(cluster_tolerated(&c, &p, false, now()), Some(None));
        let c = cluster("c1").taint("z", "", TaintEffect::NoSelect, at(-10));
        assert_eq!(cluster_tolerated(&c, &p, false, now()), None);
    }
}
