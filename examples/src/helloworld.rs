//! The helloworld add-on's hub controller (addon-framework.md §7.1), the OCM blog's first
//! add-on: an [`AddonManager`] with one add-on built by the [`AgentAddonFactory`] from the
//! templates in `examples/manifests/helloworld/templates` (ServiceAccount,
//! ClusterRoleBinding, Deployment), registered on the hub with a kube-client certificate
//! approved by the default checks, allowed to read ConfigMaps and its ManagedClusterAddOn in its
//! cluster namespace (Role and RoleBinding `open-cluster-management:helloworld:agent`), and
//! health-checked through its lease.
//!
//! ```text
//! helloworld --kubeconfig hub.kubeconfig
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use ocm_addon_framework::agent::{
    AddonError, CsrApproveCheck, HealthProber, PermissionConfig, RegistrationConfigurations,
    RegistrationOption,
};
use ocm_addon_framework::factory::{
    AgentAddonFactory, DeploymentConfigValues, FactoryError, InstallNamespaceFromDeploymentConfig,
    TemplateAgentAddon, Values, ValuesFn, addon_deployment_config_gvr, deployment_config_values,
    image_override_values,
};
use ocm_addon_framework::{AddonManager, ManagerError};
use ocm_api::addon::v1beta1::{
    KubeClientConfig, KubeClientSubject, ManagedClusterAddOn, RegistrationConfig, RegistrationConfigType,
};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::{annotations, subjects};
use serde_json::Value;

use crate::cluster::{Cluster, ClusterError};

/// The add-on's name.
pub const ADDON_NAME: &str = "helloworld";
/// The agent image when `EXAMPLE_IMAGE_NAME` is not set (upstream's example image).
pub const DEFAULT_IMAGE: &str = "quay.io/open-cluster-management/addon-examples:latest";
/// The hub Role (and RoleBinding) of the agent in its cluster namespace.
pub const HUB_ROLE: &str = "open-cluster-management:helloworld:agent";

/// The agent's manifests, one object per file.
pub const TEMPLATES: [(&str, &str); 3] = [
    (
        "clusterrolebinding.yaml",
        include_str!("../manifests/helloworld/templates/clusterrolebinding.yaml"),
    ),
    (
        "deployment.yaml",
        include_str!("../manifests/helloworld/templates/deployment.yaml"),
    ),
    (
        "serviceaccount.yaml",
        include_str!("../manifests/helloworld/templates/serviceaccount.yaml"),
    ),
];

/// The hub controller's flags.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "helloworld", about = "The helloworld add-on's hub controller")]
pub struct HelloworldArgs {
    /// The hub's kubeconfig (default: KUBECONFIG, ~/.kube/config or in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
}

