//! Reading a CertificateSigningRequest's `spec.request`: base64 (JSON's form of bytes) of a PEM
//! `CERTIFICATE REQUEST` block, whose DER is a PKCS#10 request. Malformed input of any layer is a
//! [`ParseError`], never a panic.

use base64::Engine;
use rustls::pki_types::CertificateSigningRequestDer;
use rustls::pki_types::pem::PemObject;
use x509_parser::prelude::{FromDer, X509CertificationRequest};

/// Why a request could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    /// `spec.request` is not base64.
    #[error("spec.request is not base64")]
    DecodeBase64,
    /// No PEM `CERTIFICATE REQUEST` block.
    #[error("PEM block type must be CERTIFICATE REQUEST")]
    DecodePem,
    /// The DER is not a PKCS#10 certificate request.
    #[error("parsing the certificate request: {0}")]
    ParseDer(String),
    /// The request's self-signature does not verify.
    #[error("the certificate request's signature does not verify")]
    VerifySignature,
}

/// What the signer needs of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedRequest {
    /// The DER of the request.
    pub der: Vec<u8>,
    /// Subject common name (`""` if none).
    pub common_name: String,
    /// Subject organizations.
    pub organizations: Vec<String>,
}

/// Decodes the PEM text of a request.
pub fn parse_pem(pem: &[u8]) -> Result<ParsedRequest, ParseError> {
    let der = CertificateSigningRequestDer::from_pem_slice(pem).map_err(|_| ParseError::DecodePem)?;
    parse_der(der.as_ref())
}

/// Parses the DER of a request and verifies its signature.
pub fn parse_der(der: &[u8]) -> Result<ParsedRequest, ParseError> {
    let (_, request) =
        X509CertificationRequest::from_der(der).map_err(|e| ParseError::ParseDer(e.to_string()))?;
    request
        .verify_signature()
        .map_err(|_| ParseError::VerifySignature)?;
    let subject = &request.certification_request_info.subject;
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
    Ok(ParsedRequest {
        der: der.to_vec(),
        common_name,
        organizations,
    })
}

/// Decodes `spec.request` as JSON carries it (base64 of the PEM).
pub fn parse_spec_request(encoded: &str) -> Result<ParsedRequest, ParseError> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| ParseError::DecodeBase64)?;
    parse_pem(&pem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn request_pem(cn: &str, orgs: &[&str]) -> String {
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
        params.serialize_request(&key).unwrap().pem().unwrap()
    }

    #[test]
    fn a_request_gives_its_subject() {
        let pem = request_pem("agent", &["g1", "g2"]);
        let encoded = base64::engine::general_purpose::STANDARD.encode(&pem);
        let parsed = parse_spec_request(&encoded).unwrap();
        assert_eq!(parsed.common_name, "agent");
        assert_eq!(parsed.organizations, ["g1", "g2"]);
    }

    #[test]
    fn malformed_requests_are_errors() {
        assert_eq!(parse_spec_request("!!!"), Err(ParseError::DecodeBase64));
        let not_pem = base64::engine::general_purpose::STANDARD.encode("hello");
        assert_eq!(parse_spec_request(&not_pem), Err(ParseError::DecodePem));
        assert!(matches!(
            parse_der(b"\x30\x03\x02\x01\x01"),
            Err(ParseError::ParseDer(_))
        ));
        // A flipped byte in the signature fails verification (or parsing), never succeeds.
        let pem = request_pem("agent", &[]);
        let der = CertificateSigningRequestDer::from_pem_slice(pem.as_bytes()).unwrap();
        let mut bytes = der.as_ref().to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        assert!(parse_der(&bytes).is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse_der(&bytes);
            let _ = parse_pem(&bytes);
            let mut pem = b"-----BEGIN CERTIFICATE REQUEST-----\n".to_vec();
            pem.extend(base64::engine::general_purpose::STANDARD.encode(&bytes).as_bytes());
            pem.extend(b"\n-----END CERTIFICATE REQUEST-----\n");
            prop_assert!(parse_pem(&pem).is_err());
        }

        #[test]
        fn truncated_requests_are_errors(cut in 1usize..200) {
            let pem = request_pem("agent", &["g"]);
            let der = CertificateSigningRequestDer::from_pem_slice(pem.as_bytes()).unwrap();
            let bytes = der.as_ref();
            let cut = cut.min(bytes.len() - 1);
            prop_assert!(parse_der(&bytes[..bytes.len() - cut]).is_err());
        }
    }
}
