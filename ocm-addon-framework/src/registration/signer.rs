//! A CSR signer for [`RegistrationOption::csr_sign`](crate::agent::RegistrationOption): signs
//! with a CA key and certificate, valid for a given duration but never past the CA's own end
//! (upstream's `DefaultSignerWithExpiry`).
//!
//! The certificate is written in DER here rather than through rcgen's certificate parameters,
//! because an add-on agent's subject holds several organizations (its groups) and rcgen keeps
//! one value per attribute type: the request's subject is copied byte for byte.

use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use rcgen::{KeyPair, SigningKey};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::cri_attributes::ParsedCriAttribute;
use x509_parser::extensions::ParsedExtension;
use x509_parser::prelude::{ASN1Time, FromDer, X509Certificate};

use crate::agent::{AddonError, CsrSigner};

/// Why a [`SignerWithExpiry`] could not be built or could not sign.
#[derive(Debug, thiserror::Error)]
pub enum SignerError {
    /// The CA key is not a PEM private key rcgen reads.
    #[error("parse the CA key: {0}")]
    ParseCaKey(String),
    /// The CA certificate is not a PEM certificate.
    #[error("parse the CA certificate: {0}")]
    ParseCaCertificate(String),
    /// The CA key's algorithm is not one this signer writes.
    #[error("the CA key's algorithm is not supported (ECDSA P-256/P-384, Ed25519, RSA-SHA256 are)")]
    UnsupportedCaKey,
    /// The CA certificate has expired.
    #[error("the CA certificate expired at {0}")]
    CaExpired(String),
    /// `spec.request` is not a PEM certificate request.
    #[error("parse the certificate request: {0}")]
    ParseRequest(String),
    /// Signing failed.
    #[error("sign the certificate: {0}")]
    Sign(String),
}

/// Signs CSRs with a CA (upstream's `DefaultSignerWithExpiry`): the issued certificate has the
/// request's subject, public key and subject alternative names, key usages digital signature and
/// key encipherment, extended key usages server and client auth, a random 127-bit serial, and
/// is valid from now for `duration` or until the CA expires, whichever comes first.
///
/// Upstream takes only PKCS#1 RSA CA keys; this signer takes what rcgen reads (PKCS#8 ECDSA
/// P-256/P-384, Ed25519 and RSA keys).
pub struct SignerWithExpiry {
    key: KeyPair,
    ca_der: Vec<u8>,
    duration: Duration,
}

impl std::fmt::Debug for SignerWithExpiry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignerWithExpiry")
            .field("duration", &self.duration)
            .finish_non_exhaustive()
    }
}

impl SignerWithExpiry {
    /// A signer with the CA key `ca_key_pem` and certificate `ca_cert_pem`, issuing certificates
    /// valid for `duration`.
    ///
    /// # Errors
    ///
    /// When the key or certificate cannot be read, or the key's algorithm is not supported.
    pub fn new(ca_key_pem: &str, ca_cert_pem: &str, duration: Duration) -> Result<Self, SignerError> {
        let key = KeyPair::from_pem(ca_key_pem).map_err(|e| SignerError::ParseCaKey(e.to_string()))?;
        algorithm(&key)?;
        let (_, pem) = x509_parser::pem::parse_x509_pem(ca_cert_pem.as_bytes())
            .map_err(|e| SignerError::ParseCaCertificate(e.to_string()))?;
        X509Certificate::from_der(&pem.contents)
            .map_err(|e| SignerError::ParseCaCertificate(e.to_string()))?;
        Ok(Self {
            key,
            ca_der: pem.contents,
            duration,
        })
    }

