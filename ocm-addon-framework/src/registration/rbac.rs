//! The RBAC permission-config builder (upstream's `NewRBACPermissionConfigBuilder`): hub
//! permissions for an add-on agent as a list of steps, run in order on every registration
//! reconcile, stopping at the first error.
//!
//! ClusterRoles and ClusterRoleBindings are cluster-wide and not owned (never cleaned up, as
//! upstream). Roles and RoleBindings go into the cluster namespace, owned by the
//! ManagedClusterAddOn (`blockOwnerDeletion`, no controller flag), so they go with it. Apply
//! semantics: create when missing; otherwise update only the rules (roles) or the subjects and
//! roleRef (bindings) when they differ, `apiGroup` of the subjects counted as
//! `rbac.authorization.k8s.io`.

use async_trait::async_trait;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::PostParams;
use kube::{Api, Client};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::subjects;

use super::subjects_from_registrations;
use crate::agent::{AddonError, PermissionConfig};

/// The RBAC API group.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Why a permission step failed.
#[derive(Debug, thiserror::Error)]
pub enum RbacError {
    /// The ClusterRole aggregates others; the builder does not manage those.
    #[error("cluster role {0} is aggregated; aggregated cluster roles are not supported")]
    AggregatedClusterRole(String),
    /// Reading, creating or updating a ClusterRole failed.
    #[error("apply cluster role {name}: {source}")]
    ApplyClusterRole {
        /// The ClusterRole.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Reading, creating or updating a ClusterRoleBinding failed.
    #[error("apply cluster role binding {name}: {source}")]
    ApplyClusterRoleBinding {
        /// The ClusterRoleBinding.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Reading, creating or updating a Role failed.
    #[error("apply role {namespace}/{name}: {source}")]
    ApplyRole {
        /// The cluster namespace.
        namespace: String,
        /// The Role.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Reading, creating or updating a RoleBinding failed.
    #[error("apply role binding {namespace}/{name}: {source}")]
    ApplyRoleBinding {
        /// The cluster namespace.
        namespace: String,
        /// The RoleBinding.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

/// Who a binding is for.
#[derive(Clone, Debug)]
enum Subjects {
    /// Fixed subjects.
    Fixed(Vec<Subject>),
    /// The kube-client subject of the add-on's `status.registrations`.
    KubeClient,
}

/// One step of the builder.
#[derive(Clone, Debug)]
enum Step {
    BindClusterRole(ClusterRole, Subjects),
    BindRole(Role, Subjects),
    ClusterRole(ClusterRole),
    ClusterRoleBinding(ClusterRoleBinding),
    Role(Role),
    RoleBinding(RoleBinding),
}

/// Builds an RBAC [`PermissionConfig`] step by step.
///
/// ```no_run
/// # async fn demo(client: kube::Client) {
/// use k8s_openapi::api::rbac::v1::Role;
/// use ocm_addon_framework::registration::rbac::RbacPermissionConfigBuilder;
///
/// let role: Role = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "helloworld-addon"},
///     "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]
/// })).unwrap();
/// let permission = RbacPermissionConfigBuilder::new(client).bind_kube_client_role(role).build();
/// # let _ = permission; }
/// ```
#[derive(Clone)]
pub struct RbacPermissionConfigBuilder {
    client: Client,
    steps: Vec<Step>,
}

/// The [`PermissionConfig`] an [`RbacPermissionConfigBuilder`] built.
#[derive(Clone)]
pub struct RbacPermissionConfig {
    client: Client,
    steps: Vec<Step>,
}

fn subject(kind: &str, name: &str) -> Subject {
    Subject {
        kind: kind.into(),
        api_group: Some(RBAC_GROUP.into()),
        name: name.into(),
        namespace: None,
    }
}

impl RbacPermissionConfigBuilder {
    /// An empty builder writing through `client` (the hub).
    #[must_use]
    pub fn new(client: Client) -> Self {
        Self {
            client,
            steps: Vec::new(),
        }
    }

    /// Applies `role` and a ClusterRoleBinding of the same name to user `user`.
    #[must_use]
    pub fn bind_cluster_role_to_user(mut self, role: ClusterRole, user: &str) -> Self {
        self.steps.push(Step::BindClusterRole(
            role,
            Subjects::Fixed(vec![subject("User", user)]),
        ));
        self
    }

    /// Applies `role` and a ClusterRoleBinding of the same name to group `group`.
    #[must_use]
    pub fn bind_cluster_role_to_group(mut self, role: ClusterRole, group: &str) -> Self {
        self.steps.push(Step::BindClusterRole(
            role,
            Subjects::Fixed(vec![subject("Group", group)]),
        ));
        self
    }

    /// Applies `role` in the cluster namespace and a RoleBinding of the same name to `user`.
    #[must_use]
    pub fn bind_role_to_user(mut self, role: Role, user: &str) -> Self {
        self.steps
            .push(Step::BindRole(role, Subjects::Fixed(vec![subject("User", user)])));
        self
    }

    /// Applies `role` in the cluster namespace and a RoleBinding of the same name to `group`.
    #[must_use]
    pub fn bind_role_to_group(mut self, role: Role, group: &str) -> Self {
        self.steps.push(Step::BindRole(
            role,
            Subjects::Fixed(vec![subject("Group", group)]),
        ));
        self
    }

    /// Applies `role` and a ClusterRoleBinding of the same name to the kube-client subject of the
    /// add-on's `status.registrations`; [`AddonError::SubjectNotReady`] while there is none.
    #[must_use]
    pub fn bind_kube_client_cluster_role(mut self, role: ClusterRole) -> Self {
        self.steps.push(Step::BindClusterRole(role, Subjects::KubeClient));
        self
    }

    /// Applies `role` in the cluster namespace and a RoleBinding of the same name to the
    /// kube-client subject of the add-on's `status.registrations`;
    /// [`AddonError::SubjectNotReady`] while there is none.
    #[must_use]
    pub fn bind_kube_client_role(mut self, role: Role) -> Self {
        self.steps.push(Step::BindRole(role, Subjects::KubeClient));
        self
    }

    /// Applies `role` as given.
    #[must_use]
    pub fn with_static_cluster_role(mut self, role: ClusterRole) -> Self {
        self.steps.push(Step::ClusterRole(role));
        self
    }

    /// Applies `binding` as given.
    #[must_use]
    pub fn with_static_cluster_role_binding(mut self, binding: ClusterRoleBinding) -> Self {
        self.steps.push(Step::ClusterRoleBinding(binding));
        self
    }

    /// Applies `role` in the cluster namespace, owned by the add-on.
    #[must_use]
    pub fn with_static_role(mut self, role: Role) -> Self {
        self.steps.push(Step::Role(role));
        self
    }

    /// Applies `binding` in the cluster namespace, owned by the add-on.
    #[must_use]
    pub fn with_static_role_binding(mut self, binding: RoleBinding) -> Self {
        self.steps.push(Step::RoleBinding(binding));
        self
    }

    /// The permission config running the steps in order.
    #[must_use]
    pub fn build(self) -> RbacPermissionConfig {
        RbacPermissionConfig {
            client: self.client,
            steps: self.steps,
        }
    }
}

/// The owner reference of objects in the cluster namespace.
fn owner(addon: &ManagedClusterAddOn) -> OwnerReference {
    OwnerReference {
        api_version: "addon.open-cluster-management.io/v1beta1".into(),
        kind: "ManagedClusterAddOn".into(),
        name: addon.metadata.name.clone().unwrap_or_default(),
        uid: addon.metadata.uid.clone().unwrap_or_default(),
        block_owner_deletion: Some(true),
        controller: None,
    }
}

/// `meta` moved into `namespace` and owned by `addon`.
fn owned(meta: &ObjectMeta, namespace: &str, addon: &ManagedClusterAddOn) -> ObjectMeta {
    let mut meta = meta.clone();
    meta.namespace = Some(namespace.to_string());
    let owner = owner(addon);
    let mut owners: Vec<OwnerReference> = meta
        .owner_references
        .take()
        .unwrap_or_default()
        .into_iter()
        .filter(|o| !(o.kind == owner.kind && o.name == owner.name))
        .collect();
    owners.push(owner);
    meta.owner_references = Some(owners);
    meta
}

/// Subjects with `apiGroup` forced to the RBAC group for users and groups, as compared.
fn normalized(subjects: &[Subject]) -> Vec<Subject> {
    subjects
        .iter()
        .map(|s| {
            let mut s = s.clone();
            if s.kind != "ServiceAccount" {
                s.api_group = Some(RBAC_GROUP.into());
            }
            s
        })
        .collect()
}

impl RbacPermissionConfig {
    async fn run(&self, step: &Step, namespace: &str, addon: &ManagedClusterAddOn) -> Result<(), AddonError> {
        let fail = |e: RbacError| AddonError::ConfigurePermission {
            addon: addon.metadata.name.clone().unwrap_or_default(),
            source: Box::new(e),
        };
        let subjects_of = |subjects: &Subjects| -> Result<Vec<Subject>, AddonError> {
            match subjects {
                Subjects::Fixed(s) => Ok(s.clone()),
                Subjects::KubeClient => {
                    let s = subjects_from_registrations(addon, subjects::KUBE_APISERVER_CLIENT_SIGNER);
                    if s.is_empty() {
                        Err(AddonError::SubjectNotReady)
                    } else {
                        Ok(s)
                    }
                }
            }
        };
        match step {
            Step::BindClusterRole(role, who) => {
                let subjects = subjects_of(who)?;
                self.apply_cluster_role(role).await.map_err(fail)?;
                let name = role.metadata.name.clone().unwrap_or_default();
                let binding = ClusterRoleBinding {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        ..Default::default()
                    },
                    role_ref: RoleRef {
                        api_group: Some(RBAC_GROUP.into()),
                        kind: "ClusterRole".into(),
                        name,
                    },
                    subjects: Some(subjects),
                };
                self.apply_cluster_role_binding(&binding).await.map_err(fail)
            }
            Step::BindRole(role, who) => {
                let subjects = subjects_of(who)?;
                let role = Role {
                    metadata: owned(&role.metadata, namespace, addon),
                    rules: role.rules.clone(),
                };
                self.apply_role(&role).await.map_err(fail)?;
                let name = role.metadata.name.clone().unwrap_or_default();
                let binding = RoleBinding {
                    metadata: owned(
                        &ObjectMeta {
                            name: Some(name.clone()),
                            ..Default::default()
                        },
                        namespace,
                        addon,
                    ),
                    role_ref: RoleRef {
                        api_group: Some(RBAC_GROUP.into()),
                        kind: "Role".into(),
                        name,
                    },
                    subjects: Some(subjects),
                };
                self.apply_role_binding(&binding).await.map_err(fail)
            }
            Step::ClusterRole(role) => self.apply_cluster_role(role).await.map_err(fail),
            Step::ClusterRoleBinding(binding) => self.apply_cluster_role_binding(binding).await.map_err(fail),
            Step::Role(role) => {
                let role = Role {
                    metadata: owned(&role.metadata, namespace, addon),
                    rules: role.rules.clone(),
                };
                self.apply_role(&role).await.map_err(fail)
            }
            Step::RoleBinding(binding) => {
                let binding = RoleBinding {
                    metadata: owned(&binding.metadata, namespace, addon),
                    ..binding.clone()
                };
                self.apply_role_binding(&binding).await.map_err(fail)
            }
        }
    }

    async fn apply_cluster_role(&self, role: &ClusterRole) -> Result<(), RbacError> {
        let name = role.metadata.name.clone().unwrap_or_default();
        if role.aggregation_rule.is_some() {
            return Err(RbacError::AggregatedClusterRole(name));
        }
        let err = |source| RbacError::ApplyClusterRole {
            name: name.clone(),
            source,
        };
        let api = Api::<ClusterRole>::all(self.client.clone());
        match api.get_opt(&name).await.map_err(err)? {
            None => api
                .create(&PostParams::default(), role)
                .await
                .map(drop)
                .map_err(err),
            Some(mut existing) if existing.rules != role.rules => {
                existing.rules = role.rules.clone();
                api.replace(&name, &PostParams::default(), &existing)
                    .await
                    .map(drop)
                    .map_err(err)
            }
            Some(_) => Ok(()),
        }
    }

    async fn apply_cluster_role_binding(&self, binding: &ClusterRoleBinding) -> Result<(), RbacError> {
        let name = binding.metadata.name.clone().unwrap_or_default();
        let err = |source| RbacError::ApplyClusterRoleBinding {
            name: name.clone(),
            source,
        };
        let api = Api::<ClusterRoleBinding>::all(self.client.clone());
        let wanted = normalized(binding.subjects.as_deref().unwrap_or_default());
        match api.get_opt(&name).await.map_err(err)? {
            None => api
                .create(&PostParams::default(), binding)
                .await
                .map(drop)
                .map_err(err),
            Some(mut existing)
                if normalized(existing.subjects.as_deref().unwrap_or_default()) != wanted
                    || existing.role_ref != binding.role_ref =>
            {
                existing.subjects = Some(wanted);
                existing.role_ref = binding.role_ref.clone();
                api.replace(&name, &PostParams::default(), &existing)
                    .await
                    .map(drop)
                    .map_err(err)
            }
            Some(_) => Ok(()),
        }
    }

    async fn apply_role(&self, role: &Role) -> Result<(), RbacError> {
        let name = role.metadata.name.clone().unwrap_or_default();
        let namespace = role.metadata.namespace.clone().unwrap_or_default();
        let err = |source| RbacError::ApplyRole {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        };
        let api = Api::<Role>::namespaced(self.client.clone(), &namespace);
        match api.get_opt(&name).await.map_err(err)? {
            None => api
                .create(&PostParams::default(), role)
                .await
                .map(drop)
                .map_err(err),
            Some(mut existing) if existing.rules != role.rules => {
                existing.rules = role.rules.clone();
                api.replace(&name, &PostParams::default(), &existing)
                    .await
                    .map(drop)
                    .map_err(err)
            }
            Some(_) => Ok(()),
        }
    }

    async fn apply_role_binding(&self, binding: &RoleBinding) -> Result<(), RbacError> {
        let name = binding.metadata.name.clone().unwrap_or_default();
        let namespace = binding.metadata.namespace.clone().unwrap_or_default();
        let err = |source| RbacError::ApplyRoleBinding {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        };
        let api = Api::<RoleBinding>::namespaced(self.client.clone(), &namespace);
        let wanted = normalized(binding.subjects.as_deref().unwrap_or_default());
        match api.get_opt(&name).await.map_err(err)? {
            None => api
                .create(&PostParams::default(), binding)
                .await
                .map(drop)
                .map_err(err),
            Some(mut existing)
                if normalized(existing.subjects.as_deref().unwrap_or_default()) != wanted
                    || existing.role_ref != binding.role_ref =>
            {
                existing.subjects = Some(wanted);
                existing.role_ref = binding.role_ref.clone();
                api.replace(&name, &PostParams::default(), &existing)
                    .await
                    .map(drop)
                    .map_err(err)
            }
            Some(_) => Ok(()),
        }
    }
}

#[async_trait]
impl PermissionConfig for RbacPermissionConfig {
    async fn configure(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<(), AddonError> {
        let namespace = cluster.metadata.name.clone().unwrap_or_default();
        for step in &self.steps {
            self.run(step, &namespace, addon).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use super::*;
    use serde_json::json;

    fn addon() -> ManagedClusterAddOn {
        serde_json::from_value(json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": "hello", "namespace": "c1", "uid": "u-1",
                "ownerReferences": [{"apiVersion": "addon.open-cluster-management.io/v1beta1",
                    "kind": "ManagedClusterAddOn", "name": "hello", "uid": "old"}]},
            "spec": {}}))
        .unwrap()
    }

    #[test]
    fn namespaced_objects_are_owned_by_the_addon_once() {
        let meta = owned(&addon().metadata, "c1", &addon());
        let owners = meta.owner_references.unwrap();
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].uid, "u-1");
        assert_eq!(owners[0].block_owner_deletion, Some(true));
        assert_eq!(owners[0].controller, None);
        assert_eq!(meta.namespace.as_deref(), Some("c1"));
    }

    #[test]
    fn user_and_group_subjects_compare_with_the_rbac_group() {
        let loose = vec![Subject {
            kind: "User".into(),
            api_group: None,
            name: "u".into(),
            namespace: None,
        }];
        assert_eq!(normalized(&loose), vec![subject("User", "u")]);
        let sa = vec![Subject {
            kind: "ServiceAccount".into(),
            api_group: None,
            name: "s".into(),
            namespace: Some("n".into()),
        }];
        assert_eq!(normalized(&sa), sa);
    }
}
