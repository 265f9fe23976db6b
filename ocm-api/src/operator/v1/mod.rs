//! `operator.open-cluster-management.io/v1`: [`ClusterManager`], which tells the cluster-manager
//! operator how to run the hub, and [`Klusterlet`], which tells the klusterlet operator how to run
//! the agents of a managed cluster.
//!
//! | file | what it holds |
//! |---|---|
//! | `common` | types both kinds use: feature gates, node placement, resource requirements, [`OperatorStatus`] |
//! | `clustermanager` | [`ClusterManager`] and its spec |
//! | `klusterlet` | [`Klusterlet`] and its spec |

mod clustermanager;
mod common;
mod klusterlet;

pub use clustermanager::*;
pub use common::*;
pub use klusterlet::*;
