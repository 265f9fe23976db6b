//! The registration controller (addon-framework.md §2.2; §8.1 scenarios 13, 16, 19, 20): status
//! registrations, namespace and `RegistrationApplied`, the ClusterManagementAddOn owner gate, and
//! the RBAC permission-config builder against the hub.

#![allow(clippy::unwrap_used, reason = "test")]

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Api;
use ocm_addon_framework::agent::{AgentAddonOptions, ConfigGvr, RegistrationOption};
use ocm_addon_framework::registration::rbac::RbacPermissionConfigBuilder;
use ocm_addon_framework::registration::{KubeClientSignerConfigurations, default_groups, default_user};
use ocm_api::addon::v1beta1::{ManagedClusterAddOn, RegistrationConfig};
use serde_json::json;

use crate::support::{
    Scenario, TestAddon, condition, consistently, eventually, hub, patch_mca_status, run_manager,
};

/// Fixed registrations (upstream's tests return what the test sets).
struct Fixed(Vec<RegistrationConfig>);

#[async_trait::async_trait]
impl ocm_addon_framework::agent::RegistrationConfigurations for Fixed {
    async fn configurations(
        &self,
        _cluster: &ocm_api::cluster::v1::ManagedCluster,
        _addon: &ManagedClusterAddOn,
    ) -> Result<Vec<RegistrationConfig>, ocm_addon_framework::agent::AddonError> {
        Ok(self.0.clone())
    }
}

fn registrations(value: serde_json::Value) -> Vec<RegistrationConfig> {
    serde_json::from_value(value).unwrap()
}

fn addon_with(name: &str, configs: Vec<RegistrationConfig>) -> TestAddon {
    TestAddon {
        options: AgentAddonOptions {
            addon_name: name.to_string(),
            registration: Some(RegistrationOption {
                configurations: Some(Arc::new(Fixed(configs))),
                ..Default::default()
            }),
            ..Default::default()
        },
    }
}

fn status_registrations(mca: &ManagedClusterAddOn) -> serde_json::Value {
    serde_json::to_value(mca.status.as_ref().and_then(|s| s.registrations.clone())).unwrap()
}

