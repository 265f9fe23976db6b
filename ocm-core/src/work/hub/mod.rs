//! The hub's work controllers (ocm-core.md §3.11).
//!
//! | module | what it holds |
//! |---|---|
//! | [`garbage_collection`] | deleting ManifestWorks `ttlSecondsAfterFinished` after they completed |
//! | [`replica_set`] | ManifestWorkReplicaSets: a ManifestWork per cluster their Placements select, rolled out by strategy |
//!
//! ManifestWork admission is not a controller: its rules are in [`ocm_api::admission::manifest_work`],
//! run in-process by the embedded control plane and served by [`crate::registration::webhook`].

pub mod garbage_collection;
pub mod replica_set;
