//! The ProgressivePerGroup strategy.

use super::*;

// ---- ProgressivePerGroup ----

#[test]
fn per_group_without_workloads_starts_the_first_group() {
    let config = Config {
        deadline: Some("90s"),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![
            new("cluster1", g1()),
            new("cluster2", g1()),
            new("cluster3", g1()),
        ],
        ..Default::default()
    };
    check(&config.per_group(), &two_groups_of_three(), &[], want);
}

#[test]
fn per_group_keeps_to_the_first_group_while_it_is_pending() {
    let config = Config {
        deadline: Some("90s"),
        ..Default::default()
    };
    let mut statuses = waiting_statuses();
    statuses.truncate(6);
    let want = Want {
        rollout: vec![
            expect("cluster1", g1(), Progressing, Some(-60), Some(30)),
            new("cluster2", g1()),
            new("cluster3", g1()),
        ],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.per_group(), &two_groups_of_three(), &statuses, want);
}

#[test]
fn per_group_stops_on_the_first_failure_by_default() {
    let config = Config {
        deadline: Some("90s"),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![expect("cluster3", g1(), Progressing, Some(-60), Some(30))],
        timed_out: vec![expect("cluster2", g1(), TimeOut, Some(-120), Some(-30))],
        breach: true,
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(
        &config.per_group(),
        &two_groups_of_three(),
        &done_failed_applying(),
        want,
    );
}

fn done_failed_done() -> Vec<ClusterRolloutStatus> {
    vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Failed, Some(-120)),
        status("cluster3", g1(), Succeeded, Some(-60)),
    ]
}

#[test]
fn per_group_moves_on_past_tolerated_timeouts() {
    let config = Config {
        deadline: Some("90s"),
        max_failures: count(2),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![
            new("cluster4", g(1)),
            new("cluster5", g(1)),
            new("cluster6", g(1)),
        ],
        timed_out: vec![expect("cluster2", g1(), TimeOut, Some(-120), Some(-30))],
        ..Default::default()
    };
    check(
        &config.per_group(),
        &three_groups_of_three(),
        &done_failed_done(),
        want,
    );
}

#[test]
fn per_group_starts_the_third_group_when_the_second_succeeded() {
    let config = Config {
        deadline: Some("90s"),
        max_failures: count(2),
        ..Default::default()
    };
    let mut statuses = done_failed_done();
    statuses.extend(["cluster4", "cluster5", "cluster6"].map(|c| status(c, g(1), Succeeded, Some(-60))));
    let want = Want {
        rollout: vec![
            new("cluster7", g(2)),
            new("cluster8", g(2)),
            new("cluster9", g(2)),
        ],
        timed_out: vec![expect("cluster2", g1(), TimeOut, Some(-120), Some(-30))],
        ..Default::default()
    };
    check(&config.per_group(), &three_groups_of_three(), &statuses, want);
}

#[test]
fn per_group_failure_without_deadline_breaches() {
    let config = Config {
        deadline: Some("None"),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![status("cluster2", g1(), Failed, Some(-120))],
        breach: true,
        ..Default::default()
    };
    check(
        &config.per_group(),
        &three_groups_of_three(),
        &done_failed_done(),
        want,
    );
}

#[test]
fn per_group_tolerated_failure_without_deadline_moves_on() {
    let config = Config {
        deadline: Some("None"),
        max_failures: count(2),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![
            status("cluster2", g1(), Failed, Some(-120)),
            new("cluster4", g(1)),
            new("cluster5", g(1)),
            new("cluster6", g(1)),
        ],
        ..Default::default()
    };
    check(
        &config.per_group(),
        &three_groups_of_three(),
        &done_failed_done(),
        want,
    );
}

#[test]
fn per_group_percentage_of_failures_is_per_group() {
    let config = Config {
        deadline: Some("None"),
        max_failures: percent("30%"),
        ..Default::default()
    };
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Failed, Some(-120)),
        status("cluster3", g1(), Failed, Some(-120)),
    ];
    let want = Want {
        rollout: vec![
            status("cluster2", g1(), Failed, Some(-120)),
            status("cluster3", g1(), Failed, Some(-120)),
        ],
        breach: true,
        ..Default::default()
    };
    check(&config.per_group(), &three_groups_of_three(), &statuses, want);
}

#[test]
fn per_group_failing_mandatory_group_stops_with_timeouts_only() {
    let config = Config {
        deadline: Some("90s"),
        mandatory: &["group1"],
        ..Default::default()
    };
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Failed, Some(-120)),
        status("cluster3", g1(), Failed, Some(-120)),
    ];
    let want = Want {
        timed_out: vec![
            expect("cluster2", g1(), TimeOut, Some(-120), Some(-30)),
            expect("cluster3", g1(), TimeOut, Some(-120), Some(-30)),
        ],
        breach: true,
        ..Default::default()
    };
    check(&config.per_group(), &two_groups_of_three(), &statuses, want);
}

