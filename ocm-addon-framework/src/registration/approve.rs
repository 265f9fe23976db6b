//! CSR approvers for [`RegistrationOption::csr_approve_check`](crate::agent::RegistrationOption):
//! the default approver with upstream's checks ([`DefaultCsrApprover`]), a logical AND of
//! approvers ([`UnionCsrApprover`]) and approve-everything ([`ApproveAll`], upstream's v1alpha1
//! `ApprovalAllCSRs`).

use std::sync::Arc;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::{annotations, subjects};
use x509_parser::prelude::{FromDer, X509CertificationRequest};

use super::{default_groups, default_user};
use crate::agent::CsrApproveCheck;

/// Who asked for `csr`: `spec.username`, except that a CSR created by the gRPC server names
/// the real requester in the annotation `open-cluster-management.io/csr-user`.
#[must_use]
pub fn csr_requester(csr: &CertificateSigningRequest) -> String {
    let username = csr.spec.username.clone().unwrap_or_default();
    if username == subjects::GRPC_SERVER_USER
        && let Some(user) = csr
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotations::CSR_USER))
    {
        return user.clone();
    }
    username
}

/// The subject (common name, organizations) of the PEM `CERTIFICATE REQUEST` in `request`;
/// `None` if it is not one.
#[must_use]
pub fn request_subject(request: &[u8]) -> Option<(String, Vec<String>)> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(request).ok()?;
    if pem.label != "CERTIFICATE REQUEST" {
        return None;
    }
    let (_, parsed) = X509CertificationRequest::from_der(&pem.contents).ok()?;
    let subject = &parsed.certification_request_info.subject;
    let common_name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or_default()
        .to_string();
    let organizations = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some((common_name, organizations))
}

/// Upstream's `DefaultCSRApprover`: approves a CSR of agent `agent_name` when
/// 1. the requester (see [`csr_requester`]) is an agent of this very cluster: its name starts
///    with `system:open-cluster-management:<cluster>:` (upstream checks the prefix without the
///    final colon, so cluster `foo` would accept a requester of cluster `foobar`; we do not),
/// 2. the request is a PEM `CERTIFICATE REQUEST`,
/// 3. its subject has two or three distinct organizations (three for older agents), among them
///    both [`default_groups`],
/// 4. its common name is the [`default_user`] of the agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefaultCsrApprover {
    agent_name: String,
}

impl DefaultCsrApprover {
    /// The approver of agent `agent_name`'s CSRs.
    #[must_use]
    pub fn new(agent_name: impl Into<String>) -> Self {
        Self {
            agent_name: agent_name.into(),
        }
    }
}

impl CsrApproveCheck for DefaultCsrApprover {
    fn approve(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        csr: &CertificateSigningRequest,
    ) -> bool {
        let cluster_name = cluster.metadata.name.as_deref().unwrap_or_default();
        let addon_name = addon.metadata.name.as_deref().unwrap_or_default();
        let requester = csr_requester(csr);
        let cluster_prefix = format!("{}{cluster_name}:", subjects::SUBJECT_PREFIX);
        if cluster_name.is_empty() || !requester.starts_with(&cluster_prefix) {
            tracing::info!(
                requester,
                cluster = cluster_name,
                "CSR requester is not an agent of the cluster"
            );
            return false;
        }
        let Some((common_name, organizations)) = request_subject(&csr.spec.request.0) else {
            tracing::info!("CSR spec.request is not a PEM certificate request");
            return false;
        };
        let distinct: std::collections::BTreeSet<&str> = organizations.iter().map(String::as_str).collect();
        if distinct.len() != 2 && distinct.len() != 3 {
            tracing::info!(?organizations, "CSR subject has neither 2 nor 3 organizations");
            return false;
        }
        if !default_groups(cluster_name, addon_name)
            .iter()
            .all(|g| distinct.contains(g.as_str()))
        {
            tracing::info!(?organizations, "CSR subject lacks the add-on's default groups");
            return false;
        }
        if common_name != default_user(cluster_name, addon_name, &self.agent_name) {
            tracing::info!(common_name, "CSR common name is not the agent's default user");
            return false;
        }
        true
    }
}

/// Approves when every one of its approvers does (upstream's `UnionCSRApprover`, a logical AND;
/// with no approvers it approves).
#[derive(Clone, Default)]
pub struct UnionCsrApprover {
    approvers: Vec<Arc<dyn CsrApproveCheck>>,
}

impl UnionCsrApprover {
    /// The AND of `approvers`.
    #[must_use]
    pub fn new(approvers: Vec<Arc<dyn CsrApproveCheck>>) -> Self {
        Self { approvers }
    }
}

impl CsrApproveCheck for UnionCsrApprover {
    fn approve(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        csr: &CertificateSigningRequest,
    ) -> bool {
        self.approvers.iter().all(|a| a.approve(cluster, addon, csr))
    }
}

/// Approves every CSR (upstream's v1alpha1 `ApprovalAllCSRs`; for tests and trusted setups).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApproveAll;

impl CsrApproveCheck for ApproveAll {
    fn approve(
        &self,
        _cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
        _csr: &CertificateSigningRequest,
    ) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use super::*;
    use serde_json::json;

