//! The bootstrap RBAC a hub grants joining clusters, and bootstrap kubeconfigs.
//!
//! Names and rules as upstream's cluster-manager chart creates them: the ClusterRole
//! `open-cluster-management:bootstrap` (read ConfigMaps, create and read CSRs, create, read and
//! watch ManagedClusters, join cluster sets), bound by
//! `open-cluster-management:bootstrap:managedcluster` to the group
//! `system:bootstrappers:managedcluster` (bootstrap tokens) and by
//! `open-cluster-management:bootstrap:agent-registration` to the ServiceAccount
//! `agent-registration-bootstrap` in `open-cluster-management`.
//! [`bootstrap_kubeconfig`] does what `clusteradm get token` does: a TokenRequest for that
//! ServiceAccount, wrapped in a kubeconfig.
//!
//! Hubs set up by older `clusteradm` releases carry the ClusterRole
//! `system:open-cluster-management:bootstrap`, its bindings `cluster-bootstrap` /
//! `cluster-bootstrap-sa` and the ServiceAccount `cluster-bootstrap`. They are left as they are
//! (what they grant keeps working), and [`is_bootstrap_service_account`] /
//! [`same_bootstrap_identity`] treat both ServiceAccounts as the bootstrap identity.

use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use ocm_api::names::{namespaces, objects, subjects};

use super::apply;

/// The ClusterRole granting joining clusters what registration needs.
pub const BOOTSTRAP_CLUSTER_ROLE: &str = objects::BOOTSTRAP_CLUSTER_ROLE;
/// The ClusterRoleBinding of [`BOOTSTRAP_CLUSTER_ROLE`] to [`BOOTSTRAP_GROUP`].
pub const BOOTSTRAP_GROUP_BINDING: &str = objects::BOOTSTRAP_CLUSTER_ROLE_BINDING;
/// The ClusterRoleBinding of [`BOOTSTRAP_CLUSTER_ROLE`] to the [`BOOTSTRAP_SERVICE_ACCOUNT`].
pub const BOOTSTRAP_SERVICE_ACCOUNT_BINDING: &str = objects::BOOTSTRAP_SERVICE_ACCOUNT_CLUSTER_ROLE_BINDING;
/// The group bootstrap tokens put joining clusters in.
pub const BOOTSTRAP_GROUP: &str = subjects::BOOTSTRAP_GROUP;
/// The ServiceAccount whose tokens are bootstrap credentials.
pub const BOOTSTRAP_SERVICE_ACCOUNT: &str = subjects::BOOTSTRAP_SERVICE_ACCOUNT;
/// The namespace of [`BOOTSTRAP_SERVICE_ACCOUNT`].
pub const BOOTSTRAP_NAMESPACE: &str = namespaces::OPEN_CLUSTER_MANAGEMENT;
/// The bootstrap ClusterRole of older `clusteradm` releases.
pub const LEGACY_BOOTSTRAP_CLUSTER_ROLE: &str = objects::LEGACY_BOOTSTRAP_CLUSTER_ROLE;
/// The bootstrap ServiceAccount of older `clusteradm` releases (in [`BOOTSTRAP_NAMESPACE`]).
pub const LEGACY_BOOTSTRAP_SERVICE_ACCOUNT: &str = subjects::LEGACY_BOOTSTRAP_SERVICE_ACCOUNT;

/// The user name of a ServiceAccount's tokens: `system:serviceaccount:<namespace>:<name>`.
#[must_use]
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// The user name of [`BOOTSTRAP_SERVICE_ACCOUNT`]'s tokens.
#[must_use]
pub fn bootstrap_user() -> String {
    service_account_user(BOOTSTRAP_NAMESPACE, BOOTSTRAP_SERVICE_ACCOUNT)
}

/// Whether `user` is the token user of a bootstrap ServiceAccount: upstream's
/// [`BOOTSTRAP_SERVICE_ACCOUNT`] or older `clusteradm`'s [`LEGACY_BOOTSTRAP_SERVICE_ACCOUNT`].
#[must_use]
pub fn is_bootstrap_service_account(user: &str) -> bool {
    [BOOTSTRAP_SERVICE_ACCOUNT, LEGACY_BOOTSTRAP_SERVICE_ACCOUNT]
        .iter()
        .any(|name| user == service_account_user(BOOTSTRAP_NAMESPACE, name))
}

/// Whether `configured` names the identity `user`: equal, or both bootstrap ServiceAccounts (so
/// a hub configured with one name still recognises agents bootstrapping with the other).
#[must_use]
pub fn same_bootstrap_identity(configured: &str, user: &str) -> bool {
    configured == user || (is_bootstrap_service_account(configured) && is_bootstrap_service_account(user))
}

