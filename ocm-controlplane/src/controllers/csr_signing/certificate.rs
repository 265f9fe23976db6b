//! Issuing a certificate for a parsed request: the TBSCertificate is written in DER here and
//! signed with the CA key, so the subject is copied byte for byte from the request (rcgen's
//! parameters keep one value per attribute type, and an OCM agent's subject has two
//! organizations, its groups).

use std::time::Duration;

use rcgen::SigningKey;
use x509_parser::prelude::{FromDer, ParsedExtension, X509Certificate, X509CertificationRequest};

use super::SignError;

/// A DER tag-length-value.
pub fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    tlv(tag, content)
}

/// A DER SEQUENCE of encoded parts.
pub fn der_seq(parts: &[Vec<u8>]) -> Vec<u8> {
    seq(parts)
}

/// A DER SET of encoded parts.
pub fn der_set(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x31, &parts.concat())
}

/// A DER OBJECT IDENTIFIER.
pub fn der_oid(arcs: &[u64]) -> Vec<u8> {
    oid(arcs)
}

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

fn oid(arcs: &[u64]) -> Vec<u8> {
    let mut body = Vec::new();
    let mut push = |mut v: u64| {
        let mut chunk = vec![(v & 0x7f) as u8];
        v >>= 7;
        while v > 0 {
            chunk.push(0x80 | (v & 0x7f) as u8);
            v >>= 7;
        }
        chunk.reverse();
        body.extend(chunk);
    };
    push(arcs[0] * 40 + arcs[1]);
    for a in &arcs[2..] {
        push(*a);
    }
    tlv(0x06, &body)
}

fn time(unix: i64) -> Vec<u8> {
    let t = chrono::DateTime::from_timestamp(unix, 0).unwrap_or_default();
    if t.format("%Y").to_string().as_str() < "2050" {
        tlv(0x17, t.format("%y%m%d%H%M%SZ").to_string().as_bytes())
    } else {
        tlv(0x18, t.format("%Y%m%d%H%M%SZ").to_string().as_bytes())
    }
}

fn bit_string(bytes: &[u8], unused: u8) -> Vec<u8> {
    let mut body = vec![unused];
    body.extend_from_slice(bytes);
    tlv(0x03, &body)
}

fn extension(id: &[u64], critical: bool, value: Vec<u8>) -> Vec<u8> {
    let mut parts = vec![oid(id)];
    if critical {
        parts.push(tlv(0x01, &[0xff]));
    }
    parts.push(tlv(0x04, &value));
    seq(&parts)
}

/// The signature AlgorithmIdentifier of a CA key.
fn algorithm(key: &rcgen::KeyPair) -> Result<Vec<u8>, SignError> {
    let alg = key.algorithm();
    if alg == &rcgen::PKCS_ECDSA_P256_SHA256 {
        Ok(seq(&[oid(&[1, 2, 840, 10045, 4, 3, 2])]))
    } else if alg == &rcgen::PKCS_ECDSA_P384_SHA384 {
        Ok(seq(&[oid(&[1, 2, 840, 10045, 4, 3, 3])]))
    } else if alg == &rcgen::PKCS_ED25519 {
        Ok(seq(&[oid(&[1, 3, 101, 112])]))
    } else if alg == &rcgen::PKCS_RSA_SHA256 {
        Ok(seq(&[oid(&[1, 2, 840, 113549, 1, 1, 11]), vec![0x05, 0x00]]))
    } else {
        Err(SignError::Sign("unsupported CA key algorithm".into()))
    }
}

/// What goes into an issued certificate besides the request's subject and key.
#[derive(Debug, Clone)]
pub struct Issue<'a> {
    /// The request's DER.
    pub request_der: &'a [u8],
    /// CA certificate (PEM).
    pub ca_cert_pem: &'a str,
    /// CA key (PEM).
    pub ca_key_pem: &'a str,
    /// Start of validity (Unix seconds).
    pub not_before: i64,
    /// Requested validity from `not_before + backdate`; capped at the CA's end.
    pub not_after: i64,
    /// `spec.usages`.
    pub usages: &'a [String],
}

