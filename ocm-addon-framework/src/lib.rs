//! The Open Cluster Management add-on framework for Rust.
//!
//! Add-on authors implement [`agent::AgentAddon`] — the objects to deploy on a managed cluster
//! for each ManagedClusterAddOn, and [`agent::AgentAddonOptions`] saying how to register,
//! deploy and health-check them — and hand it to the `AddonManager`, which runs the hub-side
//! add-on controllers (registration, agent deployment, CSR approval and signing, health checks,
//! configuration spec hashes). Agent-side helpers (the lease updater, the hub kubeconfig) are
//! for the add-on's agent on the managed cluster.
//!
//! See `docs/addons.md` for a walk-through and `docs/architecture.md` for how the crate fits
//! between `ocm-api` and `ocm-core`.

pub mod agent;
pub mod client;
pub(crate) mod controllers;
pub mod factory;
pub mod hub_kubeconfig;
pub mod lease;
pub mod manager;
pub mod registration;

pub use agent::{AgentAddon, AgentAddonOptions};
pub use manager::{AddonManager, ManagerError};
