//! Kubeconfigs for identities other than the admin, and bootstrap tokens with the RBAC an OCM hub
//! grants joining clusters — what the `init` and `get token` commands of a clusteradm-like tool
//! need.
//!
//! - [`with_certificate`] / [`with_token`]: a kubeconfig for a client certificate or a bearer token.
//! - [`issue_client_certificate`]: a certificate from the client CA for any user and groups.
//! - [`ensure_bootstrap_rbac`] and [`create_bootstrap_token`]: upstream's ClusterRole
//!   `open-cluster-management:bootstrap` (create and read CSRs, get, list, watch and create
//!   ManagedClusters, join cluster sets, read ConfigMaps) bound to `system:bootstrappers:managedcluster`, and a bootstrap-token Secret
//!   whose user is in that group.

use std::time::Duration;

use base64::Engine;
use rand::Rng;
use serde_json::json;

use crate::auth::UserInfo;
use crate::controllers::csr_signing::{SignError, certificate};
use crate::rest::{Api, RequestContext};
use crate::status::ApiError;
use crate::tls::Credentials;

/// The group OCM's bootstrap identities are in.
pub const BOOTSTRAP_GROUP: &str = "system:bootstrappers:managedcluster";
/// The ClusterRole granting bootstrap identities what registration needs (upstream's
/// cluster-manager names and rules, as `ocm_core::registration::hub::bootstrap` creates them).
pub const BOOTSTRAP_ROLE: &str = ocm_api::names::objects::BOOTSTRAP_CLUSTER_ROLE;
/// The ClusterRoleBinding of [`BOOTSTRAP_ROLE`] to [`BOOTSTRAP_GROUP`].
pub const BOOTSTRAP_ROLE_BINDING: &str = ocm_api::names::objects::BOOTSTRAP_CLUSTER_ROLE_BINDING;

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn kubeconfig(server: &str, ca_pem: &str, user: &str, auth: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: ocm-controlplane\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\nusers:\n- name: {user:?}\n  user:\n{auth}contexts:\n- name: {user:?}\n  context:\n    cluster: ocm-controlplane\n    user: {user:?}\ncurrent-context: {user:?}\n",
        b64(ca_pem)
    )
}

/// A kubeconfig authenticating with a client certificate and key (PEM).
pub fn with_certificate(server: &str, ca_pem: &str, user: &str, cert_pem: &str, key_pem: &str) -> String {
    let auth = format!(
        "    client-certificate-data: {}\n    client-key-data: {}\n",
        b64(cert_pem),
        b64(key_pem)
    );
    kubeconfig(server, ca_pem, user, &auth)
}

/// A kubeconfig authenticating with a bearer token.
pub fn with_token(server: &str, ca_pem: &str, user: &str, token: &str) -> String {
    kubeconfig(server, ca_pem, user, &format!("    token: {token}\n"))
}

/// A client certificate (PEM) and key (PEM) from the client CA for `user` in `groups`, valid
/// for `validity` from now.
pub fn issue_client_certificate(
    credentials: &Credentials,
    user: &str,
    groups: &[&str],
    validity: Duration,
) -> Result<(String, String), SignError> {
    let err = |e: rcgen::Error| SignError::Sign(e.to_string());
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    params.distinguished_name.push(rcgen::DnType::CommonName, user);
    // rcgen keeps one value per attribute type; the request only carries the key here and the
    // subject is written below from all groups.
    let key = rcgen::KeyPair::generate().map_err(err)?;
    let request = params.serialize_request(&key).map_err(err)?;
    let subject = subject_der(user, groups);
    let now = chrono::Utc::now().timestamp();
    let usages = [
        "digital signature".to_string(),
        "key encipherment".into(),
        "client auth".into(),
    ];
    let pem = certificate::issue_with_subject(
        &certificate::Issue {
            request_der: request.der(),
            ca_cert_pem: &credentials.client_ca_pem,
            ca_key_pem: &credentials.client_ca_key_pem,
            not_before: now - 300,
            not_after: now.saturating_add(certificate::secs(validity)),
            usages: &usages,
        },
        Some(&subject),
    )?;
    Ok((pem, key.serialize_pem()))
}

