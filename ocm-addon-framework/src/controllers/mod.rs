//! The controllers the [`AddonManager`](crate::manager::AddonManager) runs, one module each.

pub(crate) mod deploy;
