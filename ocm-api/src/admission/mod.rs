//! Admission of ManagedClusters and ManagedClusterSetBindings as upstream's registration webhooks
//! decide it (ocm-core.md §2.7, §2.8), and of ManifestWorks as upstream's work webhook decides it
//! (§3.11), as pure functions over JSON objects.
//!
//! Two places admit these kinds: the embedded control plane in-process, and the `hub` binary's
//! admission webhooks for a real kube-apiserver. Both call the functions here; what they add is
//! the I/O: the permission checks ([`Check`]) are answered by the caller (an in-process authorizer
//! or SubjectAccessReviews, a namespace lookup) and judged here ([`Check::judge`]).
//!
//! | module | what it decides |
//! |---|---|
//! | [`managed_cluster`] | the mutating rules (taints' `timeAdded`, the default cluster-set label) and the validating rules (name, URLs, accept and join permissions) |
//! | [`cluster_set_binding`] | the binding's name and the `bind` permission |
//! | [`manifest_work`] | the manifests (present, within the size limit, named, unique) and the `execute-as` permission for the executor |
//! | [`url`] | whether a client-config URL counts as an https URL |
//!
//! A refusal is a [`Denial`]: the `metav1.Status` the webhook answers ([`Denial::status`]), and
//! the one kube-apiserver relays to the client, naming the webhook ([`Denial::rejected_by`]).

pub mod cluster_set_binding;
pub mod managed_cluster;
pub mod manifest_work;
pub mod url;

use serde_json::{Value, json};

/// The API group of the admitted cluster kinds.
pub const CLUSTER_GROUP: &str = "cluster.open-cluster-management.io";

/// The API group of ManifestWorks.
pub const WORK_GROUP: &str = crate::work::GROUP;

/// The mutating webhook of ManagedClusters (upstream's name and path).
pub const MANAGED_CLUSTER_MUTATOR: Webhook = Webhook {
    group: CLUSTER_GROUP,
    name: "managedclustermutators.admission.cluster.open-cluster-management.io",
    path: "/mutate-cluster-open-cluster-management-io-v1-managedcluster",
    resource: "managedclusters",
    versions: &["*"],
};

/// The validating webhook of ManagedClusters (upstream's name and path).
pub const MANAGED_CLUSTER_VALIDATOR: Webhook = Webhook {
    group: CLUSTER_GROUP,
    name: "managedclustervalidators.admission.cluster.open-cluster-management.io",
    path: "/validate-cluster-open-cluster-management-io-v1-managedcluster",
    resource: "managedclusters",
    versions: &["*"],
};

/// The validating webhook of ManagedClusterSetBindings (upstream's name and path).
pub const CLUSTER_SET_BINDING_VALIDATOR: Webhook = Webhook {
    group: CLUSTER_GROUP,
    name: "managedclustersetbindingvalidators.admission.cluster.open-cluster-management.io",
    path: "/validate-cluster-open-cluster-management-io-v1beta2-managedclustersetbinding",
    resource: "managedclustersetbindings",
    versions: &["v1beta2"],
};

/// The validating webhook of ManifestWorks (upstream's name and path).
pub const MANIFEST_WORK_VALIDATOR: Webhook = Webhook {
    group: WORK_GROUP,
    name: "manifestworkvalidators.admission.work.open-cluster-management.io",
    path: "/validate-work-open-cluster-management-io-v1-manifestwork",
    resource: "manifestworks",
    versions: &["*"],
};

/// One admission webhook as upstream's cluster-manager registers it (CREATE and UPDATE of
/// `resource` in `group`, failure policy Fail, 10 s timeout, no side effects).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Webhook {
    /// The API group of the resource it admits.
    pub group: &'static str,
    /// The webhook's name (also the configuration's name upstream).
    pub name: &'static str,
    /// The path it is served at.
    pub path: &'static str,
    /// The resource it admits.
    pub resource: &'static str,
    /// The API versions its rule names.
    pub versions: &'static [&'static str],
}

/// The operation admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A new object.
    Create,
    /// A changed object (the old one is known).
    Update,
}

/// Whom a `403` names: kube's `StatusDetails` of `NewForbidden(groupResource, name, err)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The group of the resource named.
    pub group: &'static str,
    /// The resource named (with its subresource, e.g. `managedclusters/accept`).
    pub resource: &'static str,
    /// The object's name.
    pub name: String,
}

