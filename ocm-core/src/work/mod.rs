//! ManifestWork: the hub's work controllers.
//!
//! | module | what it holds |
//! |---|---|
//! | [`hub`] | the hub's work controllers (ManifestWork garbage collection) |

pub mod hub;