/// Errors of the hub controller.
#[derive(Debug, thiserror::Error)]
pub enum HelloworldError {
    /// Connecting to the hub failed.
    #[error(transparent)]
    Connect(#[from] ClusterError),
    /// Building the add-on failed.
    #[error(transparent)]
    Build(#[from] FactoryError),
    /// The manager refused the add-on or stopped.
    #[error(transparent)]
    Manager(#[from] ManagerError),
}

/// Upstream's `GetDefaultValues`: `KubeConfigSecret`, `ClusterName` and `Image`.
struct DefaultValues {
    image: String,
}

#[async_trait]
impl ValuesFn for DefaultValues {
    async fn values(
        &self,
        cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
    ) -> Result<Values, AddonError> {
        let mut values = Values::new();
        values.insert(
            "KubeConfigSecret".into(),
            Value::String(format!("{ADDON_NAME}-hub-kubeconfig")),
        );
        values.insert(
            "ClusterName".into(),
            Value::String(cluster.metadata.name.clone().unwrap_or_default()),
        );
        values.insert("Image".into(), Value::String(self.image.clone()));
        Ok(values)
    }
}

/// The image of the agent: `EXAMPLE_IMAGE_NAME`, else [`DEFAULT_IMAGE`].
#[must_use]
pub fn agent_image() -> String {
    std::env::var("EXAMPLE_IMAGE_NAME")
        .ok()
        .filter(|i| !i.is_empty())
        .unwrap_or_else(|| DEFAULT_IMAGE.to_string())
}

/// A random agent name of five lower-case letters and digits, new at every start (as
/// upstream's, so certificates requested for an earlier process are not approved).
#[must_use]
pub fn random_agent_name() -> String {
    use rand::Rng;
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| char::from(CHARS[rng.random_range(0..CHARS.len())]))
        .collect()
}

/// The helloworld add-on: templates, values (defaults, then the AddOnDeploymentConfig's
/// values and image registries), the install namespace from the AddOnDeploymentConfig,
/// kube-client registration for `agent_name`, and Lease health.
///
/// # Errors
///
/// [`FactoryError`] when a template does not parse.
pub fn build_addon(
    client: &Client,
    agent_name: &str,
    image: &str,
) -> Result<TemplateAgentAddon, FactoryError> {
    let getter = Arc::new(client.clone());
    AgentAddonFactory::new(ADDON_NAME, TEMPLATES)
        .with_config_gvrs([addon_deployment_config_gvr()])
        .with_values_fns(vec![
            Arc::new(DefaultValues {
                image: image.to_string(),
            }),
            Arc::new(DeploymentConfigValues::new(
                getter.clone(),
                vec![
                    Arc::new(deployment_config_values),
                    image_override_values("Image", image),
                ],
            )),
        ])
        .with_agent_registration_option(RegistrationOption {
            configurations: Some(Arc::new(KubeClientRegistration {
                agent_name: agent_name.to_string(),
            })),
            csr_approve_check: Some(Arc::new(DefaultCsrApprover {
                agent_name: agent_name.to_string(),
            })),
            permission_config: Some(Arc::new(HubRbac {
                client: client.clone(),
            })),
            csr_sign: None,
        })
        .with_agent_install_namespace(Arc::new(InstallNamespaceFromDeploymentConfig::new(getter)))
        .with_agent_health_prober(HealthProber::Lease)
        .build_template_agent_addon()
}

/// `system:open-cluster-management:cluster:<cluster>:addon:<addon>:agent:<agent>`.
fn default_user(cluster: &str, addon: &str, agent: &str) -> String {
    format!(
        "{}cluster:{cluster}:addon:{addon}:agent:{agent}",
        subjects::SUBJECT_PREFIX
    )
}

/// The cluster's and the add-on's groups.
fn default_groups(cluster: &str, addon: &str) -> Vec<String> {
    vec![
        format!("{}cluster:{cluster}:addon:{addon}", subjects::SUBJECT_PREFIX),
        format!("{}addon:{addon}", subjects::SUBJECT_PREFIX),
    ]
}

/// One kube-client registration with the default user and groups (upstream's
/// `KubeClientSignerConfigurations`).
struct KubeClientRegistration {
    agent_name: String,
}

#[async_trait]
impl RegistrationConfigurations for KubeClientRegistration {
    async fn configurations(
        &self,
        cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
    ) -> Result<Vec<RegistrationConfig>, AddonError> {
        let cluster = cluster.metadata.name.clone().unwrap_or_default();
        Ok(vec![RegistrationConfig {
            type_: RegistrationConfigType::KubeClient,
            kube_client: Some(KubeClientConfig {
                subject: Some(KubeClientSubject {
                    user: Some(default_user(&cluster, ADDON_NAME, &self.agent_name)),
                    groups: Some(default_groups(&cluster, ADDON_NAME)),
                }),
                ..KubeClientConfig::default()
            }),
            custom_signer: None,
        }])
    }
}

/// Upstream's `DefaultCSRApprover`, with the requester's cluster matched exactly: a PEM
/// certificate request whose organizations are the two default groups (plus at most one
/// more), whose common name is the default user of this agent, requested by the cluster's
/// own identity.
struct DefaultCsrApprover {
    agent_name: String,
}

impl CsrApproveCheck for DefaultCsrApprover {
    fn approve(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        csr: &CertificateSigningRequest,
    ) -> bool {
        let cluster = cluster.metadata.name.clone().unwrap_or_default();
        let addon_name = addon.metadata.name.clone().unwrap_or_default();
        let mut requester = csr.spec.username.clone().unwrap_or_default();
        if requester == subjects::GRPC_SERVER_USER
            && let Some(user) = csr
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(annotations::CSR_USER))
        {
            requester.clone_from(user);
        }
        let own = format!("{}{cluster}", subjects::SUBJECT_PREFIX);
        if requester != own && !requester.starts_with(&format!("{own}:")) {
            return false;
        }
        let Some((common_name, organizations)) = request_subject(&csr.spec.request.0) else {
            return false;
        };
        (2..=3).contains(&organizations.len())
            && default_groups(&cluster, &addon_name)
                .iter()
                .all(|g| organizations.contains(g))
            && common_name == default_user(&cluster, &addon_name, &self.agent_name)
    }
}

/// The common name and organizations of a PEM certificate request.
fn request_subject(pem: &[u8]) -> Option<(String, Vec<String>)> {
    use x509_parser::prelude::FromDer;
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem).ok()?;
    if pem.label != "CERTIFICATE REQUEST" {
        return None;
    }
    let (_, request) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents).ok()?;
    let subject = &request.certification_request_info.subject;
    let common_name = subject.iter_common_name().next()?.as_str().ok()?.to_string();
    let organizations = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some((common_name, organizations))
}

/// The agent's hub permissions (upstream's example `rbac.AddonRBAC`): Role
/// [`HUB_ROLE`] in the cluster namespace (read ConfigMaps and ManagedClusterAddOns) and a
/// RoleBinding of the same name for the registration's user and groups, both owned by the
/// ManagedClusterAddOn.
struct HubRbac {
    client: Client,
}

