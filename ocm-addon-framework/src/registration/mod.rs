//! Helpers for an add-on's hub registration (addon-framework.md §1.4): the default user and
//! groups of an agent, kube-client registrations, CSR approvers ([`approve`]), a CSR signer
//! ([`signer`]), an RBAC permission-config builder ([`rbac`]) and the RBAC subjects of an
//! add-on's registrations.
//!
//! Plug them into [`RegistrationOption`](crate::agent::RegistrationOption):
//!
//! ```
//! use std::sync::Arc;
//! use ocm_addon_framework::agent::RegistrationOption;
//! use ocm_addon_framework::registration::{KubeClientSignerConfigurations, approve::DefaultCsrApprover};
//!
//! let registration = RegistrationOption {
//!     configurations: Some(Arc::new(KubeClientSignerConfigurations::new("helloworld", "agent"))),
//!     csr_approve_check: Some(Arc::new(DefaultCsrApprover::new("agent"))),
//!     ..Default::default()
//! };
//! # let _ = registration;
//! ```

pub mod approve;
pub mod rbac;
pub mod signer;

pub use approve::{ApproveAll, DefaultCsrApprover, UnionCsrApprover};
pub use rbac::{RbacPermissionConfig, RbacPermissionConfigBuilder};
pub use signer::SignerWithExpiry;

use async_trait::async_trait;
use k8s_openapi::api::rbac::v1::Subject;
use ocm_api::addon::v1beta1::{
    KubeClientConfig, KubeClientSubject, ManagedClusterAddOn, RegistrationConfig, RegistrationConfigType,
};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::subjects;

use crate::agent::{AddonError, RegistrationConfigurations};

/// The user an add-on agent authenticates as on the hub:
/// `system:open-cluster-management:cluster:<cluster>:addon:<addon>:agent:<agent>`.
#[must_use]
pub fn default_user(cluster: &str, addon: &str, agent: &str) -> String {
    format!(
        "{}cluster:{cluster}:addon:{addon}:agent:{agent}",
        subjects::SUBJECT_PREFIX
    )
}

/// The groups of an add-on agent on the hub: the add-on on this cluster
/// (`system:open-cluster-management:cluster:<cluster>:addon:<addon>`) and the add-on on every
/// cluster (`system:open-cluster-management:addon:<addon>`). Upstream dropped
/// `system:authenticated` from this list; so do we.
#[must_use]
pub fn default_groups(cluster: &str, addon: &str) -> Vec<String> {
    vec![
        format!("{}cluster:{cluster}:addon:{addon}", subjects::SUBJECT_PREFIX),
        format!("{}addon:{addon}", subjects::SUBJECT_PREFIX),
    ]
}

/// One kube-client registration with the [`default_user`] and [`default_groups`] of the agent
/// (upstream's `KubeClientSignerConfigurations`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeClientSignerConfigurations {
    addon_name: String,
    agent_name: String,
}

impl KubeClientSignerConfigurations {
    /// The registrations of agent `agent_name` of add-on `addon_name`.
    #[must_use]
    pub fn new(addon_name: impl Into<String>, agent_name: impl Into<String>) -> Self {
        Self {
            addon_name: addon_name.into(),
            agent_name: agent_name.into(),
        }
    }

    /// The registration for `cluster`.
    #[must_use]
    pub fn registration(&self, cluster: &str) -> RegistrationConfig {
        kube_client_registration(
            default_user(cluster, &self.addon_name, &self.agent_name),
            default_groups(cluster, &self.addon_name),
        )
    }
}

#[async_trait]
impl RegistrationConfigurations for KubeClientSignerConfigurations {
    async fn configurations(
        &self,
        cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
    ) -> Result<Vec<RegistrationConfig>, AddonError> {
        let name = cluster.metadata.name.as_deref().unwrap_or_default();
        Ok(vec![self.registration(name)])
    }
}

/// A kube-client registration for `user` and `groups` (upstream's `KubeClientRegistration`);
/// with both empty the `kubeClient` block is left out.
#[must_use]
pub fn kube_client_registration(user: String, groups: Vec<String>) -> RegistrationConfig {
    let kube_client = (!user.is_empty() || !groups.is_empty()).then(|| KubeClientConfig {
        driver: None,
        subject: Some(KubeClientSubject {
            user: (!user.is_empty()).then_some(user),
            groups: (!groups.is_empty()).then_some(groups),
        }),
    });
    RegistrationConfig {
        type_: RegistrationConfigType::KubeClient,
        kube_client,
        custom_signer: None,
    }
}

