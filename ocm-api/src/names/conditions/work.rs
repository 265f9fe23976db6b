//! Conditions of the `work.open-cluster-management.io` kinds.

/// ManifestWork conditions (in `status.conditions`).
pub mod manifest_work {
    /// The work is being applied (set through condition rules).
    pub const PROGRESSING: &str = "Progressing";
    /// Every manifest was applied.
    pub const APPLIED: &str = "Applied";
    /// Every applied resource exists.
    pub const AVAILABLE: &str = "Available";
    /// The work is degraded (set through condition rules).
    pub const DEGRADED: &str = "Degraded";
    /// The work finished; the agent stops applying it.
    pub const COMPLETE: &str = "Complete";
    /// The work is being deleted.
    pub const DELETING: &str = "Deleting";
    /// Every manifest is complete.
    pub const MANIFESTS_COMPLETE: &str = "ManifestsComplete";

    /// Reasons of ManifestWork conditions.
    pub mod reasons {
        /// `Progressing`: the work is being applied.
        pub const PROGRESSING_APPLYING: &str = "Applying";
        /// `Progressing`: applying finished.
        pub const PROGRESSING_COMPLETED: &str = "Completed";
        /// `Progressing`: applying failed.
        pub const PROGRESSING_FAILED: &str = "Failed";
        /// `Applied` is `True`.
        pub const APPLIED_COMPLETE: &str = "AppliedManifestWorkComplete";
        /// `Applied` is `False`.
        pub const APPLIED_FAILED: &str = "AppliedManifestWorkFailed";
        /// `Available` is `True`.
        pub const RESOURCES_AVAILABLE: &str = "ResourcesAvailable";
        /// `Available` is `False`: some resource is missing.
        pub const RESOURCES_NOT_AVAILABLE: &str = "ResourcesNotAvailable";
        /// `Available` is `Unknown`.
        pub const RESOURCES_STATUS_UNKNOWN: &str = "ResourcesStatusUnknown";
        /// `Deleting` is `True`.
        pub const WORK_DELETING: &str = "WorkDeleting";
        /// A work condition aggregated from the conditions rules set on its manifests.
        pub const CONDITION_RULES_AGGREGATED: &str = "ConditionRulesAggregated";
    }
}

/// Conditions of each manifest (in `status.resourceStatus.manifests[].conditions`).
pub mod manifest {
    /// The resource is progressing (from condition rules).
    pub const PROGRESSING: &str = "Progressing";
    /// The manifest was applied.
    pub const APPLIED: &str = "Applied";
    /// The resource exists on the managed cluster.
    pub const AVAILABLE: &str = "Available";
    /// The resource is degraded (from condition rules).
    pub const DEGRADED: &str = "Degraded";
    /// The resource finished; the agent stops applying it.
    pub const COMPLETE: &str = "Complete";
    /// Whether the status feedback values were read.
    pub const STATUS_FEEDBACK_SYNCED: &str = "StatusFeedbackSynced";

    /// Reasons of manifest conditions.
    pub mod reasons {
        /// `Applied` is `True`.
        pub const APPLIED_COMPLETE: &str = "AppliedManifestComplete";
        /// `Applied` is `False`.
        pub const APPLIED_FAILED: &str = "AppliedManifestFailed";
        /// `Applied` is `False`: the server-side-apply ignore fields could not be processed.
        pub const APPLIED_SSA_IGNORE_FIELD_ERROR: &str = "AppliedManifestSSAIgnoreFieldError";
        /// `Available` is `True`.
        pub const RESOURCE_AVAILABLE: &str = "ResourceAvailable";
        /// `Available` is `False`: the resource does not exist.
        pub const RESOURCE_NOT_AVAILABLE: &str = "ResourceNotAvailable";
        /// `Available` is `Unknown`: reading the resource failed.
        pub const FETCHING_RESOURCE_FAILED: &str = "FetchingResourceFailed";
        /// `Available` is `Unknown`: the manifest lacks resource, version or name.
        pub const INCOMPLETE_RESOURCE_META: &str = "IncompleteResourceMeta";
        /// `StatusFeedbackSynced` is `True` without feedback rules.
        pub const NO_STATUS_FEEDBACK_SYNCED: &str = "NoStatusFeedbackSynced";
        /// `StatusFeedbackSynced` is `True`.
        pub const STATUS_FEEDBACK_SYNCED: &str = "StatusFeedbackSynced";
        /// `StatusFeedbackSynced` is `False`.
        pub const STATUS_FEEDBACK_SYNC_FAILED: &str = "StatusFeedbackSyncFailed";
        /// A condition rule was evaluated.
        pub const CONDITION_RULE_EVALUATED: &str = "ConditionRuleEvaluated";
        /// A condition rule has an unknown type.
        pub const CONDITION_RULE_INVALID: &str = "ConditionRuleInvalid";
        /// A condition rule's CEL expression failed to compile or returned no boolean.
        pub const CONDITION_RULE_EXPRESSION_ERROR: &str = "ConditionRuleExpressionError";
        /// A condition rule could not be run.
        pub const CONDITION_RULE_INTERNAL_ERROR: &str = "ConditionRuleInternalError";
    }
}

/// ManifestWorkReplicaSet conditions.
pub mod manifest_work_replica_set {
    /// Whether the referenced placements and their decisions exist.
    pub const PLACEMENT_VERIFIED: &str = "PlacementVerified";
    /// Whether the rollout over the placements finished.
    pub const PLACEMENT_ROLLED_OUT: &str = "PlacementRolledOut";
    /// Whether the ManifestWorks were created (upstream's spelling).
    pub const MANIFESTWORK_APPLIED: &str = "ManifestworkApplied";

    /// Reasons of ManifestWorkReplicaSet conditions.
    pub mod reasons {
        /// A referenced placement has no decisions object.
        pub const PLACEMENT_DECISION_NOT_FOUND: &str = "PlacementDecisionNotFound";
        /// A referenced placement selects no cluster.
        pub const PLACEMENT_DECISION_EMPTY: &str = "PlacementDecisionEmpty";
        /// Everything is as expected.
        pub const AS_EXPECTED: &str = "AsExpected";
        /// Works are being created.
        pub const PROCESSING: &str = "Processing";
        /// Something is not as expected.
        pub const NOT_AS_EXPECTED: &str = "NotAsExpected";
        /// The rollout is going on.
        pub const PROGRESSING: &str = "Progressing";
        /// The rollout finished.
        pub const COMPLETE: &str = "Complete";
        /// `<namespace>.<name>` of the replica set is no valid label value.
        pub const INVALID_MANIFEST_WORK_NAME: &str = "InvalidManifestWorkName";
    }
}
