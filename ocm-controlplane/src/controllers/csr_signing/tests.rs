use super::*;

fn ca() -> SigningCa {
    let creds = crate::tls::Credentials::load_or_create(None).unwrap();
    SigningCa {
        cert_pem: creds.client_ca_pem,
        key_pem: creds.client_ca_key_pem,
    }
}

fn csr(cn: &str, orgs: &[&str], signer: &str, usages: &[&str], conditions: Value) -> Value {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, cn);
    // rcgen keeps one value per attribute type: a second organization goes in under its OID.
    for (i, o) in orgs.iter().enumerate() {
        let ty = if i == 0 {
            rcgen::DnType::OrganizationName
        } else {
            rcgen::DnType::CustomDnType(vec![2, 5, 4, 10])
        };
        params.distinguished_name.push(ty, *o);
    }
    let key = rcgen::KeyPair::generate().unwrap();
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    json!({"metadata": {"name": "c"}, "spec": {"signerName": signer, "usages": usages,
        "request": base64::engine::general_purpose::STANDARD.encode(pem), "expirationSeconds": 60},
        "status": {"conditions": conditions}})
}

fn approved() -> Value {
    json!([{"type": "Approved", "status": "True"}])
}

#[test]
fn only_approved_undenied_unsigned_csrs_of_known_signers_are_signed() {
    let client = "kubernetes.io/kube-apiserver-client";
    assert!(wants_signing(&csr(
        "a",
        &[],
        client,
        &["client auth"],
        approved()
    )));
    assert!(!wants_signing(&csr(
        "a",
        &[],
        client,
        &["client auth"],
        json!([])
    )));
    assert!(!wants_signing(&csr(
        "a",
        &[],
        client,
        &["client auth"],
        json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}])
    )));
    assert!(!wants_signing(&csr(
        "a",
        &[],
        "example.com/other",
        &["client auth"],
        approved()
    )));
    let mut signed = csr("a", &[], client, &["client auth"], approved());
    signed["status"]["certificate"] = json!("x");
    assert!(!wants_signing(&signed));
}

#[test]
fn signed_certificates_carry_the_subject_and_a_ten_minute_minimum() {
    let ca = ca();
    let request = csr(
        "agent",
        &["g1", "g2"],
        "kubernetes.io/kube-apiserver-client",
        &["digital signature", "client auth"],
        approved(),
    );
    let now = now_unix();
    let pem = sign(&request, &ca, now).unwrap();
    let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
    let cert = block.parse_x509().unwrap();
    let user = crate::auth::UserInfo::from_certificate(&block.contents).unwrap();
    assert_eq!(user.name, "agent");
    assert_eq!(user.groups, ["g1", "g2", "system:authenticated"]);
    let validity = cert.validity();
    assert_eq!(validity.not_after.timestamp() - now as i64, 600);
    assert_eq!(now as i64 - validity.not_before.timestamp(), 300);
    // The client CA verifies it.
    let creds = crate::tls::Credentials {
        client_ca_pem: ca.cert_pem.clone(),
        ..crate::tls::Credentials::load_or_create(None).unwrap()
    };
    let verifier = creds.client_certificates().unwrap();
    let der = rustls::pki_types::CertificateDer::from(block.contents.clone());
    assert!(verifier.authenticate(&[der]).is_ok());
}

#[test]
fn disallowed_usages_and_subjects_are_refused() {
    let ca = ca();
    let client = "kubernetes.io/kube-apiserver-client";
    let err = sign(
        &csr("a", &[], client, &["server auth", "client auth"], approved()),
        &ca,
        now_unix(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid usage for client certificate: server auth"
    );
    assert!(
        sign(
            &csr("a", &[], client, &["digital signature"], approved()),
            &ca,
            now_unix()
        )
        .is_err()
    );
    let kubelet = "kubernetes.io/kube-apiserver-client-kubelet";
    assert!(
        sign(
            &csr(
                "system:node:n1",
                &["system:nodes"],
                kubelet,
                &["client auth"],
                approved()
            ),
            &ca,
            now_unix()
        )
        .is_ok()
    );
    assert!(
        sign(
            &csr("n1", &["system:nodes"], kubelet, &["client auth"], approved()),
            &ca,
            now_unix()
        )
        .is_err()
    );
    assert!(
        sign(
            &csr(
                "x",
                &["any"],
                "kubernetes.io/legacy-unknown",
                &["server auth"],
                approved()
            ),
            &ca,
            now_unix()
        )
        .is_ok()
    );
    let mut garbage = csr("a", &[], client, &["client auth"], approved());
    garbage["spec"]["request"] = json!("bm90IGEgcmVxdWVzdA==");
    assert!(matches!(
        sign(&garbage, &ca, now_unix()),
        Err(SignError::ParseRequest(_))
    ));
}

#[test]
fn the_cleaner_follows_kcms_schedule() {
    let now = chrono::Utc::now();
    let at = |hours: i64| (now - chrono::Duration::hours(hours)).to_rfc3339();
    let mut pending = json!({"metadata": {"creationTimestamp": at(2)}});
    assert!(!expired(&pending, now));
    pending["metadata"]["creationTimestamp"] = json!(at(25));
    assert!(expired(&pending, now));
    let approved = json!({"metadata": {"creationTimestamp": at(2)},
        "status": {"conditions": [{"type": "Approved", "status": "True", "lastUpdateTime": at(2)}]}});
    assert!(expired(&approved, now));
    let fresh = json!({"metadata": {"creationTimestamp": at(0)},
        "status": {"conditions": [{"type": "Denied", "status": "True", "lastUpdateTime": at(0)}]}});
    assert!(!expired(&fresh, now));
}