    /// The PEM certificate for the PEM certificate request `request`.
    ///
    /// # Errors
    ///
    /// When the request cannot be read, the CA has expired or signing fails.
    pub fn sign_request(&self, request: &[u8]) -> Result<String, SignerError> {
        let (_, ca) = X509Certificate::from_der(&self.ca_der)
            .map_err(|e| SignerError::ParseCaCertificate(e.to_string()))?;
        let (_, pem) = x509_parser::pem::parse_x509_pem(request)
            .map_err(|e| SignerError::ParseRequest(e.to_string()))?;
        if pem.label != "CERTIFICATE REQUEST" {
            return Err(SignerError::ParseRequest(format!("PEM block is {}", pem.label)));
        }
        let (_, csr) = X509CertificationRequest::from_der(&pem.contents)
            .map_err(|e| SignerError::ParseRequest(e.to_string()))?;
        csr.verify_signature()
            .map_err(|e| SignerError::ParseRequest(format!("signature does not verify: {e}")))?;

        let now = ASN1Time::now().timestamp();
        let ca_end = ca.validity().not_after.timestamp();
        if ca_end <= now {
            return Err(SignerError::CaExpired(ca.validity().not_after.to_string()));
        }
        let wanted = now.saturating_add(i64::try_from(self.duration.as_secs()).unwrap_or(i64::MAX));
        let not_after = wanted.min(ca_end);

        let mut serial = [0u8; 16];
        rand::fill(&mut serial);
        serial[0] = (serial[0] & 0x7f) | 0x01;

        let info = &csr.certification_request_info;
        let mut extensions = vec![
            // keyUsage, critical: digitalSignature | keyEncipherment.
            der::extension(&[2, 5, 29, 15], true, &der::tlv(0x03, &[5, 0xa0])),
            // extKeyUsage: serverAuth, clientAuth.
            der::extension(
                &[2, 5, 29, 37],
                false,
                &der::seq(&[
                    der::oid(&[1, 3, 6, 1, 5, 5, 7, 3, 1]),
                    der::oid(&[1, 3, 6, 1, 5, 5, 7, 3, 2]),
                ]),
            ),
        ];
        for attribute in info.iter_attributes() {
            if let ParsedCriAttribute::ExtensionRequest(requested) = attribute.parsed_attribute() {
                for ext in &requested.extensions {
                    if matches!(ext.parsed_extension(), ParsedExtension::SubjectAlternativeName(_)) {
                        let mut parts = vec![der::tlv(0x06, ext.oid.as_bytes())];
                        if ext.critical {
                            parts.push(der::tlv(0x01, &[0xff]));
                        }
                        parts.push(der::tlv(0x04, ext.value));
                        extensions.push(der::seq(&parts));
                    }
                }
            }
        }
        for ext in ca.extensions() {
            if let ParsedExtension::SubjectKeyIdentifier(id) = ext.parsed_extension() {
                // authorityKeyIdentifier { [0] keyIdentifier }.
                extensions.push(der::extension(
                    &[2, 5, 29, 35],
                    false,
                    &der::seq(&[der::tlv(0x80, id.0)]),
                ));
            }
        }

        let algorithm = algorithm(&self.key)?;
        let tbs = der::seq(&[
            der::tlv(0xa0, &der::tlv(0x02, &[2])),
            der::tlv(0x02, &serial),
            algorithm.clone(),
            ca.tbs_certificate.subject.as_raw().to_vec(),
            der::seq(&[der::time(now), der::time(not_after)]),
            info.subject.as_raw().to_vec(),
            info.subject_pki.raw.to_vec(),
            der::tlv(0xa3, &der::seq(&extensions)),
        ]);
        let signature = self
            .key
            .sign(&tbs)
            .map_err(|e| SignerError::Sign(e.to_string()))?;
        let mut bits = vec![0u8];
        bits.extend(signature);
        let certificate = der::seq(&[tbs, algorithm, der::tlv(0x03, &bits)]);
        Ok(der::pem("CERTIFICATE", &certificate))
    }
}

impl CsrSigner for SignerWithExpiry {
    fn sign(
        &self,
        _cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
        csr: &CertificateSigningRequest,
    ) -> Result<Vec<u8>, AddonError> {
        self.sign_request(&csr.spec.request.0)
            .map(String::into_bytes)
            .map_err(|e| AddonError::SignCsr {
                csr: csr.metadata.name.clone().unwrap_or_default(),
                source: Box::new(e),
            })
    }
}

