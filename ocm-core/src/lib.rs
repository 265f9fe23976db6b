//! Ready-made Open Cluster Management controllers.
//!
//! This crate is where the controllers of an OCM hub and of a managed-cluster agent are built, on
//! `ocm-api` and `ocm-addon-framework`: cluster registration (hub and agent), the work agent, the
//! placement scheduler and the hub add-on lifecycle. What exists today is what they share:
//!
//! | module | what it holds |
//! |---|---|
//! | [`addon`] | the hub's general add-on manager: ManagedClusterAddOns owned by their ClusterManagementAddOn |
//! | [`crds`] | installing the OCM CRDs of a hub or a managed cluster (server-side apply, wait for Established) |
//! | [`events`] | publishing Kubernetes events, with series, at fleet scale |
//! | [`klusterlet`] | the registration and work agents of a managed cluster run together, as upstream's klusterlet in singleton mode |
//! | [`metrics`] | Prometheus counters of reconciliations by controller and result |
//! | [`placement`] | the placement scheduler: its pure core and its controller |
//! | [`registration`] | cluster registration: the hub's controllers and the managed cluster's agent |
//! | [`work`] | work distribution: the work agent that applies ManifestWorks on a managed cluster, and the hub's work controllers |
//!
//! Controllers talk only through the Kubernetes API, so they run unchanged on real clusters and
//! on `ocm-controlplane`. See `docs/architecture.md` for how data flows between them.

pub mod addon;
pub mod crds;
pub mod events;
pub mod klusterlet;
pub mod metrics;
pub mod placement;
pub mod registration;
pub mod work;
