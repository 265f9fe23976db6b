//! The RBAC objects a fresh kube-apiserver creates: the default ClusterRoles (`cluster-admin`,
//! `admin`/`edit`/`view` with their aggregation labels, `system:basic-user`, `system:discovery`,
//! `system:public-info-viewer`, `system:node-bootstrapper`, the CSR roles, ...) and their
//! ClusterRoleBindings.
//!
//! The data file `bootstrap_policy.json` is a subset of Kubernetes' RBAC bootstrap policy as its
//! test data records it (kubernetes/kubernetes,
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles.yaml` and
//! `cluster-role-bindings.yaml`, v1.36): the roles an OCM hub and its clients use, plus
//! `system:openshift:public-info-viewer` (`get` on `/.well-known` and `/.well-known/*` for
//! everyone), which the recorded conformance server (OpenShift's kube-apiserver build) has and
//! its SelfSubjectRulesReview answers list. Objects are
//! created at start when missing and never overwritten (kube's `autoupdate` reconciliation is not
//! done).

use serde_json::Value;

use crate::auth::UserInfo;
use crate::rest::{Api, RequestContext};
use crate::status::ApiError;

const POLICY: &str = include_str!("bootstrap_policy.json");

/// The default `(ClusterRoles, ClusterRoleBindings)`.
pub fn objects() -> (Vec<Value>, Vec<Value>) {
    let Ok(policy) = serde_json::from_str::<Value>(POLICY) else {
        return (Vec::new(), Vec::new());
    };
    let list = |k: &str| {
        policy
            .get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    (list("clusterRoles"), list("clusterRoleBindings"))
}

/// Creates the default ClusterRoles and ClusterRoleBindings that do not exist yet.
///
/// # Errors
/// The first failure other than an object already existing.
pub async fn ensure(api: &Api) -> Result<(), ApiError> {
    let ctx = RequestContext {
        user_agent: Some("kube-apiserver".into()),
        user: UserInfo {
            name: "system:apiserver".into(),
            groups: vec!["system:masters".into()],
        },
        ..Default::default()
    };
    let (roles, bindings) = objects();
    for (resource, objects) in [("clusterroles", roles), ("clusterrolebindings", bindings)] {
        let Some(info) = api.registry.get("rbac.authorization.k8s.io", "v1", resource) else {
            continue;
        };
        for object in objects {
            match api.create(&info, &ctx, object.to_string().as_bytes()).await {
                Ok(_) => {}
                Err(error) if error.code == 409 => {}
                Err(error) => return Err(error),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_has_the_roles_a_hub_needs_and_every_binding_names_one() {
        let (roles, bindings) = objects();
        let names: Vec<&str> = roles
            .iter()
            .filter_map(|r| r.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        for wanted in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:basic-user",
            "system:discovery",
            "system:public-info-viewer",
            "system:node-bootstrapper",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            "system:kube-controller-manager",
            "system:service-account-issuer-discovery",
        ] {
            assert!(names.contains(&wanted), "{wanted}");
        }
        for b in &bindings {
            let role = b.pointer("/roleRef/name").and_then(Value::as_str).unwrap();
            assert!(names.contains(&role), "{role}");
        }
    }
}