/// Issues the certificate (PEM) with the request's subject.
pub fn issue(issue: &Issue<'_>) -> Result<String, SignError> {
    issue_with_subject(issue, None)
}

/// Issues the certificate (PEM), with `subject` (a DER Name) instead of the request's if given.
pub fn issue_with_subject(issue: &Issue<'_>, subject: Option<&[u8]>) -> Result<String, SignError> {
    let sign_err = |e: String| SignError::Sign(e);
    let (_, request) =
        X509CertificationRequest::from_der(issue.request_der).map_err(|e| sign_err(e.to_string()))?;
    let (_, ca_block) = x509_parser::pem::parse_x509_pem(issue.ca_cert_pem.as_bytes())
        .map_err(|e| sign_err(e.to_string()))?;
    let (_, ca) = X509Certificate::from_der(&ca_block.contents).map_err(|e| sign_err(e.to_string()))?;
    let key = rcgen::KeyPair::from_pem(issue.ca_key_pem).map_err(|e| sign_err(e.to_string()))?;
    let algorithm = algorithm(&key)?;
    let not_after = issue.not_after.min(ca.validity().not_after.timestamp());

    let mut serial = [0u8; 16];
    rand::fill(&mut serial);
    serial[0] = (serial[0] & 0x7f) | 0x01;

    let mut key_usage = 0u8;
    for u in issue.usages {
        match u.as_str() {
            "digital signature" => key_usage |= 0x80,
            "key encipherment" => key_usage |= 0x20,
            _ => {}
        }
    }
    let mut extensions = Vec::new();
    if key_usage != 0 {
        let unused = key_usage.trailing_zeros() as u8;
        extensions.push(extension(&[2, 5, 29, 15], true, bit_string(&[key_usage], unused)));
    }
    let ext_usages: Vec<Vec<u8>> = issue
        .usages
        .iter()
        .filter_map(|u| match u.as_str() {
            "server auth" => Some(oid(&[1, 3, 6, 1, 5, 5, 7, 3, 1])),
            "client auth" => Some(oid(&[1, 3, 6, 1, 5, 5, 7, 3, 2])),
            _ => None,
        })
        .collect();
    if !ext_usages.is_empty() {
        extensions.push(extension(&[2, 5, 29, 37], false, seq(&ext_usages)));
    }
    extensions.push(extension(&[2, 5, 29, 19], true, seq(&[])));
    if let Some(ski) = ca.extensions().iter().find_map(|e| match e.parsed_extension() {
        ParsedExtension::SubjectKeyIdentifier(id) => Some(id.0.to_vec()),
        _ => None,
    }) {
        extensions.push(extension(&[2, 5, 29, 35], false, seq(&[tlv(0x80, &ski)])));
    }
    let info = &request.certification_request_info;
    let tbs = seq(&[
        tlv(0xa0, &tlv(0x02, &[2])),
        tlv(0x02, &serial),
        algorithm.clone(),
        ca.tbs_certificate.subject.as_raw().to_vec(),
        seq(&[time(issue.not_before), time(not_after)]),
        subject.unwrap_or(info.subject.as_raw()).to_vec(),
        info.subject_pki.raw.to_vec(),
        tlv(0xa3, &seq(&extensions)),
    ]);
    let signature = key.sign(&tbs).map_err(|e| sign_err(e.to_string()))?;
    let der = seq(&[tbs, algorithm, bit_string(&signature, 0)]);
    Ok(pem_encode(&der))
}

fn pem_encode(der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// Seconds of a duration, as i64.
pub fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_oids_are_encoded_as_der() {
        assert_eq!(tlv(0x04, &[1, 2]), [0x04, 2, 1, 2]);
        assert_eq!(&tlv(0x04, &[0; 200])[..3], [0x04, 0x81, 200]);
        assert_eq!(&tlv(0x04, &[0; 300])[..4], [0x04, 0x82, 0x01, 0x2c]);
        assert_eq!(
            oid(&[1, 2, 840, 10045, 4, 3, 2]),
            [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02]
        );
        assert_eq!(time(0), tlv(0x17, b"700101000000Z"));
        assert_eq!(time(4_102_444_800), tlv(0x18, b"21000101000000Z"));
    }
}
