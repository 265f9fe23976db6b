//! Placement: choosing managed clusters for workloads and add-ons (ocm-core.md §4).
//!
//! | module | what it holds |
//! |---|---|
//! | [`schedule`] | the scheduling core, a pure function of a Placement and the hub's state |
//!
//! See `docs/placement.md`.

pub mod schedule;
