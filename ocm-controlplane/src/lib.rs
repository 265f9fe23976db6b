//! An embedded, Kubernetes-API-compatible control plane for Open Cluster Management.
//!
//! This crate will serve the Kubernetes REST API (discovery, CRUD, patch, watch, custom resource
//! definitions, authentication, RBAC and CSR signing) from a single process, so that the OCM
//! controllers of this workspace can run and be tested on one machine without a Kubernetes cluster.
//! It is the test environment of every crate, the hub of the quickstart, and a standalone hub.
//!
//! The server is being built; see `docs/architecture.md` for its place in the workspace.
