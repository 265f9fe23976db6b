//! Conditions of the `operator.open-cluster-management.io` kinds.

/// ClusterManager conditions.
pub mod cluster_manager {
    /// The hub components were applied.
    pub const APPLIED: &str = "Applied";
    /// The registration controller is not running well.
    pub const HUB_REGISTRATION_DEGRADED: &str = "HubRegistrationDegraded";
    /// The placement controller is not running well.
    pub const HUB_PLACEMENT_DEGRADED: &str = "HubPlacementDegraded";
    /// The hub deployments are rolling out.
    pub const PROGRESSING: &str = "Progressing";
    /// The storage version migration finished.
    pub const MIGRATION_SUCCEEDED: &str = "MigrationSucceeded";

    /// Reasons of ClusterManager conditions.
    pub mod reasons {
        /// `Applied` is `True`.
        pub const APPLIED: &str = "ClusterManagerApplied";
        /// Applying runtime resources failed.
        pub const RUNTIME_RESOURCE_APPLY_FAILED: &str = "RuntimeResourceApplyFailed";
        /// Syncing service accounts failed.
        pub const SERVICE_ACCOUNT_SYNC_FAILED: &str = "ServiceAccountSyncFailed";
        /// Applying CRDs failed.
        pub const CRD_APPLY_FAILED: &str = "CRDApplyFailed";
        /// Applying webhook configurations failed.
        pub const WEBHOOK_APPLY_FAILED: &str = "WebhookApplyFailed";
        /// `Progressing` is `True`: deployments are rolling.
        pub const DEPLOYMENT_ROLLING: &str = "ClusterManagerDeploymentRolling";
        /// `Progressing` is `False`: deployments are up to date.
        pub const UP_TO_DATE: &str = "ClusterManagerUpToDate";
        /// The storage version migration failed.
        pub const STORAGE_VERSION_MIGRATION_FAILED: &str = "StorageVersionMigrationFailed";
        /// The storage version migration is running.
        pub const STORAGE_VERSION_MIGRATION_PROCESSING: &str = "StorageVersionMigrationProcessing";
        /// The storage version migration succeeded (upstream's spelling).
        pub const STORAGE_VERSION_MIGRATION_SUCCEED: &str = "StorageVersionMigrationSucceed";
        /// Reading the registration deployment failed.
        pub const GET_REGISTRATION_DEPLOYMENT_FAILED: &str = "GetRegistrationDeploymentFailed";
        /// Some registration pod is unavailable.
        pub const UNAVAILABLE_REGISTRATION_POD: &str = "UnavailableRegistrationPod";
        /// The registration controller works.
        pub const REGISTRATION_FUNCTIONAL: &str = "RegistrationFunctional";
        /// Reading the placement deployment failed.
        pub const GET_PLACEMENT_DEPLOYMENT_FAILED: &str = "GetPlacementDeploymentFailed";
        /// Some placement pod is unavailable.
        pub const UNAVAILABLE_PLACEMENT_POD: &str = "UnavailablePlacementPod";
        /// The placement controller works.
        pub const PLACEMENT_FUNCTIONAL: &str = "PlacementFunctional";
    }
}

/// Klusterlet conditions.
pub mod klusterlet {
    /// The agent components were applied.
    pub const APPLIED: &str = "Applied";
    /// The operator is ready to apply the agent (hosted mode).
    pub const READY_TO_APPLY: &str = "ReadyToApply";
    /// The agent deployments are available.
    pub const AVAILABLE: &str = "Available";
    /// The agent cannot reach the hub with its credentials.
    pub const HUB_CONNECTION_DEGRADED: &str = "HubConnectionDegraded";
    /// The registration agent does not run as desired.
    pub const REGISTRATION_DESIRED_DEGRADED: &str = "RegistrationDesiredDegraded";
    /// The work agent does not run as desired.
    pub const WORK_DESIRED_DEGRADED: &str = "WorkDesiredDegraded";

    /// Reasons of Klusterlet conditions.
    pub mod reasons {
        /// `Applied` is `True`.
        pub const APPLIED: &str = "KlusterletApplied";
        /// `Applied` is `False`.
        pub const APPLY_FAILED: &str = "KlusterletApplyFailed";
        /// Applying CRDs failed.
        pub const CRD_APPLY_FAILED: &str = "CRDApplyFailed";
        /// Applying resources on the managed cluster failed.
        pub const MANAGED_CLUSTER_RESOURCE_APPLY_FAILED: &str = "ManagedClusterResourceApplyFailed";
        /// Applying resources on the management cluster failed.
        pub const MANAGEMENT_CLUSTER_RESOURCE_APPLY_FAILED: &str = "ManagementClusterResourceApplyFailed";
        /// `ReadyToApply` is `False`.
        pub const PREPARE_FAILED: &str = "KlusterletPrepareFailed";
        /// `ReadyToApply` is `True`.
        pub const PREPARED: &str = "KlusterletPrepared";
        /// Reading an agent deployment failed.
        pub const GET_DEPLOYMENT_FAILED: &str = "GetDeploymentFailed";
        /// Some agent pods are unavailable.
        pub const UNAVAILABLE_PODS: &str = "UnavailablePods";
        /// The agent deployments work.
        pub const DEPLOYMENTS_FUNCTIONAL: &str = "DeploymentsFunctional";
        /// No agent pod is available.
        pub const NO_AVAILABLE_PODS: &str = "NoAvailablePods";
        /// `Available` is `True`.
        pub const AVAILABLE: &str = "KlusterletAvailable";
        /// `HubConnectionDegraded` is `False`.
        pub const HUB_CONNECTION_FUNCTIONAL: &str = "HubConnectionFunctional";
        /// The hub kubeconfig secret does not exist.
        pub const HUB_KUBECONFIG_SECRET_MISSING: &str = "HubKubeConfigSecretMissing";
        /// The hub kubeconfig secret has no kubeconfig.
        pub const HUB_KUBECONFIG_MISSING: &str = "HubKubeConfigMissing";
        /// The hub kubeconfig cannot be used.
        pub const HUB_KUBECONFIG_ERROR: &str = "HubKubeConfigError";
        /// The hub kubeconfig secret has no cluster name.
        pub const CLUSTER_NAME_MISSING: &str = "ClusterNameMissing";
        /// The hub rejects the agent's credentials.
        pub const HUB_KUBECONFIG_UNAUTHORIZED: &str = "HubKubeConfigUnauthorized";
    }
}
