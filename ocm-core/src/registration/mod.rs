//! Cluster registration: how a managed cluster joins a hub, keeps its credentials and reports its
//! status (the agent side), and how the hub accepts, watches and cleans up after it (the hub
//! side). Behaviour and wire names follow upstream OCM's registration component.
//!
//! | module | what it holds |
//! |---|---|
