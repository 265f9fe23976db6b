//! Leases OCM agents renew to show they are alive.

/// The lease the registration agent renews, in the cluster namespace on the hub.
pub const MANAGED_CLUSTER: &str = "managed-cluster-lease";
/// The lease duration agents use when none is configured, in seconds.
pub const DEFAULT_DURATION_SECONDS: i32 = 60;
/// How many lease durations may pass without renewal before an agent counts as gone.
pub const GRACE_PERIOD_MULTIPLIER: i32 = 5;

/// The lease an add-on agent renews, in its install namespace: named after the add-on.
#[must_use]
pub fn addon(addon: &str) -> &str {
    addon
}
