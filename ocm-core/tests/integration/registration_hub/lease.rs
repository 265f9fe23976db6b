//! managedcluster_lease and taint_add, without an agent: the test renews the lease and writes
//! Available itself.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, Patch, PatchParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_core::registration::hub::HubOptions;

use super::{Hub, eventually, unique};

fn taint_keys(cluster: &ManagedCluster) -> Vec<String> {
    cluster
        .spec
        .taints
        .iter()
        .flatten()
        .map(|t| t.key.clone())
        .collect()
}

async fn wait_taints(hub: &Hub, name: &str, wanted: &[&str]) -> ManagedCluster {
    eventually(&format!("{name} taints {wanted:?}"), || async {
        let cluster = hub.clusters().get(name).await.ok()?;
        (taint_keys(&cluster) == wanted).then_some(cluster)
    })
    .await
}

async fn renew(hub: &Hub, name: &str) {
    let patch = serde_json::json!({"spec": {"renewTime": MicroTime(k8s_openapi::jiff::Timestamp::now())}});
    Api::<Lease>::namespaced(hub.client.clone(), name)
        .patch(
            "managed-cluster-lease",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
}

async fn set_available(hub: &Hub, name: &str, status: &str) {
    let cluster = hub.clusters().get(name).await.unwrap();
    let mut conditions = cluster.status.and_then(|s| s.conditions).unwrap_or_default();
    conditions.retain(|c| c.type_ != "ManagedClusterConditionAvailable");
    conditions.push(ocm_api::meta::Condition::new(
        "ManagedClusterConditionAvailable",
        ocm_api::conditions::Status::parse(status).unwrap(),
        "ByTest",
        "set by the test",
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
    ));
    let patch = serde_json::json!({"status": {"conditions": conditions}});
    hub.clusters()
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

#[tokio::test]
async fn managedcluster_lease_expiry_sets_unknown_and_taints_follow_available() {
    let hub = Hub::start(HubOptions::default()).await;
    let name = unique("lease");
    hub.create_cluster(&name, true, 2).await;
    hub.wait_condition(&name, "HubAcceptedManagedCluster", "True")
        .await;
    // No Available condition yet: unreachable, stamped with the time it was added (by the
    // hub's admission, or by the taint controller in a second write where none runs).
    wait_taints(&hub, &name, &["cluster.open-cluster-management.io/unreachable"]).await;
    eventually("the unreachable taint carries timeAdded", || async {
        let cluster = hub.clusters().get(&name).await.ok()?;
        cluster.spec.taints?.first()?.time_added.as_ref().map(|_| ())
    })
    .await;
    let lease = eventually("hub creates the lease", || async {
        Api::<Lease>::namespaced(hub.client.clone(), &name)
            .get_opt("managed-cluster-lease")
            .await
            .ok()
            .flatten()
    })
    .await;
    assert_eq!(
        lease.metadata.labels.unwrap()["open-cluster-management.io/cluster-name"],
        name
    );
    hub.wait_condition(&name, "ManagedClusterConditionClockSynced", "True")
        .await;

    // The agent renews and reports Available: no taints.
    renew(&hub, &name).await;
    set_available(&hub, &name, "True").await;
    wait_taints(&hub, &name, &[]).await;
    // Available False: unavailable.
    renew(&hub, &name).await;
    set_available(&hub, &name, "False").await;
    wait_taints(&hub, &name, &["cluster.open-cluster-management.io/unavailable"]).await;
    renew(&hub, &name).await;
    set_available(&hub, &name, "True").await;
    wait_taints(&hub, &name, &[]).await;

    // The agent stops renewing: after 5 × 2 s Available becomes Unknown, and unreachable is back.
    let cluster = hub
        .wait_condition(&name, "ManagedClusterConditionAvailable", "Unknown")
        .await;
    let condition = cluster
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "ManagedClusterConditionAvailable")
        .unwrap();
    assert_eq!(condition.reason, "ManagedClusterLeaseUpdateStopped");
    assert_eq!(
        condition.message,
        "Registration agent stopped updating its lease."
    );
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(hub.client.clone(), &name);
    eventually(
        "Warning event AvailableUnknown in the cluster namespace",
        || async {
            let list = events.list(&Default::default()).await.ok()?;
            list.items
                .iter()
                .any(|e| {
                    e.reason.as_deref() == Some("AvailableUnknown") && e.type_.as_deref() == Some("Warning")
                })
                .then_some(())
        },
    )
    .await;
    wait_taints(&hub, &name, &["cluster.open-cluster-management.io/unreachable"]).await;
    hub.finish(&[]).await;
}

async fn set_renew(hub: &Hub, name: &str, seconds_ago: i64) {
    let at = k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_secs(seconds_ago);
    let patch = serde_json::json!({"spec": {"renewTime": MicroTime(at)}});
    Api::<Lease>::namespaced(hub.client.clone(), name)
        .patch(
            "managed-cluster-lease",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn managedcluster_lease_clock_sync() {
    let hub = Hub::start(HubOptions::default()).await;
    let name = unique("clock");
    hub.create_cluster(&name, true, 60).await;
    hub.wait_condition(&name, "ManagedClusterConditionClockSynced", "True")
        .await;
    // A renewTime an hour off: out of sync, and the lease has expired.
    set_renew(&hub, &name, 3600).await;
    let cluster = hub
        .wait_condition(&name, "ManagedClusterConditionClockSynced", "False")
        .await;
    let condition = cluster
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "ManagedClusterConditionClockSynced")
        .unwrap();
    assert_eq!(condition.reason, "ManagedClusterClockOutOfSync");
    hub.wait_condition(&name, "ManagedClusterConditionAvailable", "Unknown")
        .await;
    // With the skip annotation the next renewal counts as in sync whatever its time.
    let patch = serde_json::json!({"metadata": {"annotations": {
        "registration.open-cluster-management.io/skip-clock-sync-check": "true"}}});
    hub.clusters()
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    set_renew(&hub, &name, 7200).await;
    hub.wait_condition(&name, "ManagedClusterConditionClockSynced", "True")
        .await;
    hub.finish(&[]).await;
}
