//! The Progressive strategy.

use super::*;

// ---- Progressive ----

#[test]
fn progressive_without_workloads_starts_max_concurrency_clusters() {
    let config = Config {
        deadline: Some("90s"),
        max_concurrency: count(2),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![new("cluster1", g1()), new("cluster2", g1())],
        ..Default::default()
    };
    check(&config.progressive(), &two_groups_of_three(), &[], want);
}

#[test]
fn progressive_counts_pending_clusters_against_max_concurrency() {
    let config = Config {
        deadline: Some("90s"),
        max_concurrency: count(4),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![
            expect("cluster1", g1(), Progressing, Some(-60), Some(30)),
            new("cluster2", g1()),
            new("cluster3", g1()),
            new("cluster4", g(1)),
        ],
        removed: vec![new("cluster10", g(2))],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(
        &config.progressive(),
        &three_groups_of_three(),
        &waiting_statuses(),
        want,
    );
}

#[test]
fn progressive_without_max_concurrency_rolls_out_all_clusters() {
    let config = Config {
        deadline: Some("90s"),
        ..Default::default()
    };
    let mut rollout = vec![expect("cluster1", g1(), Progressing, Some(-60), Some(30))];
    rollout.extend(["cluster2", "cluster3"].map(|c| new(c, g1())));
    rollout.extend(["cluster4", "cluster5", "cluster6"].map(|c| new(c, g(1))));
    rollout.extend(["cluster7", "cluster8", "cluster9"].map(|c| new(c, g(2))));
    let want = Want {
        rollout,
        removed: vec![new("cluster10", g(2))],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(
        &config.progressive(),
        &three_groups_of_three(),
        &waiting_statuses(),
        want,
    );
}

#[test]
fn progressive_stops_on_the_first_failure_by_default() {
    let config = Config {
        deadline: Some("90s"),
        max_concurrency: count(2),
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
        &config.progressive(),
        &two_groups_of_three(),
        &done_failed_applying(),
        want,
    );
}

#[test]
fn progressive_keeps_soaking_clusters_in_flight() {
    let config = Config {
        deadline: Some("90s"),
        max_failures: percent("100%"),
        min_success: Some("1m"),
        max_concurrency: count(2),
        ..Default::default()
    };
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-30)),
        status("cluster2", g1(), Failed, Some(-120)),
        status("cluster3", g1(), Progressing, Some(-30)),
    ];
    let want = Want {
        rollout: vec![
            expect("cluster1", g1(), Succeeded, Some(-30), Some(30)),
            expect("cluster3", g1(), Progressing, Some(-30), Some(60)),
        ],
        timed_out: vec![expect("cluster2", g1(), TimeOut, Some(-120), Some(-30))],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.progressive(), &two_groups_of_three(), &statuses, want);
}

#[test]
fn progressive_rechecks_at_the_nearest_soak_end_or_deadline() {
    let config = Config {
        deadline: Some("90s"),
        max_failures: percent("100%"),
        min_success: Some("1m"),
        max_concurrency: count(4),
        ..Default::default()
    };
    let groups = groups(&[(g1(), &["cluster1", "cluster2", "cluster3", "cluster4"])]);
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-30)),
        status("cluster2", g1(), Progressing, Some(-60)),
        status("cluster3", g1(), Progressing, Some(-30)),
        status("cluster4", g1(), Succeeded, Some(-120)),
    ];
    let want = Want {
        rollout: vec![
            expect("cluster1", g1(), Succeeded, Some(-30), Some(30)),
            expect("cluster2", g1(), Progressing, Some(-60), Some(30)),
            expect("cluster3", g1(), Progressing, Some(-30), Some(60)),
        ],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.progressive(), &groups, &statuses, want);
}

#[test]
fn progressive_tolerates_failures_up_to_max_failures() {
    let config = Config {
        deadline: Some("90s"),
        max_failures: count(1),
        max_concurrency: count(2),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![
            expect("cluster3", g1(), Progressing, Some(-60), Some(30)),
            new("cluster4", g(1)),
        ],
        timed_out: vec![expect("cluster2", g1(), TimeOut, Some(-120), Some(-30))],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(
        &config.progressive(),
        &two_groups_of_three(),
        &done_failed_applying(),
        want,
    );
}

#[test]
fn progressive_with_zero_deadline_times_out_at_once() {
    let config = Config {
        deadline: Some("0s"),
        max_failures: count(3),
        max_concurrency: count(2),
        ..Default::default()
    };
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-30)),
        status("cluster2", g1(), Progressing, Some(-30)),
        status("cluster3", g1(), Progressing, Some(-30)),
    ];
    let want = Want {
        rollout: vec![new("cluster4", g(1)), new("cluster5", g(1))],
        timed_out: vec![
            expect("cluster2", g1(), TimeOut, Some(-30), Some(-30)),
            expect("cluster3", g1(), TimeOut, Some(-30), Some(-30)),
        ],
        ..Default::default()
    };
    check(&config.progressive(), &two_groups_of_three(), &statuses, want);
}

#[test]
fn progressive_mandatory_group_tolerates_no_failure() {
    let config = Config {
        deadline: Some("90s"),
        max_concurrency: count(3),
        mandatory: &["group1"],
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
        &config.progressive(),
        &two_groups_of_three(),
        &done_failed_applying(),
        want,
    );
}

