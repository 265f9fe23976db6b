//! Feature gate names, and their defaults per component.
//!
//! Gates are switched through `ClusterManager.spec.*Configuration.featureGates` and
//! `Klusterlet.spec.*Configuration.featureGates`; [`DEFAULTS`] lists what each component assumes
//! when a gate is not set.

/// The spoke agent manages ClusterClaims.
pub const CLUSTER_CLAIM: &str = "ClusterClaim";
/// The spoke agent reports `about.k8s.io` ClusterProperties as claims.
pub const CLUSTER_PROPERTY: &str = "ClusterProperty";
/// Add-on registration on the spoke agent; the add-on manager on the hub.
pub const ADDON_MANAGEMENT: &str = "AddonManagement";
/// The hub maintains the `default` and `global` cluster sets.
pub const DEFAULT_CLUSTER_SET: &str = "DefaultClusterSet";
/// Agents and hub use the `certificates.k8s.io/v1beta1` CSR API.
pub const V1BETA1_CSR_API_COMPATIBILITY: &str = "V1beta1CSRAPICompatibility";
/// The work webhook checks execute-as rights even for works without an executor.
pub const NIL_EXECUTOR_VALIDATING: &str = "NilExecutorValidating";
/// The work agent caches executor permission checks.
pub const EXECUTOR_VALIDATING_CACHES: &str = "ExecutorValidatingCaches";
/// The hub accepts registering clusters automatically.
pub const MANAGED_CLUSTER_AUTO_APPROVAL: &str = "ManagedClusterAutoApproval";
/// The hub runs the ManifestWorkReplicaSet controller.
pub const MANIFEST_WORK_REPLICA_SET: &str = "ManifestWorkReplicaSet";
/// The hub delivers ManifestWorks through cloud events (MQTT, gRPC).
pub const CLOUD_EVENTS_DRIVERS: &str = "CloudEventsDrivers";
/// The work agent returns non-scalar feedback as raw JSON.
pub const RAW_FEEDBACK_JSON_STRING: &str = "RawFeedbackJsonString";
/// The hub cleans up a deleted cluster's namespace.
pub const RESOURCE_CLEANUP: &str = "ResourceCleanup";
/// The spoke agent may choose among several hubs.
pub const MULTIPLE_HUBS: &str = "MultipleHubs";
/// The hub mirrors ManagedClusters into ClusterProfiles.
pub const CLUSTER_PROFILE: &str = "ClusterProfile";
/// The hub imports clusters from cluster providers such as Cluster API.
pub const CLUSTER_IMPORTER: &str = "ClusterImporter";
/// The hub deletes completed ManifestWorks after their TTL.
pub const CLEAN_UP_COMPLETED_MANIFEST_WORK: &str = "CleanUpCompletedManifestWork";
/// The placement controller mirrors decisions into SIG Multicluster PlacementDecisions.
pub const SIG_PLACEMENT_DECISION: &str = "SIGPlacementDecision";
/// The placement controller runs a debug server.
pub const PLACEMENT_DEBUG_SERVER: &str = "PlacementDebugServer";

/// The OCM components that read feature gates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Component {
    /// The registration agent on managed clusters.
    SpokeRegistration,
    /// The registration controller on the hub.
    HubRegistration,
    /// The add-on manager on the hub.
    HubAddonManager,
    /// The placement controller on the hub.
    HubPlacement,
    /// The work controllers and webhook on the hub.
    HubWork,
    /// The work agent on managed clusters.
    SpokeWork,
}

/// How mature a gated feature is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Experimental.
    Alpha,
    /// Well tested.
    Beta,
}

/// The default of one gate in one component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureGateDefault {
    /// The gate.
    pub name: &'static str,
    /// The component that reads it.
    pub component: Component,
    /// Whether the feature is on when the gate is not set.
    pub enabled: bool,
    /// How mature the feature is.
    pub stage: Stage,
}

const fn gate(name: &'static str, component: Component, enabled: bool, stage: Stage) -> FeatureGateDefault {
    FeatureGateDefault {
        name,
        component,
        enabled,
        stage,
    }
}