/// What failed while granting bootstrap access.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// Applying an object of the bootstrap RBAC failed.
    #[error("applying {kind} {name}: {source}")]
    ApplyObject {
        /// The kind.
        kind: &'static str,
        /// The name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Requesting a token for the bootstrap ServiceAccount failed.
    #[error("requesting a token for {BOOTSTRAP_NAMESPACE}/{BOOTSTRAP_SERVICE_ACCOUNT}: {0}")]
    RequestToken(#[source] kube::Error),
    /// The TokenRequest came back without a token.
    #[error("the TokenRequest returned no token")]
    NoToken,
    /// Encoding the kubeconfig failed.
    #[error("encoding the bootstrap kubeconfig: {0}")]
    EncodeKubeconfig(#[source] serde_json::Error),
}

fn strings(values: &[&str]) -> Option<Vec<String>> {
    Some(values.iter().map(|s| (*s).to_string()).collect())
}

fn named(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        ..ObjectMeta::default()
    }
}

/// The bootstrap ClusterRole.
#[must_use]
pub fn bootstrap_cluster_role() -> ClusterRole {
    let rule = |group: &str, resource: &str, verbs: &[&str]| PolicyRule {
        api_groups: strings(&[group]),
        resources: strings(&[resource]),
        verbs: strings(verbs).unwrap_or_default(),
        ..PolicyRule::default()
    };
    ClusterRole {
        metadata: named(BOOTSTRAP_CLUSTER_ROLE),
        rules: Some(vec![
            rule("", "configmaps", &["get"]),
            rule(
                "certificates.k8s.io",
                "certificatesigningrequests",
                &["create", "get", "list", "watch"],
            ),
            rule(
                "cluster.open-cluster-management.io",
                "managedclusters",
                &["get", "create", "list", "watch"],
            ),
            rule(
                "cluster.open-cluster-management.io",
                "managedclustersets/join",
                &["create"],
            ),
        ]),
        aggregation_rule: None,
    }
}

/// The two bootstrap ClusterRoleBindings: to the bootstrap group and to the ServiceAccount.
#[must_use]
pub fn bootstrap_cluster_role_bindings() -> [ClusterRoleBinding; 2] {
    let role_ref = RoleRef {
        api_group: Some("rbac.authorization.k8s.io".to_string()),
        kind: "ClusterRole".to_string(),
        name: BOOTSTRAP_CLUSTER_ROLE.to_string(),
    };
    [
        ClusterRoleBinding {
            metadata: named(BOOTSTRAP_GROUP_BINDING),
            role_ref: role_ref.clone(),
            subjects: Some(vec![Subject {
                api_group: Some("rbac.authorization.k8s.io".to_string()),
                kind: "Group".to_string(),
                name: BOOTSTRAP_GROUP.to_string(),
                namespace: None,
            }]),
        },
        ClusterRoleBinding {
            metadata: named(BOOTSTRAP_SERVICE_ACCOUNT_BINDING),
            role_ref,
            subjects: Some(vec![Subject {
                api_group: None,
                kind: "ServiceAccount".to_string(),
                name: BOOTSTRAP_SERVICE_ACCOUNT.to_string(),
                namespace: Some(BOOTSTRAP_NAMESPACE.to_string()),
            }]),
        },
    ]
}

/// Applies the bootstrap ClusterRole, its two bindings, the namespace `open-cluster-management`
/// and the ServiceAccount `agent-registration-bootstrap` (idempotent). Older `clusteradm`'s
/// objects are left untouched.
///
/// # Errors
/// Applying one of them failed.
pub async fn ensure_bootstrap_rbac(client: &kube::Client) -> Result<(), BootstrapError> {
    let failed = |kind: &'static str, name: &str| {
        let name = name.to_string();
        move |source| BootstrapError::ApplyObject { kind, name, source }
    };
    apply(
        &Api::<ClusterRole>::all(client.clone()),
        &bootstrap_cluster_role(),
    )
    .await
    .map_err(failed("ClusterRole", BOOTSTRAP_CLUSTER_ROLE))?;
    for binding in bootstrap_cluster_role_bindings() {
        let name = binding.metadata.name.clone().unwrap_or_default();
        apply(&Api::<ClusterRoleBinding>::all(client.clone()), &binding)
            .await
            .map_err(failed("ClusterRoleBinding", &name))?;
    }
    let namespace = Namespace {
        metadata: named(BOOTSTRAP_NAMESPACE),
        ..Namespace::default()
    };
    apply(&Api::<Namespace>::all(client.clone()), &namespace)
        .await
        .map_err(failed("Namespace", BOOTSTRAP_NAMESPACE))?;
    let account = ServiceAccount {
        metadata: ObjectMeta {
            namespace: Some(BOOTSTRAP_NAMESPACE.to_string()),
            ..named(BOOTSTRAP_SERVICE_ACCOUNT)
        },
        ..ServiceAccount::default()
    };
    apply(
        &Api::<ServiceAccount>::namespaced(client.clone(), BOOTSTRAP_NAMESPACE),
        &account,
    )
    .await
    .map_err(failed("ServiceAccount", BOOTSTRAP_SERVICE_ACCOUNT))?;
    Ok(())
}