#[test]
fn per_group_mandatory_group_ignores_max_failures() {
    let config = Config {
        deadline: Some("90s"),
        max_failures: count(2),
        mandatory: &["group1"],
        ..Default::default()
    };
    let want = Want {
        timed_out: vec![expect("cluster2", g1(), TimeOut, Some(-120), Some(-30))],
        breach: true,
        ..Default::default()
    };
    check(
        &config.per_group(),
        &three_groups_of_three(),
        &done_failed_done(),
        want,
    );
}

#[test]
fn per_group_continues_after_mandatory_group_succeeded() {
    let config = Config {
        deadline: Some("90s"),
        mandatory: &["group1"],
        ..Default::default()
    };
    let statuses: Vec<_> = ["cluster1", "cluster2", "cluster3"]
        .iter()
        .map(|c| status(c, g1(), Succeeded, Some(-60)))
        .collect();
    let want = Want {
        rollout: vec![
            new("cluster4", g(1)),
            new("cluster5", g(1)),
            new("cluster6", g(1)),
        ],
        ..Default::default()
    };
    check(&config.per_group(), &three_groups_of_three(), &statuses, want);
}

#[test]
fn per_group_soaking_clusters_hold_the_group() {
    let config = Config {
        deadline: Some("90s"),
        max_failures: percent("50%"),
        min_success: Some("1m"),
        ..Default::default()
    };
    let groups = groups(&[
        (g1(), &["cluster1", "cluster2", "cluster3"]),
        (key("group2", 1), &["cluster4", "cluster5"]),
    ]);
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-30)),
        status("cluster2", g1(), Succeeded, Some(-120)),
        status("cluster3", g1(), Progressing, Some(-30)),
    ];
    let want = Want {
        rollout: vec![
            expect("cluster1", g1(), Succeeded, Some(-30), Some(30)),
            expect("cluster3", g1(), Progressing, Some(-30), Some(60)),
        ],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.per_group(), &groups, &statuses, want);
}

#[test]
fn per_group_adds_clusters_that_joined_an_earlier_group() {
    let config = Config {
        deadline: Some("90s"),
        ..Default::default()
    };
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Succeeded, Some(-60)),
        status("cluster4", g(1), Progressing, Some(-60)),
        status("cluster5", g(1), Progressing, Some(-60)),
    ];
    let want = Want {
        rollout: vec![
            expect("cluster4", g(1), Progressing, Some(-60), Some(30)),
            expect("cluster5", g(1), Progressing, Some(-60), Some(30)),
            new("cluster3", g1()),
        ],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.per_group(), &two_groups_of_three(), &statuses, want);
}

#[test]
fn per_group_reports_removed_clusters() {
    let config = Config {
        deadline: Some("90s"),
        ..Default::default()
    };
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Failed, Some(-60)),
        status("cluster3", g1(), Progressing, Some(-60)),
    ];
    let want = Want {
        rollout: vec![expect("cluster3", g1(), Progressing, Some(-60), Some(30))],
        removed: vec![status("cluster2", g1(), Failed, Some(-60))],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.per_group(), &group1_of_1_and_3(), &statuses, want);
}

#[test]
fn per_group_removed_cluster_and_tolerated_timeout() {
    let config = Config {
        deadline: Some("90s"),
        max_failures: count(2),
        ..Default::default()
    };
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Failed, Some(-60)),
        status("cluster3", g1(), Progressing, Some(-120)),
    ];
    let want = Want {
        rollout: vec![
            new("cluster4", g(1)),
            new("cluster5", g(1)),
            new("cluster6", g(1)),
        ],
        timed_out: vec![expect("cluster3", g1(), TimeOut, Some(-120), Some(-30))],
        removed: vec![status("cluster2", g1(), Failed, Some(-60))],
        ..Default::default()
    };
    check(&config.per_group(), &group1_of_1_and_3(), &statuses, want);
}

#[test]
fn per_group_ignores_a_failed_cluster_removed_from_the_mandatory_group() {
    let config = Config {
        deadline: Some("90s"),
        mandatory: &["group1"],
        ..Default::default()
    };
    let groups = groups(&[
        (g1(), &["cluster1", "cluster3"]),
        (g(1), &["cluster4", "cluster5", "cluster6"]),
        (g(2), &["cluster7", "cluster8", "cluster9"]),
    ]);
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Failed, Some(-120)),
        status("cluster3", g1(), Succeeded, Some(-60)),
    ];
    let want = Want {
        rollout: vec![
            new("cluster4", g(1)),
            new("cluster5", g(1)),
            new("cluster6", g(1)),
        ],
        removed: vec![status("cluster2", g1(), Failed, Some(-120))],
        ..Default::default()
    };
    check(&config.per_group(), &groups, &statuses, want);
}
