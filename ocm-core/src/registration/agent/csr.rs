//! The cluster's client-certificate requests (ocm-core.md §1.5): a new ECDSA P-256 key per
//! request, kept in memory only, the CSR object, and the certificate once the hub approves it.

use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString,
    api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Api,
    api::{ListParams, PostParams},
};
use ocm_api::names::{labels, subjects};
use x509_parser::prelude::{FromDer, X509Certificate};

use super::{AgentError, kubeconfig::pem_certificates};

/// Most CSRs labelled for a cluster the agent lets exist before it stops creating more.
pub const MAX_CSRS: usize = 10;

/// A private key and the PEM certificate request made with it.
pub(crate) struct KeyAndRequest {
    /// The key, PEM (`PRIVATE KEY`).
    pub key: rcgen::KeyPair,
    /// The PKCS#10 request, PEM.
    pub request_pem: String,
}

/// A new P-256 key and a request with CN `user`, one O per group, one OU per entry of `units`
/// and no SANs (`dns` adds DNS SANs).
pub(crate) fn new_request(
    user: &str,
    groups: &[String],
    units: &[String],
    dns: &[String],
) -> Result<KeyAndRequest, AgentError> {
    let err = |e: rcgen::Error| AgentError::CreateRequest(e.to_string());
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(err)?;
    let mut params = rcgen::CertificateParams::new(dns.to_vec()).map_err(err)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(rcgen::DnType::CommonName, user);
    // rcgen keeps one entry per attribute type: the first value is the named type, the second a
    // custom type carrying the same OID (O 2.5.4.10, OU 2.5.4.11), which rcgen keys differently.
    for (values, named, arc) in [
        (groups, rcgen::DnType::OrganizationName, 10),
        (units, rcgen::DnType::OrganizationalUnitName, 11),
    ] {
        if values.len() > 2 {
            return Err(AgentError::CreateRequest(format!(
                "at most two values per subject attribute are supported, got {}",
                values.len()
            )));
        }
        for (i, value) in values.iter().enumerate() {
            let ty = if i == 0 {
                named.clone()
            } else {
                rcgen::DnType::CustomDnType(vec![2, 5, 4, arc])
            };
            params
                .distinguished_name
                .push(ty, rcgen::DnValue::Utf8String(value.clone()));
        }
    }
    let request_pem = params.serialize_request(&key).map_err(err)?.pem().map_err(err)?;
    Ok(KeyAndRequest { key, request_pem })
}

/// The CSR object: `generateName`, labels, request, signer, usages and expiration.
pub(crate) fn csr_object(
    generate_name: String,
    labels: BTreeMap<String, String>,
    request_pem: &str,
    signer: &str,
    expiration_seconds: Option<i32>,
) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta {
            generate_name: Some(generate_name),
            labels: Some(labels),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request_pem.as_bytes().to_vec()),
            signer_name: signer.into(),
            expiration_seconds,
            usages: Some(vec![
                "digital signature".into(),
                "key encipherment".into(),
                "client auth".into(),
            ]),
            ..Default::default()
        },
        status: None,
    }
}

/// How many CSRs labelled for `cluster` (without the add-on label) exist on the hub.
pub(crate) async fn cluster_csr_count(
    csrs: &Api<CertificateSigningRequest>,
    cluster: &str,
) -> Result<usize, AgentError> {
    let list = csrs
        .list(&ListParams::default().labels(&format!("{}={cluster}", labels::CLUSTER_NAME)))
        .await
        .map_err(AgentError::ListCsrs)?;
    Ok(list
        .items
        .iter()
        .filter(|c| {
            !c.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(labels::ADDON_NAME))
        })
        .count())
}

/// Creates the cluster's CSR with a new key; returns the CSR's name and the key.
pub(crate) async fn create_cluster_csr(
    csrs: &Api<CertificateSigningRequest>,
    cluster: &str,
    agent: &str,
    expiration_seconds: Option<i32>,
) -> Result<(String, KeyAndRequest), AgentError> {
    let kr = new_request(
        &subjects::cluster_agent_user(cluster, agent),
        &[
            subjects::cluster_group(cluster),
            subjects::MANAGED_CLUSTERS_GROUP.to_string(),
        ],
        &[],
        &[],
    )?;
    let labels = BTreeMap::from([(labels::CLUSTER_NAME.to_string(), cluster.to_string())]);
    let csr = csr_object(
        subjects::cluster_csr_generate_name(cluster),
        labels,
        &kr.request_pem,
        subjects::KUBE_APISERVER_CLIENT_SIGNER,
        expiration_seconds,
    );
    let created = csrs
        .create(&PostParams::default(), &csr)
        .await
        .map_err(AgentError::CreateCsr)?;
    Ok((created.metadata.name.unwrap_or_default(), kr))
}

