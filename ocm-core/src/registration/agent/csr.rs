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
    /// The key (written out with [`key_pem`]).
    pub key: rcgen::KeyPair,
    /// The PKCS#10 request, PEM.
    pub request_pem: String,
}

/// A new P-256 key and a request with CN `user`, one O per group, one OU per entry of `units`
/// and no SANs (`dns` adds DNS SANs), laid out as upstream's (`super::pkcs10`).
pub(crate) fn new_request(
    user: &str,
    groups: &[String],
    units: &[String],
    dns: &[String],
) -> Result<KeyAndRequest, AgentError> {
    let err = |e: rcgen::Error| AgentError::CreateRequest(e.to_string());
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(err)?;
    let request_pem = super::pkcs10::request_pem(&key, user, groups, units, dns).map_err(err)?;
    Ok(KeyAndRequest { key, request_pem })
}

/// `key` as upstream's agent writes `tls.key`: a SEC1 `EC PRIVATE KEY` PEM block with the
/// curve's OID and the public key, as Go's `x509.MarshalECPrivateKey` and `pem.Encode` write it
/// (64-character lines, LF).
/// Readers (the hub kubeconfig's client, rustls) accept it as well as the PKCS#8 `PRIVATE KEY`
/// our earlier versions wrote.
///
/// # Errors
/// The key is not a P-256 key.
pub fn key_pem(key: &rcgen::KeyPair) -> Result<String, AgentError> {
    use base64::Engine;
    use p256::pkcs8::DecodePrivateKey;
    let secret = p256::SecretKey::from_pkcs8_der(&key.serialize_der())
        .map_err(|e| AgentError::EncodeKey(e.to_string()))?;
    let scalar = secret.to_bytes();
    let point = key.public_key_raw();
    if scalar.len() != 32 || point.len() != 65 {
        return Err(AgentError::EncodeKey(format!(
            "a P-256 key has a 32-byte scalar and a 65-byte point, not {} and {}",
            scalar.len(),
            point.len()
        )));
    }
    // ECPrivateKey ::= SEQUENCE { version 1, privateKey OCTET STRING, [0] namedCurve OID,
    // [1] publicKey BIT STRING }: for P-256 the lengths are fixed.
    let mut der = Vec::with_capacity(121);
    der.extend_from_slice(&[0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20]);
    der.extend_from_slice(&scalar);
    der.extend_from_slice(&[
        0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
    ]);
    der.extend_from_slice(&[0xa1, 0x44, 0x03, 0x42, 0x00]);
    der.extend_from_slice(point);
    let body = base64::engine::general_purpose::STANDARD.encode(&der);
    let mut pem = String::from("-----BEGIN EC PRIVATE KEY-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END EC PRIVATE KEY-----\n");
    Ok(pem)
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

/// Whether some certificate of a PEM chain is issued to `common_name` with exactly the
/// organizations `organizations` (compared as sets) — upstream's `certMatchSubject`: a secret
/// left by another agent or an earlier subject is not current.
pub(crate) fn matches_subject(cert_pem: &[u8], common_name: &str, organizations: &[String]) -> bool {
    let wanted: std::collections::BTreeSet<&str> = organizations.iter().map(String::as_str).collect();
    pem_certificates(cert_pem).iter().any(|der| {
        let Ok((_, cert)) = X509Certificate::from_der(der) else {
            return false;
        };
        let subject = cert.subject();
        let cn = subject.iter_common_name().next().and_then(|a| a.as_str().ok());
        let orgs: std::collections::BTreeSet<&str> = subject
            .iter_organization()
            .filter_map(|a| a.as_str().ok())
            .collect();
        cn == Some(common_name) && orgs == wanted
    })
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
    fn a_certificate_matches_its_exact_subject_only() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "user-a");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "group-1");
        let pem = params.self_signed(&key).unwrap().pem();
        let groups = |g: &[&str]| g.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(matches_subject(pem.as_bytes(), "user-a", &groups(&["group-1"])));
        assert!(!matches_subject(pem.as_bytes(), "user-b", &groups(&["group-1"])));
        assert!(!matches_subject(
            pem.as_bytes(),
            "user-a",
            &groups(&["group-1", "group-2"])
        ));
        assert!(!matches_subject(
            b"not a certificate",
            "user-a",
            &groups(&["group-1"])
        ));
    }

    /// A kubeconfig whose user authenticates with `cert_pem` and `key_pem` inline.
    fn client_kubeconfig(cert_pem: &str, key_pem: &str) -> kube::config::Kubeconfig {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        kube::config::Kubeconfig::from_yaml(&format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: h\n  cluster:\n    server: https://127.0.0.1:1\n    certificate-authority-data: {}\ncontexts:\n- name: c\n  context:\n    cluster: h\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(cert_pem),
            b64(cert_pem),
            b64(key_pem)
        ))
        .unwrap()
    }

    #[test]
    fn the_key_is_written_as_a_sec1_ec_private_key() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let pem = key_pem(&key).unwrap();
        assert!(pem.starts_with("-----BEGIN EC PRIVATE KEY-----\n"), "{pem}");
        assert!(pem.ends_with("-----END EC PRIVATE KEY-----\n"), "{pem}");
        assert!(pem.lines().all(|l| l.len() <= 64));
        let block = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap().1;
        // ECPrivateKey: version 1, the 32-byte scalar, [0] the P-256 OID, [1] the public point.
        let der = &block.contents;
        assert_eq!(der.len(), 121);
        assert_eq!(der[..7], [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20]);
        assert_eq!(
            der[39..53],
            [
                0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0xa1, 0x44
            ]
        );
        assert_eq!(&der[56..], key.public_key_raw());
        // A SEC1 reader gets the same key back.
        use p256::pkcs8::DecodePrivateKey;
        let parsed = p256::SecretKey::from_sec1_pem(&pem).unwrap();
        let original = p256::SecretKey::from_pkcs8_der(&key.serialize_der()).unwrap();
        assert_eq!(parsed.to_bytes(), original.to_bytes());
    }

    #[tokio::test]
    async fn clients_accept_the_sec1_key_and_the_older_pkcs8_one() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap()
            .pem();
        for pem in [key_pem(&key).unwrap(), key.serialize_pem()] {
            let config = kube::Config::from_custom_kubeconfig(
                client_kubeconfig(&cert, &pem),
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .unwrap();
            kube::Client::try_from(config).unwrap_or_else(|e| panic!("{pem}: {e}"));
        }
    }

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