    fn cluster(name: &str) -> ManagedCluster {
        serde_json::from_value(json!({"apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster", "metadata": {"name": name}, "spec": {}}))
        .unwrap()
    }

    fn addon(name: &str) -> ManagedClusterAddOn {
        serde_json::from_value(json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn", "metadata": {"name": name, "namespace": "c1"}, "spec": {}}))
        .unwrap()
    }

    /// A PEM CSR with common name `cn` and organizations `orgs` (one RDN per organization, as Go
    /// writes them).
    pub(crate) fn request_pem(cn: &str, orgs: &[&str]) -> String {
        let mut params = rcgen::CertificateParams::default();
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::CommonName, cn);
        params.distinguished_name = dn;
        let key = rcgen::KeyPair::generate().unwrap();
        let csr = params.serialize_request(&key).unwrap();
        if orgs.is_empty() {
            return csr.pem().unwrap();
        }
        // rcgen keeps one value per attribute type: write the subject with several O by hand.
        super::super::signer::tests::request_with_subject(cn, orgs, &key)
    }

    fn csr(username: &str, request: &str) -> CertificateSigningRequest {
        serde_json::from_value(json!({"metadata": {"name": "addon-c1-x"},
            "spec": {"request": base64_of(request), "signerName": "kubernetes.io/kube-apiserver-client",
                     "username": username}}))
        .unwrap()
    }

    fn base64_of(s: &str) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn good_request() -> String {
        let groups = default_groups("c1", "hello");
        request_pem(
            &default_user("c1", "hello", "agent"),
            &[groups[0].as_str(), groups[1].as_str()],
        )
    }

    #[test]
    fn default_approver_approves_the_agents_own_request() {
        let approver = DefaultCsrApprover::new("agent");
        let csr = csr("system:open-cluster-management:c1:agent1", &good_request());
        assert!(approver.approve(&cluster("c1"), &addon("hello"), &csr));
    }

    #[test]
    fn default_approver_matches_the_requesters_cluster_exactly() {
        let approver = DefaultCsrApprover::new("agent");
        let other = csr("system:open-cluster-management:c1x:agent1", &good_request());
        assert!(!approver.approve(&cluster("c1"), &addon("hello"), &other));
        let bare = csr("system:open-cluster-management:c1", &good_request());
        assert!(!approver.approve(&cluster("c1"), &addon("hello"), &bare));
    }

    #[test]
    fn default_approver_takes_the_requester_of_grpc_csrs_from_the_annotation() {
        let approver = DefaultCsrApprover::new("agent");
        let mut grpc = csr(subjects::GRPC_SERVER_USER, &good_request());
        assert!(!approver.approve(&cluster("c1"), &addon("hello"), &grpc));
        grpc.metadata.annotations = Some(
            [(
                annotations::CSR_USER.to_string(),
                "system:open-cluster-management:c1:a".to_string(),
            )]
            .into(),
        );
        assert!(approver.approve(&cluster("c1"), &addon("hello"), &grpc));
    }

    #[test]
    fn default_approver_checks_the_subject() {
        let approver = DefaultCsrApprover::new("agent");
        let user = "system:open-cluster-management:c1:agent1";
        let groups = default_groups("c1", "hello");
        let wrong_cn = request_pem("someone", &[groups[0].as_str(), groups[1].as_str()]);
        assert!(!approver.approve(&cluster("c1"), &addon("hello"), &csr(user, &wrong_cn)));
        let one_org = request_pem(&default_user("c1", "hello", "agent"), &[groups[0].as_str()]);
        assert!(!approver.approve(&cluster("c1"), &addon("hello"), &csr(user, &one_org)));
        let three = request_pem(
            &default_user("c1", "hello", "agent"),
            &[groups[0].as_str(), groups[1].as_str(), "system:authenticated"],
        );
        assert!(approver.approve(&cluster("c1"), &addon("hello"), &csr(user, &three)));
        let other_groups = request_pem(&default_user("c1", "hello", "agent"), &["a", "b"]);
        assert!(!approver.approve(&cluster("c1"), &addon("hello"), &csr(user, &other_groups)));
        assert!(!approver.approve(&cluster("c1"), &addon("hello"), &csr(user, "not a pem")));
    }

    #[test]
    fn union_approver_is_a_logical_and() {
        struct Deny;
        impl CsrApproveCheck for Deny {
            fn approve(
                &self,
                _: &ManagedCluster,
                _: &ManagedClusterAddOn,
                _: &CertificateSigningRequest,
            ) -> bool {
                false
            }
        }
        let csr = csr("x", "y");
        let (c, a) = (cluster("c1"), addon("hello"));
        assert!(
            UnionCsrApprover::new(vec![Arc::new(ApproveAll), Arc::new(ApproveAll)]).approve(&c, &a, &csr)
        );
        assert!(!UnionCsrApprover::new(vec![Arc::new(ApproveAll), Arc::new(Deny)]).approve(&c, &a, &csr));
        assert!(UnionCsrApprover::default().approve(&c, &a, &csr));
    }
}
