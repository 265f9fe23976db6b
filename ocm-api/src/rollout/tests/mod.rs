//! Rollout planner scenarios: the cases upstream's rollout handler is tested with, and the
//! rollout steps of the add-on upgrade integration scenario.
//!
//! | file | scenarios |
//! |---|---|
//! | `all` | the All strategy, the add-on upgrade steps, edge cases |
//! | `progressive` | the Progressive strategy |
//! | `per_group` | the ProgressivePerGroup strategy |
//! | this file | fixtures, and the helpers of the planner |

use k8s_openapi::{
    apimachinery::pkg::util::intstr::IntOrString,
    jiff::{SignedDuration, Timestamp},
};

use super::{
    strategy::{Planner, mandatory_keys, parse_progress_deadline, rollout_size},
    *,
};
use crate::cluster::v1alpha1::{
    MandatoryDecisionGroup, RolloutAll, RolloutConfig, RolloutProgressive, RolloutProgressivePerGroup,
};

use RolloutStatus::{Failed, Progressing, Succeeded, TimeOut, ToApply};

mod all;
mod per_group;
mod progressive;

/// 2022-01-01T00:00:00Z, the "now" of every scenario.
const NOW: i64 = 1_640_995_200;

fn at(offset: i64) -> Timestamp {
    Timestamp::from_second(NOW + offset).unwrap()
}

fn key(name: &str, index: i32) -> GroupKey {
    GroupKey::new(name, index)
}

fn groups(spec: &[(GroupKey, &[&str])]) -> ClusterGroups {
    spec.iter().fold(ClusterGroups::new(), |g, (k, clusters)| {
        g.with_group(k.clone(), clusters.iter().copied())
    })
}

/// A cluster status with its group, status, and status time as an offset from now.
fn status(cluster: &str, group: GroupKey, status: RolloutStatus, since: Option<i64>) -> ClusterRolloutStatus {
    let s = ClusterRolloutStatus::new(cluster, group, status);
    match since {
        Some(offset) => s.since(at(offset)),
        None => s,
    }
}

/// An expected status: like [`status`], plus the recheck time as an offset from now.
fn expect(
    cluster: &str,
    group: GroupKey,
    s: RolloutStatus,
    since: Option<i64>,
    recheck: Option<i64>,
) -> ClusterRolloutStatus {
    ClusterRolloutStatus {
        recheck_time: recheck.map(at),
        ..status(cluster, group, s, since)
    }
}

fn new(cluster: &str, group: GroupKey) -> ClusterRolloutStatus {
    status(cluster, group, ToApply, None)
}

#[derive(Default)]
struct Config {
    deadline: Option<&'static str>,
    max_failures: Option<IntOrString>,
    min_success: Option<&'static str>,
    max_concurrency: Option<IntOrString>,
    mandatory: &'static [&'static str],
}

impl Config {
    fn rollout_config(&self) -> RolloutConfig {
        RolloutConfig {
            max_failures: self.max_failures.clone(),
            min_success_time: self.min_success.map(str::to_owned),
            progress_deadline: self.deadline.map(str::to_owned),
        }
    }

    fn mandatory(&self) -> Option<Vec<MandatoryDecisionGroup>> {
        (!self.mandatory.is_empty()).then(|| {
            self.mandatory
                .iter()
                .map(|name| MandatoryDecisionGroup {
                    group_name: Some((*name).to_owned()),
                    group_index: None,
                })
                .collect()
        })
    }

    fn all(&self) -> RolloutStrategy {
        RolloutStrategy {
            type_: Some(RolloutType::All),
            all: Some(RolloutAll {
                config: self.rollout_config(),
            }),
            ..Default::default()
        }
    }

    fn progressive(&self) -> RolloutStrategy {
        RolloutStrategy {
            type_: Some(RolloutType::Progressive),
            progressive: Some(RolloutProgressive {
                config: self.rollout_config(),
                mandatory_decision_groups: self.mandatory(),
                max_concurrency: self.max_concurrency.clone(),
            }),
            ..Default::default()
        }
    }

    fn per_group(&self) -> RolloutStrategy {
        RolloutStrategy {
            type_: Some(RolloutType::ProgressivePerGroup),
            progressive_per_group: Some(RolloutProgressivePerGroup {
                config: self.rollout_config(),
                mandatory_decision_groups: self.mandatory(),
            }),
            ..Default::default()
        }
    }
}

