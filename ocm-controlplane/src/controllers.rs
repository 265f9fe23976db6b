//! In-process controllers (kube-controller-manager's part that the server needs).
//!
//! Today: the built-in namespaces exist from the first start. Namespace deletion, garbage
//! collection, `kube-root-ca.crt` publishing and default ServiceAccounts come with issue 5.

use crate::auth::UserInfo;
use crate::rest::{Api, RequestContext};
use crate::status::ApiError;

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
            Err(error) if error.code == 409 => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