fn done_failed_applying_spread() -> Vec<ClusterRolloutStatus> {
    vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Failed, Some(-120)),
        status("cluster3", g(1), Progressing, Some(-60)),
    ]
}

#[test]
fn progressive_percentages_without_deadline() {
    let config = Config {
        deadline: Some("None"),
        max_failures: percent("100%"),
        max_concurrency: percent("50%"),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![
            status("cluster2", g1(), Failed, Some(-120)),
            status("cluster3", g(1), Progressing, Some(-60)),
            new("cluster4", g(1)),
        ],
        ..Default::default()
    };
    check(
        &config.progressive(),
        &two_and_four(),
        &done_failed_applying_spread(),
        want,
    );
}

#[test]
fn progressive_zero_percent_failures_stops_adding_clusters() {
    let config = Config {
        deadline: Some("None"),
        max_failures: percent("0%"),
        max_concurrency: percent("50%"),
        ..Default::default()
    };
    let want = Want {
        rollout: vec![
            status("cluster2", g1(), Failed, Some(-120)),
            status("cluster3", g(1), Progressing, Some(-60)),
        ],
        breach: true,
        ..Default::default()
    };
    check(
        &config.progressive(),
        &two_and_four(),
        &done_failed_applying_spread(),
        want,
    );
}

fn three_groups_of_two() -> ClusterGroups {
    groups(&[
        (g1(), &["cluster1", "cluster2"]),
        (g(1), &["cluster3", "cluster4"]),
        (g(2), &["cluster5", "cluster6"]),
    ])
}

#[test]
fn progressive_failed_mandatory_group_blocks_the_rest() {
    let config = Config {
        deadline: Some("90s"),
        max_concurrency: count(3),
        mandatory: &["group1"],
        ..Default::default()
    };
    let statuses = vec![
        status("cluster1", g1(), Failed, Some(-120)),
        status("cluster2", g1(), Failed, Some(-60)),
    ];
    let want = Want {
        rollout: vec![expect("cluster2", g1(), Failed, Some(-60), Some(30))],
        timed_out: vec![expect("cluster1", g1(), TimeOut, Some(-120), Some(-30))],
        breach: true,
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.progressive(), &three_groups_of_two(), &statuses, want);
}

#[test]
fn progressive_continues_after_mandatory_group_succeeded() {
    let config = Config {
        max_concurrency: count(3),
        mandatory: &["group1"],
        ..Default::default()
    };
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Succeeded, Some(-120)),
    ];
    let want = Want {
        rollout: vec![
            new("cluster3", g(1)),
            new("cluster4", g(1)),
            new("cluster5", g(2)),
        ],
        ..Default::default()
    };
    check(&config.progressive(), &three_groups_of_two(), &statuses, want);
}

#[test]
fn progressive_rolls_out_clusters_added_to_the_mandatory_group() {
    let config = Config {
        deadline: Some("90s"),
        max_concurrency: count(3),
        mandatory: &["group1"],
        ..Default::default()
    };
    let groups = groups(&[
        (g1(), &["cluster1", "cluster2", "cluster7"]),
        (g(1), &["cluster3", "cluster4", "cluster8"]),
        (g(2), &["cluster5", "cluster6", "cluster9"]),
    ]);
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Succeeded, Some(-60)),
        status("cluster3", g(1), Succeeded, Some(-60)),
        status("cluster4", g(1), Progressing, Some(-60)),
        status("cluster5", g(2), Progressing, Some(-60)),
    ];
    let want = Want {
        rollout: vec![
            expect("cluster4", g(1), Progressing, Some(-60), Some(30)),
            expect("cluster5", g(2), Progressing, Some(-60), Some(30)),
            new("cluster7", g1()),
        ],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.progressive(), &groups, &statuses, want);
}

#[test]
fn progressive_reports_removed_clusters() {
    let config = Config {
        deadline: Some("90s"),
        max_failures: percent("100%"),
        max_concurrency: count(2),
        ..Default::default()
    };
    let groups = groups(&[
        (g1(), &["cluster2", "cluster3"]),
        (g(1), &["cluster4", "cluster5", "cluster6"]),
    ]);
    let want = Want {
        rollout: vec![
            expect("cluster3", g1(), Progressing, Some(-60), Some(30)),
            new("cluster4", g(1)),
        ],
        timed_out: vec![expect("cluster2", g1(), TimeOut, Some(-120), Some(-30))],
        removed: vec![status("cluster1", g1(), Succeeded, Some(-60))],
        recheck_secs: Some(30),
        ..Default::default()
    };
    check(&config.progressive(), &groups, &done_failed_applying(), want);
}

#[test]
fn progressive_ignores_a_failed_cluster_removed_from_the_mandatory_group() {
    let config = Config {
        deadline: Some("90s"),
        max_concurrency: count(2),
        mandatory: &["group1"],
        ..Default::default()
    };
    let statuses = vec![
        status("cluster1", g1(), Succeeded, Some(-60)),
        status("cluster2", g1(), Failed, Some(-120)),
        status("cluster3", g1(), Succeeded, Some(-60)),
    ];
    let want = Want {
        rollout: vec![new("cluster4", g(1)), new("cluster5", g(1))],
        removed: vec![status("cluster2", g1(), Failed, Some(-120))],
        ..Default::default()
    };
    check(&config.progressive(), &group1_of_1_and_3(), &statuses, want);
}
