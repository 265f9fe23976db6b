//! Placement: choosing managed clusters for workloads and add-ons (ocm-core.md §4).
//!
//! | module | what it holds |
//! |---|---|
//! | [`schedule`] | the scheduling core, a pure function of a Placement and the hub's state |
//! | [`controller`] | the controller that schedules every Placement and writes its PlacementDecisions and status |
//!
//! A hub runs the controller with [`run`]:
//!
//! ```no_run
//! # async fn example(client: kube::Client) -> Result<(), ocm_core::placement::PlacementError> {
//! use ocm_core::placement::{PlacementOptions, run};
//! run(client, PlacementOptions::default(), ocm_core::metrics::ControllerMetrics::default()).await
//! # }
//! ```
//!
//! See `docs/placement.md`.

pub mod controller;
pub mod schedule;

pub use controller::{PlacementError, PlacementOptions, run};