/// A refusal, as upstream's webhooks build it with kube's `NewBadRequest` / `NewForbidden`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// HTTP status code (400 or 403).
    pub code: u16,
    /// `BadRequest` or `Forbidden`.
    pub reason: &'static str,
    /// The message as the webhook writes it.
    pub message: String,
    /// For a `403`: the object named.
    pub subject: Option<Subject>,
}

impl Denial {
    /// A `400 BadRequest` with `message`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self {
            code: 400,
            reason: "BadRequest",
            message: message.into(),
            subject: None,
        }
    }

    /// A `403 Forbidden` of `resource` (in `group`) `name`, because of `why`; the message reads as
    /// kube's: `<resource>.<group> "<name>" is forbidden: <why>`.
    pub fn forbidden(group: &'static str, resource: &'static str, name: &str, why: &str) -> Self {
        let qualified = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        let message = if name.is_empty() {
            format!("{qualified} is forbidden: {why}")
        } else {
            format!("{qualified} \"{name}\" is forbidden: {why}")
        };
        Self {
            code: 403,
            reason: "Forbidden",
            message,
            subject: Some(Subject {
                group,
                resource,
                name: name.to_string(),
            }),
        }
    }

    /// The `metav1.Status` the webhook puts in its AdmissionResponse's `result`.
    pub fn status(&self) -> Value {
        self.status_with_message(&self.message)
    }

    /// The `metav1.Status` kube-apiserver answers the client when `webhook` refused with this
    /// denial: the message prefixed with `admission webhook "<name>" denied the request: `.
    pub fn rejected_by(&self, webhook: &Webhook) -> Value {
        self.status_with_message(&format!(
            "admission webhook \"{}\" denied the request: {}",
            webhook.name, self.message
        ))
    }

    fn status_with_message(&self, message: &str) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(subject) = &self.subject {
            let mut details = json!({"kind": subject.resource});
            if !subject.name.is_empty() {
                details["name"] = json!(subject.name);
            }
            if !subject.group.is_empty() {
                details["group"] = json!(subject.group);
            }
            status["details"] = details;
        }
        status
    }
}

/// What a permission check asks about the requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// `register.open-cluster-management.io` `managedclusters/accept` `update`: setting
    /// `hubAcceptsClient` to true.
    Accept,
    /// `cluster.open-cluster-management.io` `managedclustersets/join` `create`: adding a cluster
    /// to, or removing it from, a set.
    Join,
    /// `cluster.open-cluster-management.io` `managedclustersets/bind` `create`: binding a set to a
    /// namespace.
    Bind,
}

/// The resource attributes of a SubjectAccessReview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// The namespace (`None`: cluster-scoped).
    pub namespace: Option<String>,
    /// API group.
    pub group: &'static str,
    /// Resource (plural).
    pub resource: &'static str,
    /// Subresource.
    pub subresource: &'static str,
    /// Verb.
    pub verb: &'static str,
    /// Object name.
    pub name: String,
}

/// Something the caller must find out before the request can be admitted, in the order upstream
/// asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// The namespace named after the cluster must not be Terminating (a cluster cannot be
    /// accepted while its namespace goes away).
    ClusterNamespace {
        /// The cluster (and namespace) name.
        cluster: String,
    },
    /// The requester must be allowed `permission` on `name` (a SubjectAccessReview).
    Access {
        /// What is asked.
        permission: Permission,
        /// The cluster (for [`Permission::Accept`]) or set name.
        name: String,
    },
    /// The requester must be allowed to `execute-as` the executor ServiceAccount of a
    /// ManifestWork in `namespace` (a SubjectAccessReview on `manifestworks`, named
    /// `system:serviceaccount:<sa namespace>:<sa name>`).
    ExecuteAs {
        /// The ManifestWork's namespace.
        namespace: String,
        /// The executor ServiceAccount's namespace.
        service_account_namespace: String,
        /// The executor ServiceAccount's name.
        service_account: String,
    },
}

/// The caller's answer to a [`Check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Allowed (for [`Check::ClusterNamespace`]: the namespace is absent or not Terminating).
    Yes,
    /// Denied (for [`Check::ClusterNamespace`]: the namespace is Terminating).
    No,
    /// The check could not be made; the text says why.
    Failed(String),
}

