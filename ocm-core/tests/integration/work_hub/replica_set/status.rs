//! Upstream's "Create and update a manifestWorkReplicaSet" scenarios: works per decision, their
//! labels and template, the summary, and PlacementRolledOut following the works' conditions.

use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use ocm_api::names::labels::MANIFEST_WORK_REPLICA_SET_PLACEMENT;
use serde_json::json;

use super::{Fixture, Report, SET, all, template};
use crate::support::eventually;

#[tokio::test]
async fn should_create_update_delete_successfully() {
    let f = Fixture::start(3).await;
    f.placement_of_all("test-placement").await;
    f.create_set("cm1", &[("test-placement", all())], json!({})).await;

    let works = f.wait_works(3).await;
    assert_eq!(Fixture::clusters_of(&works), f.clusters.iter().cloned().collect());
    for work in &works {
        assert!(
            work.name_any().starts_with(SET),
            "{} is not named after the set",
            work.name_any()
        );
        assert_eq!(
            work.labels().get("app").map(String::as_str),
            Some("replica-set-test")
        );
        assert_eq!(
            work.labels()
                .get(MANIFEST_WORK_REPLICA_SET_PLACEMENT)
                .map(String::as_str),
            Some("test-placement")
        );
        assert_eq!(serde_json::to_value(&work.spec).unwrap(), template("cm1"));
    }
    f.wait_summary([3, 0, 0, 0, 0]).await;
    f.wait_condition("PlacementVerified", "True", Some("AsExpected"))
        .await;
    let set = f.sets().get(SET).await.unwrap();
    assert!(
        set.finalizers()
            .iter()
            .any(|x| x == "work.open-cluster-management.io/manifest-work-cleanup")
    );
    let placement_summary = set.status.unwrap().placement_summary.unwrap();
    assert_eq!(placement_summary.len(), 1);
    assert_eq!(
        placement_summary[0].available_decision_groups.as_deref(),
        Some("1 (3 / 3 clusters applied)")
    );

    // The decision drops a cluster: its work goes.
    let kept: Vec<&String> = f.clusters.iter().take(2).collect();
    f.decide("test-placement", 0, &kept).await;
    let works = f.wait_works(2).await;
    assert_eq!(
        Fixture::clusters_of(&works),
        kept.iter().map(|c| (*c).clone()).collect()
    );
    f.wait_summary([2, 0, 0, 0, 0]).await;

    // A template change reaches every work, under the same names.
    let names: Vec<String> = works.iter().map(ResourceExt::name_any).collect();
    f.sets()
        .patch(
            SET,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"manifestWorkTemplate": template("cm2")}})),
        )
        .await
        .unwrap();
    eventually("every work to carry the new template", || async {
        let works = f.works(None).await;
        (works.len() == 2
            && works.iter().all(|w| {
                serde_json::to_value(&w.spec).unwrap() == template("cm2") && names.contains(&w.name_any())
            }))
        .then_some(())
    })
    .await;

    // Deleting the replica set deletes its works.
    f.sets().delete(SET, &Default::default()).await.unwrap();
    f.wait_works(0).await;
    eventually("the replica set to be gone", || async {
        f.sets().get_opt(SET).await.unwrap().is_none().then_some(())
    })
    .await;
    f.cleanup().await;
}

#[tokio::test]
async fn status_should_update_when_manifestwork_status_change() {
    let f = Fixture::start(1).await;
    f.placement_of_all("test-placement").await;
    f.create_set("cm1", &[("test-placement", all())], json!({})).await;
    f.wait_works(1).await;
    f.wait_summary([1, 0, 0, 0, 0]).await;

    // Not applied yet: not rolled out.
    f.wait_condition("PlacementRolledOut", "False", Some("Progressing"))
        .await;
    f.wait_condition("ManifestworkApplied", "False", Some("NotAsExpected"))
        .await;

    // Applied, Available, Progressing False at the current generation: rolled out.
    f.report_all(Report::Succeeded).await;
    f.wait_summary([1, 1, 1, 0, 0]).await;
    f.wait_condition("PlacementRolledOut", "True", Some("Complete"))
        .await;
    f.wait_condition("ManifestworkApplied", "True", Some("AsExpected"))
        .await;

    // Progressing and Degraded again: not rolled out.
    f.report_all(Report::Failed).await;
    f.wait_summary([1, 1, 0, 1, 1]).await;
    f.wait_condition("PlacementRolledOut", "False", Some("Progressing"))
        .await;
    f.wait_condition("ManifestworkApplied", "False", Some("NotAsExpected"))
        .await;
    f.cleanup().await;
}
