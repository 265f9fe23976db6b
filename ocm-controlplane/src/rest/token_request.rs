//! TokenRequest (`POST .../serviceaccounts/<name>/token`): a signed JWT for a ServiceAccount, as
//! kube-apiserver issues it.
//!
//! The token is an ES256 JWS signed with the server's ServiceAccount key ([`crate::tls`]), with
//! kube's claims: `iss`, `sub` (`system:serviceaccount:<ns>:<name>`), `aud` (the request's
//! audiences, else the server's), `exp`, `iat`, `nbf`, `jti` and `kubernetes.io` (namespace,
//! ServiceAccount name and uid, and the bound Pod, Secret or Node). [`TokenIssuer::verify`]
//! checks such a token (signature, issuer, audience, time); the ServiceAccount and bound object
//! still existing with the same uids is for the authenticator to check.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Api, Reply, RequestContext, key_of};
use crate::fieldmanager::{self, Manager, Schema};
use crate::registry::ResourceInfo;
use crate::status::{ApiError, Cause, Subject};
use crate::storage;

/// The issuer (`iss`) of the tokens, and the default audience, as on a kubeadm or kind cluster.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// `spec.expirationSeconds` when the request names none.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a request may ask for.
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest lifetime a request may ask for (2^32 s).
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// A failed token operation.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The signing or verification key could not be loaded.
    #[error("loading the service account key: {0}")]
    LoadKey(String),
    /// Signing a token failed.
    #[error("signing a token: {0}")]
    Sign(jsonwebtoken::errors::Error),
    /// The token is not one this server issued, or no longer valid.
    #[error("verifying a token: {0}")]
    Verify(jsonwebtoken::errors::Error),
}

/// `aud`: one audience is written as a string, several as an array (as kube's JWT library does).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    /// A single audience.
    One(String),
    /// Several audiences.
    Many(Vec<String>),
}

impl Audience {
    /// The audience claim of `audiences`.
    pub fn of(audiences: &[String]) -> Self {
        match audiences {
            [one] => Self::One(one.clone()),
            many => Self::Many(many.to_vec()),
        }
    }

    /// The audiences.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            Self::One(one) => vec![one.clone()],
            Self::Many(many) => many.clone(),
        }
    }
}

/// A name and uid in the `kubernetes.io` claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// The private `kubernetes.io` claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    /// The ServiceAccount's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The ServiceAccount.
    #[serde(default)]
    pub serviceaccount: ObjectRef,
    /// The Pod the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectRef>,
    /// The Secret the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectRef>,
    /// The Node the token is bound to (or the bound Pod runs on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<ObjectRef>,
}

/// The claims of a ServiceAccount token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Issuer.
    pub iss: String,
    /// Subject: `system:serviceaccount:<namespace>:<name>`.
    pub sub: String,
    /// Audiences.
    pub aud: Audience,
    /// Expiry (seconds since the epoch).
    pub exp: i64,
    /// Issued at.
    pub iat: i64,
    /// Not before.
    pub nbf: i64,
    /// The token's unique id (kube's credential id is `JTI=<jti>`).
    pub jti: String,
    /// Namespace, ServiceAccount and bound objects.
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaims,
}

/// The username of a ServiceAccount.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// Signs and verifies ServiceAccount tokens with the server's key.
#[derive(Clone)]
pub struct TokenIssuer {
    issuer: String,
    audiences: Vec<String>,
    key_id: String,
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// Tokens whose signature verified, by their SHA-256, with their claims (see [`Self::verify`]).
    verified: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<[u8; 32], Claims>>>,
}

/// How many verified tokens are remembered (the memory is cleared when it is full).
const VERIFIED_CACHE_CAPACITY: usize = 4096;

/// The clock skew allowed on `exp` and `nbf`, seconds (kube allows 60).
const LEEWAY_SECONDS: i64 = 60;

impl std::fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("issuer", &self.issuer)
            .field("key_id", &self.key_id)
            .finish()
    }
}

