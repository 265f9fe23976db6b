//! `work.open-cluster-management.io/v1`: [`ManifestWork`] on the hub and
//! [`AppliedManifestWork`] on managed clusters.
//!
//! | file | what it holds |
//! |---|---|
//! | `manifest` | [`Manifest`], one raw Kubernetes object of a ManifestWork, and this module's [`Error`] |
//! | `manifestwork` | [`ManifestWork`] and its spec |
//! | `status` | [`ManifestWorkStatus`]: conditions and per-object state and feedback |
//! | `applied` | [`AppliedManifestWork`] |

mod applied;
mod manifest;
mod manifestwork;
mod status;

pub use applied::*;
pub use manifest::*;
pub use manifestwork::*;
pub use status::*;