impl Check {
    /// The SubjectAccessReview attributes of an [`Check::Access`]; `None` for other checks.
    pub fn attributes(&self) -> Option<ResourceAttributes> {
        if let Check::ExecuteAs {
            namespace,
            service_account_namespace,
            service_account,
        } = self
        {
            return Some(ResourceAttributes {
                namespace: Some(namespace.clone()),
                group: WORK_GROUP,
                resource: "manifestworks",
                subresource: "",
                verb: "execute-as",
                name: format!("system:serviceaccount:{service_account_namespace}:{service_account}"),
            });
        }
        let Check::Access { permission, name } = self else {
            return None;
        };
        let (group, resource, subresource, verb) = match permission {
            Permission::Accept => (
                "register.open-cluster-management.io",
                "managedclusters",
                "accept",
                "update",
            ),
            Permission::Join => (CLUSTER_GROUP, "managedclustersets", "join", "create"),
            Permission::Bind => (CLUSTER_GROUP, "managedclustersets", "bind", "create"),
        };
        Some(ResourceAttributes {
            namespace: None,
            group,
            resource,
            subresource,
            verb,
            name: name.clone(),
        })
    }

    /// Whether `answer` lets the request of `user` (its username) through; the refusal reads as
    /// upstream's.
    ///
    /// # Errors
    /// The [`Denial`] when the answer is not [`Answer::Yes`].
    pub fn judge(&self, answer: &Answer, user: &str) -> Result<(), Denial> {
        if *answer == Answer::Yes {
            return Ok(());
        }
        // Upstream names the accept subresource in the `cluster.open-cluster-management.io`
        // group, and the bind subresource in `apps` (the group of the Go package it imports).
        let (group, resource, name, denied) = match self {
            Check::ClusterNamespace { cluster } => (
                CLUSTER_GROUP,
                "managedclusters/accept",
                cluster,
                format!("cluster namespace \"{cluster}\" is terminating"),
            ),
            Check::Access { permission, name } => match permission {
                Permission::Accept => (
                    CLUSTER_GROUP,
                    "managedclusters/accept",
                    name,
                    format!("user \"{user}\" cannot update the HubAcceptsClient field"),
                ),
                Permission::Join => (
                    CLUSTER_GROUP,
                    "managedclustersets/join",
                    name,
                    format!(
                        "user \"{user}\" cannot add/remove a ManagedCluster to/from ManagedClusterSet \"{name}\""
                    ),
                ),
                Permission::Bind => (
                    "apps",
                    "managedclustersets/bind",
                    name,
                    format!("user \"{user}\" is not allowed to bind cluster set \"{name}\""),
                ),
            },
            // Upstream's work webhook answers both a failed review and a denial with a 400.
            Check::ExecuteAs {
                namespace,
                service_account_namespace,
                service_account,
            } => {
                return Err(Denial::bad_request(match answer {
                    Answer::Failed(error) => error.clone(),
                    _ => format!(
                        "user {user} cannot manipulate the Manifestwork with executor \
                         {service_account_namespace}/{service_account} in namespace {namespace}"
                    ),
                }));
            }
        };
        let why = match answer {
            Answer::Failed(error) => error.clone(),
            _ => denied,
        };
        Err(Denial::forbidden(group, resource, name, &why))
    }
}

/// The JSON patch (RFC 6902) turning `original` into `mutated`, for a mutating webhook's answer:
/// one `add` of each top-level section of `metadata.labels` and `spec.taints` that differs (an
/// `add` replaces an existing member). The admission rules change nothing else.
pub fn patch_operations(original: &Value, mutated: &Value) -> Vec<Value> {
    let mut ops = Vec::new();
    for (parent, field) in [("metadata", "labels"), ("spec", "taints")] {
        let before = original.get(parent).and_then(|p| p.get(field));
        let after = mutated.get(parent).and_then(|p| p.get(field));
        if before == after {
            continue;
        }
        match after {
            Some(value) => {
                if original.get(parent).is_none_or(Value::is_null) {
                    ops.push(json!({"op": "add", "path": format!("/{parent}"), "value": {}}));
                }
                ops.push(json!({"op": "add", "path": format!("/{parent}/{field}"), "value": value}));
            }
            None => ops.push(json!({"op": "remove", "path": format!("/{parent}/{field}")})),
        }
    }
    ops
}

