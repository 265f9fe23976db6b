//! ServiceAccount tokens: the JWTs TokenRequest issues ([`crate::rest::token_request`]), accepted
//! as bearer tokens while they verify (signature, issuer, audience, lifetime) and the
//! ServiceAccount — and a bound Secret or Pod — still exists with the uid the token names, as
//! kube-apiserver's ServiceAccount token authenticator checks.
//!
//! The user is `system:serviceaccount:<ns>:<name>` with the ServiceAccount's uid, in
//! `system:serviceaccounts`, `system:serviceaccounts:<ns>` and `system:authenticated`; `extra`
//! carries the credential id `JTI=<jti>`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{AUTHENTICATED, CREDENTIAL_ID, Identity, UserInfo};
use crate::rest::token_request::{Claims, TokenIssuer, service_account_username};
use crate::storage::{self, Storage};

/// Why a ServiceAccount token does not authenticate.
#[derive(Debug, thiserror::Error)]
pub enum ServiceAccountTokenError {
    /// The JWT does not verify.
    #[error("verifying the token: {0}")]
    Verify(#[from] crate::rest::token_request::TokenError),
    /// The ServiceAccount (or bound object) is gone or was recreated.
    #[error("{0}")]
    CheckBinding(String),
}

async fn uid_of(storage: &dyn Storage, resource: &str, namespace: &str, name: &str) -> Option<String> {
    let key = storage::object_key("", resource, Some(namespace), name);
    let stored = storage.get(&key).await.ok()??;
    if stored
        .object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return None;
    }
    stored
        .object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The identity of a verified token's claims, after checking the bound objects in `storage`.
pub async fn identity_of(
    storage: &dyn Storage,
    claims: &Claims,
) -> Result<Identity, ServiceAccountTokenError> {
    let k = &claims.kubernetes;
    let ns = &k.namespace;
    let sa = &k.serviceaccount;
    let gone =
        |what: &str| ServiceAccountTokenError::CheckBinding(format!("{what} is gone or was recreated"));
    if uid_of(storage, "serviceaccounts", ns, &sa.name).await.as_deref() != Some(sa.uid.as_str()) {
        return Err(gone(&format!("serviceaccount {ns}/{}", sa.name)));
    }
    for (resource, bound) in [("secrets", &k.secret), ("pods", &k.pod)] {
        if let Some(bound) = bound
            && uid_of(storage, resource, ns, &bound.name).await.as_deref() != Some(bound.uid.as_str())
        {
            return Err(gone(&format!("{resource} {ns}/{}", bound.name)));
        }
    }
    let mut extra = BTreeMap::new();
    if !claims.jti.is_empty() {
        extra.insert(CREDENTIAL_ID.to_string(), vec![format!("JTI={}", claims.jti)]);
    }
    Ok(Identity {
        user: UserInfo {
            name: service_account_username(ns, &sa.name),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{ns}"),
                AUTHENTICATED.into(),
            ],
        },
        uid: sa.uid.clone(),
        extra,
    })
}

/// An audience accepted besides the issuer's own: the in-cluster service name, which the
/// recorded conformance server (like most distributions, through `--api-audiences`) accepts.
pub const SERVICE_AUDIENCE: &str = "https://kubernetes.default.svc";

/// The audiences the API accepts: the issuer's and [`SERVICE_AUDIENCE`].
pub fn api_audiences(issuer: &TokenIssuer) -> Vec<String> {
    let mut out = issuer.audiences().to_vec();
    if !out.iter().any(|a| a == SERVICE_AUDIENCE) {
        out.push(SERVICE_AUDIENCE.into());
    }
    out
}

/// Verifies a ServiceAccount token for the API's audiences (or `audiences`) and returns the
/// identity with the audiences it was accepted for.
pub async fn authenticate(
    storage: &dyn Storage,
    issuer: &TokenIssuer,
    token: &str,
    audiences: &[String],
) -> Result<(Identity, Vec<String>), ServiceAccountTokenError> {
    let wanted = if audiences.is_empty() {
        api_audiences(issuer)
    } else {
        audiences.to_vec()
    };
    let claims = issuer.verify(token, &wanted)?;
    let accepted: Vec<String> = claims
        .aud
        .to_vec()
        .into_iter()
        .filter(|a| wanted.contains(a))
        .collect();
    Ok((identity_of(storage, &claims).await?, accepted))
}
