//! Bootstrap tokens: `Authorization: Bearer <token-id>.<token-secret>`, checked against the
//! Secret `kube-system/bootstrap-token-<token-id>` of type `bootstrap.kubernetes.io/token`, as
//! kube-apiserver's bootstrap-token authenticator does.
//!
//! The Secret must not be being deleted, must carry the same `token-id` and `token-secret`,
//! `usage-bootstrap-authentication: "true"`, and an `expiration` (RFC 3339) in the future if it
//! has one. The user is `system:bootstrap:<token-id>` in `system:bootstrappers` and the groups of
//! `auth-extra-groups` (comma-separated, each `system:bootstrappers:...`).

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::Value;

use super::{AUTHENTICATED, Identity, UserInfo};
use crate::storage::{self, Storage};

/// The Secret type of bootstrap tokens.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// The group every bootstrap token user is in.
pub const BOOTSTRAPPERS: &str = "system:bootstrappers";

/// Why a bearer token does not authenticate.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    /// Not of the form `[a-z0-9]{6}.[a-z0-9]{16}`.
    #[error("the token is not a bootstrap token")]
    ParseToken,
    /// No such Secret (or it could not be read).
    #[error("no bootstrap token Secret {0}")]
    FindSecret(String),
    /// The Secret does not allow authentication with this token.
    #[error("bootstrap token Secret {secret}: {reason}")]
    CheckSecret {
        /// The Secret's name.
        secret: String,
        /// What is wrong.
        reason: String,
    },
}

/// The `(token-id, token-secret)` of a bootstrap token.
pub fn parse(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let valid =
        |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    (valid(id, 6) && valid(secret, 16)).then_some((id, secret))
}

fn data(secret: &Value, key: &str) -> Option<String> {
    let encoded = secret.pointer(&format!("/data/{key}"))?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).ok()?;
    String::from_utf8(bytes).ok()
}

/// Whether `a` and `b` are equal, in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether an extra group is one a bootstrap token may carry.
fn valid_extra_group(group: &str) -> bool {
    group.strip_prefix("system:bootstrappers:").is_some_and(|rest| {
        !rest.is_empty()
            && rest.len() <= 256
            && rest
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
            && rest
                .bytes()
                .last()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })
}

/// Checks a bootstrap token Secret for `id`/`secret` at `now` and returns the identity.
pub fn check(
    object: &Value,
    id: &str,
    secret: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Identity, TokenError> {
    let name = format!("bootstrap-token-{id}");
    let fail = |reason: &str| TokenError::CheckSecret {
        secret: name.clone(),
        reason: reason.into(),
    };
    if object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return Err(fail("being deleted"));
    }
    if object.get("type").and_then(Value::as_str) != Some(SECRET_TYPE) {
        return Err(fail("wrong type"));
    }
    if !data(object, "token-id").is_some_and(|v| same(&v, id)) {
        return Err(fail("token-id does not match"));
    }
    if !data(object, "token-secret").is_some_and(|v| same(&v, secret)) {
        return Err(fail("token-secret does not match"));
    }
    if let Some(expiration) = data(object, "expiration") {
        let expires =
            chrono::DateTime::parse_from_rfc3339(&expiration).map_err(|_| fail("unreadable expiration"))?;
        if expires <= now {
            return Err(fail("expired"));
        }
    }
    if data(object, "usage-bootstrap-authentication").as_deref() != Some("true") {
        return Err(fail("not for authentication"));
    }
    let mut groups = vec![BOOTSTRAPPERS.to_string()];
    if let Some(extra) = data(object, "auth-extra-groups") {
        for group in extra.split(',').map(str::trim).filter(|g| !g.is_empty()) {
            if !valid_extra_group(group) {
                return Err(fail("invalid auth-extra-groups"));
            }
            if !groups.iter().any(|g| g == group) {
                groups.push(group.to_string());
            }
        }
    }
    groups.push(AUTHENTICATED.into());
    Ok(Identity {
        user: UserInfo {
            name: format!("system:bootstrap:{id}"),
            groups,
        },
        uid: String::new(),
        extra: BTreeMap::new(),
    })
}

/// Authenticates a bootstrap token against the Secrets in `storage`.
pub async fn authenticate(storage: &dyn Storage, token: &str) -> Result<Identity, TokenError> {
    let (id, secret) = parse(token).ok_or(TokenError::ParseToken)?;
    let name = format!("bootstrap-token-{id}");
    let key = storage::object_key("", "secrets", Some("kube-system"), &name);
    let stored = match storage.get(&key).await {
        Ok(Some(stored)) => stored,
        _ => return Err(TokenError::FindSecret(name)),
    };
    check(&stored.object, id, secret, chrono::Utc::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn secret(extra: &[(&str, &str)]) -> Value {
        let mut data = serde_json::Map::new();
        for (k, v) in [
            ("token-id", "abcdef"),
            ("token-secret", "0123456789abcdef"),
            ("usage-bootstrap-authentication", "true"),
        ]
        .iter()
        .chain(extra)
        {
            data.insert(k.to_string(), json!(b64(v)));
        }
        json!({"type": SECRET_TYPE, "metadata": {"name": "bootstrap-token-abcdef"}, "data": data})
    }

    #[test]
    fn tokens_parse_only_in_the_bootstrap_form() {
        assert_eq!(
            parse("abcdef.0123456789abcdef"),
            Some(("abcdef", "0123456789abcdef"))
        );
        for bad in [
            "abcdef0123456789abcdef",
            "ABCDEF.0123456789abcdef",
            "abcde.0123456789abcdef",
            "abcdef.0123",
            "a.b.c",
            "",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_valid_secret_gives_the_bootstrap_user() {
        let now = chrono::Utc::now();
        let s = secret(&[
            ("auth-extra-groups", "system:bootstrappers:managedcluster"),
            ("expiration", "2099-01-01T00:00:00Z"),
        ]);
        let identity = check(&s, "abcdef", "0123456789abcdef", now).unwrap();
        assert_eq!(identity.user.name, "system:bootstrap:abcdef");
        assert_eq!(
            identity.user.groups,
            [
                "system:bootstrappers",
                "system:bootstrappers:managedcluster",
                "system:authenticated"
            ]
        );
    }

    #[test]
    fn wrong_expired_unusable_or_odd_secrets_do_not_authenticate() {
        let now = chrono::Utc::now();
        assert!(check(&secret(&[]), "abcdef", "0000000000000000", now).is_err());
        assert!(
            check(
                &secret(&[("expiration", "2001-01-01T00:00:00Z")]),
                "abcdef",
                "0123456789abcdef",
                now
            )
            .is_err()
        );
        assert!(
            check(
                &secret(&[("expiration", "soon")]),
                "abcdef",
                "0123456789abcdef",
                now
            )
            .is_err()
        );
        assert!(
            check(
                &secret(&[("usage-bootstrap-authentication", "false")]),
                "abcdef",
                "0123456789abcdef",
                now
            )
            .is_err()
        );
        assert!(
            check(
                &secret(&[("auth-extra-groups", "system:masters")]),
                "abcdef",
                "0123456789abcdef",
                now
            )
            .is_err()
        );
        let mut deleting = secret(&[]);
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(check(&deleting, "abcdef", "0123456789abcdef", now).is_err());
        let mut opaque = secret(&[]);
        opaque["type"] = json!("Opaque");
        assert!(check(&opaque, "abcdef", "0123456789abcdef", now).is_err());
    }
}
