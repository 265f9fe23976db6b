//! CertificateSigningRequest signing and cleanup, as kube-controller-manager's `csrsigning` and
//! `csrcleaner` controllers do them.
//!
//! Signers: `kubernetes.io/kube-apiserver-client`, `kubernetes.io/kube-apiserver-client-kubelet`
//! and `kubernetes.io/legacy-unknown`, all with the client CA (so the certificates authenticate
//! against this server). A CSR is signed once it is Approved and not Denied nor Failed and has no
//! certificate yet. The certificate is valid from 5 minutes before signing (clock skew) for
//! `spec.expirationSeconds` (at least 10 minutes) or the default duration of one year, and never
//! beyond the CA. A request whose usages or subject the signer does not allow gets a `Failed`
//! condition (`SignerValidationFailure`) instead.
//!
//! Cleanup runs hourly: approved, denied and failed CSRs older than an hour, pending ones older
//! than a day and issued ones whose certificate expired are deleted.

pub mod certificate;
pub mod request;

use std::time::Duration;

use base64::Engine;
use futures::StreamExt;
use serde_json::{Value, json};

use super::controller_context;
use crate::rest::{Api, RequestContext};
use crate::storage::{self, WatchItem};

/// kube-controller-manager's manager name.
const MANAGER: &str = "kube-controller-manager";
/// The default certificate duration (kcm's `--cluster-signing-duration`).
pub const DEFAULT_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// The shortest duration a CSR may ask for.
pub const MIN_DURATION: Duration = Duration::from_secs(600);
/// How far before signing a certificate becomes valid.
const BACKDATE: Duration = Duration::from_secs(300);

/// The signer names this controller signs for.
pub const SIGNERS: [&str; 3] = [
    "kubernetes.io/kube-apiserver-client",
    "kubernetes.io/kube-apiserver-client-kubelet",
    "kubernetes.io/legacy-unknown",
];

/// Why a CSR is not signed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignError {
    /// The request does not parse.
    #[error("{0}")]
    ParseRequest(#[from] request::ParseError),
    /// The signer does not allow the request (becomes a `Failed` condition).
    #[error("{0}")]
    ValidateRequest(String),
    /// Creating the certificate failed.
    #[error("signing: {0}")]
    Sign(String),
}

/// The CA a signer signs with.
#[derive(Debug, Clone)]
pub struct SigningCa {
    /// CA certificate (PEM).
    pub cert_pem: String,
    /// CA key (PEM).
    pub key_pem: String,
}

fn has_condition(csr: &Value, kind: &str) -> bool {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(kind)
                    && c.get("status").and_then(Value::as_str).unwrap_or("True") == "True"
            })
        })
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// Whether the controller should sign `csr` now.
pub fn wants_signing(csr: &Value) -> bool {
    let signer = csr
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    SIGNERS.contains(&signer)
        && has_condition(csr, "Approved")
        && !has_condition(csr, "Denied")
        && !has_condition(csr, "Failed")
        && csr
            .pointer("/status/certificate")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
}

