//! Types both add-on versions share: add-on metadata, references to configuration objects, install
//! strategies and their progress, health checks and related objects.
//!
//! [`v1beta1`](crate::addon::v1beta1) re-exports every type of this file.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{cluster::v1alpha1::RolloutStrategy, meta::Condition};

/// How an add-on presents itself to users.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnMeta {
    /// A longer description of what the add-on does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The name shown for the add-on in user interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// A kind of configuration object, by API group and resource (e.g.
/// `addon.open-cluster-management.io`/`addondeploymentconfigs`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigGroupResource {
    /// The API group of the configuration resource; empty (the default) for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub group: Option<String>,
    /// The resource name (plural, lower case) of the configuration kind.
    #[schemars(length(min = 1))]
    pub resource: String,
}

/// One configuration object, by name and (for namespaced kinds) namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReferent {
    /// The name of the configuration object.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The namespace of the configuration object; absent for cluster-scoped kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A configuration object together with the hash of its spec that the hub last computed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSpecHash {
    /// The name of the configuration object.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The namespace of the configuration object; absent for cluster-scoped kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The hash of the object's spec; a change of it rolls the add-on out again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
}

/// A configuration object of some kind that an add-on uses: its group, resource, name and
/// namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnConfig {
    /// The API group of the configuration resource; empty (the default) for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub group: Option<String>,
    /// The name of the configuration object.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The namespace of the configuration object; absent for cluster-scoped kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The resource name (plural, lower case) of the configuration kind.
    #[schemars(length(min = 1))]
    pub resource: String,
}

impl AddOnConfig {
    /// The kind of configuration this refers to.
    #[must_use]
    pub fn group_resource(&self) -> ConfigGroupResource {
        ConfigGroupResource {
            group: self.group.clone(),
            resource: self.resource.clone(),
        }
    }
}

/// The default configuration of one kind, as the hub resolved it for a ClusterManagementAddOn.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultConfigReference {
    /// The configuration object the add-on should use, with its spec hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_config: Option<ConfigSpecHash>,
    /// The API group of the configuration resource; empty (the default) for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub group: Option<String>,
    /// The resource name (plural, lower case) of the configuration kind.
    #[schemars(length(min = 1))]
    pub resource: String,
}

/// The configuration of one kind used by the clusters of one placement, during a rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallConfigReference {
    /// The configuration object the clusters should use, with its spec hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_config: Option<ConfigSpecHash>,
    /// The API group of the configuration resource; empty (the default) for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub group: Option<String>,
    /// The configuration object that every cluster of the placement has applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_config: Option<ConfigSpecHash>,
    /// The last configuration object that rolled out successfully to the placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_known_good_config: Option<ConfigSpecHash>,
    /// The resource name (plural, lower case) of the configuration kind.
    #[schemars(length(min = 1))]
    pub resource: String,
}

/// How the hub installs an add-on on clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallStrategy {
    /// With type `Placements`: the placements whose selected clusters get the add-on, each with
    /// its own configuration and rollout strategy. When several placements select a cluster, the
    /// later one's settings win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend(
        "x-kubernetes-list-type" = "map",
        "x-kubernetes-list-map-keys" = ["namespace", "name"]
    ))]
    pub placements: Option<Vec<PlacementStrategy>>,
    /// Who creates the ManagedClusterAddOns; `Manual` when absent.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Manual"))]
    pub type_: Option<InstallStrategyType>,
}

/// Who creates the ManagedClusterAddOns of an add-on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum InstallStrategyType {
    /// Users create a ManagedClusterAddOn in each cluster namespace themselves.
    #[default]
    Manual,
    /// The add-on manager creates (and removes) a ManagedClusterAddOn for every cluster the
    /// strategy's placements select.
    Placements,
}

/// A placement whose clusters get an add-on, and how.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementStrategy {
    /// Configuration for the clusters of this placement; they replace the add-on's default
    /// configurations of the same kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configs: Option<Vec<AddOnConfig>>,
    /// The name of the Placement.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The namespace of the Placement.
    #[schemars(length(min = 1))]
    pub namespace: String,
    /// How a configuration change rolls out over the placement's clusters; `All` at once when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"type": "All"}))]
    pub rollout_strategy: Option<RolloutStrategy>,
}

/// The rollout progress of an add-on over the clusters of one placement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallProgression {
    /// The state of the rollout (e.g. `Progressing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// The configurations being rolled out to the placement, one per kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_references: Option<Vec<InstallConfigReference>>,
    /// The name of the Placement.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The namespace of the Placement.
    #[schemars(length(min = 1))]
    pub namespace: String,
}

/// How the hub decides whether an add-on is healthy on a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheck {
    /// The way health is checked; `Lease` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Lease"))]
    pub mode: Option<HealthCheckMode>,
}

/// The ways the hub checks the health of an add-on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum HealthCheckMode {
    /// The add-on agent renews a Lease on its cluster, and the registration agent reports it.
    #[default]
    Lease,
    /// The add-on's own manager sets the `Available` condition.
    Customized,
}

/// How an add-on agent authenticates to the hub with its kube client credentials.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum KubeClientDriver {
    /// A client certificate, issued through a CertificateSigningRequest.
    #[default]
    #[serde(rename = "csr")]
    Csr,
    /// A ServiceAccount token.
    #[serde(rename = "token")]
    Token,
}

/// An object related to an add-on, by group, resource, name and namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// The API group of the object.
    pub group: String,
    /// The name of the object.
    pub name: String,
    /// The namespace of the object; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The resource name (plural, lower case) of the object's kind.
    pub resource: String,
}

/// Deprecated: an older way of naming an add-on's configuration, by CRD and object name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnConfiguration {
    /// The name of the configuration object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cr_name: Option<String>,
    /// The name of the CRD of the configuration kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crd_name: Option<String>,
    /// The generation of the configuration object last seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_generation: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural_schema;

    #[test]
    fn install_strategy_schema_has_upstream_defaults() {
        let schema = structural_schema::<InstallStrategy>();
        assert_eq!(schema["properties"]["type"]["default"], "Manual");
        assert_eq!(
            schema["properties"]["type"]["enum"],
            serde_json::json!(["Manual", "Placements"])
        );
        let placement = &schema["properties"]["placements"]["items"];
        assert_eq!(
            placement["properties"]["rolloutStrategy"]["default"],
            serde_json::json!({"type": "All"})
        );
        assert_eq!(
            placement["properties"]["configs"]["items"]["properties"]["group"]["default"],
            ""
        );
    }

    #[test]
    fn kube_client_driver_is_lower_case() {
        let schema = structural_schema::<KubeClientDriver>();
        assert_eq!(schema["enum"], serde_json::json!(["csr", "token"]));
        assert_eq!(
            serde_json::to_value(KubeClientDriver::Token).unwrap(),
            serde_json::json!("token")
        );
    }
}