/// §8.1 scenario 13: a kube-client registration with the install-namespace annotation `test`
/// and driver `csr` gets `RegistrationApplied` True and `status.namespace` `test`.
#[tokio::test]
async fn cluster_management_addon_update_config_related_object() {
    let hub = hub().await;
    let s = Scenario::new("reg13");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    let _manager = run_manager(
        &hub.client,
        vec![addon_with(&s.addon, registrations(json!([{"type": "kubeClient"}]))).shared()],
    );
    let mca = ocm_api::addon::v1beta1::ManagedClusterAddOn {
        metadata: kube::api::ObjectMeta {
            name: Some(s.addon.clone()),
            namespace: Some(s.cluster.clone()),
            annotations: Some(
                [(
                    ocm_api::names::annotations::V1ALPHA1_INSTALL_NAMESPACE.to_string(),
                    "test".to_string(),
                )]
                .into(),
            ),
            owner_references: Some(vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    api_version: "addon.open-cluster-management.io/v1beta1".into(),
                    kind: "ClusterManagementAddOn".into(),
                    name: s.addon.clone(),
                    uid: cma.metadata.uid.clone().unwrap(),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        },
        spec: Default::default(),
        status: None,
    };
    Api::<ManagedClusterAddOn>::namespaced(hub.client.clone(), &s.cluster)
        .create(&Default::default(), &mca)
        .await
        .unwrap();
    eventually("the registrations", || async {
        s.get_mca(&hub.client).await.filter(|m| {
            m.status
                .as_ref()
                .and_then(|st| st.registrations.as_ref())
                .is_some()
        })
    })
    .await;
    patch_mca_status(
        &hub.client,
        &s.cluster,
        &s.addon,
        json!({"registrations": [{"type": "kubeClient", "kubeClient": {"driver": "csr"}}]}),
    )
    .await;
    let mca = eventually("RegistrationApplied True and namespace test", || async {
        s.get_mca(&hub.client).await.filter(|m| {
            condition(m, "RegistrationApplied").is_some_and(|c| c.status == "True")
                && m.status.as_ref().and_then(|st| st.namespace.as_deref()) == Some("test")
                && status_registrations(m)[0]["kubeClient"]["subject"]["user"].is_string()
        })
    })
    .await;
    let applied = condition(&mca, "RegistrationApplied").unwrap();
    assert_eq!(applied.reason, "SetPermissionApplied");
    assert_eq!(applied.message, "Registration of the addon agent is configured");
    // The csr driver with no subject gets the default user and groups.
    assert_eq!(
        status_registrations(&mca),
        json!([{"type": "kubeClient", "kubeClient": {"driver": "csr", "subject": {
            "user": default_user(&s.cluster, &s.addon, &s.addon),
            "groups": default_groups(&s.cluster, &s.addon)}}}])
    );
    s.cleanup(&hub.client).await;
}

/// §8.1 scenario 19: explicit user and groups with driver `csr` are published as given.
#[tokio::test]
async fn registration_setup() {
    let hub = hub().await;
    let s = Scenario::new("reg19");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    let config =
        json!([{"type": "kubeClient", "kubeClient": {"subject": {"user": "test", "groups": ["g1", "g2"]}}}]);
    let _manager = run_manager(
        &hub.client,
        vec![addon_with(&s.addon, registrations(config.clone())).shared()],
    );
    s.create_mca(&hub.client, json!({}), &cma).await;
    let mca = eventually("the registrations", || async {
        s.get_mca(&hub.client)
            .await
            .filter(|m| status_registrations(m) == config)
    })
    .await;
    assert_eq!(
        mca.status.as_ref().unwrap().namespace.as_deref(),
        Some(ocm_api::names::namespaces::ADDON_AGENT)
    );
    patch_mca_status(
        &hub.client,
        &s.cluster,
        &s.addon,
        json!({"registrations": [{"type": "kubeClient", "kubeClient": {"driver": "csr",
            "subject": {"user": "test", "groups": ["g1", "g2"]}}}]}),
    )
    .await;
    consistently(2, "the registration with driver csr", || async {
        let mca = s.get_mca(&hub.client).await.unwrap();
        status_registrations(&mca)
            == json!([{"type": "kubeClient", "kubeClient": {"driver": "csr",
                "subject": {"user": "test", "groups": ["g1", "g2"]}}}])
    })
    .await;
    s.cleanup(&hub.client).await;
}

/// §8.1 scenario 20: after the status is overwritten with only the kube-client entry, the
/// controller restores both entries and keeps the agent's driver.
#[tokio::test]
async fn registration_update() {
    let hub = hub().await;
    let s = Scenario::new("reg20");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    let config = json!([
        {"type": "kubeClient", "kubeClient": {"subject": {"user": "test", "groups": ["g1"]}}},
        {"type": "customSigner", "customSigner": {"signerName": "open-cluster-management.io/test-signer",
            "subject": {"user": "test", "groups": ["g1"], "organizationUnits": ["ou1"]}}}
    ]);
    let _manager = run_manager(
        &hub.client,
        vec![addon_with(&s.addon, registrations(config.clone())).shared()],
    );
    s.create_mca(&hub.client, json!({}), &cma).await;
    eventually("both registrations", || async {
        s.get_mca(&hub.client)
            .await
            .filter(|m| status_registrations(m) == config)
    })
    .await;
    patch_mca_status(
        &hub.client,
        &s.cluster,
        &s.addon,
        json!({"registrations": [{"type": "kubeClient", "kubeClient": {"driver": "csr"}}]}),
    )
    .await;
    let mut restored = config.clone();
    restored[0]["kubeClient"]["driver"] = json!("csr");
    eventually("both registrations restored", || async {
        s.get_mca(&hub.client)
            .await
            .filter(|m| status_registrations(m) == restored)
    })
    .await;
    s.cleanup(&hub.client).await;
}

/// Without a ClusterManagementAddOn owner nothing is written (§2.2 step 2); with no
/// registration option `RegistrationApplied` is True with `NilRegistration` and no namespace;
/// supported config types are published.
#[tokio::test]
async fn registration_waits_for_the_cma_owner_and_reports_nil_registration() {
    let hub = hub().await;
    let s = Scenario::new("regnil");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    let mut addon = TestAddon::named(&s.addon);
    addon.options.supported_configs = vec![ConfigGvr {
        group: "addon.open-cluster-management.io".into(),
        version: "v1alpha1".into(),
        resource: "addondeploymentconfigs".into(),
    }];
    let _manager = run_manager(&hub.client, vec![addon.shared()]);
    crate::support::create_mca(&hub.client, &s.cluster, &s.addon, json!({}), None).await;
    consistently(3, "no status without the owner", || async {
        s.get_mca(&hub.client).await.unwrap().status.is_none()
    })
    .await;
    let owner = json!({"metadata": {"ownerReferences": [{
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ClusterManagementAddOn",
        "name": s.addon, "uid": cma.metadata.uid}]}});
    Api::<ManagedClusterAddOn>::namespaced(hub.client.clone(), &s.cluster)
        .patch(&s.addon, &Default::default(), &kube::api::Patch::Merge(&owner))
        .await
        .unwrap();
    let mca = eventually("NilRegistration", || async {
        s.get_mca(&hub.client)
            .await
            .filter(|m| condition(m, "RegistrationApplied").is_some_and(|c| c.reason == "NilRegistration"))
    })
    .await;
    let status = mca.status.unwrap();
    assert_eq!(status.namespace, None);
    assert_eq!(
        serde_json::to_value(&status.supported_configs).unwrap(),
        json!([{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"}])
    );
    s.cleanup(&hub.client).await;
}

/// §8.1 scenario 16: a cluster being deleted gets a label; the framework never creates a
/// ManagedClusterAddOn by itself.
#[tokio::test]
async fn create_addon_on_a_deleted_managed_cluster() {
    let hub = hub().await;
    let s = Scenario::new("reg16");
    s.create_cluster_and_cma(&hub.client, json!({})).await;
    let clusters = Api::<ocm_api::cluster::v1::ManagedCluster>::all(hub.client.clone());
    let finalizer = json!({"metadata": {"finalizers": ["test.open-cluster-management.io/hold"]}});
    clusters
        .patch(
            &s.cluster,
            &Default::default(),
            &kube::api::Patch::Merge(&finalizer),
        )
        .await
        .unwrap();
    clusters.delete(&s.cluster, &Default::default()).await.unwrap();
    let _manager = run_manager(&hub.client, vec![TestAddon::named(&s.addon).shared()]);
    let label = json!({"metadata": {"labels": {"test": "deleting"}}});
    clusters
        .patch(&s.cluster, &Default::default(), &kube::api::Patch::Merge(&label))
        .await
        .unwrap();
    consistently(5, "no ManagedClusterAddOn", || async {
        s.get_mca(&hub.client).await.is_none()
    })
    .await;
    let release = json!({"metadata": {"finalizers": null}});
    clusters
        .patch(
            &s.cluster,
            &Default::default(),
            &kube::api::Patch::Merge(&release),
        )
        .await
        .unwrap();
    s.cleanup(&hub.client).await;
}

/// The RBAC permission-config builder: `RegistrationApplied` is False with
/// `PermissionConfigPending` until a kube-client subject is registered, then the Role and
/// RoleBinding exist in the cluster namespace, owned by the ManagedClusterAddOn, for that subject.
#[tokio::test]
async fn permission_config_waits_for_the_subject_then_binds_the_role() {
    let hub = hub().await;
    let s = Scenario::new("regrbac");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    let role: Role = serde_json::from_value(json!({"metadata": {"name": s.addon},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}))
    .unwrap();
    let permission = RbacPermissionConfigBuilder::new(hub.client.clone())
        .bind_kube_client_role(role)
        .build();
    let addon = TestAddon {
        options: AgentAddonOptions {
            addon_name: s.addon.clone(),
            registration: Some(RegistrationOption {
                configurations: Some(Arc::new(Fixed(registrations(json!([{"type": "kubeClient"}]))))),
                permission_config: Some(Arc::new(permission)),
                ..Default::default()
            }),
            ..Default::default()
        },
    };
    let _manager = run_manager(&hub.client, vec![addon.shared()]);
    let mca = s.create_mca(&hub.client, json!({}), &cma).await;
    let pending = eventually("PermissionConfigPending", || async {
        s.get_mca(&hub.client).await.filter(|m| {
            condition(m, "RegistrationApplied")
                .is_some_and(|c| c.status == "False" && c.reason == "PermissionConfigPending")
        })
    })
    .await;
    assert_eq!(
        condition(&pending, "RegistrationApplied").unwrap().message,
        "registration subject not ready"
    );
    // The agent's registration agent picks the csr driver: the default subject appears.
    patch_mca_status(
        &hub.client,
        &s.cluster,
        &s.addon,
        json!({"registrations": [{"type": "kubeClient", "kubeClient": {"driver": "csr"}}]}),
    )
    .await;
    eventually("SetPermissionApplied", || async {
        s.get_mca(&hub.client).await.filter(|m| {
            condition(m, "RegistrationApplied").is_some_and(|c| c.reason == "SetPermissionApplied")
        })
    })
    .await;
    let binding = Api::<RoleBinding>::namespaced(hub.client.clone(), &s.cluster)
        .get(&s.addon)
        .await
        .unwrap();
    let subjects: Vec<_> = binding
        .subjects
        .unwrap()
        .into_iter()
        .map(|s| (s.kind, s.name))
        .collect();
    let groups = default_groups(&s.cluster, &s.addon);
    assert_eq!(
        subjects,
        vec![
            ("User".to_string(), default_user(&s.cluster, &s.addon, &s.addon)),
            ("Group".to_string(), groups[0].clone()),
            ("Group".to_string(), groups[1].clone()),
        ]
    );
    let role = Api::<Role>::namespaced(hub.client.clone(), &s.cluster)
        .get(&s.addon)
        .await
        .unwrap();
    let owner = &role.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("ManagedClusterAddOn", mca.metadata.uid.as_deref().unwrap())
    );
    assert_eq!(owner.block_owner_deletion, Some(true));
    s.cleanup(&hub.client).await;
}

/// The kube-client signer configurations helper end to end: one registration with the default
/// user and groups of the named agent.
#[tokio::test]
async fn kube_client_signer_configurations_publish_the_default_subject() {
    let hub = hub().await;
    let s = Scenario::new("regkc");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    let addon = TestAddon {
        options: AgentAddonOptions {
            addon_name: s.addon.clone(),
            registration: Some(RegistrationOption {
                configurations: Some(Arc::new(KubeClientSignerConfigurations::new(&s.addon, "agent1"))),
                ..Default::default()
            }),
            ..Default::default()
        },
    };
    let _manager = run_manager(&hub.client, vec![addon.shared()]);
    s.create_mca(&hub.client, json!({}), &cma).await;
    let expected = json!([{"type": "kubeClient", "kubeClient": {"subject": {
        "user": default_user(&s.cluster, &s.addon, "agent1"),
        "groups": default_groups(&s.cluster, &s.addon)}}}]);
    eventually("the default subject", || async {
        s.get_mca(&hub.client)
            .await
            .filter(|m| status_registrations(m) == expected)
    })
    .await;
    s.cleanup(&hub.client).await;
}

/// A permission config that fails.
struct Failing;

#[async_trait::async_trait]
impl ocm_addon_framework::agent::PermissionConfig for Failing {
    async fn configure(
        &self,
        _cluster: &ocm_api::cluster::v1::ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<(), ocm_addon_framework::agent::AddonError> {
        Err(ocm_addon_framework::agent::AddonError::ConfigurePermission {
            addon: addon.metadata.name.clone().unwrap_or_default(),
            source: "no RBAC today".into(),
        })
    }
}

/// A failing permission config sets `RegistrationApplied` False with `SetPermissionFailed` and
/// the error in the message.
#[tokio::test]
async fn registration_reports_a_failed_permission_config() {
    let hub = hub().await;
    let s = Scenario::new("regfail");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    let addon = TestAddon {
        options: AgentAddonOptions {
            addon_name: s.addon.clone(),
            registration: Some(RegistrationOption {
                configurations: Some(Arc::new(Fixed(registrations(json!([{"type": "kubeClient"}]))))),
                permission_config: Some(Arc::new(Failing)),
                ..Default::default()
            }),
            ..Default::default()
        },
    };
    let _manager = run_manager(&hub.client, vec![addon.shared()]);
    s.create_mca(&hub.client, json!({}), &cma).await;
    let mca = eventually("SetPermissionFailed", || async {
        s.get_mca(&hub.client).await.filter(|m| {
            condition(m, "RegistrationApplied")
                .is_some_and(|c| c.status == "False" && c.reason == "SetPermissionFailed")
        })
    })
    .await;
    let message = &condition(&mca, "RegistrationApplied").unwrap().message;
    assert!(
        message.starts_with("Failed to set permission for hub agent: ") && message.contains("no RBAC today"),
        "{message}"
    );
    // Nothing else is published while the permissions fail.
    assert_eq!(mca.status.unwrap().registrations, None);
    // And a Warning event on the ManagedClusterAddOn says so.
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(hub.client.clone(), &s.cluster);
    eventually("the Warning event", || async {
        events
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| {
                e.type_.as_deref() == Some("Warning")
                    && e.reason.as_deref() == Some("SetPermissionFailed")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(s.addon.as_str())
            })
    })
    .await;
    s.cleanup(&hub.client).await;
}

/// The RBAC builder's cluster-wide steps: a ClusterRole bound to a group by a binding of the
/// same name, its rules updated when they change; an aggregated ClusterRole is refused.
#[tokio::test]
async fn permission_config_applies_and_updates_cluster_roles() {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    use ocm_addon_framework::agent::PermissionConfig;

    let hub = hub().await;
    let s = Scenario::new("regcr");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    let mca = s.create_mca(&hub.client, json!({}), &cma).await;
    let cluster = Api::<ocm_api::cluster::v1::ManagedCluster>::all(hub.client.clone())
        .get(&s.cluster)
        .await
        .unwrap();
    let role = |verbs: serde_json::Value| -> ClusterRole {
        serde_json::from_value(json!({"metadata": {"name": s.addon},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}]}))
        .unwrap()
    };
    RbacPermissionConfigBuilder::new(hub.client.clone())
        .bind_cluster_role_to_group(role(json!(["get"])), "group1")
        .build()
        .configure(&cluster, &mca)
        .await
        .unwrap();
    let roles = Api::<ClusterRole>::all(hub.client.clone());
    let bindings = Api::<ClusterRoleBinding>::all(hub.client.clone());
    let binding = bindings.get(&s.addon).await.unwrap();
    assert_eq!(binding.role_ref.name, s.addon);
    let subject = &binding.subjects.unwrap()[0];
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str()),
        ("Group", "group1")
    );
    RbacPermissionConfigBuilder::new(hub.client.clone())
        .bind_cluster_role_to_user(role(json!(["get", "list"])), "user1")
        .build()
        .configure(&cluster, &mca)
        .await
        .unwrap();
    let updated = roles.get(&s.addon).await.unwrap();
    assert_eq!(updated.rules.unwrap()[0].verbs, vec!["get", "list"]);
    let subject = &bindings.get(&s.addon).await.unwrap().subjects.unwrap()[0];
    assert_eq!((subject.kind.as_str(), subject.name.as_str()), ("User", "user1"));
    let aggregated: ClusterRole =
        serde_json::from_value(json!({"metadata": {"name": format!("{}-agg", s.addon)},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}}))
        .unwrap();
    let refused = RbacPermissionConfigBuilder::new(hub.client.clone())
        .with_static_cluster_role(aggregated)
        .build()
        .configure(&cluster, &mca)
        .await;
    assert!(refused.unwrap_err().to_string().contains("aggregated"));
    // Cluster-wide objects are not owned: the test removes them.
    let _ = roles.delete(&s.addon, &Default::default()).await;
    let _ = bindings.delete(&s.addon, &Default::default()).await;
    s.cleanup(&hub.client).await;
}