/// The issued certificate of an approved (and not denied) CSR, once `status.certificate` is set.
pub(crate) fn issued_certificate(csr: &CertificateSigningRequest) -> Option<Vec<u8>> {
    let status = csr.status.as_ref()?;
    let conditions = status.conditions.as_deref().unwrap_or_default();
    let approved = conditions.iter().any(|c| c.type_ == "Approved");
    let denied = conditions
        .iter()
        .any(|c| c.type_ == "Denied" || c.type_ == "Failed");
    if !approved || denied {
        return None;
    }
    let cert = status.certificate.as_ref()?;
    (!cert.0.is_empty()).then(|| cert.0.clone())
}

/// Whether the first certificate of `cert_pem` carries the public key of `key`.
pub(crate) fn certificate_matches_key(cert_pem: &[u8], key: &rcgen::KeyPair) -> bool {
    use rcgen::PublicKeyData;
    let Some(der) = pem_certificates(cert_pem).into_iter().next() else {
        return false;
    };
    let Ok((_, cert)) = X509Certificate::from_der(&der) else {
        return false;
    };
    cert.public_key().raw == key.subject_public_key_info().as_slice()
}

/// The validity window (notBefore, notAfter as Unix seconds) of a PEM chain: the latest notBefore
/// and the earliest notAfter.
pub(crate) fn validity(cert_pem: &[u8]) -> Option<(i64, i64)> {
    let mut window: Option<(i64, i64)> = None;
    for der in pem_certificates(cert_pem) {
        let (_, cert) = X509Certificate::from_der(&der).ok()?;
        let (nb, na) = (
            cert.validity().not_before.timestamp(),
            cert.validity().not_after.timestamp(),
        );
        window = Some(match window {
            None => (nb, na),
            Some((b, a)) => (b.max(nb), a.min(na)),
        });
    }
    window
}

/// Whether a certificate valid from `not_before` to `not_after` should be renewed at `now`: its
/// remaining share of life is at most `threshold` (upstream draws it from [0.20, 0.25)).
pub fn needs_rotation(not_before: i64, not_after: i64, now: i64, threshold: f64) -> bool {
    let total = (not_after - not_before) as f64;
    if total <= 0.0 {
        return true;
    }
    let remaining = (not_after - now) as f64;
    remaining / total <= threshold
}

/// A rotation threshold drawn from [0.20, 0.25).
pub(crate) fn rotation_threshold() -> f64 {
    0.20 + rand::random::<f64>() * 0.05
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_has_cn_both_organisations_and_no_sans() {
        let kr = new_request(
            "system:open-cluster-management:c1:a1",
            &["g1".into(), "g2".into()],
            &[],
            &[],
        )
        .unwrap();
        let pem = x509_parser::pem::parse_x509_pem(kr.request_pem.as_bytes())
            .unwrap()
            .1;
        let (_, req) =
            x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents).unwrap();
        let subject = &req.certification_request_info.subject;
        let cn: Vec<_> = subject
            .iter_common_name()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        let o: Vec<_> = subject
            .iter_organization()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        assert_eq!(cn, ["system:open-cluster-management:c1:a1"]);
        assert_eq!(o, ["g1", "g2"]);
        assert!(req.requested_extensions().is_none_or(|mut e| e.next().is_none()));
    }

    #[test]
    fn request_with_units_and_dns_san() {
        let kr = new_request(
            "u",
            &["g".into()],
            &["ou1".into(), "ou2".into()],
            &["a.example".into()],
        )
        .unwrap();
        let pem = x509_parser::pem::parse_x509_pem(kr.request_pem.as_bytes())
            .unwrap()
            .1;
        let (_, req) =
            x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents).unwrap();
        let subject = &req.certification_request_info.subject;
        let ou: Vec<_> = subject
            .iter_organizational_unit()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        assert_eq!(ou, ["ou1", "ou2"]);
        assert!(req.requested_extensions().is_some_and(|mut e| e.next().is_some()));
        assert!(new_request("u", &["a".into(), "b".into(), "c".into()], &[], &[]).is_err());
    }

    #[test]
    fn rotation_when_a_fifth_of_life_remains() {
        assert!(!needs_rotation(0, 100, 50, 0.2));
        assert!(!needs_rotation(0, 100, 79, 0.2));
        assert!(needs_rotation(0, 100, 80, 0.2));
        assert!(needs_rotation(0, 100, 76, 0.249));
        assert!(needs_rotation(0, 100, 200, 0.2));
        let t = rotation_threshold();
        assert!((0.20..0.25).contains(&t));
    }
}
