//! The interface add-on authors implement (addon-framework.md §1): [`AgentAddon`] gives the
//! objects to deploy on a managed cluster for one ManagedClusterAddOn, and [`AgentAddonOptions`]
//! says how the [`AddonManager`](crate::manager) registers, deploys and health-checks it.
//!
//! Where upstream takes nil-able Go functions, the options hold typed values with defaults:
//! `Option<…>` where "absent" has a meaning upstream gives nil, trait objects for the callbacks
//! (async where they may call the hub), and enums for the modes.

pub mod hosted;
pub mod probers;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use ocm_api::addon::v1beta1::{ManagedClusterAddOn, RegistrationConfig};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::work::v1::{
    FeedbackRule, Manifest, ManifestConfigOption, ResourceIdentifier, StatusFeedbackResult,
};

/// Any error an add-on's own code returns to the framework.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Errors an [`AgentAddon`] or one of its callbacks returns to the framework.
#[derive(Debug, thiserror::Error)]
pub enum AddonError {
    /// The hub identity the permissions are for is not known yet (upstream's
    /// `SubjectNotReadyError`): `RegistrationApplied` becomes False with reason
    /// `PermissionConfigPending` instead of failing the reconcile.
    #[error("registration subject not ready")]
    SubjectNotReady,
    /// Rendering the add-on's manifests failed.
    #[error("render the manifests of add-on {addon} for cluster {cluster}: {source}")]
    RenderManifests {
        /// The add-on.
        addon: String,
        /// The managed cluster.
        cluster: String,
        /// What went wrong.
        #[source]
        source: BoxError,
    },
    /// Listing the registration configurations failed.
    #[error("list the registration configurations of add-on {addon}: {source}")]
    ListRegistrations {
        /// The add-on.
        addon: String,
        /// What went wrong.
        #[source]
        source: BoxError,
    },
    /// Setting up the agent's permissions on the hub failed.
    #[error("configure the hub permissions of add-on {addon}: {source}")]
    ConfigurePermission {
        /// The add-on.
        addon: String,
        /// What went wrong.
        #[source]
        source: BoxError,
    },
    /// Signing a certificate signing request failed.
    #[error("sign certificate signing request {csr}: {source}")]
    SignCsr {
        /// The CSR's name.
        csr: String,
        /// What went wrong.
        #[source]
        source: BoxError,
    },
    /// Choosing the agent's install namespace failed.
    #[error("choose the install namespace of add-on {addon}: {source}")]
    InstallNamespace {
        /// The add-on.
        addon: String,
        /// What went wrong.
        #[source]
        source: BoxError,
    },
    /// The add-on's health checker found the add-on unhealthy.
    #[error("{0}")]
    Unhealthy(String),
}