#[async_trait]
impl PermissionConfig for HubRbac {
    async fn configure(
        &self,
        _cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<(), AddonError> {
        let subjects = registration_subjects(addon);
        if subjects.is_empty() {
            return Err(AddonError::SubjectNotReady);
        }
        let namespace = addon.metadata.namespace.clone().unwrap_or_default();
        let owner = OwnerReference {
            api_version: "addon.open-cluster-management.io/v1beta1".into(),
            kind: "ManagedClusterAddOn".into(),
            name: addon.metadata.name.clone().unwrap_or_default(),
            uid: addon.metadata.uid.clone().unwrap_or_default(),
            block_owner_deletion: Some(true),
            controller: None,
        };
        let meta = ObjectMeta {
            name: Some(HUB_ROLE.into()),
            namespace: Some(namespace.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        };
        let rule = |group: &str, resource: &str| PolicyRule {
            api_groups: Some(vec![group.into()]),
            resources: Some(vec![resource.into()]),
            verbs: ["get", "list", "watch"].map(String::from).to_vec(),
            ..PolicyRule::default()
        };
        let role = Role {
            metadata: meta.clone(),
            rules: Some(vec![
                rule("", "configmaps"),
                rule("addon.open-cluster-management.io", "managedclusteraddons"),
            ]),
        };
        let binding = RoleBinding {
            metadata: meta,
            role_ref: RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "Role".into(),
                name: HUB_ROLE.into(),
            },
            subjects: Some(subjects),
        };
        let err = |e: kube::Error| AddonError::ConfigurePermission {
            addon: ADDON_NAME.to_string(),
            source: Box::new(e),
        };
        let roles = Api::<Role>::namespaced(self.client.clone(), &namespace);
        match roles.get_opt(HUB_ROLE).await.map_err(err)? {
            None => drop(roles.create(&PostParams::default(), &role).await.map_err(err)?),
            Some(mut existing) if existing.rules != role.rules => {
                existing.rules = role.rules;
                roles
                    .replace(HUB_ROLE, &PostParams::default(), &existing)
                    .await
                    .map_err(err)?;
            }
            Some(_) => {}
        }
        let bindings = Api::<RoleBinding>::namespaced(self.client.clone(), &namespace);
        match bindings.get_opt(HUB_ROLE).await.map_err(err)? {
            None => drop(
                bindings
                    .create(&PostParams::default(), &binding)
                    .await
                    .map_err(err)?,
            ),
            Some(mut existing)
                if existing.subjects != binding.subjects || existing.role_ref != binding.role_ref =>
            {
                existing.subjects = binding.subjects;
                existing.role_ref = binding.role_ref;
                bindings
                    .replace(HUB_ROLE, &PostParams::default(), &existing)
                    .await
                    .map_err(err)?;
            }
            Some(_) => {}
        }
        Ok(())
    }
}

/// The user and groups of the first kube-client registration (without
/// `system:authenticated`).
fn registration_subjects(addon: &ManagedClusterAddOn) -> Vec<Subject> {
    let Some(subject) = addon
        .status
        .as_ref()
        .and_then(|s| s.registrations.as_ref())
        .and_then(|r| r.iter().find(|r| r.type_ == RegistrationConfigType::KubeClient))
        .and_then(|r| r.kube_client.as_ref())
        .and_then(|k| k.subject.as_ref())
    else {
        return Vec::new();
    };
    let rbac = |kind: &str, name: &str| Subject {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: kind.into(),
        name: name.into(),
        namespace: None,
    };
    let mut out: Vec<Subject> = subject
        .user
        .iter()
        .filter(|u| !u.is_empty())
        .map(|u| rbac("User", u))
        .collect();
    out.extend(
        subject
            .groups
            .iter()
            .flatten()
            .filter(|g| g.as_str() != subjects::AUTHENTICATED_GROUP)
            .map(|g| rbac("Group", g)),
    );
    out
}

/// Runs the hub controller until `shutdown` resolves.
///
/// # Errors
///
/// The hub could not be reached, the add-on not built, or the manager stopped.
pub async fn run_until(
    args: HelloworldArgs,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), HelloworldError> {
    let client = Cluster::connect(args.kubeconfig.as_deref()).await?.client();
    let agent_name = random_agent_name();
    let addon = build_addon(&client, &agent_name, &agent_image())?;
    let mut manager = AddonManager::new(client);
    manager.add_agent(Arc::new(addon))?;
    tracing::info!(addon = ADDON_NAME, agent = %agent_name, "helloworld hub controller started");
    tokio::select! {
        result = manager.run() => result?,
        () = shutdown => {}
    }
    Ok(())
}

/// Runs the hub controller until SIGTERM or Ctrl-C.
///
/// # Errors
///
/// See [`run_until`].
pub async fn run(args: HelloworldArgs) -> Result<(), HelloworldError> {
    run_until(args, crate::process::shutdown_signal()).await
}

#[cfg(test)]
#[path = "helloworld_tests.rs"]
mod tests;
