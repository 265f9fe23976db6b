//! managedcluster_accept, managedcluster_deletion and the cluster identity's permissions.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::work::v1::ManifestWork;
use ocm_core::registration::hub::HubOptions;

use super::{Hub, eventually, forbidden, unique};

fn options(labels: &[(&str, &str)]) -> HubOptions {
    HubOptions {
        extra_labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect::<BTreeMap<_, _>>(),
        work_cleanup_requeue: Duration::from_millis(500),
        ..HubOptions::default()
    }
}

async fn create_work(hub: &Hub, namespace: &str, name: &str) {
    let work: ManifestWork = serde_json::from_value(serde_json::json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": name, "namespace": namespace, "finalizers": [super::WORK_HOLD_FINALIZER]},
        "spec": {"workload": {"manifests": []}}}))
    .unwrap();
    Api::<ManifestWork>::namespaced(hub.client.clone(), namespace)
        .create(&PostParams::default(), &work)
        .await
        .unwrap();
}

/// The cluster's `HubAcceptedManagedCluster` condition.
fn accepted_condition(cluster: &ManagedCluster) -> ocm_api::meta::Condition {
    cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|list| list.iter().find(|c| c.type_ == "HubAcceptedManagedCluster"))
        .cloned()
        .unwrap()
}

fn labelled(labels: Option<&BTreeMap<String, String>>, cluster: &str) -> bool {
    labels.is_some_and(|l| {
        l.get("open-cluster-management.io/cluster-name")
            .map(String::as_str)
            == Some(cluster)
            && l.get("custom").map(String::as_str) == Some("label")
    })
}