/// Every gate each component knows, with its default.
pub const DEFAULTS: &[FeatureGateDefault] = &[
    gate(CLUSTER_CLAIM, Component::SpokeRegistration, true, Stage::Beta),
    gate(
        CLUSTER_PROPERTY,
        Component::SpokeRegistration,
        false,
        Stage::Alpha,
    ),
    gate(ADDON_MANAGEMENT, Component::SpokeRegistration, true, Stage::Beta),
    gate(
        V1BETA1_CSR_API_COMPATIBILITY,
        Component::SpokeRegistration,
        false,
        Stage::Alpha,
    ),
    gate(MULTIPLE_HUBS, Component::SpokeRegistration, false, Stage::Alpha),
    gate(
        V1BETA1_CSR_API_COMPATIBILITY,
        Component::HubRegistration,
        false,
        Stage::Alpha,
    ),
    gate(
        DEFAULT_CLUSTER_SET,
        Component::HubRegistration,
        true,
        Stage::Alpha,
    ),
    gate(
        MANAGED_CLUSTER_AUTO_APPROVAL,
        Component::HubRegistration,
        false,
        Stage::Alpha,
    ),
    gate(RESOURCE_CLEANUP, Component::HubRegistration, true, Stage::Beta),
    gate(CLUSTER_PROFILE, Component::HubRegistration, false, Stage::Alpha),
    gate(CLUSTER_IMPORTER, Component::HubRegistration, false, Stage::Alpha),
    gate(ADDON_MANAGEMENT, Component::HubAddonManager, true, Stage::Beta),
    gate(
        SIG_PLACEMENT_DECISION,
        Component::HubPlacement,
        false,
        Stage::Alpha,
    ),
    gate(
        PLACEMENT_DEBUG_SERVER,
        Component::HubPlacement,
        false,
        Stage::Alpha,
    ),
    gate(NIL_EXECUTOR_VALIDATING, Component::HubWork, false, Stage::Alpha),
    gate(MANIFEST_WORK_REPLICA_SET, Component::HubWork, false, Stage::Alpha),
    gate(CLOUD_EVENTS_DRIVERS, Component::HubWork, false, Stage::Alpha),
    gate(
        CLEAN_UP_COMPLETED_MANIFEST_WORK,
        Component::HubWork,
        false,
        Stage::Alpha,
    ),
    gate(
        EXECUTOR_VALIDATING_CACHES,
        Component::SpokeWork,
        false,
        Stage::Alpha,
    ),
    gate(
        RAW_FEEDBACK_JSON_STRING,
        Component::SpokeWork,
        false,
        Stage::Alpha,
    ),
];

/// The default of `gate` in `component`, or `None` if the component does not know the gate.
#[must_use]
pub fn default_enabled(component: Component, gate: &str) -> Option<bool> {
    DEFAULTS
        .iter()
        .find(|d| d.component == component && d.name == gate)
        .map(|d| d.enabled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_per_component() {
        assert_eq!(
            default_enabled(Component::SpokeRegistration, CLUSTER_CLAIM),
            Some(true)
        );
        assert_eq!(
            default_enabled(Component::HubAddonManager, ADDON_MANAGEMENT),
            Some(true)
        );
        assert_eq!(
            default_enabled(Component::HubRegistration, RESOURCE_CLEANUP),
            Some(true)
        );
        assert_eq!(
            default_enabled(Component::HubWork, MANIFEST_WORK_REPLICA_SET),
            Some(false)
        );
        assert_eq!(default_enabled(Component::HubWork, CLUSTER_CLAIM), None);
    }

    #[test]
    fn every_gate_has_a_default_somewhere() {
        let gates = [
            CLUSTER_CLAIM,
            CLUSTER_PROPERTY,
            ADDON_MANAGEMENT,
            DEFAULT_CLUSTER_SET,
            V1BETA1_CSR_API_COMPATIBILITY,
            NIL_EXECUTOR_VALIDATING,
            EXECUTOR_VALIDATING_CACHES,
            MANAGED_CLUSTER_AUTO_APPROVAL,
            MANIFEST_WORK_REPLICA_SET,
            CLOUD_EVENTS_DRIVERS,
            RAW_FEEDBACK_JSON_STRING,
            RESOURCE_CLEANUP,
            MULTIPLE_HUBS,
            CLUSTER_PROFILE,
            CLUSTER_IMPORTER,
            CLEAN_UP_COMPLETED_MANIFEST_WORK,
            SIG_PLACEMENT_DECISION,
            PLACEMENT_DEBUG_SERVER,
        ];
        for gate in gates {
            assert!(DEFAULTS.iter().any(|d| d.name == gate), "{gate} has no default");
        }
    }
}
