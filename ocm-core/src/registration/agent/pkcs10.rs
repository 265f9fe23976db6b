//! PKCS#10 certificate requests laid out as upstream's agent makes them with Go's
//! `x509.CreateCertificateRequest`, so that the CSRs on the hub read the same: the subject's
//! organizations in one relative distinguished name, then the organizational units in one, then
//! the common name; PrintableString where the text allows it, else UTF8String; no attributes
//! unless there are DNS names, which go into an extensionRequest's subjectAltName; signed with
//! ECDSA over SHA-256.

use rcgen::{PublicKeyData, SigningKey};

/// A DER element: `tag`, its length, `content`.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(content);
    out
}

fn sequence(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

/// A SET OF, its elements sorted by their encoding as DER requires (and Go does).
fn set_of(mut parts: Vec<Vec<u8>>) -> Vec<u8> {
    parts.sort();
    tlv(0x31, &parts.concat())
}

const OID_ORGANIZATION: [u8; 3] = [0x55, 0x04, 0x0a];
const OID_ORGANIZATIONAL_UNIT: [u8; 3] = [0x55, 0x04, 0x0b];
const OID_COMMON_NAME: [u8; 3] = [0x55, 0x04, 0x03];
/// 1.2.840.113549.1.9.14, PKCS#9 extensionRequest.
const OID_EXTENSION_REQUEST: [u8; 9] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x0e];
/// 2.5.29.17, subjectAltName.
const OID_SUBJECT_ALT_NAME: [u8; 3] = [0x55, 0x1d, 0x11];
/// 1.2.840.10045.4.3.2, ecdsa-with-SHA256.
const OID_ECDSA_SHA256: [u8; 8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];

/// Whether Go marshals `text` as a PrintableString (else UTF8String).
fn printable(text: &str) -> bool {
    text.bytes().all(|b| {
        b.is_ascii_alphanumeric()
            || (b'\''..=b')').contains(&b)
            || (b'+'..=b'/').contains(&b)
            || b" :=?".contains(&b)
    })
}

fn directory_string(text: &str) -> Vec<u8> {
    tlv(if printable(text) { 0x13 } else { 0x0c }, text.as_bytes())
}

/// One relative distinguished name holding every value of `oid`, or none when there are none.
fn rdn(oid: &[u8], values: &[String]) -> Option<Vec<u8>> {
    (!values.is_empty()).then(|| {
        set_of(
            values
                .iter()
                .map(|v| sequence(&[tlv(0x06, oid), directory_string(v)]))
                .collect(),
        )
    })
}

/// The subject as Go orders it: O, OU, CN.
fn subject(common_name: &str, organizations: &[String], units: &[String]) -> Vec<u8> {
    let names: Vec<Vec<u8>> = [
        rdn(&OID_ORGANIZATION, organizations),
        rdn(&OID_ORGANIZATIONAL_UNIT, units),
        rdn(&OID_COMMON_NAME, &[common_name.to_string()]).filter(|_| !common_name.is_empty()),
    ]
    .into_iter()
    .flatten()
    .collect();
    sequence(&names)
}

/// The `[0]` attributes: empty, or an extensionRequest with the DNS names as subjectAltName.
fn attributes(dns: &[String]) -> Vec<u8> {
    if dns.is_empty() {
        return tlv(0xa0, &[]);
    }
    let names: Vec<Vec<u8>> = dns.iter().map(|d| tlv(0x82, d.as_bytes())).collect();
    let san = sequence(&[tlv(0x06, &OID_SUBJECT_ALT_NAME), tlv(0x04, &sequence(&names))]);
    let request = sequence(&[tlv(0x06, &OID_EXTENSION_REQUEST), set_of(vec![sequence(&[san])])]);
    tlv(0xa0, &request)
}

/// A PEM `CERTIFICATE REQUEST` for `common_name`, `organizations`, `units` and DNS names `dns`,
/// signed with `key` (ECDSA P-256).
///
/// # Errors
/// Signing failed.
pub fn request_pem(
    key: &rcgen::KeyPair,
    common_name: &str,
    organizations: &[String],
    units: &[String],
    dns: &[String],
) -> Result<String, rcgen::Error> {
    use base64::Engine;
    let info = sequence(&[
        tlv(0x02, &[0]),
        subject(common_name, organizations, units),
        key.subject_public_key_info(),
        attributes(dns),
    ]);
    let signature = key.sign(&info)?;
    let mut bits = vec![0u8];
    bits.extend_from_slice(&signature);
    let der = sequence(&[info, sequence(&[tlv(0x06, &OID_ECDSA_SHA256)]), tlv(0x03, &bits)]);
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE REQUEST-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE REQUEST-----\n");
    Ok(pem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::FromDer;

    fn parse(pem: &str) -> Vec<u8> {
        x509_parser::pem::parse_x509_pem(pem.as_bytes())
            .unwrap()
            .1
            .contents
    }

    #[test]
    fn lengths_use_the_long_form_from_128_bytes() {
        assert_eq!(tlv(0x04, &[1; 3])[..2], [0x04, 3]);
        assert_eq!(tlv(0x04, &[1; 200])[..3], [0x04, 0x81, 200]);
        assert_eq!(tlv(0x04, &[1; 300])[..4], [0x04, 0x82, 0x01, 0x2c]);
    }

    #[test]
    fn the_subject_is_laid_out_as_go_does() {
        let groups = ["system:open-cluster-management:c1".to_string(), "b".to_string()];
        let der = subject("system:open-cluster-management:c1:a1", &groups, &[]);
        let (_, name) = x509_parser::x509::X509Name::from_der(&der).unwrap();
        let rdns: Vec<_> = name.iter().collect();
        // One RDN with both organizations, then the common name.
        assert_eq!(rdns.len(), 2);
        assert_eq!(rdns[0].iter().count(), 2);
        assert_eq!(
            name.iter_common_name().next().unwrap().as_str().unwrap(),
            "system:open-cluster-management:c1:a1"
        );
        // PrintableString: ':' and '-' are in its alphabet.
        assert!(printable("system:open-cluster-management:managed-clusters"));
        assert!(!printable("a_b") && !printable("a@b") && !printable("ü"));
    }

    #[test]
    fn requests_verify_and_carry_what_was_asked() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let pem = request_pem(
            &key,
            "u",
            &["g1".into(), "g2".into(), "g3".into()],
            &["ou".into()],
            &["a.example".into()],
        )
        .unwrap();
        let der = parse(&pem);
        let (_, req) = x509_parser::certification_request::X509CertificationRequest::from_der(&der).unwrap();
        req.verify_signature().unwrap();
        let subject = &req.certification_request_info.subject;
        let o: Vec<_> = subject.iter_organization().map(|a| a.as_str().unwrap()).collect();
        assert_eq!(o, ["g1", "g2", "g3"]);
        let sans: Vec<String> = req
            .requested_extensions()
            .unwrap()
            .filter_map(|e| match e {
                x509_parser::extensions::ParsedExtension::SubjectAlternativeName(san) => Some(
                    san.general_names
                        .iter()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                _ => None,
            })
            .collect();
        assert_eq!(sans, ["DNSName(a.example)"]);
        // Without DNS names the attributes are empty, as Go writes them.
        let pem = request_pem(&key, "u", &["g".into()], &[], &[]).unwrap();
        let der = parse(&pem);
        let (_, req) = x509_parser::certification_request::X509CertificationRequest::from_der(&der).unwrap();
        req.verify_signature().unwrap();
        assert!(req.requested_extensions().is_none_or(|mut e| e.next().is_none()));
        assert!(pem.lines().all(|l| l.len() <= 64));
    }
}
