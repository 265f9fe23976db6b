//! `about.k8s.io/v1alpha1`: the [`ClusterProperty`] kind.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

crate::resource::custom_resource! {
    /// A named property of the cluster it lives on, such as its cluster ID (`cluster.clusterset.k8s.io`).
    ///
    /// With the agent feature gate `ClusterProperty`, OCM's registration agent reports properties
    /// in the `status.clusterClaims` of the cluster's ManagedCluster, where a property wins over a
    /// ClusterClaim of the same name. A property labelled `open-cluster-management.io/spoke-only`
    /// is not reported.
    pub struct ClusterProperty {
        group: super::GROUP,
        version: "v1alpha1",
        plural: "clusterproperties",
        scope: Cluster,
        short_names: [],
        spec: ClusterPropertySpec,
        spec_required: false,
        status: ClusterPropertyStatus,
        printer_columns: [
            ("value", "string", ".spec.value"),
            ("age", "date", ".metadata.creationTimestamp"),
        ],
        description: "A named property of the cluster it lives on; its name is the property's name. OCM's \
            registration agent can report properties in the status of the cluster's ManagedCluster.",
    }
}

/// The value of a cluster property.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPropertySpec {
    /// The property's value.
    #[schemars(length(min = 1))]
    pub value: String,
}

/// The observed state of a cluster property; it has no fields yet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterPropertyStatus {}
