//! The All strategy, the rollout steps of the add-on upgrade scenario, and edge cases of
//! upstream behaviour.

use super::*;

// ---- All ----

#[test]
fn all_without_workloads_rolls_out_everything() {
    let config = Config {
        deadline: Some("90s"),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![
            new("cluster1", g1()),
            new("cluster2", g1()),
            new("cluster3", g(1)),
            new("cluster4", g(1)),
            new("cluster5", g(1)),
            new("cluster6", g(1)),
        ],
        ..Default::default()
    };
    check(&config.all(), &two_and_four(), &[], want);
}

fn all_statuses() -> Vec<ClusterRolloutStatus> {
    vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Failed, Some(-120)),
        status("cluster3", g(1), Progressing, Some(-120)),
        status("cluster4", g(1), Failed, Some(-60)),
        status("cluster5", g(1), Progressing, Some(-60)),
    ]
}

#[test]
fn all_times_out_clusters_past_the_deadline() {
    let config = Config {
        deadline: Some("90s"),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![
            expect("cluster4", g(1), Failed, Some(-60), Some(30)),
            expect("cluster5", g(1), Progressing, Some(-60), Some(30)),
            new("cluster6", g(1)),
        ],
        timed_out: vec![
            expect("cluster2", g1(), TimeOut, Some(-120), Some(-30)),
            expect("cluster3", g(1), TimeOut, Some(-120), Some(-30)),
        ],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.all(), &two_and_four(), &all_statuses(), want);
}

#[test]
fn all_rolls_out_added_clusters() {
    let config = Config {
        deadline: Some("90s"),
        ..Default::default()
    };
    let groups = groups(&[
        (g1(), &["cluster1", "cluster2", "cluster7"]),
        (g(1), &["cluster3", "cluster4", "cluster5", "cluster6"]),
    ]);
    let want = Want {
        rollout: vec![
            expect("cluster4", g(1), Failed, Some(-60), Some(30)),
            expect("cluster5", g(1), Progressing, Some(-60), Some(30)),
            new("cluster6", g(1)),
            new("cluster7", g1()),
        ],
        timed_out: vec![
            expect("cluster2", g1(), TimeOut, Some(-120), Some(-30)),
            expect("cluster3", g(1), TimeOut, Some(-120), Some(-30)),
        ],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.all(), &groups, &all_statuses(), want);
}

#[test]
fn all_reports_removed_clusters_in_input_order() {
    let config = Config {
        deadline: Some("90s"),
        ..Default::default()
    };
    let groups = groups(&[(g1(), &["cluster1"]), (g(1), &["cluster3", "cluster5"])]);
    let want = Want {
        rollout: vec![expect("cluster5", g(1), Progressing, Some(-60), Some(30))],
        timed_out: vec![expect("cluster3", g(1), TimeOut, Some(-120), Some(-30))],
        removed: vec![
            status("cluster2", g1(), Failed, Some(-120)),
            status("cluster4", g(1), Failed, Some(-60)),
        ],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.all(), &groups, &all_statuses(), want);
}

#[test]
fn missing_type_means_all() {
    let strategy = RolloutStrategy::default();
    let got = plan(&strategy, &two_and_four(), &[], at(0)).unwrap();
    assert_eq!(got.clusters_to_rollout.len(), 6);
}

// ---- The add-on upgrade scenario (4 clusters in 2 decision groups) ----

fn upgrade_groups() -> ClusterGroups {
    groups(&[
        (g(0), &["cluster0", "cluster1"]),
        (g(1), &["cluster2", "cluster3"]),
    ])
}

#[test]
fn upgrade_progressive_times_out_then_stops() {
    let config = Config {
        deadline: Some("5s"),
        max_failures: count(1),
        max_concurrency: count(2),
        ..Default::default()
    };
    let statuses = vec![
        status("cluster0", g(0), Progressing, Some(0)),
        status("cluster1", g(0), Progressing, Some(0)),
        new("cluster2", g(1)),
        new("cluster3", g(1)),
    ];
    let strategy = config.progressive();
    // Within the deadline the first two clusters are in flight and nothing else starts.
    let early = plan(&strategy, &upgrade_groups(), &statuses, at(4)).unwrap();
    let names: Vec<_> = early
        .clusters_to_rollout
        .iter()
        .map(|c| c.cluster_name.as_str())
        .collect();
    assert_eq!(names, ["cluster0", "cluster1"]);
    assert!(early.clusters_timed_out.is_empty());
    assert_eq!(early.recheck_after, Some(std::time::Duration::from_secs(1)));
    // Past it both time out: two failures exceed maxFailures 1 and the rollout stops.
    let late = plan(&strategy, &upgrade_groups(), &statuses, at(5)).unwrap();
    assert!(late.clusters_to_rollout.is_empty());
    assert_eq!(late.clusters_timed_out.len(), 2);
    assert!(late.max_failure_breach);
    assert_eq!(late.recheck_after, None);
}

