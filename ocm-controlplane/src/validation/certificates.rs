//! certificates.k8s.io/v1 CertificateSigningRequests as kube-apiserver validates their spec and
//! conditions: the PEM request, usages, signer name, expiration, condition types and statuses.
//!
//! The request's signature is not checked (kube-apiserver also verifies it); the approval rules
//! between old and new conditions are in [`crate::rest::kinds`].

use std::collections::HashSet;

use base64::Engine;
use serde_json::{Value, json};

use super::field::{self, Errors, Path};
use crate::validation::{dns1123_label, dns1123_subdomain};

const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// Why a request is not a PEM `CERTIFICATE REQUEST` holding a parseable PKCS#10 request.
fn request_error(b64: &str) -> Option<String> {
    let der_pem = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    let text = String::from_utf8_lossy(&der_pem);
    let not_csr = || Some("PEM block type must be CERTIFICATE REQUEST".to_string());
    let Ok((_, block)) = x509_parser::pem::parse_x509_pem(text.trim_start().as_bytes()) else {
        return not_csr();
    };
    if block.label != "CERTIFICATE REQUEST" {
        return not_csr();
    }
    use x509_parser::prelude::{FromDer, X509CertificationRequest};
    match X509CertificationRequest::from_der(&block.contents) {
        Ok(_) => None,
        Err(_) => Some("asn1: structure error: tags don't match".to_string()),
    }
}

/// `ValidateSignerName`.
pub fn signer_name(name: &str, path: &Path) -> Errors {
    if name.is_empty() {
        return vec![field::required(path, "")];
    }
    let segments: Vec<&str> = name.split('/').collect();
    let [domain, rest] = segments.as_slice() else {
        return vec![field::invalid_str(
            path,
            name,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )];
    };
    let mut errs = Errors::new();
    if domain.len() > 253 {
        errs.push(field::too_long(path, 253));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if let Some((lbl, msgs)) = labels
        .iter()
        .map(|l| (l, dns1123_label(l)))
        .find(|(_, m)| !m.is_empty())
    {
        for m in msgs {
            errs.push(field::invalid_str(
                path,
                domain,
                &format!("validating label {lbl:?}: {m}"),
            ));
        }
    }
    if labels.len() < 2 {
        errs.push(field::invalid_str(
            path,
            domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    if let Some((lbl, msgs)) = rest
        .split('.')
        .map(|l| (l, dns1123_subdomain(l)))
        .find(|(_, m)| !m.is_empty())
    {
        for m in msgs {
            errs.push(field::invalid_str(
                path,
                rest,
                &format!("validating label {lbl:?}: {m}"),
            ));
        }
    }
    if name.len() > 253 + 253 + 63 + 1 + 1 {
        errs.push(field::too_long(path, 571));
    }
    errs
}

/// A CertificateSigningRequest's spec and condition rules (create and update).
pub fn csr(o: &Value) -> Errors {
    let spec = o.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let mut errs = Errors::new();
    let request = field::s(spec, "request");
    if let Some(e) = request_error(request) {
        errs.push(field::invalid_str(&p.child("request"), request, &e));
    } else if request.is_empty() {
        errs.push(field::invalid_str(
            &p.child("request"),
            "",
            "PEM block type must be CERTIFICATE REQUEST",
        ));
    }
    let usages = field::list(spec, "usages");
    if usages.is_empty() {
        errs.push(field::required(&p.child("usages"), ""));
    }
    let mut seen = HashSet::new();
    for (i, u) in usages.iter().enumerate() {
        let u = u.as_str().unwrap_or_default();
        if !USAGES.contains(&u) {
            errs.push(field::not_supported(
                &p.child("usages").index(i),
                &json!(u),
                USAGES,
            ));
        }
    }
    for (i, u) in usages.iter().enumerate() {
        let u = u.as_str().unwrap_or_default();
        if !seen.insert(u) {
            errs.push(field::duplicate(&p.child("usages").index(i), &json!(u)));
        }
    }
    let signer = field::s(spec, "signerName");
    if signer == "kubernetes.io/legacy-unknown" {
        errs.push(field::invalid_str(
            &p.child("signerName"),
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(signer_name(signer, &p.child("signerName")));
    }
    if let Some(e) = field::int(spec, "expirationSeconds")
        && e < 600
    {
        errs.push(field::invalid(
            &p.child("expirationSeconds"),
            &json!(e),
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    let cp = Path::new("status").child("conditions");
    let mut types = HashSet::new();
    let conditions = o.pointer("/status/conditions").and_then(Value::as_array);
    for (i, c) in conditions
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let ty = field::s(c, "type");
        if ty.is_empty() {
            errs.push(field::required(&cp.index(i).child("type"), ""));
        }
        let status = field::s(c, "status");
        let allowed: &[&str] = if matches!(ty, "Approved" | "Denied" | "Failed") {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if status.is_empty() {
            errs.push(field::required(&cp.index(i).child("status"), ""));
        } else if !allowed.contains(&status) {
            errs.push(field::not_supported(
                &cp.index(i).child("status"),
                &json!(status),
                allowed,
            ));
        }
        if !types.insert(ty) {
            errs.push(field::duplicate(&cp.index(i).child("type"), &json!(ty)));
        }
    }
    errs
}