/// The signature AlgorithmIdentifier (DER) of a CA key.
fn algorithm(key: &KeyPair) -> Result<Vec<u8>, SignerError> {
    let alg = key.algorithm();
    if alg == &rcgen::PKCS_ECDSA_P256_SHA256 {
        Ok(der::seq(&[der::oid(&[1, 2, 840, 10045, 4, 3, 2])]))
    } else if alg == &rcgen::PKCS_ECDSA_P384_SHA384 {
        Ok(der::seq(&[der::oid(&[1, 2, 840, 10045, 4, 3, 3])]))
    } else if alg == &rcgen::PKCS_ED25519 {
        Ok(der::seq(&[der::oid(&[1, 3, 101, 112])]))
    } else if alg == &rcgen::PKCS_RSA_SHA256 {
        Ok(der::seq(&[
            der::oid(&[1, 2, 840, 113549, 1, 1, 11]),
            vec![0x05, 0x00],
        ]))
    } else {
        Err(SignerError::UnsupportedCaKey)
    }
}

/// The few DER encodings a certificate needs.
pub(crate) mod der {
    use base64::Engine;

    /// A tag-length-value.
    pub(crate) fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
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

    /// A SEQUENCE of encoded parts.
    pub(crate) fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
        tlv(0x30, &parts.concat())
    }

    /// An OBJECT IDENTIFIER from its arcs (at least two).
    pub(crate) fn oid(arcs: &[u64]) -> Vec<u8> {
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
        if let [first, second, rest @ ..] = arcs {
            push(first * 40 + second);
            for arc in rest {
                push(*arc);
            }
        }
        tlv(0x06, &body)
    }

    /// An Extension: id, criticality, value (DER, wrapped in an OCTET STRING).
    pub(crate) fn extension(id: &[u64], critical: bool, value: &[u8]) -> Vec<u8> {
        let mut parts = vec![oid(id)];
        if critical {
            parts.push(tlv(0x01, &[0xff]));
        }
        parts.push(tlv(0x04, value));
        seq(&parts)
    }

    /// A UTCTime (before 2050) or GeneralizedTime of Unix seconds.
    pub(crate) fn time(unix: i64) -> Vec<u8> {
        let days = unix.div_euclid(86_400);
        let secs = unix.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
        if (1950..2050).contains(&year) {
            let text = format!("{:02}{month:02}{day:02}{h:02}{m:02}{s:02}Z", year % 100);
            tlv(0x17, text.as_bytes())
        } else {
            let text = format!("{year:04}{month:02}{day:02}{h:02}{m:02}{s:02}Z");
            tlv(0x18, text.as_bytes())
        }
    }

    /// Year, month, day of days since 1970-01-01 (the proleptic Gregorian calendar).
    fn civil_from_days(days: i64) -> (i64, i64, i64) {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        (year, month, day)
    }

    /// A PEM block.
    pub(crate) fn pem(label: &str, der: &[u8]) -> String {
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        let mut out = format!("-----BEGIN {label}-----\n");
        for line in body.as_bytes().chunks(64) {
            out.push_str(&String::from_utf8_lossy(line));
            out.push('\n');
        }
        out.push_str(&format!("-----END {label}-----\n"));
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use rcgen::PublicKeyData;

    use super::*;

    /// A PEM CSR signed by `key` whose subject is CN `cn` and one O per organization.
    pub(crate) fn request_with_subject(cn: &str, orgs: &[&str], key: &KeyPair) -> String {
        let mut rdns = Vec::new();
        for org in orgs {
            rdns.push(der::tlv(
                0x31,
                &der::seq(&[der::oid(&[2, 5, 4, 10]), der::tlv(0x0c, org.as_bytes())]),
            ));
        }
        rdns.push(der::tlv(
            0x31,
            &der::seq(&[der::oid(&[2, 5, 4, 3]), der::tlv(0x0c, cn.as_bytes())]),
        ));
        let info = der::seq(&[
            der::tlv(0x02, &[0]),
            der::seq(&rdns),
            key.subject_public_key_info(),
            der::tlv(0xa0, &[]),
        ]);
        let signature = key.sign(&info).unwrap();
        let mut bits = vec![0u8];
        bits.extend(signature);
        let csr = der::seq(&[info, algorithm(key).unwrap(), der::tlv(0x03, &bits)]);
        der::pem("CERTIFICATE REQUEST", &csr)
    }

    fn ca(valid_days: i64) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let now = ASN1Time::now().to_datetime();
        let day = Duration::from_secs(86_400);
        params.not_before = now - day * 2;
        params.not_after = if valid_days >= 0 {
            now + day * valid_days.unsigned_abs() as u32
        } else {
            now - day * valid_days.unsigned_abs() as u32
        };
        let cert = params.self_signed(&key).unwrap();
        (key.serialize_pem(), cert.pem())
    }

    fn parse(pem: &str) -> (Vec<u8>, i64, i64) {
        let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
        let (_, cert) = X509Certificate::from_der(&block.contents).unwrap();
        let v = cert.validity();
        (
            cert.subject().as_raw().to_vec(),
            v.not_before.timestamp(),
            v.not_after.timestamp(),
        )
    }

    #[test]
    fn issues_a_certificate_with_the_request_subject_and_expiry() {
        let (key, cert) = ca(30);
        let signer = SignerWithExpiry::new(&key, &cert, Duration::from_secs(3600)).unwrap();
        let agent = KeyPair::generate().unwrap();
        let request = request_with_subject("user1", &["g1", "g2"], &agent);
        let issued = signer.sign_request(request.as_bytes()).unwrap();
        let (_, block) = x509_parser::pem::parse_x509_pem(issued.as_bytes()).unwrap();
        let (_, parsed) = X509Certificate::from_der(&block.contents).unwrap();
        let orgs: Vec<_> = parsed
            .subject()
            .iter_organization()
            .map(|o| o.as_str().unwrap())
            .collect();
        assert_eq!(orgs, vec!["g1", "g2"]);
        assert_eq!(
            parsed
                .subject()
                .iter_common_name()
                .next()
                .unwrap()
                .as_str()
                .unwrap(),
            "user1"
        );
        let (_, from, to) = parse(&issued);
        assert_eq!(to - from, 3600);
        // Signed by the CA.
        let (_, ca_block) = x509_parser::pem::parse_x509_pem(cert.as_bytes()).unwrap();
        let (_, ca_cert) = X509Certificate::from_der(&ca_block.contents).unwrap();
        parsed.verify_signature(Some(ca_cert.public_key())).unwrap();
        let eku = parsed.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && eku.server_auth);
    }

    #[test]
    fn expiry_is_capped_by_the_ca() {
        let (key, cert) = ca(2);
        let signer = SignerWithExpiry::new(&key, &cert, Duration::from_secs(365 * 86_400)).unwrap();
        let request = request_with_subject("u", &[], &KeyPair::generate().unwrap());
        let issued = signer.sign_request(request.as_bytes()).unwrap();
        let (_, _, to) = parse(&issued);
        let (_, _, ca_to) = parse(&cert);
        assert_eq!(to, ca_to);
    }

    #[test]
    fn an_expired_ca_or_a_bad_request_is_an_error() {
        let (key, cert) = ca(-1);
        let signer = SignerWithExpiry::new(&key, &cert, Duration::from_secs(60)).unwrap();
        let request = request_with_subject("u", &[], &KeyPair::generate().unwrap());
        assert!(matches!(
            signer.sign_request(request.as_bytes()),
            Err(SignerError::CaExpired(_))
        ));
        let (key, cert) = ca(2);
        let signer = SignerWithExpiry::new(&key, &cert, Duration::from_secs(60)).unwrap();
        assert!(matches!(
            signer.sign_request(b"nope"),
            Err(SignerError::ParseRequest(_))
        ));
        assert!(matches!(
            SignerWithExpiry::new("junk", &cert, Duration::from_secs(1)),
            Err(SignerError::ParseCaKey(_))
        ));
    }

    #[test]
    fn der_times_are_utc_or_generalized() {
        assert_eq!(der::time(0), der::tlv(0x17, b"700101000000Z"));
        assert_eq!(der::time(951_782_400), der::tlv(0x17, b"000229000000Z"));
        assert_eq!(der::time(2_524_608_000), der::tlv(0x18, b"20500101000000Z"));
    }
}
