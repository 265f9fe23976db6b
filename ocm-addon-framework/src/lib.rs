//! The Open Cluster Management add-on framework for Rust.
//!
//! This crate will hold the `AgentAddon` trait that add-on authors implement, the `AddonManager`
//! that runs the hub-side add-on controllers (registration, agent deployment, CSR approval and
//! signing, health checks, configuration), and the agent-side helpers (the lease updater and the
//! hub kubeconfig handling) that an add-on agent uses on a managed cluster.
//!
//! See `docs/architecture.md` for how it fits between `ocm-api` and `ocm-core`.
