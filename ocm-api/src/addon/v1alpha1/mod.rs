//! `addon.open-cluster-management.io/v1alpha1`, the version the hub stores.
//!
//! | file | what it holds |
//! |---|---|
//! | `cluster_management_addon` | [`ClusterManagementAddOn`], with `supportedConfigs` |
//! | `managed_cluster_addon` | [`ManagedClusterAddOn`], with `installNamespace` and signer-style `registrations` |
//! | `deployment_config` | [`AddOnDeploymentConfig`] and its spec (shared with v1beta1) |
//! | `template` | [`AddOnTemplate`] and its spec (shared with v1beta1) |
//! | `config` | types both versions share: configuration references, install strategies, health checks |
//!
//! [`crate::addon::conversion`] converts each kind to and from v1beta1.

mod cluster_management_addon;
mod config;
mod deployment_config;
mod managed_cluster_addon;
mod template;

pub use cluster_management_addon::*;
pub use config::*;
pub use deployment_config::*;
pub use managed_cluster_addon::*;
pub use template::*;
