//! `deleteoption:` scenarios of ocm-core.md §6.2: resources shared by two works, and the
//! Orphan and SelectivelyOrphan delete options.

use ocm_api::work::v1::{DeleteOption, DeletePropagationPolicy, OrphaningRule, SelectivelyOrphan};
use serde_json::json;

use super::support::{WorkEnv, eventually, owner_uids};

const APPLIED: &str = "Applied";

/// The UIDs of the resources named `name` the AppliedManifestWork of `work` records.
async fn recorded_uids(env: &WorkEnv, work: &str, name: &str) -> Vec<String> {
    env.applied_work(work)
        .await
        .and_then(|a| a.status)
        .and_then(|s| s.applied_resources)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.name == name)
        .filter_map(|r| r.uid)
        .collect()
}

/// Two works sharing ConfigMap cm1 (the second also has cm2); waits until both record cm1 with
/// its UID, which it returns.
async fn shared(env: &WorkEnv) -> String {
    env.create_work("w1", vec![env.configmap("cm1", json!({"a": "b"}))])
        .await;
    env.create_work(
        "w2",
        vec![
            env.configmap("cm1", json!({"a": "b"})),
            env.configmap("cm2", json!({"c": "d"})),
        ],
    )
    .await;
    env.wait_work_condition("w1", APPLIED, "True").await;
    env.wait_work_condition("w2", APPLIED, "True").await;
    let cm = env
        .wait_configmap("cm1", |cm| owner_uids(&cm.metadata).len() == 2)
        .await;
    let uid = cm.metadata.uid.unwrap();
    for work in ["w1", "w2"] {
        eventually(&format!("{work} records cm1"), || async {
            (recorded_uids(env, work, "cm1").await == [uid.clone()]).then_some(())
        })
        .await;
    }
    uid
}

