//! Conditions of the `addon.open-cluster-management.io` kinds.

/// ManagedClusterAddOn conditions.
pub mod managed_cluster_addon {
    /// The add-on agent is healthy.
    pub const AVAILABLE: &str = "Available";
    /// The add-on reports itself degraded (set by the add-on).
    pub const DEGRADED: &str = "Degraded";
    /// The add-on has its desired configurations.
    pub const CONFIGURED: &str = "Configured";
    /// A configuration change is being rolled out to the add-on.
    pub const PROGRESSING: &str = "Progressing";
    /// The add-on's manifests were applied on the managed cluster.
    pub const MANIFEST_APPLIED: &str = "ManifestApplied";
    /// The add-on's pre-delete hook finished.
    pub const HOOK_MANIFEST_COMPLETED: &str = "HookManifestCompleted";
    /// The add-on's manifests were applied on the hosting cluster.
    pub const HOSTING_MANIFEST_APPLIED: &str = "HostingManifestApplied";
    /// Whether the hosting cluster named on the add-on is a managed cluster.
    pub const HOSTING_CLUSTER_VALIDITY: &str = "HostingClusterValidity";
    /// The add-on's hub registration (permissions, registrations, namespace) is set up.
    pub const REGISTRATION_APPLIED: &str = "RegistrationApplied";
    /// The hub objects for token authentication exist.
    pub const TOKEN_INFRASTRUCTURE_READY: &str = "TokenInfrastructureReady";
    /// The add-on's client certificate was (or failed to be) rotated.
    pub const CLUSTER_CERTIFICATE_ROTATED: &str = "ClusterCertificateRotated";
    /// The add-on's token was (or failed to be) refreshed.
    pub const TOKEN_REFRESHED: &str = "TokenRefreshed";

