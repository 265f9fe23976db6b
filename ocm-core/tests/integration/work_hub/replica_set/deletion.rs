//! Deleting a replica set: its finalizer deletes the works; with `cascadeDeletionPolicy:
//! Foreground` the replica set stays until they are gone.

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use ocm_api::work::v1::ManifestWork;
use serde_json::json;

use super::{Fixture, SET, all};
use crate::support::eventually;

/// A finalizer standing in for the work agent's, so that deleted works stay for a while.
const AGENT_FINALIZER: &str = "test.open-cluster-management.io/agent";

async fn hold(f: &Fixture, works: &[ManifestWork], finalizers: &[&str]) {
    for work in works {
        Api::<ManifestWork>::namespaced(f.client.clone(), &work.namespace().unwrap())
            .patch(
                &work.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&json!({"metadata": {"finalizers": finalizers}})),
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn foreground_deletion_waits_for_the_works() {
    let f = Fixture::start(2).await;
    f.placement_of_all("test-placement").await;
    f.create_set(
        "cm1",
        &[("test-placement", all())],
        json!({"cascadeDeletionPolicy": "Foreground"}),
    )
    .await;
    let works = f.wait_works(2).await;
    hold(&f, &works, &[AGENT_FINALIZER]).await;
    f.sets().delete(SET, &DeleteParams::default()).await.unwrap();
    eventually("the works to be deleting", || async {
        f.works(None)
            .await
            .iter()
            .all(|w| w.metadata.deletion_timestamp.is_some())
            .then_some(())
    })
    .await;
    // The works are still there: so is the replica set.
    let set = f.sets().get(SET).await.unwrap();
    assert!(set.metadata.deletion_timestamp.is_some());
    let works = f.works(None).await;
    assert_eq!(works.len(), 2);
    hold(&f, &works, &[]).await;
    f.wait_works(0).await;
    eventually("the replica set to be gone", || async {
        f.sets().get_opt(SET).await.unwrap().is_none().then_some(())
    })
    .await;
    f.cleanup().await;
}

#[tokio::test]
async fn background_deletion_does_not_wait() {
    let f = Fixture::start(1).await;
    f.placement_of_all("test-placement").await;
    f.create_set("cm1", &[("test-placement", all())], json!({})).await;
    let works = f.wait_works(1).await;
    hold(&f, &works, &[AGENT_FINALIZER]).await;
    f.sets().delete(SET, &DeleteParams::default()).await.unwrap();
    eventually("the replica set to be gone", || async {
        f.sets().get_opt(SET).await.unwrap().is_none().then_some(())
    })
    .await;
    // Its work was deleted and waits for its own finalizer.
    let works = f.works(None).await;
    assert!(works.iter().all(|w| w.metadata.deletion_timestamp.is_some()));
    hold(&f, &works, &[]).await;
    f.wait_works(0).await;
    f.cleanup().await;
}
