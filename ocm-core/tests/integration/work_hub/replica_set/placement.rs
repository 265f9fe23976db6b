//! Placement references: changing them deletes the old Placement's works; a missing Placement
//! or one without decisions is reported in the conditions.

use kube::api::{Patch, PatchParams};
use serde_json::json;

use super::{Fixture, all};

#[tokio::test]
async fn should_delete_manifestworks_from_old_placement_when_placement_ref_changes() {
    let f = Fixture::start(4).await;
    let first: Vec<&String> = f.clusters.iter().step_by(2).collect();
    let second: Vec<&String> = f.clusters.iter().skip(1).step_by(2).collect();
    f.placement("test-placement-1", 2, 1).await;
    f.decide("test-placement-1", 0, &first).await;
    f.create_set("cm1", &[("test-placement-1", all())], json!({}))
        .await;
    let works = f.wait_works_of(Some("test-placement-1"), 2).await;
    assert_eq!(
        Fixture::clusters_of(&works),
        first.iter().map(|c| (*c).clone()).collect()
    );

    f.placement("test-placement-2", 2, 1).await;
    f.decide("test-placement-2", 0, &second).await;
    f.sets()
        .patch(
            super::SET,
            &PatchParams::default(),
            &Patch::Merge(
                &json!({"spec": {"placementRefs": [{"name": "test-placement-2", "rolloutStrategy": all()}]}}),
            ),
        )
        .await
        .unwrap();
    f.wait_works_of(Some("test-placement-1"), 0).await;
    let works = f.wait_works_of(Some("test-placement-2"), 2).await;
    assert_eq!(
        Fixture::clusters_of(&works),
        second.iter().map(|c| (*c).clone()).collect()
    );
    f.wait_works(2).await;
    f.cleanup().await;
}

#[tokio::test]
async fn placement_decision_change_adds_and_removes_works() {
    let f = Fixture::start(3).await;
    f.placement("test-placement", 1, 1).await;
    f.decide("test-placement", 0, &[&f.clusters[0]]).await;
    f.create_set("cm1", &[("test-placement", all())], json!({})).await;
    f.wait_works(1).await;
    f.placement_status("test-placement", 2, 1).await;
    f.decide("test-placement", 0, &[&f.clusters[1], &f.clusters[2]])
        .await;
    let want: std::collections::BTreeSet<String> = f.clusters[1..].iter().cloned().collect();
    crate::support::eventually("works in the newly decided clusters only", || async {
        (Fixture::clusters_of(&f.works(None).await) == want).then_some(())
    })
    .await;
    f.wait_works(2).await;
    f.wait_summary([2, 0, 0, 0, 0]).await;
    f.cleanup().await;
}

#[tokio::test]
async fn missing_or_empty_placement_is_reported() {
    let f = Fixture::start(1).await;
    f.create_set("cm1", &[("test-placement", all())], json!({})).await;
    f.wait_condition("PlacementVerified", "False", Some("PlacementDecisionNotFound"))
        .await;

    // The Placement exists but decides nothing.
    f.placement("test-placement", 0, 0).await;
    f.wait_condition("PlacementVerified", "False", Some("PlacementDecisionEmpty"))
        .await;
    f.wait_condition("ManifestworkApplied", "False", Some("PlacementDecisionEmpty"))
        .await;
    f.wait_summary([0, 0, 0, 0, 0]).await;

    // It decides a cluster: verified.
    f.placement_status("test-placement", 1, 1).await;
    f.decide("test-placement", 0, &[&f.clusters[0]]).await;
    f.wait_works(1).await;
    f.wait_condition("PlacementVerified", "True", Some("AsExpected"))
        .await;
    f.cleanup().await;
}