    /// Reasons of ManagedClusterAddOn conditions.
    pub mod reasons {
        /// `Available` is `Unknown`: no deploy work exists.
        pub const AVAILABLE_WORK_NOT_FOUND: &str = "WorkNotFound";
        /// `Available`: applying the deploy work failed (defined, unused upstream).
        pub const AVAILABLE_WORK_APPLY_FAILED: &str = "WorkApplyFailed";
        /// `Available` is `Unknown` or `False`: the deploy work is not applied yet.
        pub const AVAILABLE_WORK_NOT_APPLIED: &str = "WorkNotApplied";
        /// `Available` is `True`: the deploy work is applied (work health probe without prober).
        pub const AVAILABLE_WORK_APPLIED: &str = "WorkApplied";
        /// `Available` is `Unknown`: the probe returned no feedback.
        pub const AVAILABLE_NO_PROBE_RESULT: &str = "NoProbeResult";
        /// `Available` is `False`: the health checker rejected the feedback.
        pub const AVAILABLE_PROBE_UNAVAILABLE: &str = "ProbeUnavailable";
        /// `Available` is `True`: the health checker accepted the feedback.
        pub const AVAILABLE_PROBE_AVAILABLE: &str = "ProbeAvailable";
        /// `Available` is `False`: the add-on lease is stale.
        pub const AVAILABLE_LEASE_UPDATE_STOPPED: &str = "ManagedClusterAddOnLeaseUpdateStopped";
        /// `Available` is `Unknown`: the add-on lease does not exist.
        pub const AVAILABLE_LEASE_NOT_FOUND: &str = "ManagedClusterAddOnLeaseNotFound";
        /// `Available` is `True`: the add-on lease is fresh.
        pub const AVAILABLE_LEASE_UPDATED: &str = "ManagedClusterAddOnLeaseUpdated";
        /// `ManifestApplied`/`HostingManifestApplied` is `False`: building or applying the work failed.
        pub const MANIFEST_APPLIED_WORK_APPLY_FAILED: &str = "ManifestWorkApplyFailed";
        /// `ManifestApplied`/`HostingManifestApplied` is `True`.
        pub const MANIFEST_APPLIED: &str = "AddonManifestApplied";
        /// `ManifestApplied`/`HostingManifestApplied` is `False`: the work reports it is not applied.
        pub const MANIFEST_APPLIED_FAILED: &str = "AddonManifestAppliedFailed";
        /// `HostingClusterValidity` is `True`.
        pub const HOSTING_CLUSTER_VALID: &str = "HostingClusterValid";
        /// `HostingClusterValidity` is `False`.
        pub const HOSTING_CLUSTER_INVALID: &str = "HostingClusterInvalid";
        /// `HookManifestCompleted` is `True`.
        pub const HOOK_MANIFEST_IS_COMPLETED: &str = "HookManifestIsCompleted";
        /// `HookManifestCompleted` is `False`.
        pub const HOOK_MANIFEST_IS_NOT_COMPLETED: &str = "HookManifestIsNotCompleted";
        /// `Progressing` is `True`: the rollout is going on.
        pub const PROGRESSING: &str = "Progressing";
        /// `Progressing` is `False`: the desired configurations were applied.
        pub const PROGRESSING_COMPLETED: &str = "Completed";
        /// `Progressing` is `False`: the rollout failed.
        pub const PROGRESSING_FAILED: &str = "Failed";
        /// `Progressing`: waiting for a canary (defined, unused upstream).
        pub const PROGRESSING_WAITING_FOR_CANARY: &str = "WaitingForCanary";
        /// `Progressing` is `False`: a configuration type is not supported by the add-on.
        pub const PROGRESSING_CONFIGURATION_UNSUPPORTED: &str = "ConfigurationUnsupported";
        /// `Progressing` is `False`: `ManifestApplied` is not set yet.
        pub const PROGRESSING_WAITING_FOR_MANIFEST_APPLIED: &str = "WaitingForManifestApplied";
        /// `Progressing` is `False`: `HostingManifestApplied` is not set yet.
        pub const PROGRESSING_WAITING_FOR_HOSTING_MANIFEST_APPLIED: &str = "WaitingForHostingManifestApplied";
        /// `Configured` is `True`.
        pub const CONFIGURATIONS_CONFIGURED: &str = "ConfigurationsConfigured";
        /// `Configured` is `False`: new configurations wait for their turn in the rollout.
        pub const CONFIGURATIONS_NOT_CONFIGURED: &str = "ConfigurationsNotConfigured";
        /// `RegistrationApplied` is `True`: the add-on needs no hub registration.
        pub const REGISTRATION_NIL: &str = "NilRegistration";
        /// `RegistrationApplied` is `False`: setting hub permissions failed.
        pub const REGISTRATION_SET_PERMISSION_FAILED: &str = "SetPermissionFailed";
        /// `RegistrationApplied` is `True`: hub permissions are set.
        pub const REGISTRATION_SET_PERMISSION_APPLIED: &str = "SetPermissionApplied";
        /// `RegistrationApplied` is `False`: the registration subject is not known yet.
        pub const REGISTRATION_PERMISSION_CONFIG_PENDING: &str = "PermissionConfigPending";
        /// `TokenInfrastructureReady` is `True`.
        pub const TOKEN_INFRASTRUCTURE_READY: &str = "TokenInfrastructureReady";
        /// `TokenInfrastructureReady` is `False`.
        pub const TOKEN_INFRASTRUCTURE_APPLY_FAILED: &str = "TokenInfrastructureApplyFailed";
        /// `ClusterCertificateRotated` is `True`.
        pub const CERTIFICATE_UPDATED: &str = "ClientCertificateUpdated";
        /// `ClusterCertificateRotated` is `False`.
        pub const CERTIFICATE_UPDATE_FAILED: &str = "ClientCertificateUpdateFailed";
    }
}

/// Conditions of a ClusterManagementAddOn's `status.installProgressions[]`.
pub mod cluster_management_addon {
    /// The rollout of the placement's configurations.
    pub const PROGRESSING: &str = "Progressing";

    /// Reasons of install-progression conditions.
    pub mod reasons {
        /// `Progressing` is `True`.
        pub const PROGRESSING: &str = "Progressing";
        /// `Progressing` is `False`: every selected add-on has the configurations.
        pub const COMPLETED: &str = "Completed";
    }
}
