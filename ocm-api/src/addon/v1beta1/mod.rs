//! `addon.open-cluster-management.io/v1beta1`, served next to the stored v1alpha1.
//!
//! | file | what it holds |
//! |---|---|
//! | `cluster_management_addon` | [`ClusterManagementAddOn`], with `defaultConfigs` |
//! | `managed_cluster_addon` | [`ManagedClusterAddOn`], with typed `registrations` |
//! | `deployment_config` | [`AddOnDeploymentConfig`] |
//! | `template` | [`AddOnTemplate`] |
//!
//! Every type whose schema is the same in both versions is the v1alpha1 type, re-exported here:
//! the specs of AddOnDeploymentConfig and AddOnTemplate, configuration references, install
//! strategies and progress, health checks. [`crate::addon::conversion`] converts each kind to and
//! from v1alpha1.

mod cluster_management_addon;
mod deployment_config;
mod managed_cluster_addon;
mod template;

pub use cluster_management_addon::*;
pub use deployment_config::*;
pub use managed_cluster_addon::*;
pub use template::*;

pub use super::v1alpha1::{
    AddOnConfig, AddOnDeploymentConfigSpec, AddOnMeta, AddOnTemplateSpec, ConfigGroupResource,
    ConfigSpecHash, ContainerResourceRequirements, CurrentClusterBindingConfig,
    CustomSignerRegistrationConfig, CustomizedVariable, DefaultConfigReference, HealthCheck, HealthCheckMode,
    HubPermissionConfig, HubPermissionsBindingType, ImageMirror, InstallConfigReference, InstallProgression,
    InstallStrategy, InstallStrategyType, KubeClientDriver, KubeClientRegistrationConfig, NodePlacement,
    ObjectReference, PlacementStrategy, ProxyConfig, RegistrationSpec, RegistrationType, RoleRef,
    SigningCARef, SingleNamespaceBindingConfig, Subject,
};