#[test]
fn upgrade_per_group_waits_for_the_soak_time() {
    let config = Config {
        min_success: Some("3s"),
        ..Default::default()
    };
    let statuses = vec![
        status("cluster0", g(0), Succeeded, Some(0)),
        status("cluster1", g(0), Succeeded, Some(0)),
        new("cluster2", g(1)),
        new("cluster3", g(1)),
    ];
    let strategy = config.per_group();
    let soaking = plan(&strategy, &upgrade_groups(), &statuses, at(1)).unwrap();
    let names: Vec<_> = soaking
        .clusters_to_rollout
        .iter()
        .map(|c| c.cluster_name.as_str())
        .collect();
    assert_eq!(names, ["cluster0", "cluster1"]);
    assert_eq!(soaking.recheck_after, Some(std::time::Duration::from_secs(2)));
    let soaked = plan(&strategy, &upgrade_groups(), &statuses, at(3)).unwrap();
    assert_eq!(
        soaked.clusters_to_rollout,
        vec![new("cluster2", g(1)), new("cluster3", g(1))]
    );
}

// ---- Edge cases of upstream behaviour ----

#[test]
fn status_without_time_never_times_out_and_soaks_forever() {
    let config = Config {
        deadline: Some("1s"),
        min_success: Some("1s"),
        ..Default::default()
    };
    let groups = groups(&[(g(0), &["a", "b"])]);
    let statuses = vec![
        status("a", g(0), Progressing, None),
        status("b", g(0), Succeeded, None),
    ];
    let got = plan(&config.progressive(), &groups, &statuses, at(1000)).unwrap();
    assert_eq!(got.clusters_to_rollout.len(), 2);
    assert!(got.clusters_timed_out.is_empty());
    assert_eq!(got.recheck_after, Some(std::time::Duration::from_secs(1)));
}

#[test]
fn empty_placement_plans_nothing() {
    for strategy in [
        Config::default().all(),
        Config::default().progressive(),
        Config::default().per_group(),
    ] {
        let got = plan(&strategy, &ClusterGroups::new(), &[], at(0)).unwrap();
        assert_eq!(got, RolloutResult::default());
    }
}

#[test]
fn groups_beyond_the_group_count_are_ignored() {
    let groups = groups(&[(g(0), &["a"]), (g(2), &["c"])]);
    let got = plan(&Config::default().all(), &groups, &[], at(0)).unwrap();
    let names: Vec<_> = got
        .clusters_to_rollout
        .iter()
        .map(|c| c.cluster_name.as_str())
        .collect();
    assert_eq!(names, ["a"]);
}

#[test]
fn skipped_and_timed_out_clusters_are_left_alone() {
    let groups = groups(&[(g(0), &["a", "b"])]);
    let statuses = vec![
        status("a", g(0), RolloutStatus::Skip, None),
        status("b", g(0), TimeOut, Some(-5)),
    ];
    let got = plan(&Config::default().all(), &groups, &statuses, at(0)).unwrap();
    assert!(got.clusters_to_rollout.is_empty());
    assert!(got.clusters_timed_out.is_empty());
}

#[test]
fn mandatory_groups_by_index() {
    let config = Config::default();
    let mut strategy = config.progressive();
    if let Some(p) = strategy.progressive.as_mut() {
        p.mandatory_decision_groups = Some(vec![MandatoryDecisionGroup {
            group_name: None,
            group_index: Some(1),
        }]);
    }
    let got = plan(&strategy, &two_groups_of_three(), &[], at(0)).unwrap();
    assert_eq!(
        got.clusters_to_rollout,
        vec![
            new("cluster4", g(1)),
            new("cluster5", g(1)),
            new("cluster6", g(1))
        ]
    );
}

#[test]
fn invalid_values_are_errors() {
    let groups = two_groups_of_three();
    let bad_deadline = Config {
        deadline: Some("2d"),
        ..Default::default()
    };
    assert_eq!(
        plan(&bad_deadline.all(), &groups, &[], at(0)),
        Err(Error::ParseProgressDeadline("2d".into()))
    );
    let bad_soak = Config {
        min_success: Some("soon"),
        ..Default::default()
    };
    assert!(matches!(
        plan(&bad_soak.progressive(), &groups, &[], at(0)),
        Err(Error::ParseMinSuccessTime { .. })
    ));
    let bad_failures = Config {
        max_failures: percent("ten"),
        ..Default::default()
    };
    assert!(matches!(
        plan(&bad_failures.progressive(), &groups, &[], at(0)),
        Err(Error::ParseMaxFailures(_))
    ));
    assert!(matches!(
        plan(&bad_failures.per_group(), &groups, &[], at(0)),
        Err(Error::ParseMaxFailures(_))
    ));
    let bad_concurrency = Config {
        max_concurrency: percent("x%"),
        ..Default::default()
    };
    assert!(matches!(
        plan(&bad_concurrency.progressive(), &groups, &[], at(0)),
        Err(Error::ParseMaxConcurrency(_))
    ));
}