#[tokio::test]
async fn deleteoption_shared_resource_work_deleted() {
    let env = WorkEnv::started("delopt-shared-del").await;
    let uid = shared(&env).await;
    let w2_owner = env.applied_work("w2").await.unwrap().metadata.uid.unwrap();
    env.delete_work("w1").await;
    env.wait_work_gone("w1").await;
    assert!(env.applied_work("w1").await.is_none());
    // Kept, with the same UID, owned only by the other work.
    let cm = env
        .wait_configmap("cm1", |cm| owner_uids(&cm.metadata).len() == 1)
        .await;
    assert_eq!(cm.metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(owner_uids(&cm.metadata), [w2_owner]);
    assert_eq!(recorded_uids(&env, "w2", "cm1").await, [uid]);
    env.finish().await;
}

#[tokio::test]
async fn deleteoption_shared_resource_removed_from_one_work() {
    let env = WorkEnv::started("delopt-shared-rm").await;
    let uid = shared(&env).await;
    let w2_owner = env.applied_work("w2").await.unwrap().metadata.uid.unwrap();
    // w1 drops cm1 (keeps another ConfigMap so it stays non-empty).
    env.set_manifests("w1", vec![env.configmap("cm3", json!({"e": "f"}))])
        .await;
    eventually("w1 no longer records cm1", || async {
        recorded_uids(&env, "w1", "cm1").await.is_empty().then_some(())
    })
    .await;
    let cm = env
        .wait_configmap("cm1", |cm| owner_uids(&cm.metadata).len() == 1)
        .await;
    assert_eq!(cm.metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(owner_uids(&cm.metadata), [w2_owner]);
    // It stays, tracked by w2, through further reconciles of both works.
    env.set_manifests("w1", vec![env.configmap("cm3", json!({"e": "g"}))])
        .await;
    env.wait_configmap("cm3", |cm| cm.data.as_ref().is_some_and(|d| d["e"] == "g"))
        .await;
    let cm = env.configmap_opt("cm1").await.unwrap();
    assert_eq!(cm.metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(recorded_uids(&env, "w2", "cm1").await, [uid]);
    env.finish().await;
}

fn selectively_orphan(env: &WorkEnv, name: &str) -> DeleteOption {
    DeleteOption {
        propagation_policy: Some(DeletePropagationPolicy::SelectivelyOrphan),
        selectively_orphans: Some(SelectivelyOrphan {
            orphaning_rules: Some(vec![OrphaningRule {
                group: None,
                resource: "configmaps".into(),
                namespace: Some(env.namespace.clone()),
                name: name.into(),
            }]),
        }),
        ttl_seconds_after_finished: None,
    }
}

#[tokio::test]
async fn deleteoption_orphan() {
    let env = WorkEnv::started("delopt-orphan").await;
    let orphan = DeleteOption {
        propagation_policy: Some(DeletePropagationPolicy::Orphan),
        ..DeleteOption::default()
    };
    env.create_work_with(
        "w",
        vec![
            env.configmap("cm1", json!({"a": "b"})),
            env.configmap("cm2", json!({"c": "d"})),
        ],
        Some(orphan),
        Vec::new(),
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    for cm in ["cm1", "cm2"] {
        let cm = env.wait_configmap(cm, |_| true).await;
        assert!(
            owner_uids(&cm.metadata).is_empty(),
            "orphaned resources have no owner"
        );
    }
    env.delete_work("w").await;
    env.wait_work_gone("w").await;
    assert!(env.configmap_opt("cm1").await.is_some());
    assert!(env.configmap_opt("cm2").await.is_some());
    env.finish().await;
}

#[tokio::test]
async fn deleteoption_selectively_orphan() {
    let env = WorkEnv::started("delopt-selective").await;
    env.create_work_with(
        "w",
        vec![
            env.configmap("cm1", json!({"a": "b"})),
            env.configmap("cm2", json!({"c": "d"})),
        ],
        Some(selectively_orphan(&env, "cm1")),
        Vec::new(),
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    let cm1 = env.wait_configmap("cm1", |_| true).await;
    assert!(owner_uids(&cm1.metadata).is_empty());
    let cm2 = env.wait_configmap("cm2", |_| true).await;
    assert_eq!(owner_uids(&cm2.metadata).len(), 1);
    env.delete_work("w").await;
    env.wait_work_gone("w").await;
    env.wait_configmap_gone("cm2").await;
    assert!(
        env.configmap_opt("cm1").await.is_some(),
        "the rule-matched ConfigMap survives"
    );
    env.finish().await;
}

#[tokio::test]
async fn deleteoption_remove_orphaned_manifest() {
    let env = WorkEnv::started("delopt-rm-orphaned").await;
    env.create_work_with(
        "w",
        vec![
            env.configmap("cm1", json!({"a": "b"})),
            env.configmap("cm2", json!({"c": "d"})),
        ],
        Some(selectively_orphan(&env, "cm1")),
        Vec::new(),
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    let cm1 = env
        .wait_configmap("cm1", |cm| owner_uids(&cm.metadata).is_empty())
        .await;
    env.set_manifests("w", vec![env.configmap("cm2", json!({"c": "d"}))])
        .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    eventually("cm1 no longer recorded", || async {
        (env.applied_names("w").await == ["cm2"]).then_some(())
    })
    .await;
    let kept = env
        .configmap_opt("cm1")
        .await
        .expect("the orphaned resource stays");
    assert_eq!(kept.metadata.uid, cm1.metadata.uid);
    env.finish().await;
}

#[tokio::test]
async fn deleteoption_remove_orphan_option() {
    let env = WorkEnv::started("delopt-rm-option").await;
    env.create_work_with(
        "w",
        vec![
            env.configmap("cm1", json!({"a": "b"})),
            env.configmap("cm2", json!({"c": "d"})),
        ],
        Some(selectively_orphan(&env, "cm1")),
        Vec::new(),
    )
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    env.wait_configmap("cm1", |cm| owner_uids(&cm.metadata).is_empty())
        .await;
    env.patch_spec("w", json!({"deleteOption": null})).await;
    // The owner reference comes back...
    env.wait_configmap("cm1", |cm| owner_uids(&cm.metadata).len() == 1)
        .await;
    // ...so deleting the work removes both.
    env.delete_work("w").await;
    env.wait_work_gone("w").await;
    env.wait_configmap_gone("cm1").await;
    env.wait_configmap_gone("cm2").await;
    env.finish().await;
}