fn count(n: i32) -> Option<IntOrString> {
    Some(IntOrString::Int(n))
}

fn percent(p: &str) -> Option<IntOrString> {
    Some(IntOrString::String(p.to_owned()))
}

#[derive(Debug, Default, PartialEq)]
struct Want {
    rollout: Vec<ClusterRolloutStatus>,
    timed_out: Vec<ClusterRolloutStatus>,
    removed: Vec<ClusterRolloutStatus>,
    breach: bool,
    recheck_secs: Option<u64>,
}

fn check(strategy: &RolloutStrategy, groups: &ClusterGroups, statuses: &[ClusterRolloutStatus], want: Want) {
    let got = plan(strategy, groups, statuses, at(0)).unwrap();
    assert_eq!(got.clusters_to_rollout, want.rollout, "clusters to roll out");
    assert_eq!(got.clusters_timed_out, want.timed_out, "clusters timed out");
    assert_eq!(got.clusters_removed, want.removed, "clusters removed");
    assert_eq!(got.max_failure_breach, want.breach, "max failure breach");
    assert_eq!(
        got.recheck_after,
        want.recheck_secs.map(std::time::Duration::from_secs),
        "recheck after"
    );
}

fn g1() -> GroupKey {
    key("group1", 0)
}

fn g(index: i32) -> GroupKey {
    key("", index)
}

/// group1 (index 0) with clusters 1–3, group 1 with clusters 4–6.
fn two_groups_of_three() -> ClusterGroups {
    groups(&[
        (g1(), &["cluster1", "cluster2", "cluster3"]),
        (g(1), &["cluster4", "cluster5", "cluster6"]),
    ])
}

/// Like [`two_groups_of_three`], plus group 2 with clusters 7–9.
fn three_groups_of_three() -> ClusterGroups {
    groups(&[
        (g1(), &["cluster1", "cluster2", "cluster3"]),
        (g(1), &["cluster4", "cluster5", "cluster6"]),
        (g(2), &["cluster7", "cluster8", "cluster9"]),
    ])
}

/// group1 with clusters 1–2, group 1 with clusters 3–6.
fn two_and_four() -> ClusterGroups {
    groups(&[
        (g1(), &["cluster1", "cluster2"]),
        (g(1), &["cluster3", "cluster4", "cluster5", "cluster6"]),
    ])
}

/// cluster1 succeeded 60 s ago, cluster2 failed 120 s ago, cluster3 progressing since 60 s ago.
fn done_failed_applying() -> Vec<ClusterRolloutStatus> {
    vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Failed, Some(-120)),
        status("cluster3", g1(), Progressing, Some(-60)),
    ]
}

fn waiting_statuses() -> Vec<ClusterRolloutStatus> {
    let mut statuses = vec![
        status("cluster1", g1(), Progressing, Some(-60)),
        new("cluster2", g1()),
        new("cluster3", g1()),
    ];
    statuses.extend(["cluster4", "cluster5", "cluster6"].map(|c| new(c, g(1))));
    statuses.extend(["cluster7", "cluster8", "cluster9", "cluster10"].map(|c| new(c, g(2))));
    statuses
}

fn group1_of_1_and_3() -> ClusterGroups {
    groups(&[
        (g1(), &["cluster1", "cluster3"]),
        (g(1), &["cluster4", "cluster5", "cluster6"]),
    ])
}

// ---- Helpers ----