/// The signer's rules on usages and subject.
fn validate(signer: &str, usages: &[String], parsed: &request::ParsedRequest) -> Result<(), SignError> {
    let client = ["client auth", "digital signature", "key encipherment"];
    match signer {
        "kubernetes.io/kube-apiserver-client" | "kubernetes.io/kube-apiserver-client-kubelet" => {
            if let Some(bad) = usages.iter().find(|u| !client.contains(&u.as_str())) {
                return Err(SignError::ValidateRequest(format!(
                    "invalid usage for client certificate: {bad}"
                )));
            }
            if !usages.iter().any(|u| u == "client auth") {
                return Err(SignError::ValidateRequest(
                    "missing required usage for client certificate: client auth".into(),
                ));
            }
            if signer.ends_with("-kubelet") {
                if parsed.organizations != ["system:nodes"] {
                    return Err(SignError::ValidateRequest(
                        "subject organization is not system:nodes".into(),
                    ));
                }
                if !parsed.common_name.starts_with("system:node:") {
                    return Err(SignError::ValidateRequest(
                        "subject common name does not begin with system:node:".into(),
                    ));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Signs `csr` with `ca` at `now_unix` (seconds): the certificate's PEM.
pub fn sign(csr: &Value, ca: &SigningCa, now_unix: u64) -> Result<String, SignError> {
    let signer = csr
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let encoded = csr
        .pointer("/spec/request")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let parsed = request::parse_spec_request(encoded)?;
    let usages = strings(csr.pointer("/spec/usages"));
    validate(signer, &usages, &parsed)?;
    let duration = csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_u64)
        .map(|s| Duration::from_secs(s).max(MIN_DURATION))
        .unwrap_or(DEFAULT_DURATION)
        .min(DEFAULT_DURATION);
    let now = i64::try_from(now_unix).unwrap_or(i64::MAX);
    certificate::issue(&certificate::Issue {
        request_der: &parsed.der,
        ca_cert_pem: &ca.cert_pem,
        ca_key_pem: &ca.key_pem,
        not_before: now - certificate::secs(BACKDATE),
        not_after: now.saturating_add(certificate::secs(duration)),
        usages: &usages,
    })
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// Signs (or fails) one CSR if it is ready, writing its status.
pub async fn reconcile(api: &Api, ca: &SigningCa, csr: &Value) {
    if !wants_signing(csr) {
        return;
    }
    let Some(info) = api
        .registry
        .get("certificates.k8s.io", "v1", "certificatesigningrequests")
    else {
        return;
    };
    let name = csr
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut updated = csr.clone();
    let status = crate::rest::ensure_object(&mut updated)
        .entry("status")
        .or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    match sign(csr, ca, now_unix()) {
        Ok(pem) => {
            status["certificate"] = json!(base64::engine::general_purpose::STANDARD.encode(pem));
        }
        Err(error) => {
            let now = crate::fieldmanager::now_rfc3339();
            let conditions = status
                .as_object_mut()
                .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
            if let Some(Value::Array(list)) = conditions {
                list.push(
                    json!({"type": "Failed", "status": "True", "reason": "SignerValidationFailure",
                    "message": error.to_string(), "lastUpdateTime": now, "lastTransitionTime": now}),
                );
            }
        }
    }
    let ctx = RequestContext {
        name: Some(name.to_string()),
        subresource: Some("status".into()),
        ..controller_context(MANAGER, None)
    };
    if let Err(error) = api.update(&info, &ctx, updated.to_string().as_bytes()).await
        && error.code != 409
        && error.code != 404
    {
        tracing::warn!(csr = %name, %error, "could not write the CSR's status");
    }
}

/// How many CSRs are signed at once.
const SIGNING_CONCURRENCY: usize = 16;

/// Signs CSRs as they are approved, until the watch fails; then lists and watches again.
pub async fn run(api: Api, ca: SigningCa) {
    let prefix = storage::resource_prefix("certificates.k8s.io", "certificatesigningrequests", None);
    loop {
        let listed = match api.storage.list(&prefix, None).await {
            Ok(l) => l,
            Err(error) => {
                tracing::warn!(%error, "csr signing: cannot list CSRs");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        futures::stream::iter(&listed.items)
            .for_each_concurrent(SIGNING_CONCURRENCY, |(_, stored)| {
                reconcile(&api, &ca, &stored.object)
            })
            .await;
        let stream = match api.storage.watch(&prefix, listed.rv).await {
            Ok(s) => s,
            Err(error) => {
                tracing::warn!(%error, "csr signing: cannot watch CSRs");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        // Until the watch fails; CSRs are signed side by side (each signature and durable status
        // write takes milliseconds, and a thousand agents may be waiting).
        stream
            .filter_map(|item| {
                std::future::ready(match item {
                    Ok(WatchItem::Event(event)) if event.kind != storage::EventType::Deleted => {
                        Some(event.object())
                    }
                    Ok(_) => None,
                    Err(error) => Some(Err(error)),
                })
            })
            .take_while(|csr| std::future::ready(csr.is_ok()))
            .for_each_concurrent(SIGNING_CONCURRENCY, |csr| {
                let (api, ca) = (&api, &ca);
                async move {
                    if let Ok(csr) = csr {
                        reconcile(api, ca, &csr).await
                    }
                }
            })
            .await;
    }
}

/// When a CSR is due for deletion by kcm's cleaner, as of `now`.
pub fn expired(csr: &Value, now: chrono::DateTime<chrono::Utc>) -> bool {
    let created = csr
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    let age = |since: Option<chrono::DateTime<chrono::FixedOffset>>| {
        since.map(|t| now.signed_duration_since(t)).unwrap_or_default()
    };
    let condition_time = |kind: &str| {
        csr.pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| {
                c.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
            })
            .and_then(|c| c.get("lastUpdateTime").and_then(Value::as_str))
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .or(created)
    };
    let hour = chrono::Duration::hours(1);
    if let Some(cert) = csr.pointer("/status/certificate").and_then(Value::as_str)
        && let Ok(pem) = base64::engine::general_purpose::STANDARD.decode(cert)
        && let Ok((_, block)) = x509_parser::pem::parse_x509_pem(&pem)
        && let Ok(parsed) = block.parse_x509()
        && parsed.validity().not_after.timestamp() < now.timestamp()
    {
        return true;
    }
    for kind in ["Approved", "Denied", "Failed"] {
        if has_condition(csr, kind) {
            return age(condition_time(kind)) > hour;
        }
    }
    age(created) > chrono::Duration::hours(24)
}

/// Deletes the CSRs [`expired`] says are due, every hour.
pub async fn run_cleaner(api: Api) {
    let mut ticker = tokio::time::interval(Duration::from_secs(3600));
    loop {
        ticker.tick().await;
        let Some(info) = api
            .registry
            .get("certificates.k8s.io", "v1", "certificatesigningrequests")
        else {
            return;
        };
        let prefix = storage::resource_prefix("certificates.k8s.io", "certificatesigningrequests", None);
        let Ok(listed) = api.storage.list(&prefix, None).await else {
            continue;
        };
        let now = chrono::Utc::now();
        for (_, stored) in listed.items {
            if !expired(&stored.object, now) {
                continue;
            }
            let name = stored
                .object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let ctx = RequestContext {
                name: Some(name.to_string()),
                ..controller_context(MANAGER, None)
            };
            if let Err(error) = api.delete(&info, &ctx, &json!({})).await
                && error.code != 404
            {
                tracing::warn!(csr = %name, %error, "could not clean up the CSR");
            }
        }
    }
}

#[cfg(test)]
mod tests;