/// An add-on as the [`AddonManager`](crate::manager) sees it (upstream's `AgentAddon`, v1beta1).
///
/// The manager holds many add-ons as `Arc<dyn AgentAddon>` and calls both methods on every
/// reconcile, so an add-on may change its manifests or options at run time (then call
/// `AddonManager::trigger`).
#[async_trait]
pub trait AgentAddon: Send + Sync {
    /// Every object to deploy on `cluster` for `addon`: namespaces, Deployments, the managed
    /// cluster's RBAC, pre-delete hooks and hosted-mode objects (told apart by annotations).
    /// Each object must carry `apiVersion` and `kind` ([`Manifest::from_resource`] fills them for
    /// `k8s_openapi` and `ocm_api` types).
    ///
    /// # Errors
    ///
    /// Any error; the deploy controller reports it in the `ManifestApplied` condition.
    async fn manifests(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<Vec<Manifest>, AddonError>;

    /// How the manager registers, deploys and health-checks this add-on.
    fn options(&self) -> AgentAddonOptions;
}

/// How the manager handles one add-on (upstream's `AgentAddonOptions`).
#[derive(Clone, Default)]
pub struct AgentAddonOptions {
    /// The add-on's name: the ClusterManagementAddOn's and every ManagedClusterAddOn's name.
    /// Required and unique within a manager.
    pub addon_name: String,
    /// Hub credentials for the agent; `None`: none (`RegistrationApplied` True with reason
    /// `NilRegistration`, no `status.namespace`).
    pub registration: Option<RegistrationOption>,
    /// How the add-on's health is found; `None`: the framework leaves `Available` alone.
    pub health_prober: Option<HealthProber>,
    /// The agent's install namespace, highest priority for `status.namespace` and the
    /// templates' install namespace; an empty answer is ignored.
    pub install_namespace: Option<Arc<dyn InstallNamespace>>,
    /// Hosted mode: objects are split between the hosting and the managed cluster.
    pub hosted_mode: Option<HostedMode>,
    /// Config types this add-on accepts (`status.supportedConfigs`, spec-hash computation).
    pub supported_configs: Vec<ConfigGvr>,
    /// Redeploy every add-on of a cluster when a ManagedCluster update passes this filter;
    /// `None`: cluster changes never redeploy.
    pub deploy_trigger_cluster_filter: Option<Arc<dyn ClusterFilter>>,
    /// Merged into the deploy works' `spec.manifestConfigs`.
    pub manifest_configs: Vec<ManifestConfigOption>,
    /// Render nothing until the ManagedClusterAddOn's `Configured` condition is True.
    pub config_check_enabled: bool,
}

impl fmt::Debug for AgentAddonOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentAddonOptions")
            .field("addon_name", &self.addon_name)
            .field("registration", &self.registration.is_some())
            .field("health_prober", &self.health_prober)
            .field("install_namespace", &self.install_namespace.is_some())
            .field("hosted_mode", &self.hosted_mode.is_some())
            .field("supported_configs", &self.supported_configs)
            .field(
                "deploy_trigger_cluster_filter",
                &self.deploy_trigger_cluster_filter.is_some(),
            )
            .field("manifest_configs", &self.manifest_configs)
            .field("config_check_enabled", &self.config_check_enabled)
            .finish()
    }
}

/// A config type an add-on supports: group, version and resource (the version chooses what the
/// config informers list).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConfigGvr {
    /// The API group; empty for the core group.
    pub group: String,
    /// The version listed.
    pub version: String,
    /// The resource (plural, lower case).
    pub resource: String,
}

/// Hub registration of the add-on agent (upstream's `RegistrationOption`).
#[derive(Clone, Default)]
pub struct RegistrationOption {
    /// The registration intents, one `status.registrations` entry each; `None`: no registrations
    /// and no `status.namespace` (`RegistrationApplied` True, `NilRegistration`).
    pub configurations: Option<Arc<dyn RegistrationConfigurations>>,
    /// Approves the agents' CSRs on the hub; `None`: CSRs wait for a person.
    pub csr_approve_check: Option<Arc<dyn CsrApproveCheck>>,
    /// Sets up the agent's hub RBAC; runs on every registration reconcile.
    pub permission_config: Option<Arc<dyn PermissionConfig>>,
    /// Signs CSRs of signers other than `kubernetes.io/kube-apiserver-client`.
    pub csr_sign: Option<Arc<dyn CsrSigner>>,
}

