//! Who a request comes from: authentication as kube-apiserver does it.
//!
//! | credential | module | user |
//! |---|---|---|
//! | TLS client certificate signed by the client CA, within its validity | [`client_cert`] | CN, groups O |
//! | `Authorization: Bearer <id>.<secret>` bootstrap token (Secret in kube-system) | [`bootstrap_token`] | `system:bootstrap:<id>`, `system:bootstrappers` + extra groups |
//! | `Authorization: Bearer <jwt>` ServiceAccount token from TokenRequest | [`service_account`] | `system:serviceaccount:<ns>:<name>`, `system:serviceaccounts[:<ns>]` |
//! | none | here | `system:anonymous` in `system:unauthenticated` (unless anonymous auth is off) |
//!
//! Every authenticated user is also in `system:authenticated`. A credential that is presented but
//! invalid makes the request `401 Unauthorized` (it is never treated as anonymous). The
//! [`Authenticator`] runs once per request, before authorization (see [`crate::authorization`]).

pub mod bootstrap_token;
pub mod client_cert;
pub mod kubeconfig;
pub mod service_account;

use std::collections::BTreeMap;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::storage::Storage;

/// The group of every authenticated user.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group of the anonymous user.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The anonymous user's name.
pub const ANONYMOUS: &str = "system:anonymous";
/// The `extra` key naming the credential a user authenticated with.
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// The authenticated user of a request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    /// User name (`admin`, `system:anonymous`).
    pub name: String,
    /// Groups.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The anonymous user.
    pub fn anonymous() -> Self {
        Self {
            name: ANONYMOUS.into(),
            groups: vec![UNAUTHENTICATED.into()],
        }
    }

    /// The user of a client certificate: CN is the name, O the groups (plus
    /// `system:authenticated`). Does not verify the certificate (see [`client_cert`]).
    pub fn from_certificate(der: &[u8]) -> Option<Self> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let subject = cert.subject();
        let name = subject.iter_common_name().next()?.as_str().ok()?.to_string();
        let mut groups: Vec<String> = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_string))
            .collect();
        groups.push(AUTHENTICATED.into());
        Some(Self { name, groups })
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// A user with what kube's `user.Info` carries beyond name and groups.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    /// Name and groups.
    pub user: UserInfo,
    /// The user's uid (ServiceAccounts; impersonation), `""` if none.
    pub uid: String,
    /// Extra attributes (`authentication.kubernetes.io/credential-id`).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Identity {
    /// An identity with only a name and groups.
    pub fn of(user: UserInfo) -> Self {
        Self {
            user,
            ..Self::default()
        }
    }

    /// The `status.userInfo` of a SelfSubjectReview (`username`, `uid`, `groups`, `extra`).
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        out.insert("username".into(), self.user.name.clone().into());
        if !self.uid.is_empty() {
            out.insert("uid".into(), self.uid.clone().into());
        }
        if !self.user.groups.is_empty() {
            out.insert("groups".into(), serde_json::json!(self.user.groups));
        }
        if !self.extra.is_empty() {
            out.insert("extra".into(), serde_json::json!(self.extra));
        }
        serde_json::Value::Object(out)
    }
}

