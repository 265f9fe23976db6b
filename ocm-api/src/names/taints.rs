//! Taint keys the hub puts on ManagedClusters (effect `NoSelect`), from their `Available` condition.

/// The cluster reports itself unavailable (`Available` is `False`).
pub const UNAVAILABLE: &str = "cluster.open-cluster-management.io/unavailable";
/// The hub cannot tell whether the cluster is available (`Available` is `Unknown` or missing).
pub const UNREACHABLE: &str = "cluster.open-cluster-management.io/unreachable";