/// The DER of the subject `CN=user, O=group...`.
fn subject_der(user: &str, groups: &[&str]) -> Vec<u8> {
    let rdn = |oid_last: u64, value: &str| {
        certificate::der_set(&[certificate::der_seq(&[
            certificate::der_oid(&[2, 5, 4, oid_last]),
            certificate::der_tlv(0x0c, value.as_bytes()),
        ])])
    };
    let mut rdns = vec![rdn(3, user)];
    rdns.extend(groups.iter().map(|g| rdn(10, g)));
    certificate::der_seq(&rdns)
}

fn apiserver() -> RequestContext {
    RequestContext {
        user_agent: Some("ocm-controlplane".into()),
        user: UserInfo {
            name: "system:apiserver".into(),
            groups: vec!["system:masters".into()],
        },
        ..Default::default()
    }
}

async fn create_or_keep(
    api: &Api,
    group: &str,
    resource: &str,
    ctx: &RequestContext,
    body: serde_json::Value,
) -> Result<(), ApiError> {
    let version = "v1";
    let Some(info) = api.registry.get(group, version, resource) else {
        return Err(ApiError::new(
            500,
            "InternalError",
            format!("{resource} is not registered"),
        ));
    };
    match api.create(&info, ctx, body.to_string().as_bytes()).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates the bootstrap ClusterRole and its binding to [`BOOTSTRAP_GROUP`] if missing.
pub async fn ensure_bootstrap_rbac(api: &Api) -> Result<(), ApiError> {
    let ctx = apiserver();
    create_or_keep(api, "rbac.authorization.k8s.io", "clusterroles", &ctx, json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": BOOTSTRAP_ROLE},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get", "list", "watch"]},
            {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters"], "verbs": ["get", "create", "list", "watch"]},
            {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclustersets/join"], "verbs": ["create"]},
        ]})).await?;
    create_or_keep(api, "rbac.authorization.k8s.io", "clusterrolebindings", &ctx, json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": BOOTSTRAP_ROLE_BINDING},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": BOOTSTRAP_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": BOOTSTRAP_GROUP}]})).await
}

fn random(n: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..n)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Creates a bootstrap token valid for `ttl` whose user is in [`BOOTSTRAP_GROUP`] (after
/// [`ensure_bootstrap_rbac`]); returns `<id>.<secret>`.
pub async fn create_bootstrap_token(api: &Api, ttl: Duration) -> Result<String, ApiError> {
    ensure_bootstrap_rbac(api).await?;
    let (id, secret) = (random(6), random(16));
    let expiration = chrono::Utc::now() + chrono::Duration::seconds(certificate::secs(ttl));
    let body = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
        "type": super::bootstrap_token::SECRET_TYPE,
        "stringData": {"token-id": id, "token-secret": secret, "usage-bootstrap-authentication": "true",
            "auth-extra-groups": BOOTSTRAP_GROUP,
            "expiration": expiration.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)}});
    let ctx = RequestContext {
        namespace: Some("kube-system".into()),
        ..apiserver()
    };
    let Some(info) = api.registry.get("", "v1", "secrets") else {
        return Err(ApiError::new(500, "InternalError", "secrets are not registered"));
    };
    api.create(&info, &ctx, body.to_string().as_bytes()).await?;
    Ok(format!("{id}.{secret}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_certificates_carry_every_group() {
        let credentials = Credentials::load_or_create(None).unwrap();
        let (cert, _) = issue_client_certificate(
            &credentials,
            "agent",
            &["g1", "g2", "g3"],
            Duration::from_secs(600),
        )
        .unwrap();
        let (_, block) = x509_parser::pem::parse_x509_pem(cert.as_bytes()).unwrap();
        let user = UserInfo::from_certificate(&block.contents).unwrap();
        assert_eq!(user.name, "agent");
        assert_eq!(user.groups, ["g1", "g2", "g3", "system:authenticated"]);
        let verifier = credentials.client_certificates().unwrap();
        assert!(
            verifier
                .authenticate(&[rustls::pki_types::CertificateDer::from(block.contents.clone())])
                .is_ok()
        );
    }

    #[test]
    fn kubeconfigs_name_the_credential() {
        let k = with_token(
            "https://127.0.0.1:6443",
            "CA",
            "bootstrap",
            "abcdef.0123456789abcdef",
        );
        assert!(k.contains("    token: abcdef.0123456789abcdef\n"), "{k}");
        let k = with_certificate("https://h:1", "CA", "alice", "CERT", "KEY");
        assert!(
            k.contains(&format!("client-certificate-data: {}", b64("CERT"))),
            "{k}"
        );
        assert!(k.contains("current-context: \"alice\""), "{k}");
    }
}