/// Registrations that change while the manager runs.
struct Changing(std::sync::Mutex<Vec<RegistrationConfig>>);

#[async_trait::async_trait]
impl ocm_addon_framework::agent::RegistrationConfigurations for Changing {
    async fn configurations(
        &self,
        _cluster: &ocm_api::cluster::v1::ManagedCluster,
        _addon: &ManagedClusterAddOn,
    ) -> Result<Vec<RegistrationConfig>, ocm_addon_framework::agent::AddonError> {
        Ok(self.0.lock().unwrap().clone())
    }
}

/// `AddonManager::trigger` reconciles the registration of one add-on on one cluster although
/// nothing changed on the hub (§2.1).
#[tokio::test]
async fn registration_follows_a_trigger() {
    let hub = hub().await;
    let s = Scenario::new("regtrig");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    let first = json!([{"type": "kubeClient", "kubeClient": {"subject": {"user": "first"}}}]);
    let second = json!([{"type": "kubeClient", "kubeClient": {"subject": {"user": "second"}}}]);
    let configurations = Arc::new(Changing(std::sync::Mutex::new(registrations(first.clone()))));
    let addon = TestAddon {
        options: AgentAddonOptions {
            addon_name: s.addon.clone(),
            registration: Some(RegistrationOption {
                configurations: Some(configurations.clone()),
                ..Default::default()
            }),
            ..Default::default()
        },
    };
    let (manager, _running) = crate::support::run_shared_manager(&hub.client, vec![addon.shared()]);
    s.create_mca(&hub.client, json!({}), &cma).await;
    eventually("the first registration", || async {
        s.get_mca(&hub.client)
            .await
            .filter(|m| status_registrations(m) == first)
    })
    .await;
    *configurations.0.lock().unwrap() = registrations(second.clone());
    manager.trigger(&s.cluster, &s.addon);
    eventually("the second registration", || async {
        s.get_mca(&hub.client)
            .await
            .filter(|m| status_registrations(m) == second)
    })
    .await;
    s.cleanup(&hub.client).await;
}
