//! Rollout strategies: upstream's "rollout progressive", "rolling exceeds max failure",
//! "rolling with min success time" and "rolling deadline meets and tolerate max failure", and
//! ProgressivePerGroup over two decision groups.

use std::time::Duration;

use serde_json::json;

use super::{Fixture, Report};

#[tokio::test]
async fn rollout_progressive() {
    let f = Fixture::start(6).await;
    f.placement_of_all("test-placement").await;
    f.create_set(
        "cm1",
        &[(
            "test-placement",
            json!({"type": "Progressive", "progressive": {"maxConcurrency": 2}}),
        )],
        json!({}),
    )
    .await;
    f.wait_works(2).await;
    f.wait_condition("PlacementRolledOut", "False", Some("Progressing"))
        .await;

    f.report_all(Report::Succeeded).await;
    f.wait_works(4).await;
    f.wait_condition("PlacementRolledOut", "False", Some("Progressing"))
        .await;
    f.report_all(Report::Succeeded).await;
    let works = f.wait_works(6).await;
    assert_eq!(Fixture::clusters_of(&works), f.clusters.iter().cloned().collect());
    f.report_all(Report::Succeeded).await;
    f.wait_condition("PlacementRolledOut", "True", Some("Complete"))
        .await;
    f.cleanup().await;
}

#[tokio::test]
async fn rolling_exceeds_max_failure() {
    let f = Fixture::start(3).await;
    f.placement_of_all("test-placement").await;
    f.create_set(
        "cm1",
        &[(
            "test-placement",
            json!({"type": "Progressive", "progressive": {"maxConcurrency": 2, "maxFailures": 1}}),
        )],
        json!({}),
    )
    .await;
    f.wait_works(2).await;
    f.report_all(Report::Failed).await;
    f.wait_condition("PlacementRolledOut", "False", Some("Progressing"))
        .await;
    f.wait_summary([2, 2, 0, 2, 2]).await;
    // Two failures are more than one tolerated: the third cluster gets nothing.
    f.keeps_works(2, 3).await;
    f.cleanup().await;
}

#[tokio::test]
async fn rolling_with_min_success_time() {
    let f = Fixture::start(2).await;
    f.placement_of_all("test-placement").await;
    f.create_set(
        "cm1",
        &[(
            "test-placement",
            json!({"type": "Progressive", "progressive": {"maxConcurrency": 1, "minSuccessTime": "5s"}}),
        )],
        json!({}),
    )
    .await;
    f.wait_works(1).await;
    let reported = tokio::time::Instant::now();
    f.report_all(Report::Succeeded).await;
    // The first cluster soaks for 5 s before the second one starts (the reported time has
    // whole seconds, so allow one second less).
    f.wait_works(2).await;
    assert!(
        reported.elapsed() >= Duration::from_secs(4),
        "the second cluster started {:?} after the first succeeded",
        reported.elapsed()
    );
    f.wait_condition("PlacementRolledOut", "False", Some("Progressing"))
        .await;
    f.report_all(Report::Succeeded).await;
    f.wait_condition("PlacementRolledOut", "True", Some("Complete"))
        .await;
    f.cleanup().await;
}

#[tokio::test]
async fn rolling_deadline_meets_and_tolerate_max_failure() {
    let f = Fixture::start(2).await;
    f.placement_of_all("test-placement").await;
    f.create_set(
        "cm1",
        &[(
            "test-placement",
            json!({"type": "Progressive",
                "progressive": {"maxConcurrency": 1, "progressDeadline": "5s", "maxFailures": 1}}),
        )],
        json!({}),
    )
    .await;
    f.wait_works(1).await;
    f.wait_condition("PlacementRolledOut", "False", Some("Progressing"))
        .await;
    let reported = tokio::time::Instant::now();
    f.report_all(Report::Failed).await;
    // Past the deadline the failing cluster counts as timed out (one failure is tolerated):
    // the rollout moves on to the next cluster.
    f.wait_works(2).await;
    assert!(
        reported.elapsed() >= Duration::from_secs(4),
        "moved on {:?} after the failure, before the deadline",
        reported.elapsed()
    );
    f.wait_condition("PlacementRolledOut", "False", Some("Progressing"))
        .await;
    f.cleanup().await;
}

#[tokio::test]
async fn rollout_progressive_per_group() {
    let f = Fixture::start(4).await;
    f.placement("test-placement", 4, 2).await;
    f.decide("test-placement", 0, &[&f.clusters[0], &f.clusters[1]])
        .await;
    f.decide("test-placement", 1, &[&f.clusters[2], &f.clusters[3]])
        .await;
    f.create_set(
        "cm1",
        &[("test-placement", json!({"type": "ProgressivePerGroup"}))],
        json!({}),
    )
    .await;
    let works = f.wait_works(2).await;
    assert_eq!(
        Fixture::clusters_of(&works),
        f.clusters[..2].iter().cloned().collect()
    );
    f.keeps_works(2, 1).await;
    f.wait_summary([2, 0, 0, 0, 0]).await;
    let set = f.sets().get(super::SET).await.unwrap();
    assert_eq!(
        set.status.unwrap().placement_summary.unwrap()[0]
            .available_decision_groups
            .as_deref(),
        Some("2 (2 / 4 clusters applied)")
    );

    // The first group succeeded: the second one starts.
    f.report_all(Report::Succeeded).await;
    let works = f.wait_works(4).await;
    assert_eq!(Fixture::clusters_of(&works), f.clusters.iter().cloned().collect());
    f.report_all(Report::Succeeded).await;
    f.wait_condition("PlacementRolledOut", "True", Some("Complete"))
        .await;
    f.cleanup().await;
}
