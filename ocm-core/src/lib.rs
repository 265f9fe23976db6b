//! Ready-made Open Cluster Management controllers.
//!
//! This crate will hold the controllers of an OCM hub and of a managed-cluster agent, built on
//! `ocm-api` and `ocm-addon-framework`: cluster registration (hub and agent), the work agent, the
//! placement scheduler and the hub add-on lifecycle.
//!
//! See `docs/architecture.md` for how data flows between them.
