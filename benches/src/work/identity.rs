//! The work agent's identity on a control plane: a ServiceAccount of its own, bound to
//! `cluster-admin`, and a kubeconfig with a token for it. The audit log names the agent's
//! requests `system:serviceaccount:<namespace>:<name>`, apart from the harness's (admin).

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use kube::Api;
use kube::api::PostParams;

use super::WorkError;
use crate::join::hub::Hub;
use crate::load::target::create_namespace;

/// The namespace of the agent's ServiceAccount on both control planes.
pub const NAMESPACE: &str = "work-load-agent";
/// The agent's ServiceAccount.
pub const SERVICE_ACCOUNT: &str = "work-agent";

/// How long the agent's tokens are valid.
const TOKEN_TTL: Duration = Duration::from_secs(24 * 3600);

/// The user the agent's requests are audited as.
pub fn agent_user() -> String {
    format!("system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}")
}

/// The agent's kubeconfig for `server`, written to `<dir>/<name>-agent.kubeconfig`.
pub async fn agent_kubeconfig(server: &Hub, name: &str, dir: &Path) -> Result<PathBuf, WorkError> {
    let path = dir.join(format!("{name}-agent.kubeconfig"));
    account_kubeconfig(server, name, NAMESPACE, SERVICE_ACCOUNT, &path).await?;
    Ok(path)
}

/// Creates ServiceAccount `namespace/service_account` on `server` (called `name` in errors), binds it to
/// `cluster-admin` and writes a token kubeconfig for it to `path`; its requests are then audited
/// as `system:serviceaccount:<namespace>:<service_account>`. Shared with the placement harness.
pub async fn account_kubeconfig(
    server: &Hub,
    name: &str,
    namespace: &str,
    service_account: &str,
    path: &Path,
) -> Result<(), WorkError> {
    let prepare = |what: &str, message: String| WorkError::Prepare {
        what: format!("{what} {namespace}/{service_account} on the {name}"),
        message,
    };
    create_namespace(&server.client, namespace).await?;
    let mut account = ServiceAccount::default();
    account.metadata.name = Some(service_account.into());
    Api::<ServiceAccount>::namespaced(server.client.clone(), namespace)
        .create(&PostParams::default(), &account)
        .await
        .map_err(|e| prepare("creating the ServiceAccount", e.to_string()))?;
    let binding = ClusterRoleBinding {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{namespace}-{service_account}")),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: "cluster-admin".into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: service_account.into(),
            namespace: Some(namespace.into()),
            ..Default::default()
        }]),
    };
    Api::<ClusterRoleBinding>::all(server.client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .map_err(|e| prepare("binding the ServiceAccount to cluster-admin", e.to_string()))?;
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: i64::try_from(TOKEN_TTL.as_secs()).ok(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let token = Api::<ServiceAccount>::namespaced(server.client.clone(), namespace)
        .create_token_request(service_account, &PostParams::default(), &request)
        .await
        .map_err(|e| prepare("requesting the ServiceAccount's token", e.to_string()))?
        .status
        .and_then(|s| s.token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            prepare(
                "requesting the ServiceAccount's token",
                "no token in the answer".into(),
            )
        })?;
    let text = ocm_core::registration::hub::bootstrap::token_kubeconfig(
        &server.url,
        &server.ca_pem,
        service_account,
        &token,
    )
    .map_err(|e| prepare("writing the ServiceAccount's kubeconfig", e.to_string()))?;
    std::fs::write(path, text).map_err(|source| WorkError::File {
        what: "writing",
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_user_is_its_service_account() {
        assert_eq!(agent_user(), "system:serviceaccount:work-load-agent:work-agent");
    }
}