/// kube's key id: the unpadded base64url SHA-256 of the DER public key.
fn key_id(public_pem: &str) -> Result<String, TokenError> {
    use base64::Engine;
    use rustls::pki_types::SubjectPublicKeyInfoDer;
    use rustls::pki_types::pem::PemObject;
    use sha2::Digest;
    let der = SubjectPublicKeyInfoDer::from_pem_slice(public_pem.as_bytes())
        .map_err(|e| TokenError::LoadKey(e.to_string()))?;
    let digest = sha2::Sha256::digest(der.as_ref());
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest))
}

impl TokenIssuer {
    /// An issuer signing with `private_pem` (PKCS#8 ECDSA P-256) whose tokens `public_pem`
    /// verifies; `iss` is `issuer`, which is also the default audience.
    pub fn new(private_pem: &str, public_pem: &str, issuer: &str) -> Result<Self, TokenError> {
        let encoding = EncodingKey::from_ec_pem(private_pem.as_bytes())
            .map_err(|e| TokenError::LoadKey(e.to_string()))?;
        let decoding = DecodingKey::from_ec_pem(public_pem.as_bytes())
            .map_err(|e| TokenError::LoadKey(e.to_string()))?;
        Ok(Self {
            issuer: issuer.to_string(),
            audiences: vec![issuer.to_string()],
            key_id: key_id(public_pem)?,
            encoding,
            decoding,
            verified: Default::default(),
        })
    }

    /// The issuer of the server's credentials, with [`DEFAULT_ISSUER`].
    pub fn from_credentials(credentials: &crate::tls::Credentials) -> Result<Self, TokenError> {
        Self::new(
            &credentials.service_account_key_pem,
            &credentials.service_account_public_pem,
            DEFAULT_ISSUER,
        )
    }

    /// `iss` of the tokens.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The server's audiences (given to tokens whose request names none).
    pub fn audiences(&self) -> &[String] {
        &self.audiences
    }

    /// The `kid` in the tokens' header.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// Signs `claims`.
    pub fn sign(&self, claims: &Claims) -> Result<String, TokenError> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).map_err(TokenError::Sign)
    }

    /// Checks a token: signed by this server's key, issued by it, for one of `audiences` (the
    /// server's when empty), and within its lifetime (60 s leeway, as kube allows).
    ///
    /// A token whose signature verified is remembered by its SHA-256 with its claims, and later
    /// checks of it only test the claims (issuer, audience, lifetime) again: the ECDSA
    /// verification is by far the largest cost of a bearer-token request, and a client sends the
    /// same token with every request (kube-apiserver caches token authentication likewise).
    pub fn verify(&self, token: &str, audiences: &[String]) -> Result<Claims, TokenError> {
        use sha2::Digest;
        let audiences = if audiences.is_empty() {
            &self.audiences
        } else {
            audiences
        };
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        let remembered = self
            .verified
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&digest)
            .cloned();
        if let Some(claims) = remembered {
            return self.check_claims(claims, audiences, chrono::Utc::now().timestamp());
        }
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(audiences);
        validation.set_required_spec_claims(&["exp", "iss", "sub", "aud", "nbf"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECONDS.unsigned_abs();
        let claims = jsonwebtoken::decode::<Claims>(token.as_bytes(), &self.decoding, &validation)
            .map(|data| data.claims)
            .map_err(TokenError::Verify)?;
        let mut verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        if verified.len() >= VERIFIED_CACHE_CAPACITY {
            verified.clear();
        }
        verified.insert(digest, claims.clone());
        Ok(claims)
    }

    /// The checks [`Self::verify`] makes of a remembered token's claims at `now` (Unix seconds),
    /// with the errors the full verification gives.
    fn check_claims(&self, claims: Claims, audiences: &[String], now: i64) -> Result<Claims, TokenError> {
        use jsonwebtoken::errors::ErrorKind;
        let failed = |kind: ErrorKind| Err(TokenError::Verify(kind.into()));
        if claims.exp < now - LEEWAY_SECONDS {
            return failed(ErrorKind::ExpiredSignature);
        }
        if claims.nbf > now + LEEWAY_SECONDS {
            return failed(ErrorKind::ImmatureSignature);
        }
        if claims.iss != self.issuer {
            return failed(ErrorKind::InvalidIssuer);
        }
        if !claims.aud.to_vec().iter().any(|a| audiences.contains(a)) {
            return failed(ErrorKind::InvalidAudience);
        }
        Ok(claims)
    }
}