#[test]
fn determine_sorts_single_clusters() {
    let groups = ClusterGroups::new();
    let planner = Planner {
        groups: &groups,
        now: at(0),
    };
    let minute = Some(SignedDuration::from_secs(60));
    let zero = Some(SignedDuration::ZERO);
    let run = |s: ClusterRolloutStatus, min_success, deadline| {
        let (mut rollout, mut timed_out) = (Vec::new(), Vec::new());
        let mut s = s;
        planner.determine(&mut s, min_success, deadline, &mut rollout, &mut timed_out);
        (rollout, timed_out)
    };
    let c = |s, since| status("c", GroupKey::default(), s, since);
    let e = |s, since, recheck| expect("c", GroupKey::default(), s, since, recheck);
    assert_eq!(
        run(c(ToApply, None), zero, minute),
        (vec![c(ToApply, None)], vec![])
    );
    assert_eq!(run(c(RolloutStatus::Skip, None), zero, minute), (vec![], vec![]));
    assert_eq!(run(c(Succeeded, None), zero, minute), (vec![], vec![]));
    assert_eq!(
        run(c(Succeeded, None), minute, None),
        (vec![e(Succeeded, None, Some(60))], vec![])
    );
    assert_eq!(run(c(Succeeded, Some(-120)), minute, None), (vec![], vec![]));
    assert_eq!(run(c(TimeOut, None), zero, minute), (vec![], vec![]));
    assert_eq!(
        run(c(Progressing, Some(-30)), zero, minute),
        (vec![e(Progressing, Some(-30), Some(30))], vec![])
    );
    assert_eq!(
        run(c(Failed, Some(-60)), zero, minute),
        (vec![], vec![e(TimeOut, Some(-60), Some(0))])
    );
    assert_eq!(
        run(c(Failed, Some(-600)), zero, None),
        (vec![c(Failed, Some(-600))], vec![])
    );
}

#[test]
fn rollout_sizes() {
    let size = |v: Option<IntOrString>| rollout_size(v.as_ref(), 100, 100);
    assert_eq!(size(count(50)), Ok(50));
    assert_eq!(size(percent("30%")), Ok(30));
    assert_eq!(size(percent("33.3%")), Ok(34));
    assert_eq!(size(count(0)), Ok(100));
    assert_eq!(size(None), Ok(100));
    assert_eq!(size(count(101)), Ok(100));
    assert_eq!(size(count(-1)), Ok(100));
    assert_eq!(size(percent("200%")), Ok(100));
    assert_eq!(
        size(percent("invalid")),
        Err("'invalid' is an invalid maximum threshold value: string is not a percentage".to_owned())
    );
    assert!(size(percent("%")).is_err());
    assert_eq!(rollout_size(percent("50%").as_ref(), 3, 0), Ok(2));
}

#[test]
fn progress_deadlines() {
    assert_eq!(
        parse_progress_deadline(Some("2h")),
        Ok(Some(SignedDuration::from_hours(2)))
    );
    assert_eq!(
        parse_progress_deadline(Some("30m")),
        Ok(Some(SignedDuration::from_mins(30)))
    );
    assert_eq!(
        parse_progress_deadline(Some("10s")),
        Ok(Some(SignedDuration::from_secs(10)))
    );
    assert_eq!(
        parse_progress_deadline(Some("1h30m")),
        Ok(Some(SignedDuration::from_mins(90)))
    );
    for forever in [None, Some(""), Some("None"), Some("2562047h47m16.854775807s")] {
        assert_eq!(parse_progress_deadline(forever), Ok(None), "{forever:?}");
    }
    for bad in ["2d", "0", "2d0s", "10g", "1.5h", "h", "xNone", "90sx"] {
        assert!(parse_progress_deadline(Some(bad)).is_err(), "{bad}");
    }
}

#[test]
fn mandatory_group_keys() {
    let group = |name: Option<&str>, index: Option<i32>| MandatoryDecisionGroup {
        group_name: name.map(str::to_owned),
        group_index: index,
    };
    assert_eq!(
        mandatory_keys(Some(&[
            group(Some("group1"), Some(1)),
            group(Some("group2"), Some(2))
        ])),
        vec![key("group1", 0), key("group2", 0)]
    );
    assert_eq!(
        mandatory_keys(Some(&[group(None, Some(1)), group(Some(""), Some(2))])),
        vec![g(1), g(2)]
    );
    assert_eq!(mandatory_keys(Some(&[group(None, None)])), vec![g(0)]);
    assert_eq!(mandatory_keys(Some(&[])), vec![]);
    assert_eq!(mandatory_keys(None), vec![]);
}

#[test]
fn cluster_groups_build_from_decisions() {
    let groups: ClusterGroups = [("b", g(1)), ("a", g(0)), ("c", g(1))]
        .into_iter()
        .collect::<ClusterGroups>();
    assert_eq!(groups.clusters().into_iter().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert_eq!(groups.group_of("c"), Some(&g(1)));
    assert_eq!(groups.group_of("z"), None);
    assert_eq!(groups.groups().map(|(k, _)| k.index).collect::<Vec<_>>(), [0, 1]);
}
