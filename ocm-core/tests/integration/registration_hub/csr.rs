//! csr_security_validation, certificate renewal (certificate_rotation's hub half) and
//! spokecluster_autoapproval.

use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, PostParams};
use ocm_core::registration::hub::{HubOptions, bootstrap};

use super::{
    CLUSTERS_GROUP, Hub, SIGNER, USAGES, agent_csr, approved, client_from, eventually, forbidden, unique,
};

async fn wait_approved(csrs: &Api<CertificateSigningRequest>, name: &str) -> CertificateSigningRequest {
    eventually(&format!("CSR {name} approved"), || async {
        csrs.get(name).await.ok().filter(approved)
    })
    .await
}

/// Asserts for a short while that none of `names` gets approved.
async fn stays_unapproved(csrs: &Api<CertificateSigningRequest>, names: &[String]) {
    for _ in 0..10 {
        for name in names {
            assert!(
                !approved(&csrs.get(name).await.unwrap()),
                "CSR {name} must never be auto-approved"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn csr_security_validation_and_renewal_auto_approved() {
    let hub = Hub::start(HubOptions::default()).await;
    let name = hub.accepted_cluster("csrsec").await;
    let agent = hub.agent_client(&name, "agent1").await;
    let own_cn = format!("system:open-cluster-management:{name}:agent1");
    let own_group = format!("system:open-cluster-management:{name}");
    let xyz_group = format!("system:open-cluster-management:{name}xyz");
    let agent_csrs = Api::<CertificateSigningRequest>::all(agent.clone());
    let csrs = Api::<CertificateSigningRequest>::all(hub.client.clone());
    let bad = [
        // prefix-matched organization
        agent_csr(
            &unique("prefix-org"),
            &name,
            &own_cn,
            &[&xyz_group, CLUSTERS_GROUP],
            USAGES,
            SIGNER,
        ),
        // CN and O agree on another cluster
        agent_csr(
            &unique("other-cluster"),
            &name,
            &format!("system:open-cluster-management:{name}xyz:agent1"),
            &[&xyz_group, CLUSTERS_GROUP],
            USAGES,
            SIGNER,
        ),
        // other usages
        agent_csr(
            &unique("usages"),
            &name,
            &own_cn,
            &[&own_group, CLUSTERS_GROUP],
            &["client auth", "server auth"],
            SIGNER,
        ),
        // other signer
        agent_csr(
            &unique("signer"),
            &name,
            &own_cn,
            &[&own_group, CLUSTERS_GROUP],
            USAGES,
            "example.com/other",
        ),
    ];
    let mut bad_names = Vec::new();
    for csr in &bad {
        let created = eventually("agent creates CSRs", || async {
            agent_csrs.create(&PostParams::default(), csr).await.ok()
        })
        .await;
        bad_names.push(created.metadata.name.unwrap());
    }
    // A valid renewal created afterwards is approved: the controller has processed the others.
    let good = agent_csr(
        &unique("renew"),
        &name,
        &own_cn,
        &[&own_group, CLUSTERS_GROUP],
        USAGES,
        SIGNER,
    );
    let good_name = good.metadata.name.clone().unwrap();
    agent_csrs.create(&PostParams::default(), &good).await.unwrap();
    let done = wait_approved(&csrs, &good_name).await;
    let condition = done
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Approved")
        .unwrap();
    assert_eq!(
        condition.reason.as_deref(),
        Some("AutoApprovedByHubCSRApprovingController")
    );
    assert_eq!(
        condition.message.as_deref(),
        Some("Auto approving Managed cluster agent certificate after SubjectAccessReview.")
    );
    stays_unapproved(&csrs, &bad_names).await;

    // A CSR for the right identity created by someone else (the admin) is not a renewal.
    let by_admin = agent_csr(
        &unique("by-admin"),
        &name,
        &own_cn,
        &[&own_group, CLUSTERS_GROUP],
        USAGES,
        SIGNER,
    );
    csrs.create(&PostParams::default(), &by_admin).await.unwrap();

    // After denial the identity may no longer ask for certificates at all.
    hub.set_accept(&name, false).await;
    hub.wait_condition(&name, "HubAcceptedManagedCluster", "False")
        .await;
    let after = agent_csr(
        &unique("after-deny"),
        &name,
        &own_cn,
        &[&own_group, CLUSTERS_GROUP],
        USAGES,
        SIGNER,
    );
    eventually("denied identity forbidden to create CSRs", || async {
        forbidden(agent_csrs.create(&PostParams::default(), &after).await).then_some(())
    })
    .await;
    stays_unapproved(&csrs, &[by_admin.metadata.name.unwrap()]).await;
    hub.finish(&[]).await;
}

#[tokio::test]
async fn spokecluster_autoapproval_accepts_and_approves_configured_user() {
    let options = HubOptions {
        auto_approved_csr_users: vec!["autoapproval-user".to_string()],
        auto_accept: true,
        ..HubOptions::default()
    };
    let hub = Hub::start(options).await;
    bootstrap::ensure_bootstrap_rbac(&hub.client).await.unwrap();
    let kubeconfig = super::identity_kubeconfig(
        &hub.env,
        &hub.client,
        "autoapproval-user",
        &[bootstrap::BOOTSTRAP_GROUP],
    )
    .await;
    let user = client_from(&kubeconfig).await;
    let name = unique("auto");
    let cluster: ocm_api::cluster::v1::ManagedCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": name}, "spec": {"hubAcceptsClient": false}}))
    .unwrap();
    Api::<ocm_api::cluster::v1::ManagedCluster>::all(user.clone())
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    let csr = agent_csr(
        &unique("auto-csr"),
        &name,
        &format!("system:open-cluster-management:{name}:agent1"),
        &[
            &format!("system:open-cluster-management:{name}"),
            super::CLUSTERS_GROUP,
        ],
        USAGES,
        SIGNER,
    );
    Api::<CertificateSigningRequest>::all(user)
        .create(&PostParams::default(), &csr)
        .await
        .unwrap();
    wait_approved(
        &Api::all(hub.client.clone()),
        csr.metadata.name.as_deref().unwrap(),
    )
    .await;
    let accepted = hub
        .wait_condition(&name, "HubAcceptedManagedCluster", "True")
        .await;
    assert_eq!(accepted.spec.hub_accepts_client, Some(true));
    let stamp =
        accepted.metadata.annotations.unwrap()["open-cluster-management.io/automatically-accepted-on"]
            .clone();
    let whole_seconds = stamp.ends_with('Z') && !stamp.contains('.');
    assert!(
        stamp.parse::<k8s_openapi::jiff::Timestamp>().is_ok() && whole_seconds,
        "{stamp}"
    );
    // Denying after auto-acceptance sticks.
    hub.set_accept(&name, false).await;
    hub.wait_condition(&name, "HubAcceptedManagedCluster", "False")
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        hub.clusters().get(&name).await.unwrap().spec.hub_accepts_client,
        Some(false)
    );
    hub.finish(&[&name]).await;
}

#[tokio::test]
async fn certificate_renewal_pending_at_denial_is_not_approved() {
    use ocm_core::metrics::ControllerMetrics;
    use ocm_core::registration::hub::{accept, csr_approval, shared_roles};

    // Only the accept controller runs at first, so the renewal CSR stays pending over the denial.
    let env = ocm_controlplane::TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    // No other test's approver may take the renewal while this one's is not running.
    let _lock = crate::hub_lock::HubLock::exclusive(&env, crate::hub_lock::Lock::HubControllers).await;
    let admin = env.client().await.unwrap();
    let options = HubOptions {
        auto_approved_csr_users: vec!["autoapproval-user".to_string()],
        ..HubOptions::default()
    };
    let metrics = ControllerMetrics::default();
    let accepting = tokio::spawn(accept::run(admin.clone(), options.clone(), metrics.clone()));
    let housekeeping = tokio::spawn(shared_roles::run(admin.clone(), options.clone(), metrics.clone()));
    let name = unique("pending");
    let cluster: ocm_api::cluster::v1::ManagedCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": name}, "spec": {"hubAcceptsClient": true}}))
    .unwrap();
    let clusters = Api::<ocm_api::cluster::v1::ManagedCluster>::all(admin.clone());
    clusters.create(&PostParams::default(), &cluster).await.unwrap();
    let group = format!("system:open-cluster-management:{name}");
    let cn = format!("system:open-cluster-management:{name}:agent1");
    let kubeconfig = super::identity_kubeconfig(&env, &admin, &cn, &[&group, CLUSTERS_GROUP]).await;
    let agent = client_from(&kubeconfig).await;
    let pending = agent_csr(
        &unique("pending-renew"),
        &name,
        &cn,
        &[&group, CLUSTERS_GROUP],
        USAGES,
        SIGNER,
    );
    let agent_csrs = Api::<CertificateSigningRequest>::all(agent);
    eventually("accepted agent creates its renewal CSR", || async {
        agent_csrs.create(&PostParams::default(), &pending).await.ok()
    })
    .await;
    let patch = serde_json::json!({"spec": {"hubAcceptsClient": false}});
    clusters
        .patch(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    eventually("denied", || async {
        let cluster = clusters.get(&name).await.ok()?;
        let list = cluster.status?.conditions?;
        list.iter()
            .any(|c| c.type_ == "HubAcceptedManagedCluster" && c.reason == "HubClusterAdminDenied")
            .then_some(())
    })
    .await;
    // Wait until the denied identity has lost the renew permission before the approver starts.
    let review = k8s_openapi::api::authorization::v1::SubjectAccessReview {
        spec: k8s_openapi::api::authorization::v1::SubjectAccessReviewSpec {
            user: Some(cn.clone()),
            groups: Some(vec![group.clone(), CLUSTERS_GROUP.to_string()]),
            resource_attributes: Some(k8s_openapi::api::authorization::v1::ResourceAttributes {
                group: Some("register.open-cluster-management.io".to_string()),
                resource: Some("managedclusters".to_string()),
                subresource: Some("clientcertificates".to_string()),
                verb: Some("renew".to_string()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let reviews = Api::<k8s_openapi::api::authorization::v1::SubjectAccessReview>::all(admin.clone());
    eventually("renew no longer allowed", || async {
        let answer = reviews.create(&PostParams::default(), &review).await.ok()?;
        (!answer.status?.allowed).then_some(())
    })
    .await;
    let approving = tokio::spawn(csr_approval::run(admin.clone(), options, metrics));
    // A marker CSR from the auto-approved user shows the approver has gone through the list.
    bootstrap::ensure_bootstrap_rbac(&admin).await.unwrap();
    let user = client_from(
        &super::identity_kubeconfig(&env, &admin, "autoapproval-user", &[bootstrap::BOOTSTRAP_GROUP]).await,
    )
    .await;
    let marker = agent_csr(
        &unique("marker"),
        &name,
        &cn,
        &[&group, CLUSTERS_GROUP],
        USAGES,
        SIGNER,
    );
    Api::<CertificateSigningRequest>::all(user)
        .create(&PostParams::default(), &marker)
        .await
        .unwrap();
    let csrs = Api::<CertificateSigningRequest>::all(admin.clone());
    wait_approved(&csrs, marker.metadata.name.as_deref().unwrap()).await;
    stays_unapproved(&csrs, &[pending.metadata.name.clone().unwrap()]).await;
    // Deleted with the controllers still running, so that the accept controller releases it.
    let by_cluster =
        kube::api::ListParams::default().labels(&format!("open-cluster-management.io/cluster-name={name}"));
    let _ = csrs.delete_collection(&Default::default(), &by_cluster).await;
    let _ = clusters.delete(&name, &Default::default()).await;
    eventually("the cluster removed", || async {
        clusters.get_opt(&name).await.ok()?.is_none().then_some(())
    })
    .await;
    let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(admin.clone())
        .delete(&name, &Default::default())
        .await;
    for task in [accepting, housekeeping, approving] {
        task.abort();
    }
}

/// Applies `object` unless one of that name exists; true when this call created it.
async fn create_if_missing<K>(api: &Api<K>, object: &K) -> bool
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => true,
        Err(kube::Error::Api(status)) if status.code == 409 => false,
        Err(error) => panic!("creating {:?}: {error}", object.meta().name),
    }
}

#[tokio::test]
async fn older_clusteradm_bootstrap_names_still_join_and_are_auto_approved() {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    use ocm_core::metrics::ControllerMetrics;
    use ocm_core::registration::hub::csr_approval;

    let env = ocm_controlplane::TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    // The approver below approves every bootstrap CSR: no other test's may be pending meanwhile.
    let _lock = crate::hub_lock::HubLock::exclusive(&env, crate::hub_lock::Lock::HubControllers).await;
    let admin = env.client().await.unwrap();
    bootstrap::ensure_bootstrap_rbac(&admin).await.unwrap();
    // What an older `clusteradm init` made: its ServiceAccount, ClusterRole and binding.
    let namespace = bootstrap::BOOTSTRAP_NAMESPACE;
    let legacy_sa = bootstrap::LEGACY_BOOTSTRAP_SERVICE_ACCOUNT;
    let role: ClusterRole = serde_json::from_value(serde_json::json!({
        "metadata": {"name": bootstrap::LEGACY_BOOTSTRAP_CLUSTER_ROLE},
        "rules": [
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
             "verbs": ["create", "get", "list", "watch"]},
            {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters"],
             "verbs": ["get", "create", "list", "update"]}]}))
    .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "cluster-bootstrap-sa"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": bootstrap::LEGACY_BOOTSTRAP_CLUSTER_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": legacy_sa, "namespace": namespace}]}))
    .unwrap();
    let account: ServiceAccount =
        serde_json::from_value(serde_json::json!({"metadata": {"name": legacy_sa, "namespace": namespace}}))
            .unwrap();
    let roles = Api::<ClusterRole>::all(admin.clone());
    let bindings = Api::<ClusterRoleBinding>::all(admin.clone());
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), namespace);
    let created = [
        create_if_missing(&roles, &role).await,
        create_if_missing(&bindings, &binding).await,
        create_if_missing(&accounts, &account).await,
    ];
    let token = accounts
        .create_token_request(legacy_sa, &PostParams::default(), &Default::default())
        .await
        .unwrap()
        .status
        .and_then(|s| s.token)
        .unwrap();
    let (server, ca) = crate::support::server_and_ca(env.kubeconfig_path());
    let legacy_user = bootstrap::service_account_user(namespace, legacy_sa);
    let joiner = client_from(&bootstrap::token_kubeconfig(&server, &ca, &legacy_user, &token).unwrap()).await;

    // The hub auto-approves upstream's bootstrap identity; the older one stands for it.
    let options = HubOptions {
        auto_approved_csr_users: vec![bootstrap::bootstrap_user()],
        ..HubOptions::default()
    };
    let approving = tokio::spawn(csr_approval::run(
        admin.clone(),
        options,
        ControllerMetrics::default(),
    ));
    let name = unique("legacy");
    let cluster: ocm_api::cluster::v1::ManagedCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": name}, "spec": {"hubAcceptsClient": false}}))
    .unwrap();
    let clusters = Api::<ocm_api::cluster::v1::ManagedCluster>::all(admin.clone());
    // The new bindings may take a moment to reach the authorizer of a real hub.
    eventually(
        "the older bootstrap identity may create its ManagedCluster",
        || async {
            let answer = Api::<ocm_api::cluster::v1::ManagedCluster>::all(joiner.clone())
                .create(&PostParams::default(), &cluster)
                .await;
            (answer.is_ok() || clusters.get_opt(&name).await.ok()?.is_some()).then_some(())
        },
    )
    .await;
    let csr = agent_csr(
        &unique("legacy-csr"),
        &name,
        &format!("system:open-cluster-management:{name}:agent1"),
        &[&format!("system:open-cluster-management:{name}"), CLUSTERS_GROUP],
        USAGES,
        SIGNER,
    );
    let made = Api::<CertificateSigningRequest>::all(joiner)
        .create(&PostParams::default(), &csr)
        .await
        .unwrap();
    assert_eq!(made.spec.username.as_deref(), Some(legacy_user.as_str()));
    let csrs = Api::<CertificateSigningRequest>::all(admin.clone());
    wait_approved(&csrs, csr.metadata.name.as_deref().unwrap()).await;
    approving.abort();
    let _ = csrs
        .delete(csr.metadata.name.as_deref().unwrap(), &Default::default())
        .await;
    let _ = clusters.delete(&name, &Default::default()).await;
    if created[2] {
        let _ = accounts.delete(legacy_sa, &Default::default()).await;
    }
    if created[1] {
        let _ = bindings.delete("cluster-bootstrap-sa", &Default::default()).await;
    }
    if created[0] {
        let _ = roles
            .delete(bootstrap::LEGACY_BOOTSTRAP_CLUSTER_ROLE, &Default::default())
            .await;
    }
}
