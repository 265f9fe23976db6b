//! The hub-side controllers the [`AddonManager`](crate::manager::AddonManager) runs, one module
//! each.

pub(crate) mod common;
pub(crate) mod config;
pub(crate) mod csr_approve;
pub(crate) mod csr_sign;
pub(crate) mod deploy;
pub(crate) mod registration;