/// The RBAC subjects of the registration of `addon` for `signer` (upstream's
/// `BuildSubjectsFromRegistration`): the first kube-client registration for
/// `kubernetes.io/kube-apiserver-client`, else the custom-signer registration of that signer. A
/// `User` subject for a non-empty user and a `Group` subject per group, `system:authenticated`
/// left out; empty when the registration or its subject is missing.
#[must_use]
pub fn subjects_from_registrations(addon: &ManagedClusterAddOn, signer: &str) -> Vec<Subject> {
    let registrations = addon
        .status
        .as_ref()
        .and_then(|s| s.registrations.as_deref())
        .unwrap_or_default();
    let (user, groups) = if signer == subjects::KUBE_APISERVER_CLIENT_SIGNER {
        let Some(subject) = registrations
            .iter()
            .find(|r| r.type_ == RegistrationConfigType::KubeClient)
            .and_then(|r| r.kube_client.as_ref())
            .and_then(|k| k.subject.as_ref())
        else {
            return Vec::new();
        };
        (subject.user.clone(), subject.groups.clone())
    } else {
        let Some(subject) = registrations
            .iter()
            .filter(|r| r.type_ == RegistrationConfigType::CustomSigner)
            .filter_map(|r| r.custom_signer.as_ref())
            .find(|c| c.signer_name == signer)
            .and_then(|c| c.subject.as_ref())
        else {
            return Vec::new();
        };
        (subject.user.clone(), subject.groups.clone())
    };
    let mut out = Vec::new();
    if let Some(user) = user.filter(|u| !u.is_empty()) {
        out.push(Subject {
            kind: "User".into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            name: user,
            namespace: None,
        });
    }
    for group in groups.unwrap_or_default() {
        if group == subjects::AUTHENTICATED_GROUP {
            continue;
        }
        out.push(Subject {
            kind: "Group".into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            name: group,
            namespace: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use super::*;
    use serde_json::json;

    fn addon_with(registrations: serde_json::Value) -> ManagedClusterAddOn {
        serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
            "metadata": {"name": "a", "namespace": "c"}, "spec": {},
            "status": {"registrations": registrations}
        }))
        .unwrap()
    }

    #[test]
    fn default_user_and_groups_follow_upstream() {
        assert_eq!(
            default_user("c1", "hello", "agent"),
            "system:open-cluster-management:cluster:c1:addon:hello:agent:agent"
        );
        assert_eq!(
            default_groups("c1", "hello"),
            vec![
                "system:open-cluster-management:cluster:c1:addon:hello",
                "system:open-cluster-management:addon:hello"
            ]
        );
    }

    #[tokio::test]
    async fn kube_client_signer_configurations_give_one_default_registration() {
        let cluster: ManagedCluster = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": "c1"}, "spec": {}
        }))
        .unwrap();
        let configs = KubeClientSignerConfigurations::new("hello", "agent")
            .configurations(&cluster, &addon_with(json!([])))
            .await
            .unwrap();
        let json = serde_json::to_value(&configs).unwrap();
        assert_eq!(
            json,
            json!([{"type": "kubeClient", "kubeClient": {"subject": {
                "user": "system:open-cluster-management:cluster:c1:addon:hello:agent:agent",
                "groups": ["system:open-cluster-management:cluster:c1:addon:hello",
                           "system:open-cluster-management:addon:hello"]}}}])
        );
    }

    #[test]
    fn an_empty_kube_client_registration_has_no_block() {
        let r = kube_client_registration(String::new(), Vec::new());
        assert_eq!(r.kube_client, None);
        assert_eq!(r.type_, RegistrationConfigType::KubeClient);
    }

    #[test]
    fn subjects_skip_system_authenticated_and_empty_users() {
        let addon = addon_with(json!([
            {"type": "kubeClient", "kubeClient": {"subject": {"user": "u1",
                "groups": ["g1", "system:authenticated"]}}},
            {"type": "kubeClient", "kubeClient": {"subject": {"user": "u2"}}},
            {"type": "customSigner", "customSigner": {"signerName": "example.com/s",
                "subject": {"groups": ["g2"]}}}
        ]));
        let kube = subjects_from_registrations(&addon, subjects::KUBE_APISERVER_CLIENT_SIGNER);
        let names: Vec<_> = kube.iter().map(|s| (s.kind.as_str(), s.name.as_str())).collect();
        assert_eq!(names, vec![("User", "u1"), ("Group", "g1")]);
        let custom = subjects_from_registrations(&addon, "example.com/s");
        let names: Vec<_> = custom
            .iter()
            .map(|s| (s.kind.as_str(), s.name.as_str()))
            .collect();
        assert_eq!(names, vec![("Group", "g2")]);
        assert!(subjects_from_registrations(&addon, "example.com/other").is_empty());
        assert!(
            subjects_from_registrations(&addon_with(json!([])), subjects::KUBE_APISERVER_CLIENT_SIGNER)
                .is_empty()
        );
    }
}
