//! The CSR approving and signing controllers (addon-framework.md §2.6, §2.7; §8.1 scenarios 14
//! and 15).

#![allow(clippy::unwrap_used, reason = "test")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use ocm_addon_framework::agent::{AddonError, AgentAddonOptions, CsrSigner, RegistrationOption};
use ocm_addon_framework::registration::approve::ApproveAll;
use ocm_addon_framework::registration::signer::SignerWithExpiry;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use serde_json::json;

use crate::support::{Scenario, TestAddon, eventually, hub, run_manager, unique};

/// An add-on CSR of `cluster` for `addon` with `signer`, as the registration agent creates it.
async fn create_csr(client: &kube::Client, cluster: &str, addon: &str, signer: &str) -> String {
    let name = unique(&format!("addon-{cluster}"));
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("system:open-cluster-management:cluster:{cluster}:addon:{addon}:agent:a"),
    );
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    let csr: CertificateSigningRequest = serde_json::from_value(json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name, "labels": {
            "open-cluster-management.io/cluster-name": cluster,
            "open-cluster-management.io/addon-name": addon}},
        "spec": {
            "request": base64(request.as_bytes()),
            "signerName": signer,
            "usages": ["digital signature", "key encipherment", "client auth"],
        }
    }))
    .unwrap();
    Api::<CertificateSigningRequest>::all(client.clone())
        .create(&PostParams::default(), &csr)
        .await
        .unwrap();
    name
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn has_condition(csr: &CertificateSigningRequest, type_: &str) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_))
}

/// §8.1 scenario 14: an approve check returning true gets the add-on CSR approved (not denied).
#[tokio::test]
async fn addon_csr_approve() {
    let hub = hub().await;
    let s = Scenario::new("csr14");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    s.create_mca(&hub.client, json!({}), &cma).await;
    let addon = TestAddon {
        options: AgentAddonOptions {
            addon_name: s.addon.clone(),
            registration: Some(RegistrationOption {
                csr_approve_check: Some(Arc::new(ApproveAll)),
                ..Default::default()
            }),
            ..Default::default()
        },
    };
    let _manager = run_manager(&hub.client, vec![addon.shared()]);
    let name = create_csr(
        &hub.client,
        &s.cluster,
        &s.addon,
        "kubernetes.io/kube-apiserver-client",
    )
    .await;
    let api = Api::<CertificateSigningRequest>::all(hub.client.clone());
    let csr = eventually("the CSR approved", || async {
        api.get_opt(&name)
            .await
            .unwrap()
            .filter(|c| has_condition(c, "Approved"))
    })
    .await;
    assert!(!has_condition(&csr, "Denied"));
    let approved = csr
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Approved")
        .unwrap();
    assert_eq!(
        approved.reason.as_deref(),
        Some("AutoApprovedByHubCSRApprovingController")
    );
    let _ = api.delete(&name, &DeleteParams::default()).await;
    s.cleanup(&hub.client).await;
}

/// CSRs are left alone when the add-on's check refuses them, when the ManagedClusterAddOn does
/// not exist, or when they are not named `addon…`.
#[tokio::test]
async fn addon_csr_left_pending_when_not_approvable() {
    use ocm_addon_framework::registration::approve::DefaultCsrApprover;
    let hub = hub().await;
    let s = Scenario::new("csrno");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    s.create_mca(&hub.client, json!({}), &cma).await;
    let other = Scenario::new("csrno2");
    crate::support::create_cluster(&hub.client, &other.cluster).await;
    let refusing = TestAddon {
        options: AgentAddonOptions {
            addon_name: s.addon.clone(),
            registration: Some(RegistrationOption {
                // The requester is the test's admin user, not an agent of the cluster.
                csr_approve_check: Some(Arc::new(DefaultCsrApprover::new("a"))),
                ..Default::default()
            }),
            ..Default::default()
        },
    };
    let approving = TestAddon {
        options: AgentAddonOptions {
            addon_name: other.addon.clone(),
            registration: Some(RegistrationOption {
                csr_approve_check: Some(Arc::new(ApproveAll)),
                ..Default::default()
            }),
            ..Default::default()
        },
    };
    let _manager = run_manager(&hub.client, vec![refusing.shared(), approving.shared()]);
    let refused = create_csr(
        &hub.client,
        &s.cluster,
        &s.addon,
        "kubernetes.io/kube-apiserver-client",
    )
    .await;
    // No ManagedClusterAddOn of the approving add-on on its cluster.
    let orphan = create_csr(
        &hub.client,
        &other.cluster,
        &other.addon,
        "kubernetes.io/kube-apiserver-client",
    )
    .await;
    let api = Api::<CertificateSigningRequest>::all(hub.client.clone());
    crate::support::consistently(3, "the CSRs stay pending", || async {
        let a = api.get(&refused).await.unwrap();
        let b = api.get(&orphan).await.unwrap();
        !has_condition(&a, "Approved") && !has_condition(&b, "Approved")
    })
    .await;
    for name in [refused, orphan] {
        let _ = api.delete(&name, &DeleteParams::default()).await;
    }
    s.cleanup(&hub.client).await;
    other.cleanup(&hub.client).await;
}

/// A signer that remembers what it returned.
struct Recording {
    inner: SignerWithExpiry,
    issued: Mutex<Vec<u8>>,
}

impl CsrSigner for Recording {
    fn sign(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        csr: &CertificateSigningRequest,
    ) -> Result<Vec<u8>, AddonError> {
        let issued = self.inner.sign(cluster, addon, csr)?;
        *self.issued.lock().unwrap() = issued.clone();
        Ok(issued)
    }
}

/// §8.1 scenario 15: a custom-signer CSR is approved, then `status.certificate` is exactly what
/// the add-on's signer returned.
#[tokio::test]
async fn addon_csr_sign() {
    let hub = hub().await;
    let s = Scenario::new("csr15");
    let cma = s.create_cluster_and_cma(&hub.client, json!({})).await;
    s.create_mca(&hub.client, json!({}), &cma).await;
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::default();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let signer = Arc::new(Recording {
        inner: SignerWithExpiry::new(&ca_key.serialize_pem(), &ca.pem(), Duration::from_secs(3600)).unwrap(),
        issued: Mutex::new(Vec::new()),
    });
    let addon = TestAddon {
        options: AgentAddonOptions {
            addon_name: s.addon.clone(),
            registration: Some(RegistrationOption {
                csr_approve_check: Some(Arc::new(ApproveAll)),
                csr_sign: Some(signer.clone()),
                ..Default::default()
            }),
            ..Default::default()
        },
    };
    let _manager = run_manager(&hub.client, vec![addon.shared()]);
    let name = create_csr(
        &hub.client,
        &s.cluster,
        &s.addon,
        "open-cluster-management.io/test",
    )
    .await;
    let api = Api::<CertificateSigningRequest>::all(hub.client.clone());
    let csr = eventually("the CSR signed", || async {
        api.get_opt(&name).await.unwrap().filter(|c| {
            has_condition(c, "Approved")
                && c.status
                    .as_ref()
                    .and_then(|s| s.certificate.as_ref())
                    .is_some_and(|b| !b.0.is_empty())
        })
    })
    .await;
    assert_eq!(
        csr.status.unwrap().certificate.unwrap().0,
        *signer.issued.lock().unwrap()
    );
    let _ = api.delete(&name, &DeleteParams::default()).await;
    s.cleanup(&hub.client).await;
}