#[tokio::test]
async fn managedcluster_accept_with_custom_labels_and_denial_shrinks_permissions() {
    let hub = Hub::start(options(&[("custom", "label")])).await;
    let name = unique("accept");
    hub.create_cluster(&name, true, 60).await;
    let cluster = hub
        .wait_condition(&name, "HubAcceptedManagedCluster", "True")
        .await;
    let condition = accepted_condition(&cluster);
    assert_eq!(
        (condition.reason.as_str(), condition.message.as_str()),
        ("HubClusterAdminAccepted", "Accepted by hub cluster admin")
    );
    assert!(
        cluster
            .metadata
            .finalizers
            .unwrap()
            .contains(&"cluster.open-cluster-management.io/api-resource-cleanup".to_string())
    );

    let c = &hub.client;
    let namespace = Api::<Namespace>::all(c.clone()).get(&name).await.unwrap();
    assert!(labelled(namespace.metadata.labels.as_ref(), &name));
    let role_name = format!("open-cluster-management:managedcluster:{name}");
    let roles = Api::<ClusterRole>::all(c.clone());
    let role = roles.get(&role_name).await.unwrap();
    assert!(labelled(role.metadata.labels.as_ref(), &name));
    assert_eq!(role.rules.as_ref().unwrap().len(), 4);
    let binding = Api::<ClusterRoleBinding>::all(c.clone())
        .get(&role_name)
        .await
        .unwrap();
    assert!(labelled(binding.metadata.labels.as_ref(), &name));
    let bindings = Api::<RoleBinding>::namespaced(c.clone(), &name);
    let registration = bindings.get(&format!("{role_name}:registration")).await.unwrap();
    assert!(labelled(registration.metadata.labels.as_ref(), &name));
    assert_eq!(
        registration.role_ref.name,
        "open-cluster-management:managedcluster:registration"
    );
    let work_name = format!("{role_name}:work");
    let work = bindings.get(&work_name).await.unwrap();
    assert!(labelled(work.metadata.labels.as_ref(), &name));
    assert_eq!(
        work.metadata.finalizers.unwrap(),
        vec!["cluster.open-cluster-management.io/manifest-work-cleanup"]
    );
    for shared in [
        "open-cluster-management:managedcluster:registration",
        "open-cluster-management:managedcluster:work",
    ] {
        // The hub's housekeeping keeps the shared roles, soon after the first cluster exists.
        let role = eventually(shared, || async { roles.get_opt(shared).await.ok().flatten() }).await;
        let labels = role.metadata.labels.unwrap();
        assert_eq!(labels["open-cluster-management.io/cluster-name"], "");
        assert_eq!(labels["custom"], "label");
    }
    // An edited shared role is rolled back.
    let patch = serde_json::json!({"rules": []});
    roles
        .patch(
            "open-cluster-management:managedcluster:work",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
    eventually("shared work role rolled back", || async {
        let role = roles
            .get("open-cluster-management:managedcluster:work")
            .await
            .ok()?;
        (role.rules.unwrap_or_default().len() == 3).then_some(())
    })
    .await;

    // Edited or deleted per-cluster RBAC is restored.
    roles
        .patch(
            &role_name,
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({"rules": []})),
        )
        .await
        .unwrap();
    bindings
        .delete(&format!("{role_name}:registration"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("per-cluster RBAC restored", || async {
        let rules = roles.get(&role_name).await.ok()?.rules.unwrap_or_default();
        let registration = bindings
            .get_opt(&format!("{role_name}:registration"))
            .await
            .ok()?;
        (rules.len() == 4 && registration.is_some()).then_some(())
    })
    .await;

    // Deny with a ManifestWork left: the role shrinks, the binding stays, the RoleBindings go
    // (the work one only once the work is gone).
    create_work(&hub, &name, "w1").await;
    hub.set_accept(&name, false).await;
    let cluster = hub
        .wait_condition(&name, "HubAcceptedManagedCluster", "False")
        .await;
    let condition = accepted_condition(&cluster);
    assert_eq!(
        (condition.reason.as_str(), condition.message.as_str()),
        ("HubClusterAdminDenied", "Denied by hub cluster admin")
    );
    eventually("role reduced", || async {
        let rules = roles.get(&role_name).await.ok()?.rules?;
        (rules.len() == 1 && rules[0].verbs == ["get", "list", "watch"]).then_some(())
    })
    .await;
    assert!(
        Api::<ClusterRoleBinding>::all(c.clone())
            .get_opt(&role_name)
            .await
            .unwrap()
            .is_some()
    );
    eventually("registration RoleBinding deleted", || async {
        bindings
            .get_opt(&format!("{role_name}:registration"))
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    let held = bindings.get(&work_name).await.unwrap();
    assert!(
        held.metadata.deletion_timestamp.is_some(),
        "work RoleBinding is held by its finalizer"
    );
    super::remove_work(c, &name, "w1").await;
    eventually("work RoleBinding released", || async {
        bindings.get_opt(&work_name).await.ok()?.is_none().then_some(())
    })
    .await;
    // Accepted again while the work RoleBinding is held by a work: once the work is gone the
    // binding comes back, live.
    hub.set_accept(&name, true).await;
    eventually("work RoleBinding back", || async {
        bindings.get_opt(&work_name).await.ok()?.map(|_| ())
    })
    .await;
    create_work(&hub, &name, "w2").await;
    hub.set_accept(&name, false).await;
    eventually("work RoleBinding held again", || async {
        let binding = bindings.get_opt(&work_name).await.ok()??;
        binding.metadata.deletion_timestamp.is_some().then_some(())
    })
    .await;
    hub.set_accept(&name, true).await;
    eventually("registration RoleBinding back", || async {
        bindings
            .get_opt(&format!("{role_name}:registration"))
            .await
            .ok()?
            .map(|_| ())
    })
    .await;
    super::remove_work(c, &name, "w2").await;
    eventually("work RoleBinding live again", || async {
        let binding = bindings.get_opt(&work_name).await.ok()??;
        binding.metadata.deletion_timestamp.is_none().then_some(())
    })
    .await;
    hub.finish(&[]).await;
}

#[tokio::test]
async fn managedcluster_deletion_removes_rbac_and_releases_finalizer_after_works() {
    let hub = Hub::start(options(&[])).await;
    let name = hub.accepted_cluster("delete").await;
    create_work(&hub, &name, "w1").await;
    hub.clusters()
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let role_name = format!("open-cluster-management:managedcluster:{name}");
    let c = &hub.client;
    eventually("cluster RBAC removed", || async {
        let role = Api::<ClusterRole>::all(c.clone())
            .get_opt(&role_name)
            .await
            .ok()?;
        let binding = Api::<ClusterRoleBinding>::all(c.clone())
            .get_opt(&role_name)
            .await
            .ok()?;
        let registration = Api::<RoleBinding>::namespaced(c.clone(), &name)
            .get_opt(&format!("{role_name}:registration"))
            .await
            .ok()?;
        (role.is_none() && binding.is_none() && registration.is_none()).then_some(())
    })
    .await;
    // The hub's cleanup deletes the work, which its (test) finalizer keeps terminating: the
    // cluster keeps its finalizer meanwhile.
    let works = Api::<ManifestWork>::namespaced(c.clone(), &name);
    eventually("work deleted by the cleanup", || async {
        let work = works.get_opt("w1").await.ok()??;
        work.metadata.deletion_timestamp.map(|_| ())
    })
    .await;
    let cluster = hub.clusters().get(&name).await.unwrap();
    assert!(
        cluster
            .metadata
            .finalizers
            .unwrap()
            .contains(&"cluster.open-cluster-management.io/api-resource-cleanup".to_string())
    );
    super::remove_work(c, &name, "w1").await;
    eventually("cluster gone", || async {
        hub.clusters().get_opt(&name).await.ok()?.is_none().then_some(())
    })
    .await;
    let work_binding = Api::<RoleBinding>::namespaced(c.clone(), &name)
        .get_opt(&format!("{role_name}:work"))
        .await
        .unwrap();
    assert!(work_binding.is_none());
    // The namespace is never deleted.
    let namespace = Api::<Namespace>::all(c.clone()).get(&name).await.unwrap();
    assert!(namespace.metadata.deletion_timestamp.is_none());
}

#[tokio::test]
async fn managedcluster_identity_works_in_its_namespace_only() {
    let hub = Hub::start(options(&[])).await;
    let name = unique("ident");
    let other = unique("other");
    hub.create_cluster(&name, true, 60).await;
    hub.create_cluster(&other, true, 60).await;
    hub.wait_condition(&name, "HubAcceptedManagedCluster", "True")
        .await;
    hub.wait_condition(&other, "HubAcceptedManagedCluster", "True")
        .await;
    let agent = hub.agent_client(&name, "agent1").await;
    let addon: ManagedClusterAddOn = serde_json::from_value(serde_json::json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": "helloworld", "namespace": name}, "spec": {}}))
    .unwrap();
    Api::<ManagedClusterAddOn>::namespaced(hub.client.clone(), &name)
        .create(&PostParams::default(), &addon)
        .await
        .unwrap();
    create_work(&hub, &name, "w1").await;
    // RBAC takes effect once the objects exist; wait for the lease the hub creates to be readable.
    let leases = Api::<Lease>::namespaced(agent.clone(), &name);
    let lease = eventually("agent reads its lease", || async {
        leases.get("managed-cluster-lease").await.ok()
    })
    .await;
    leases
        .replace("managed-cluster-lease", &PostParams::default(), &lease)
        .await
        .unwrap();
    let status = serde_json::json!({"status": {"conditions": [{"type": "Probe", "status": "True",
        "reason": "Probe", "message": "written by the agent", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    Api::<ManagedClusterAddOn>::namespaced(agent.clone(), &name)
        .patch_status("helloworld", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let works = Api::<ManifestWork>::namespaced(agent.clone(), &name);
    assert_eq!(works.list(&ListParams::default()).await.unwrap().items.len(), 1);
    let label = serde_json::json!({"metadata": {"labels": {"touched": "yes"}}});
    works
        .patch("w1", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    let own = Api::<ManagedCluster>::all(agent.clone());
    own.get(&name).await.unwrap();
    // Elsewhere: forbidden.
    assert!(forbidden(own.get(&other).await));
    assert!(forbidden(
        Api::<Lease>::namespaced(agent.clone(), &other)
            .list(&ListParams::default())
            .await
    ));
    assert!(forbidden(
        Api::<ManifestWork>::namespaced(agent.clone(), &other)
            .list(&ListParams::default())
            .await
    ));
    assert!(forbidden(
        Api::<Secret>::namespaced(agent.clone(), &name)
            .list(&ListParams::default())
            .await
    ));
    assert!(forbidden(works.delete("w1", &DeleteParams::default()).await));
    hub.finish(&[]).await;
}

#[tokio::test]
async fn managedcluster_deletion_cluster_gone_removes_rbac_and_shared_roles() {
    let hub = Hub::start(options(&[])).await;
    let name = hub.accepted_cluster("gone").await;
    create_work(&hub, &name, "w1").await;
    // Force-remove the cluster: its finalizer never runs.
    let strip = serde_json::json!({"metadata": {"finalizers": null}});
    hub.clusters()
        .patch(&name, &PatchParams::default(), &Patch::Merge(&strip))
        .await
        .unwrap();
    hub.clusters()
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let role_name = format!("open-cluster-management:managedcluster:{name}");
    let c = &hub.client;
    let bindings = Api::<RoleBinding>::namespaced(c.clone(), &name);
    eventually("RBAC of the gone cluster removed", || async {
        let role = Api::<ClusterRole>::all(c.clone())
            .get_opt(&role_name)
            .await
            .ok()?;
        let binding = Api::<ClusterRoleBinding>::all(c.clone())
            .get_opt(&role_name)
            .await
            .ok()?;
        let registration = bindings
            .get_opt(&format!("{role_name}:registration"))
            .await
            .ok()?;
        (role.is_none() && binding.is_none() && registration.is_none()).then_some(())
    })
    .await;
    let work_name = format!("{role_name}:work");
    assert!(
        bindings
            .get(&work_name)
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    super::remove_work(c, &name, "w1").await;
    eventually("work RoleBinding released", || async {
        bindings.get_opt(&work_name).await.ok()?.is_none().then_some(())
    })
    .await;
    if hub.env.control_plane().is_some() {
        // A fresh hub with no cluster left: the shared ClusterRoles go too.
        let roles = Api::<ClusterRole>::all(c.clone());
        eventually("shared ClusterRoles deleted", || async {
            let registration = roles
                .get_opt("open-cluster-management:managedcluster:registration")
                .await
                .ok()?;
            let work = roles
                .get_opt("open-cluster-management:managedcluster:work")
                .await
                .ok()?;
            (registration.is_none() && work.is_none()).then_some(())
        })
        .await;
    }
}

#[tokio::test]
async fn hub_restart_resumes_denial_and_deletion() {
    let mut hub = Hub::start_alone(options(&[])).await;
    let name = hub.accepted_cluster("restart").await;
    let role_name = format!("open-cluster-management:managedcluster:{name}");
    let c = hub.client.clone();
    let bindings = Api::<RoleBinding>::namespaced(c.clone(), &name);
    // Denied while the hub is down: done when it comes back.
    hub.stop().await;
    hub.set_accept(&name, false).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        bindings
            .get_opt(&format!("{role_name}:registration"))
            .await
            .unwrap()
            .is_some()
    );
    hub.restart();
    hub.wait_condition(&name, "HubAcceptedManagedCluster", "False")
        .await;
    eventually("RoleBindings gone after restart", || async {
        let registration = bindings
            .get_opt(&format!("{role_name}:registration"))
            .await
            .ok()?;
        let work = bindings.get_opt(&format!("{role_name}:work")).await.ok()?;
        (registration.is_none() && work.is_none()).then_some(())
    })
    .await;
    // Deleted while the hub is down: the finalizer is released when it comes back.
    hub.stop().await;
    hub.clusters()
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(hub.clusters().get_opt(&name).await.unwrap().is_some());
    hub.restart();
    eventually("cluster gone after restart", || async {
        hub.clusters().get_opt(&name).await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(
        Api::<ClusterRole>::all(c.clone())
            .get_opt(&role_name)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        Api::<ClusterRoleBinding>::all(c)
            .get_opt(&role_name)
            .await
            .unwrap()
            .is_none()
    );
}

/// Acceptance grants the cluster its RBAC, then writes `HubAcceptedManagedCluster` True; when the
/// denial comes in between (the condition write loses on the cluster's version), the cluster has
/// its permissions but no condition, and the denial must still take them back.
#[tokio::test]
async fn a_denial_racing_the_acceptance_takes_the_permissions_back() {
    let mut hub = Hub::start_alone(options(&[])).await;
    let name = hub.accepted_cluster("racing").await;
    let registration = format!("open-cluster-management:managedcluster:{name}:registration");
    let bindings = Api::<RoleBinding>::namespaced(hub.client.clone(), &name);
    // What the race leaves: the RBAC and the finalizer of the acceptance, no condition, and
    // `hubAcceptsClient` false.
    hub.stop().await;
    hub.clusters()
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"conditions": []}})),
        )
        .await
        .unwrap();
    hub.set_accept(&name, false).await;
    assert!(bindings.get_opt(&registration).await.unwrap().is_some());
    hub.restart();
    let denied = hub
        .wait_condition(&name, "HubAcceptedManagedCluster", "False")
        .await;
    let condition = accepted_condition(&denied);
    assert_eq!(condition.reason, "HubClusterAdminDenied");
    eventually("the registration RoleBinding gone", || async {
        bindings
            .get_opt(&registration)
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    hub.finish(&[]).await;
}
