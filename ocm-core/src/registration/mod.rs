//! Cluster registration: how a managed cluster joins a hub, keeps its credentials and reports
//! its health (ocm-core.md §1 and §2 of the reference).
//!
//! | module | side | what it holds |
//! |---|---|---|
//! | [`hub`] | hub | accepting and denying clusters (namespace, RBAC, finalizers), CSR approval, lease expiry and taints, cluster sets, cleanup of deleted clusters, add-on health and feature labels, bootstrap RBAC and kubeconfigs |
//! | [`webhook`] | hub | the ManagedCluster and ManagedClusterSetBinding admission webhooks for a real kube-apiserver, and their configurations |
//! | [`agent`] | managed cluster | bootstrap (ManagedCluster, CSR, hub-kubeconfig secret), certificate rotation, the cluster lease, the cluster's status, add-on registration and add-on leases |
//!
//! Both sides talk only through the Kubernetes API, so an agent built here joins an upstream OCM
//! hub and an upstream agent joins a hub built here. `docs/registration.md` walks through the flow
//! object by object.

pub mod agent;
pub mod hub;
pub mod webhook;
