//! Authorization: what a request asks to do ([`Attributes`]), the answer ([`Decision`]), and the
//! `403 Forbidden` message kube-apiserver gives when no authorizer allows it.
//!
//! The RBAC authorizer is in [`rbac`]; it evaluates Roles, ClusterRoles and their bindings as
//! kube-apiserver's RBAC authorizer does. Users in the `system:masters` group are allowed
//! everything before RBAC is asked, as kube-apiserver's privileged-group authorizer does.

pub mod authorizer;
pub mod bootstrap_policy;
pub mod escalation;
mod interner;
pub mod rbac;
pub mod request;

#[cfg(test)]
mod rbac_model_tests;
#[cfg(test)]
mod rbac_tests;

pub use authorizer::Authorizer;

use crate::auth::UserInfo;

/// The group whose members may do anything.
pub const SYSTEM_MASTERS: &str = "system:masters";

/// What a request asks to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    /// The authorization verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, `approve`, `impersonate`, ...).
    pub verb: String,
    /// The object or path acted on.
    pub target: Target,
}

/// The object or path a request acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A request for an API resource.
    Resource {
        /// Namespace; `None` for cluster-scoped requests (also lists across namespaces).
        namespace: Option<String>,
        /// API group (`""` for core).
        group: String,
        /// Resource (plural).
        resource: String,
        /// Subresource (`status`, `approval`), `""` for none.
        subresource: String,
        /// Object name, `""` when the request names none (list, create).
        name: String,
    },
    /// A request for a path outside the API resources (`/healthz`, `/api`, `/version`).
    NonResource {
        /// The URL path.
        path: String,
    },
}

/// An authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed; the reason names what allowed it (kube's SubjectAccessReview `status.reason`).
    Allow {
        /// E.g. `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to Group "z"`.
        reason: String,
    },
    /// Not allowed by anything: the request is forbidden.
    NoOpinion,
}

impl Decision {
    /// Whether the request is allowed.
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow { .. })
    }
}

/// Members of `system:masters` are allowed everything.
pub fn privileged(user: &UserInfo) -> Option<Decision> {
    user.groups
        .iter()
        .any(|g| g == SYSTEM_MASTERS)
        .then(|| Decision::Allow {
            reason: String::new(),
        })
}

/// The message of kube-apiserver's `403 Forbidden` for a request nothing allowed, e.g.
/// `configmaps "data" is forbidden: User "alice" cannot get resource "configmaps" in API group ""
/// in the namespace "b"` or `forbidden: User "system:anonymous" cannot get path "/api"`.
pub fn forbidden_message(user: &UserInfo, attributes: &Attributes) -> String {
    match &attributes.target {
        Target::NonResource { path } => format!(
            "forbidden: User \"{}\" cannot {} path \"{path}\"",
            user.name, attributes.verb
        ),
        Target::Resource {
            namespace,
            group,
            resource,
            subresource,
            name,
        } => {
            let qualified = if group.is_empty() {
                resource.clone()
            } else {
                format!("{resource}.{group}")
            };
            let object = if name.is_empty() {
                qualified
            } else {
                format!("{qualified} \"{name}\"")
            };
            let what = if subresource.is_empty() {
                resource.clone()
            } else {
                format!("{resource}/{subresource}")
            };
            let scope = match namespace {
                Some(ns) if !ns.is_empty() => format!("in the namespace \"{ns}\""),
                _ => "at the cluster scope".to_string(),
            };
            format!(
                "{object} is forbidden: User \"{}\" cannot {} resource \"{what}\" in API group \"{group}\" {scope}",
                user.name, attributes.verb
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: vec!["system:authenticated".into()],
        }
    }

    fn resource(ns: Option<&str>, group: &str, resource: &str, sub: &str, name: &str) -> Target {
        Target::Resource {
            namespace: ns.map(str::to_string),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
        }
    }

    #[test]
    fn forbidden_messages_read_as_kube_apiservers() {
        let alice = user("alice");
        let cases = [
            (
                "get",
                resource(Some("cf-sec-b"), "", "configmaps", "", "data"),
                r#"configmaps "data" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "cf-sec-b""#,
            ),
            (
                "list",
                resource(None, "", "configmaps", "", ""),
                r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" at the cluster scope"#,
            ),
            (
                "update",
                resource(
                    None,
                    "cluster.open-cluster-management.io",
                    "managedclusters",
                    "",
                    "cluster1",
                ),
                r#"managedclusters.cluster.open-cluster-management.io "cluster1" is forbidden: User "alice" cannot update resource "managedclusters" in API group "cluster.open-cluster-management.io" at the cluster scope"#,
            ),
            (
                "update",
                resource(
                    None,
                    "certificates.k8s.io",
                    "certificatesigningrequests",
                    "approval",
                    "c",
                ),
                r#"certificatesigningrequests.certificates.k8s.io "c" is forbidden: User "alice" cannot update resource "certificatesigningrequests/approval" in API group "certificates.k8s.io" at the cluster scope"#,
            ),
        ];
        for (verb, target, want) in cases {
            let got = forbidden_message(
                &alice,
                &Attributes {
                    verb: verb.into(),
                    target,
                },
            );
            assert_eq!(got, want);
        }
        let anonymous = UserInfo::anonymous();
        let got = forbidden_message(
            &anonymous,
            &Attributes {
                verb: "get".into(),
                target: Target::NonResource { path: "/api".into() },
            },
        );
        assert_eq!(
            got,
            r#"forbidden: User "system:anonymous" cannot get path "/api""#
        );
    }

    #[test]
    fn system_masters_are_privileged() {
        let mut admin = user("admin");
        assert!(privileged(&admin).is_none());
        admin.groups.push(SYSTEM_MASTERS.into());
        assert!(privileged(&admin).is_some_and(|d| d.allowed()));
    }
}
