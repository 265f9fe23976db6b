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
use k8s_openapi::api::rbac::v1::{PolicyRule, Role};
use kube::Client;
use kube::api::ObjectMeta;
use ocm_addon_framework::agent::{AddonError, HealthProber, RegistrationOption};
use ocm_addon_framework::factory::{
    AgentAddonFactory, DeploymentConfigValues, FactoryError, InstallNamespaceFromDeploymentConfig,
    TemplateAgentAddon, Values, ValuesFn, addon_deployment_config_gvr, deployment_config_values,
    image_override_values,
};
use ocm_addon_framework::registration::{
    DefaultCsrApprover, KubeClientSignerConfigurations, RbacPermissionConfigBuilder,
};
use ocm_addon_framework::{AddonManager, ManagerError};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
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
            configurations: Some(Arc::new(KubeClientSignerConfigurations::new(
                ADDON_NAME, agent_name,
            ))),
            csr_approve_check: Some(Arc::new(DefaultCsrApprover::new(agent_name))),
            permission_config: Some(Arc::new(
                RbacPermissionConfigBuilder::new(client.clone())
                    .bind_kube_client_role(hub_role())
                    .build(),
            )),
            csr_sign: None,
        })
        .with_agent_install_namespace(Arc::new(InstallNamespaceFromDeploymentConfig::new(getter)))
        .with_agent_health_prober(HealthProber::Lease)
        .build_template_agent_addon()
}

/// The agent's hub Role (upstream's example `rbac.AddonRBAC`): read ConfigMaps and
/// ManagedClusterAddOns in the cluster namespace. The permission config applies it there with a
/// RoleBinding of the same name for the registration's user and groups, both owned by the
/// ManagedClusterAddOn.
#[must_use]
pub fn hub_role() -> Role {
    let rule = |group: &str, resource: &str| PolicyRule {
        api_groups: Some(vec![group.into()]),
        resources: Some(vec![resource.into()]),
        verbs: ["get", "list", "watch"].map(String::from).to_vec(),
        ..PolicyRule::default()
    };
    Role {
        metadata: ObjectMeta {
            name: Some(HUB_ROLE.into()),
            ..ObjectMeta::default()
        },
        rules: Some(vec![
            rule("", "configmaps"),
            rule("addon.open-cluster-management.io", "managedclusteraddons"),
        ]),
    }
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