/// A string field of `metadata` (empty when absent).
fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The value of `label` (empty when absent).
fn label<'a>(object: &'a Value, label: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(label))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_read_as_kube_errors() {
        let d = Denial::forbidden(
            CLUSTER_GROUP,
            "managedclusters/accept",
            "c1",
            "user \"u\" cannot update the HubAcceptsClient field",
        );
        assert_eq!(
            d.message,
            "managedclusters/accept.cluster.open-cluster-management.io \"c1\" is forbidden: user \"u\" cannot update the HubAcceptsClient field"
        );
        let relayed = d.rejected_by(&MANAGED_CLUSTER_VALIDATOR);
        assert_eq!(relayed["code"], 403);
        assert_eq!(relayed["reason"], "Forbidden");
        assert_eq!(
            relayed["details"],
            json!({"name": "c1", "group": CLUSTER_GROUP, "kind": "managedclusters/accept"})
        );
        assert!(
            relayed["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with("admission webhook \"managedclustervalidators.admission.cluster.open-cluster-management.io\" denied the request: managedclusters/accept.")
        );
        let bad = Denial::bad_request("nope").status();
        assert_eq!(bad["code"], 400);
        assert_eq!(bad["reason"], "BadRequest");
        assert!(bad.get("details").is_none());
    }

    #[test]
    fn checks_name_upstream_attributes_and_messages() {
        let join = Check::Access {
            permission: Permission::Join,
            name: "prod".into(),
        };
        let attributes = join.attributes().unwrap();
        assert_eq!(
            (
                attributes.group,
                attributes.resource,
                attributes.subresource,
                attributes.verb
            ),
            (CLUSTER_GROUP, "managedclustersets", "join", "create")
        );
        assert_eq!(join.judge(&Answer::Yes, "u"), Ok(()));
        let denied = join.judge(&Answer::No, "u").unwrap_err();
        assert_eq!(
            denied.message,
            "managedclustersets/join.cluster.open-cluster-management.io \"prod\" is forbidden: user \"u\" cannot add/remove a ManagedCluster to/from ManagedClusterSet \"prod\""
        );
        let bind = Check::Access {
            permission: Permission::Bind,
            name: "s".into(),
        };
        assert_eq!(
            bind.judge(&Answer::No, "u").unwrap_err().message,
            "managedclustersets/bind.apps \"s\" is forbidden: user \"u\" is not allowed to bind cluster set \"s\""
        );
        let accept = Check::Access {
            permission: Permission::Accept,
            name: "c".into(),
        };
        let attributes = accept.attributes().unwrap();
        assert_eq!(
            (
                attributes.group,
                attributes.resource,
                attributes.subresource,
                attributes.verb
            ),
            (
                "register.open-cluster-management.io",
                "managedclusters",
                "accept",
                "update"
            )
        );
        assert_eq!(
            accept
                .judge(&Answer::Failed("boom".into()), "u")
                .unwrap_err()
                .message,
            "managedclusters/accept.cluster.open-cluster-management.io \"c\" is forbidden: boom"
        );
        let ns = Check::ClusterNamespace { cluster: "c".into() };
        assert!(ns.attributes().is_none());
        assert_eq!(
            ns.judge(&Answer::No, "u").unwrap_err().message,
            "managedclusters/accept.cluster.open-cluster-management.io \"c\" is forbidden: cluster namespace \"c\" is terminating"
        );
    }

    #[test]
    fn patches_replace_changed_sections_only() {
        let original = json!({"metadata": {"name": "a"}, "spec": {"taints": [{"key": "k"}]}});
        let mutated =
            json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"taints": [{"key": "k"}]}});
        assert_eq!(
            patch_operations(&original, &mutated),
            vec![json!({"op": "add", "path": "/metadata/labels", "value": {"x": "y"}})]
        );
        assert!(patch_operations(&original, &original).is_empty());
        let bare = json!({"metadata": {"name": "a"}});
        let with_spec = json!({"metadata": {"name": "a"}, "spec": {"taints": []}});
        assert_eq!(patch_operations(&bare, &with_spec).len(), 2);
    }
}