fn token_subject() -> Subject {
    Subject {
        group: "authentication.k8s.io".into(),
        resource: "tokenrequests".into(),
        kind: "TokenRequest".into(),
    }
}

fn invalid(name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(&token_subject(), name, causes)
}

fn meta_text<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Reads a core object the token is bound to (404 as a GET of it would answer).
async fn bound_object(
    api: &Api,
    resource: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<Value, ApiError> {
    let Some(info) = api.registry.get("", "v1", resource) else {
        return Err(ApiError::resource_not_found());
    };
    let key = key_of(&info, namespace, name);
    match api.storage.get(&key).await.map_err(ApiError::internal)? {
        Some(stored) => Ok((*stored.object).clone()),
        None => Err(ApiError::not_found(&info.subject(), name)),
    }
}

/// The bound object's claims, from `spec.boundObjectRef`.
async fn bind(
    api: &Api,
    reference: &Value,
    namespace: &str,
    service_account: &str,
    claims: &mut KubernetesClaims,
) -> Result<(), ApiError> {
    let text = |f: &str| reference.get(f).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind, name, uid) = (text("apiVersion"), text("kind"), text("name"), text("uid"));
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let object = match (group, kind) {
        ("", "Pod") => {
            let pod = bound_object(api, "pods", Some(namespace), name).await?;
            let runs_as = pod
                .pointer("/spec/serviceAccountName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if runs_as != service_account {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount \"{service_account}\" to pod running with different serviceaccount name."
                )));
            }
            claims.pod = Some(ObjectRef {
                name: name.to_string(),
                uid: meta_text(&pod, "uid").to_string(),
            });
            if let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str)
                && !node.is_empty()
                && let Ok(node_object) = bound_object(api, "nodes", None, node).await
            {
                claims.node = Some(ObjectRef {
                    name: node.to_string(),
                    uid: meta_text(&node_object, "uid").to_string(),
                });
            }
            pod
        }
        ("", "Secret") => {
            let secret = bound_object(api, "secrets", Some(namespace), name).await?;
            claims.secret = Some(ObjectRef {
                name: name.to_string(),
                uid: meta_text(&secret, "uid").to_string(),
            });
            secret
        }
        ("", "Node") => {
            let node = bound_object(api, "nodes", None, name).await?;
            claims.node = Some(ObjectRef {
                name: name.to_string(),
                uid: meta_text(&node, "uid").to_string(),
            });
            node
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )));
        }
    };
    if !uid.is_empty() && uid != meta_text(&object, "uid") {
        let subject = Subject {
            group: String::new(),
            resource: kind.to_string(),
            kind: kind.to_string(),
        };
        return Err(ApiError::conflict_msg(
            &subject,
            name,
            &format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(())
}

impl Api {
    /// POST `serviceaccounts/<name>/token`: issues a token for the ServiceAccount of `ctx`.
    pub async fn create_token(
        &self,
        issuer: &TokenIssuer,
        info: &ResourceInfo,
        ctx: &RequestContext,
        body: &[u8],
    ) -> Result<Reply, ApiError> {
        let mut request = super::decode::parse_object_body(info, body)?;
        let Some(map) = request.as_object_mut() else {
            return Err(ApiError::bad_request(
                "the body of a TokenRequest must be an object",
            ));
        };
        map.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
        map.insert("kind".into(), json!("TokenRequest"));
        let spec = super::ensure_object(map.entry("spec").or_insert(Value::Null));
        if spec.get("expirationSeconds").is_none_or(Value::is_null) {
            spec.insert("expirationSeconds".into(), json!(DEFAULT_EXPIRATION_SECONDS));
        }
        let name = ctx.name.clone().unwrap_or_default();
        let namespace = ctx.namespace.clone().unwrap_or_default();
        self.admit_token_create(info, &namespace, &name).await?;
        for (field, wanted, what) in [("name", &name, "name"), ("namespace", &namespace, "namespace")] {
            let given = meta_text(&request, field);
            if !given.is_empty() && given != wanted {
                return Err(invalid(
                    &name,
                    vec![Cause::invalid(
                        format!("metadata.{field}"),
                        &json!(given),
                        &format!("must match the service account {what} if specified"),
                    )],
                ));
            }
        }
        let account_key = key_of(info, Some(&namespace), &name);
        let Some(account) = self.storage.get(&account_key).await.map_err(ApiError::internal)? else {
            return Err(ApiError::not_found(&info.subject(), &name));
        };
        let account_uid = meta_text(&account.object, "uid").to_string();
        // The field manager sees the request as decoded (with the scheme's default lifetime),
        // created from the Go zero value (whose spec and status structs always exist).
        let managed = fieldmanager::update_managed_fields(
            Some(&json!({"metadata": {}, "spec": {}, "status": {}})),
            &request,
            Schema::builtin("authentication.k8s.io", "tokenrequests"),
            &[],
            &Manager {
                name: &ctx.manager_name(),
                api_version: "authentication.k8s.io/v1",
                subresource: "token",
            },
        );
        let audiences: Vec<String> = request
            .pointer("/spec/audiences")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .filter(|a: &Vec<String>| !a.is_empty())
            .unwrap_or_else(|| issuer.audiences().to_vec());
        let expiration = request
            .pointer("/spec/expirationSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
        if expiration < MIN_EXPIRATION_SECONDS {
            return Err(invalid(
                "",
                vec![Cause::invalid(
                    "spec.expirationSeconds",
                    &json!(expiration),
                    "may not specify a duration less than 10 minutes",
                )],
            ));
        }
        if expiration > MAX_EXPIRATION_SECONDS {
            return Err(invalid(
                "",
                vec![Cause::invalid(
                    "spec.expirationSeconds",
                    &json!(expiration),
                    "may not specify a duration larger than 2^32 seconds",
                )],
            ));
        }
        let mut kubernetes = KubernetesClaims {
            namespace: namespace.clone(),
            serviceaccount: ObjectRef {
                name: name.clone(),
                uid: account_uid.clone(),
            },
            ..Default::default()
        };
        let bound = request
            .pointer("/spec/boundObjectRef")
            .filter(|r| !r.is_null())
            .cloned();
        if let Some(reference) = &bound {
            bind(self, reference, &namespace, &name, &mut kubernetes).await?;
        }
        let now = chrono::Utc::now();
        let issued = now.timestamp();
        let claims = Claims {
            iss: issuer.issuer().to_string(),
            sub: service_account_username(&namespace, &name),
            aud: Audience::of(&audiences),
            exp: issued + expiration,
            iat: issued,
            nbf: issued,
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes,
        };
        let token = issuer.sign(&claims).map_err(ApiError::internal)?;
        let expires = now + chrono::Duration::seconds(expiration);
        let mut metadata = json!({"name": name, "namespace": namespace, "uid": account_uid,
            "creationTimestamp": fieldmanager::now_rfc3339()});
        if !managed.is_empty() {
            metadata["managedFields"] = Value::Array(managed);
        }
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "metadata": metadata,
            "spec": {"audiences": audiences, "boundObjectRef": bound, "expirationSeconds": expiration},
            "status": {"token": token,
                "expirationTimestamp": expires.format("%Y-%m-%dT%H:%M:%SZ").to_string()}});
        Ok(Reply {
            code: 201,
            body,
            warnings: Vec::new(),
        })
    }

    /// NamespaceLifecycle admission of a token request: the namespace must exist and not be
    /// terminating.
    async fn admit_token_create(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        let key = storage::object_key("", "namespaces", None, namespace);
        let Some(ns) = self.storage.get(&key).await.map_err(ApiError::internal)? else {
            let subject = Subject {
                group: String::new(),
                resource: "namespaces".into(),
                kind: "Namespace".into(),
            };
            return Err(ApiError::not_found(&subject, namespace));
        };
        if ns.object.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating") {
            return Err(ApiError::forbidden(
                &info.subject(),
                name,
                format!(
                    "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                    info.subject().qualified_resource()
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issuer() -> TokenIssuer {
        let credentials = crate::tls::Credentials::load_or_create(None).unwrap();
        TokenIssuer::from_credentials(&credentials).unwrap()
    }

    fn claims(issuer: &TokenIssuer, aud: &[&str], lifetime: i64) -> Claims {
        let now = chrono::Utc::now().timestamp();
        Claims {
            iss: issuer.issuer().to_string(),
            sub: service_account_username("ns", "sa"),
            aud: Audience::of(&aud.iter().map(|a| a.to_string()).collect::<Vec<_>>()),
            exp: now + lifetime,
            iat: now,
            nbf: now,
            jti: "j".into(),
            kubernetes: KubernetesClaims {
                namespace: "ns".into(),
                serviceaccount: ObjectRef {
                    name: "sa".into(),
                    uid: "u".into(),
                },
                ..Default::default()
            },
        }
    }

    #[test]
    fn issued_tokens_verify_with_their_claims() {
        let issuer = issuer();
        let c = claims(&issuer, &[DEFAULT_ISSUER], 3600);
        let token = issuer.sign(&c).unwrap();
        assert_eq!(issuer.verify(&token, &[]).unwrap(), c);
        // The payload is kube's: one audience as a string, the private claim under kubernetes.io.
        use base64::Engine;
        let payload = token.split('.').nth(1).unwrap();
        let payload: Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(payload)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(payload["aud"], DEFAULT_ISSUER);
        assert_eq!(payload["kubernetes.io"]["serviceaccount"]["uid"], "u");
        assert_eq!(payload["sub"], "system:serviceaccount:ns:sa");
        let header = token.split('.').next().unwrap();
        let header: Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(header)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], issuer.key_id());
    }

    #[test]
    fn wrong_audience_expired_and_foreign_tokens_are_refused() {
        let issuer = issuer();
        let token = issuer.sign(&claims(&issuer, &["a", "b"], 3600)).unwrap();
        assert!(issuer.verify(&token, &["b".into()]).is_ok());
        assert!(issuer.verify(&token, &["c".into()]).is_err());
        let expired = issuer.sign(&claims(&issuer, &[DEFAULT_ISSUER], -120)).unwrap();
        assert!(issuer.verify(&expired, &[]).is_err());
        let other = super::super::super::tls::Credentials::load_or_create(None).unwrap();
        let other = TokenIssuer::from_credentials(&other).unwrap();
        let foreign = other.sign(&claims(&other, &[DEFAULT_ISSUER], 3600)).unwrap();
        assert!(issuer.verify(&foreign, &[]).is_err());
        assert!(issuer.verify("not.a.token", &[]).is_err());
    }

    #[test]
    fn a_remembered_token_is_still_checked_for_audience_lifetime_and_signature() {
        let issuer = issuer();
        let c = claims(&issuer, &["a"], 3600);
        let token = issuer.sign(&c).unwrap();
        assert_eq!(issuer.verify(&token, &["a".into()]).unwrap(), c);
        // From memory now: the same answers as a full verification.
        assert_eq!(issuer.verify(&token, &["a".into()]).unwrap(), c);
        assert!(issuer.verify(&token, &["b".into()]).is_err());
        let now = chrono::Utc::now().timestamp();
        let at = |t: i64| issuer.check_claims(c.clone(), &["a".into()], t);
        assert!(at(now).is_ok());
        assert!(at(c.exp + LEEWAY_SECONDS).is_ok());
        assert!(at(c.exp + LEEWAY_SECONDS + 1).is_err());
        assert!(at(c.nbf - LEEWAY_SECONDS - 1).is_err());
        // Another signature on the same claims is another token, verified on its own.
        let (body, signature) = token.rsplit_once('.').unwrap();
        let flipped = if signature.starts_with('A') { "B" } else { "A" };
        let forged = format!("{body}.{flipped}{}", &signature[1..]);
        assert!(issuer.verify(&forged, &["a".into()]).is_err());
    }

    #[test]
    fn audiences_round_trip() {
        assert_eq!(Audience::of(&["x".into()]), Audience::One("x".into()));
        assert_eq!(Audience::of(&["x".into(), "y".into()]).to_vec(), vec!["x", "y"]);
    }
}