/// A kubeconfig (YAML; written as JSON, which YAML readers accept) for `server_url` trusting
/// `ca_pem`, authenticating with `token` as user `user`.
///
/// # Errors
/// Encoding failed.
pub fn token_kubeconfig(
    server_url: &str,
    ca_pem: &str,
    user: &str,
    token: &str,
) -> Result<String, BootstrapError> {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let config = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "hub", "cluster": {"server": server_url, "certificate-authority-data": ca}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "bootstrap", "context": {"cluster": "hub", "user": user}}],
        "current-context": "bootstrap",
    });
    serde_json::to_string_pretty(&config).map_err(BootstrapError::EncodeKubeconfig)
}

/// What `clusteradm get token` does: ensures the bootstrap RBAC and ServiceAccount, requests a
/// token valid for `ttl` for `open-cluster-management/agent-registration-bootstrap` and returns a
/// kubeconfig for `server_url` (trusting `ca_pem`) with that token.
///
/// # Errors
/// Applying the RBAC, requesting the token or encoding the kubeconfig failed.
pub async fn bootstrap_kubeconfig(
    client: &kube::Client,
    server_url: &str,
    ca_pem: &str,
    ttl: Duration,
) -> Result<String, BootstrapError> {
    ensure_bootstrap_rbac(client).await?;
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX)),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let answer = Api::<ServiceAccount>::namespaced(client.clone(), BOOTSTRAP_NAMESPACE)
        .create_token_request(BOOTSTRAP_SERVICE_ACCOUNT, &PostParams::default(), &request)
        .await
        .map_err(BootstrapError::RequestToken)?;
    let token = answer
        .status
        .and_then(|s| s.token)
        .filter(|t| !t.is_empty())
        .ok_or(BootstrapError::NoToken)?;
    token_kubeconfig(server_url, ca_pem, BOOTSTRAP_SERVICE_ACCOUNT, &token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_rbac_matches_upstream_names() {
        let role = bootstrap_cluster_role();
        assert_eq!(
            role.metadata.name.as_deref(),
            Some("open-cluster-management:bootstrap")
        );
        let rules = role.rules.unwrap();
        assert_eq!(rules[1].verbs, vec!["create", "get", "list", "watch"]);
        // The agent watches its ManagedCluster while bootstrapping; it never updates it then.
        assert_eq!(rules[2].verbs, vec!["get", "create", "list", "watch"]);
        let [group, account] = bootstrap_cluster_role_bindings();
        assert_eq!(
            group.metadata.name.as_deref(),
            Some("open-cluster-management:bootstrap:managedcluster")
        );
        assert_eq!(
            account.metadata.name.as_deref(),
            Some("open-cluster-management:bootstrap:agent-registration")
        );
        assert_eq!(
            group.subjects.unwrap()[0].name,
            "system:bootstrappers:managedcluster"
        );
        let subject = &account.subjects.unwrap()[0];
        assert_eq!(
            (
                subject.kind.as_str(),
                subject.name.as_str(),
                subject.namespace.as_deref()
            ),
            (
                "ServiceAccount",
                "agent-registration-bootstrap",
                Some("open-cluster-management")
            )
        );
    }

    #[test]
    fn both_bootstrap_service_accounts_are_the_bootstrap_identity() {
        let new = "system:serviceaccount:open-cluster-management:agent-registration-bootstrap";
        let old = "system:serviceaccount:open-cluster-management:cluster-bootstrap";
        assert_eq!(bootstrap_user(), new);
        assert!(is_bootstrap_service_account(new) && is_bootstrap_service_account(old));
        assert!(!is_bootstrap_service_account(
            "system:serviceaccount:default:cluster-bootstrap"
        ));
        assert!(same_bootstrap_identity(new, old) && same_bootstrap_identity(old, new));
        assert!(same_bootstrap_identity("alice", "alice"));
        assert!(!same_bootstrap_identity(new, "alice") && !same_bootstrap_identity("alice", old));
    }

    #[test]
    fn kubeconfig_carries_server_ca_and_token() {
        let text = token_kubeconfig("https://h:6443", "CA", "u", "tok").unwrap();
        let config = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        assert_eq!(
            config.clusters[0].cluster.as_ref().unwrap().server.as_deref(),
            Some("https://h:6443")
        );
        assert_eq!(config.current_context.as_deref(), Some("bootstrap"));
    }
}
