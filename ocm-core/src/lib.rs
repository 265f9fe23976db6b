//! Ready-made Open Cluster Management controllers.
//!
//! This crate holds the controllers of an OCM hub and of a managed-cluster agent, built on
//! `ocm-api` and `ocm-addon-framework`: cluster registration (hub and agent) today; the work
//! agent, the placement scheduler and the hub add-on lifecycle as they are built.
//!
//! Controllers talk only through the Kubernetes API, so they run unchanged on real clusters and
//! on `ocm-controlplane`. See `docs/architecture.md` for how data flows between them and
//! `docs/registration.md` for the join flow object by object.

pub mod crds;
pub mod metrics;
pub mod registration;
