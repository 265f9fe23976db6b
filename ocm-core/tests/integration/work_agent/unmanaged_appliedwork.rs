//! `unmanaged_appliedwork:` scenarios of ocm-core.md §6.2: AppliedManifestWorks whose
//! ManifestWork is gone, or that belong to a hub the agent no longer talks to, are evicted after
//! the grace period, unless they belong to another agent id, the work comes back, or eviction
//! is disabled.
//!
//! "Another hub" is the same hub server under another URL (the hub hash is the URL's), with the
//! work in another cluster namespace, so the scenarios also run on one real hub.

use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, PostParams};
use ocm_api::work::v1::ManifestWork;
use ocm_core::work::agent::hub_hash;
use serde_json::json;

use super::support::{WorkEnv, eventually, owner_uids, work_spec};

const APPLIED: &str = "Applied";

/// Applies work "w" with cm1 on the first hub and stops the agent.
async fn applied_then_stopped(prefix: &str) -> WorkEnv {
    let mut env = WorkEnv::started(prefix).await;
    env.create_work("w", vec![env.configmap("cm1", json!({"a": "b"}))])
        .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    eventually("cm1 recorded", || async {
        (env.applied_names("w").await == ["cm1"]).then_some(())
    })
    .await;
    env.stop_agent();
    env
}

/// Reconnects the agent to "another hub" (another URL, cluster namespace `hub2`) with
/// `agent_id`, where the same work exists; returns the new AppliedManifestWork's name.
async fn reconnect_to_new_hub(env: &mut WorkEnv, agent_id: &str, grace: Duration) -> String {
    let namespace = env.hub_namespace("hub2").await;
    let work = env.work("w").await.unwrap();
    let copy = ManifestWork::new(
        &work.name_any(),
        work_spec(work.spec.workload.clone().unwrap().manifests.unwrap()),
    );
    Api::<ManifestWork>::namespaced(env.hub_client.clone(), &namespace)
        .create(&PostParams::default(), &copy)
        .await
        .unwrap();
    let new_url = format!("{}/", env.hub_url);
    let mut options = env.options();
    options.cluster_name = namespace;
    options.agent_id = Some(agent_id.to_string());
    options.eviction_grace_period = grace;
    env.start_agent_at(&new_url, options);
    let new_name = format!("{}-{}", hub_hash(&new_url), work.name_any());
    eventually("the new AppliedManifestWork records cm1", || async {
        let amw = env.applied().get_opt(&new_name).await.unwrap()?;
        amw.status?
            .applied_resources?
            .iter()
            .any(|r| r.name == "cm1")
            .then_some(())
    })
    .await;
    new_name
}

#[tokio::test]
async fn unmanaged_appliedwork_different_agent_id() {
    let mut env = applied_then_stopped("unmanaged-other-agent").await;
    let old = env.applied_work("w").await.unwrap();
    let other_agent = format!("{}-agent2", env.cluster);
    let new_name = reconnect_to_new_hub(&mut env, &other_agent, Duration::from_secs(1)).await;
    // cm1 has two owners, and the old AppliedManifestWork (another agent id) is kept.
    let cm = env
        .wait_configmap("cm1", |cm| owner_uids(&cm.metadata).len() == 2)
        .await;
    let new = env.applied().get(&new_name).await.unwrap();
    let mut owners = owner_uids(&cm.metadata);
    owners.sort();
    let mut expected = vec![old.metadata.uid.clone().unwrap(), new.metadata.uid.unwrap()];
    expected.sort();
    assert_eq!(owners, expected);
    // It stays, never marked for eviction, for twice the new agent's grace period.
    let until = tokio::time::Instant::now() + Duration::from_secs(2);
    while tokio::time::Instant::now() < until {
        let kept = env.applied_work("w").await.expect("kept");
        assert_eq!(kept.metadata.uid, old.metadata.uid);
        assert!(kept.status.and_then(|s| s.eviction_start_time).is_none());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    env.finish().await;
}

#[tokio::test]
async fn unmanaged_appliedwork_same_agent_id() {
    let mut env = applied_then_stopped("unmanaged-same-agent").await;
    let old_name = env.applied_name(&env.work_name("w"));
    let agent_id = env.agent_id.clone();
    reconnect_to_new_hub(&mut env, &agent_id, Duration::from_secs(2)).await;
    eventually("the old AppliedManifestWork evicted", || async {
        env.applied()
            .get_opt(&old_name)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    let cm = env
        .wait_configmap("cm1", |cm| owner_uids(&cm.metadata).len() == 1)
        .await;
    assert_ne!(cm.metadata.owner_references.unwrap()[0].name, old_name);
    env.finish().await;
}

#[tokio::test]
async fn unmanaged_appliedwork_missing_work() {
    let mut env = applied_then_stopped("unmanaged-missing").await;
    env.force_delete_work("w").await;
    let mut options = env.options();
    options.eviction_grace_period = Duration::from_secs(2);
    env.start_agent(options);
    let evicting = eventually("eviction started", || async {
        env.applied_work("w").await?.status?.eviction_start_time
    })
    .await;
    assert!(evicting.0 <= k8s_openapi::jiff::Timestamp::now());
    eventually("AppliedManifestWork evicted", || async {
        env.applied_work("w").await.is_none().then_some(())
    })
    .await;
    env.wait_configmap_gone("cm1").await;
    env.finish().await;
}

#[tokio::test]
async fn unmanaged_appliedwork_work_recreated() {
    let mut env = applied_then_stopped("unmanaged-recreated").await;
    env.force_delete_work("w").await;
    let mut options = env.options();
    options.eviction_grace_period = Duration::from_secs(600);
    env.start_agent(options);
    eventually("eviction started", || async {
        env.applied_work("w").await?.status?.eviction_start_time
    })
    .await;
    env.create_work("w", vec![env.configmap("cm1", json!({"a": "b"}))])
        .await;
    eventually("eviction stopped", || async {
        let amw = env.applied_work("w").await?;
        amw.status
            .is_none_or(|s| s.eviction_start_time.is_none())
            .then_some(())
    })
    .await;
    env.wait_work_condition("w", APPLIED, "True").await;
    assert!(env.configmap_opt("cm1").await.is_some());
    env.finish().await;
}

#[tokio::test]
async fn unmanaged_appliedwork_huge_grace_period() {
    let mut env = applied_then_stopped("unmanaged-huge-grace").await;
    env.force_delete_work("w").await;
    let mut options = env.options();
    options.eviction_grace_period = Duration::from_secs(600);
    env.start_agent(options);
    eventually("eviction started", || async {
        env.applied_work("w").await?.status?.eviction_start_time
    })
    .await;
    // Restarted with a grace period of 100 years or more: eviction is off.
    let mut options = env.options();
    options.eviction_grace_period = Duration::from_secs(100 * 365 * 24 * 60 * 60);
    env.start_agent(options);
    eventually("eviction stopped", || async {
        let amw = env.applied_work("w").await?;
        amw.status
            .is_none_or(|s| s.eviction_start_time.is_none())
            .then_some(())
    })
    .await;
    assert!(env.configmap_opt("cm1").await.is_some());
    env.finish().await;
}
