//! The hub's work controllers (ocm-core.md §3.11) that need no Placement.
//!
//! | module | what it holds |
//! |---|---|
//! | [`garbage_collection`] | deleting ManifestWorks `ttlSecondsAfterFinished` after they completed |
//!
//! ManifestWork admission is not a controller: its rules are in [`ocm_api::admission::manifest_work`],
//! run in-process by the embedded control plane and served by [`crate::registration::webhook`].

pub mod garbage_collection;