/// Why a request could not be authenticated (answered `401 Unauthorized`).
#[derive(Debug, thiserror::Error)]
pub enum AuthenticateError {
    /// The client certificate did not verify against the client CA (or has expired).
    #[error("verifying the client certificate: {0}")]
    VerifyCertificate(String),
    /// A verified client certificate has no usable subject.
    #[error("reading the client certificate's subject")]
    ReadCertificateSubject,
    /// The bearer token is not a valid bootstrap token.
    #[error("checking the bearer token: {0}")]
    CheckToken(#[from] bootstrap_token::TokenError),
    /// The bearer token is not a valid ServiceAccount token.
    #[error("checking the ServiceAccount token: {0}")]
    CheckServiceAccountToken(#[from] service_account::ServiceAccountTokenError),
    /// No credential, and anonymous requests are disabled.
    #[error("anonymous requests are disabled")]
    AnonymousDisabled,
}

/// Authenticates requests: client certificates, bearer tokens, anonymous.
#[derive(Clone)]
pub struct Authenticator {
    storage: Arc<dyn Storage>,
    certificates: Arc<client_cert::ClientCertificates>,
    anonymous: bool,
    tokens: Option<Arc<crate::rest::token_request::TokenIssuer>>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("anonymous", &self.anonymous)
            .finish()
    }
}

impl Authenticator {
    /// An authenticator reading bootstrap tokens from `storage` and verifying client
    /// certificates with `certificates`; `anonymous` allows requests without credentials.
    pub fn new(
        storage: Arc<dyn Storage>,
        certificates: Arc<client_cert::ClientCertificates>,
        anonymous: bool,
    ) -> Self {
        Self {
            storage,
            certificates,
            anonymous,
            tokens: None,
        }
    }

    /// Also accepts the ServiceAccount tokens `tokens` issued.
    pub fn with_service_account_tokens(
        mut self,
        tokens: Arc<crate::rest::token_request::TokenIssuer>,
    ) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// Authenticates a bearer token (bootstrap or ServiceAccount token) for `audiences` (the
    /// server's when empty); returns the identity and the audiences it is valid for.
    pub async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(Identity, Vec<String>), AuthenticateError> {
        if bootstrap_token::parse(token).is_some() {
            let identity = bootstrap_token::authenticate(self.storage.as_ref(), token).await?;
            let audiences = self
                .tokens
                .as_ref()
                .map(|t| t.audiences().to_vec())
                .unwrap_or_default();
            return Ok((identity, audiences));
        }
        match &self.tokens {
            Some(tokens) => {
                Ok(service_account::authenticate(self.storage.as_ref(), tokens, token, audiences).await?)
            }
            None => Err(AuthenticateError::CheckToken(
                bootstrap_token::TokenError::ParseToken,
            )),
        }
    }

    /// Who sent a request with the TLS peer's certificate chain (if any) and these headers.
    /// Order as kube-apiserver's: a valid client certificate wins, then a bearer token; without
    /// any credential the request is anonymous.
    pub async fn authenticate(
        &self,
        chain: Option<&[CertificateDer<'static>]>,
        headers: &axum::http::HeaderMap,
    ) -> Result<Identity, AuthenticateError> {
        let mut failure = None;
        if let Some(chain) = chain.filter(|c| !c.is_empty()) {
            match self.certificates.authenticate(chain) {
                Ok(identity) => return Ok(identity),
                Err(error) => failure = Some(error),
            }
        }
        if let Some(token) = bearer(headers) {
            return Ok(self.authenticate_token(token, &[]).await?.0);
        }
        if let Some(error) = failure {
            return Err(error);
        }
        if self.anonymous {
            Ok(Identity::of(UserInfo::anonymous()))
        } else {
            Err(AuthenticateError::AnonymousDisabled)
        }
    }
}

/// The token of an `Authorization: Bearer` header.
fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        let mut headers = axum::http::HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert("authorization", "Bearer abc.def".parse().unwrap());
        assert_eq!(bearer(&headers), Some("abc.def"));
        headers.insert("authorization", "Basic xyz".parse().unwrap());
        assert_eq!(bearer(&headers), None);
        headers.insert("authorization", "Bearer ".parse().unwrap());
        assert_eq!(bearer(&headers), None);
    }

    #[test]
    fn identities_serialize_as_user_info() {
        let mut identity = Identity::of(UserInfo {
            name: "alice".into(),
            groups: vec!["devs".into(), AUTHENTICATED.into()],
        });
        assert_eq!(
            identity.to_json(),
            serde_json::json!({"username": "alice", "groups": ["devs", "system:authenticated"]})
        );
        identity
            .extra
            .insert(CREDENTIAL_ID.into(), vec!["X509SHA256=ab".into()]);
        assert_eq!(identity.to_json()["extra"][CREDENTIAL_ID][0], "X509SHA256=ab");
    }
}
