//! Work distribution (ocm-core.md §3): putting ManifestWorks from the hub onto managed clusters.
//!
//! | module | what it holds |
//! |---|---|
//! | [`agent`] | the work agent of a managed cluster: applies the ManifestWorks of its cluster namespace, records them in AppliedManifestWorks, reports status, cleans up |
//! | [`hub`] | the hub's work controllers (ManifestWork garbage collection) |

pub mod agent;
pub mod hub;