/// Upstream's `Configurations` function.
#[async_trait]
pub trait RegistrationConfigurations: Send + Sync {
    /// The registrations of `addon` on `cluster`.
    ///
    /// # Errors
    ///
    /// Any error; the registration reconcile fails and is retried.
    async fn configurations(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<Vec<RegistrationConfig>, AddonError>;
}

/// Upstream's `CSRApproveCheck` function.
pub trait CsrApproveCheck: Send + Sync {
    /// Whether to approve `csr` of `addon` on `cluster`.
    fn approve(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        csr: &CertificateSigningRequest,
    ) -> bool;
}

/// Upstream's `PermissionConfig` function.
#[async_trait]
pub trait PermissionConfig: Send + Sync {
    /// Grants the agent of `addon` on `cluster` its hub permissions.
    ///
    /// # Errors
    ///
    /// [`AddonError::SubjectNotReady`] while the registrations have no subject yet; any other
    /// error sets `RegistrationApplied` False with reason `SetPermissionFailed`.
    async fn configure(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<(), AddonError>;
}

/// Upstream's `CSRSign` function.
pub trait CsrSigner: Send + Sync {
    /// The PEM certificate for `csr`.
    ///
    /// # Errors
    ///
    /// Any error; an empty certificate is an error too.
    fn sign(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        csr: &CertificateSigningRequest,
    ) -> Result<Vec<u8>, AddonError>;
}

/// Upstream's `AgentInstallNamespace` function.
#[async_trait]
pub trait InstallNamespace: Send + Sync {
    /// The namespace to install the agent of `addon` into; empty: no opinion.
    ///
    /// # Errors
    ///
    /// Any error aborts the reconcile.
    async fn install_namespace(&self, addon: &ManagedClusterAddOn) -> Result<String, AddonError>;
}

/// Upstream's `AgentDeployTriggerClusterFilter` function.
pub trait ClusterFilter: Send + Sync {
    /// Whether this ManagedCluster update should redeploy the cluster's add-ons.
    fn redeploy(&self, old: &ManagedCluster, new: &ManagedCluster) -> bool;
}

/// Whether an add-on runs in Default or Hosted mode on a cluster (upstream's
/// `HostedModeInfoFunc`).
pub trait HostedModeInfo: Send + Sync {
    /// The mode and, in Hosted mode, the hosting cluster.
    fn mode(&self, addon: &ManagedClusterAddOn, cluster: &ManagedCluster) -> InstallMode;
}

/// Hosted mode settings (upstream's `HostedModeEnabled` + `HostedModeInfoFunc`).
#[derive(Clone)]
pub struct HostedMode {
    /// Tells the mode of each add-on; upstream's annotation-based default is
    /// [`HostedMode::by_annotation`] ([`hosted::HostingClusterAnnotation`]).
    pub info: Arc<dyn HostedModeInfo>,
}

/// The install mode of an add-on on one cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum InstallMode {
    /// The agent runs on the managed cluster.
    #[default]
    Default,
    /// The agent runs on the hosting cluster named here.
    Hosted {
        /// The hosting ManagedCluster.
        hosting_cluster: String,
    },
}

/// How the add-on's health is found (upstream's `HealthProber`).
#[derive(Clone, Debug)]
pub enum HealthProber {
    /// The add-on sets `Available` itself (`healthCheck.mode: Customized`).
    None,
    /// The agent renews a Lease named after the add-on in its install namespace, which the
    /// registration agent checks (`healthCheck.mode: Lease`).
    Lease,
    /// From the deploy works: with no prober `Available` is True as soon as the works are built;
    /// with one, from the status feedback of its probe fields.
    Work(Option<WorkHealthProber>),
    /// Every Deployment of the manifests with a WellKnownStatus feedback rule.
    DeploymentAvailability,
    /// Every Deployment and DaemonSet of the manifests.
    WorkloadAvailability,
}

/// Probes read from the deploy works' status feedback (upstream's `WorkHealthProber`).
#[derive(Clone)]
pub struct WorkHealthProber {
    /// The objects and the feedback rules to report for them (wildcards `*` allowed in name and
    /// namespace).
    pub probe_fields: Vec<ProbeField>,
    /// Decides from the results; `None`: healthy as soon as any result exists.
    pub health_checker: Option<Arc<dyn HealthChecker>>,
}

impl fmt::Debug for WorkHealthProber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkHealthProber")
            .field("probe_fields", &self.probe_fields)
            .field("health_checker", &self.health_checker.is_some())
            .finish()
    }
}

/// One object to probe and the feedback rules for it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProbeField {
    /// The object (wildcards `*` allowed in name and namespace).
    pub resource_identifier: ResourceIdentifier,
    /// The feedback rules the work agent reports for it.
    pub probe_rules: Vec<FeedbackRule>,
}

/// The feedback reported for one probed object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldResult {
    /// The object, as the work status names it.
    pub resource_identifier: ResourceIdentifier,
    /// Its status feedback.
    pub feedback_result: StatusFeedbackResult,
}

/// Upstream's `HealthChecker` function.
pub trait HealthChecker: Send + Sync {
    /// `Ok` when the add-on is healthy.
    ///
    /// # Errors
    ///
    /// [`AddonError::Unhealthy`] (or any error) with the reason; it becomes the `Available`
    /// condition's message.
    fn check(
        &self,
        results: &[FieldResult],
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<(), AddonError>;
}
