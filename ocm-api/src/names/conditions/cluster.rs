//! Conditions of the `cluster.open-cluster-management.io` kinds.

/// ManagedCluster conditions.
pub mod managed_cluster {
    /// The registration agent has joined the hub.
    pub const JOINED: &str = "ManagedClusterJoined";
    /// The hub administrator accepted (or denied) the cluster.
    pub const HUB_ACCEPTED: &str = "HubAcceptedManagedCluster";
    /// The hub administrator denied the cluster.
    pub const HUB_DENIED: &str = "HubDeniedManagedCluster";
    /// The cluster's API server answers its health checks.
    pub const AVAILABLE: &str = "ManagedClusterConditionAvailable";
    /// The agent's clock agrees with the hub's.
    pub const CLOCK_SYNCED: &str = "ManagedClusterConditionClockSynced";
    /// Progress of cleaning up the cluster namespace after deletion.
    pub const DELETING: &str = "Deleting";
    /// The agent's client certificate was (or failed to be) rotated.
    pub const CERTIFICATE_ROTATED: &str = "ClusterCertificateRotated";
    /// The cluster was imported by the hub's cluster importer.
    pub const IMPORT_SUCCEEDED: &str = "ManagedClusterImportSucceeded";

    /// Reasons of ManagedCluster conditions.
    pub mod reasons {
        /// `ManagedClusterJoined` is `True`.
        pub const JOINED: &str = "ManagedClusterJoined";
        /// `HubAcceptedManagedCluster` is `True`: the administrator accepted the cluster.
        pub const HUB_CLUSTER_ADMIN_ACCEPTED: &str = "HubClusterAdminAccepted";
        /// `HubAcceptedManagedCluster` is `False`: the administrator denied the cluster.
        pub const HUB_CLUSTER_ADMIN_DENIED: &str = "HubClusterAdminDenied";
        /// `HubAcceptedManagedCluster` is `False`: accepting failed.
        pub const HUB_ACCEPT_ERROR: &str = "Error";
        /// `ManagedClusterConditionAvailable` is `True`.
        pub const AVAILABLE: &str = "ManagedClusterAvailable";
        /// `ManagedClusterConditionAvailable` is `False`: the API server health check failed.
        pub const KUBE_API_SERVER_UNAVAILABLE: &str = "ManagedClusterKubeAPIServerUnavailable";
        /// `ManagedClusterConditionAvailable` is `Unknown`: the agent stopped renewing its lease.
        pub const LEASE_UPDATE_STOPPED: &str = "ManagedClusterLeaseUpdateStopped";
        /// `ManagedClusterConditionClockSynced` is `True`.
        pub const CLOCK_SYNCED: &str = "ManagedClusterClockSynced";
        /// `ManagedClusterConditionClockSynced` is `False`.
        pub const CLOCK_OUT_OF_SYNC: &str = "ManagedClusterClockOutOfSync";
        /// `Deleting` is `False`: objects of some resource remain in the cluster namespace.
        pub const DELETING_RESOURCE_REMAINING: &str = "ResourceRemaining";
        /// `Deleting` is `True`: nothing is left to clean up.
        pub const DELETING_NO_RESOURCE: &str = "NoResource";
        /// `Deleting` is `False`: deleting objects failed.
        pub const DELETING_ERROR: &str = "DeletingError";
        /// `ClusterCertificateRotated` is `True`.
        pub const CERTIFICATE_UPDATED: &str = "ClientCertificateUpdated";
        /// `ClusterCertificateRotated` is `False`.
        pub const CERTIFICATE_UPDATE_FAILED: &str = "ClientCertificateUpdateFailed";
    }
}

/// Conditions of the entries of a ManagedCluster's `status.managedNamespaces`.
pub mod managed_namespace {
    /// The namespace exists on the managed cluster.
    pub const NAMESPACE_AVAILABLE: &str = "NamespaceAvailable";

    /// Reasons of managed-namespace conditions.
    pub mod reasons {
        /// `NamespaceAvailable` is `True`.
        pub const NAMESPACE_APPLIED: &str = "NamespaceApplied";
        /// `NamespaceAvailable` is `False`.
        pub const NAMESPACE_APPLY_FAILED: &str = "NamespaceApplyFailed";
    }
}

/// ManagedClusterSet conditions.
pub mod managed_cluster_set {
    /// Whether the set selects no cluster.
    pub const EMPTY: &str = "ClusterSetEmpty";

    /// Reasons of ManagedClusterSet conditions.
    pub mod reasons {
        /// `ClusterSetEmpty` is `True`.
        pub const NO_CLUSTER_MATCHED: &str = "NoClusterMatched";
        /// `ClusterSetEmpty` is `False`.
        pub const CLUSTERS_SELECTED: &str = "ClustersSelected";
    }
}

/// ManagedClusterSetBinding conditions.
pub mod managed_cluster_set_binding {
    /// Whether the bound cluster set exists.
    pub const BOUND: &str = "Bound";

    /// Reasons of ManagedClusterSetBinding conditions.
    pub mod reasons {
        /// `Bound` is `True`.
        pub const CLUSTER_SET_BOUND: &str = "ClusterSetBound";
        /// `Bound` is `False`.
        pub const CLUSTER_SET_NOT_FOUND: &str = "ClusterSetNotFound";
    }
}

/// Placement conditions.
pub mod placement {
    /// Whether the placement found as many clusters as it asked for.
    pub const SATISFIED: &str = "PlacementSatisfied";
    /// Whether the placement's configuration is invalid.
    pub const MISCONFIGURED: &str = "PlacementMisconfigured";

    /// Reasons of Placement conditions.
    pub mod reasons {
        /// `PlacementMisconfigured` is `True`.
        pub const MISCONFIGURED: &str = "Misconfigured";
        /// `PlacementMisconfigured` is `False` (upstream's spelling).
        pub const SUCCEED_CONFIGURED: &str = "Succeedconfigured";
        /// `PlacementSatisfied` is `False`: no valid binding in the placement namespace.
        pub const NO_MANAGED_CLUSTER_SET_BINDINGS: &str = "NoManagedClusterSetBindings";
        /// `PlacementSatisfied` is `False`: none of the wanted sets is bound to the namespace.
        pub const NO_INTERSECTION: &str = "NoIntersection";
        /// `PlacementSatisfied` is `False`: the eligible sets have no member.
        pub const ALL_MANAGED_CLUSTER_SETS_EMPTY: &str = "AllManagedClusterSetsEmpty";
        /// `PlacementSatisfied` is `False`: fewer clusters than requested were selected.
        pub const NOT_ALL_DECISIONS_SCHEDULED: &str = "NotAllDecisionsScheduled";
        /// `PlacementSatisfied` is `False`: no cluster matches the predicates.
        pub const NO_MANAGED_CLUSTER_MATCHED: &str = "NoManagedClusterMatched";
        /// `PlacementSatisfied` is `True`.
        pub const ALL_DECISIONS_SCHEDULED: &str = "AllDecisionsScheduled";
    }
}
