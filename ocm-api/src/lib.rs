//! Typed Open Cluster Management (OCM) APIs.
//!
//! Every OCM kind as a Rust type that serializes exactly as upstream OCM does, the wire names that
//! OCM components agree on, and client-free helpers. This crate has no Kubernetes client and no
//! async runtime: it is what add-on authors and the other crates of this workspace build on.
//!
//! | module | what it holds |
//! |---|---|
//! | [`cluster`] | `cluster.open-cluster-management.io`: ManagedCluster, cluster sets, placement, claims |
//! | [`meta`] | Kubernetes types the kinds embed (conditions, label selectors) with their CRD schemas |
//! | [`schema`] | structural OpenAPI schemas generated from the types |
//! | [`crd`] | the CustomResourceDefinitions of every kind |
//! | [`resource`] | how the root type of each kind is defined |

pub mod cluster;
pub mod crd;
pub mod meta;
pub mod resource;
pub mod schema;
