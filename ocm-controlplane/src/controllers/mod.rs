//! In-process controllers: the part of kube-controller-manager the server needs for issue 4.
//!
//! | what | where |
//! |---|---|
//! | built-in namespaces from the first start | [`bootstrap`] |
//! | `kube-root-ca.crt` and the `default` ServiceAccount in every namespace | [`namespace_defaults`] |
//! | the `kube-controller-manager` leader-election Lease, renewed every 2 s | [`leader_lease`] |
//!
//! Namespace deletion and the garbage collector come with issue 5.

pub mod csr_signing;
pub mod leader_lease;
pub mod namespace_defaults;

use crate::auth::UserInfo;
use crate::rest::{Api, RequestContext};
use crate::status::ApiError;

/// The identity in-process controllers write as (their manager is the User-Agent prefix).
pub(crate) fn controller_context(user_agent: &str, namespace: Option<&str>) -> RequestContext {
    RequestContext {
        namespace: namespace.map(str::to_string),
        user_agent: Some(user_agent.into()),
        user: UserInfo {
            name: "system:kube-controller-manager".into(),
            groups: vec!["system:authenticated".into()],
        },
        ..Default::default()
    }
}

/// Creates `default`, `kube-system`, `kube-public` and `kube-node-lease` if missing.
///
/// # Errors
/// The first failure to create one of them, other than its already existing.
pub async fn bootstrap(api: &Api) -> Result<(), ApiError> {
    let Some(info) = api.registry.get("", "v1", "namespaces") else {
        return Err(ApiError::new(
            500,
            "InternalError",
            "the namespaces resource is not registered",
        ));
    };
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let ctx = RequestContext {
            user_agent: Some("kube-apiserver".into()),
            user: UserInfo {
                name: "system:apiserver".into(),
                groups: vec!["system:masters".into()],
            },
            ..Default::default()
        };
        let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        match api.create(&info, &ctx, body.to_string().as_bytes()).await {
            Ok(_) => {}
            Err(error) if error.code == 409 => namespace_defaults::publish(api, ns).await,
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
