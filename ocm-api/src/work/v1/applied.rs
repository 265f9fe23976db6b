//! The [`AppliedManifestWork`] kind: the managed cluster's record of what a ManifestWork applied.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

crate::resource::custom_resource! {
    /// The managed cluster's record of one ManifestWork, written by the work agent.
    ///
    /// It is cluster-scoped and named `<hubHash>-<ManifestWork name>`. It owns the objects the
    /// agent applied (so they go away with it), and its status lists them with their UIDs so the
    /// agent can delete objects that were removed from the ManifestWork. When the ManifestWork
    /// disappears from the hub, the agent evicts the record after a grace period.
    pub struct AppliedManifestWork {
        group: super::super::GROUP,
        version: "v1",
        plural: "appliedmanifestworks",
        scope: Cluster,
        short_names: [],
        spec: AppliedManifestWorkSpec,
        spec_required: false,
        status: AppliedManifestWorkStatus,
        printer_columns: [],
        description: "The managed cluster's record of one ManifestWork, written by the work agent: it owns the \
            objects applied for the ManifestWork and lists them in status.",
    }
}

/// Which ManifestWork, of which hub, an AppliedManifestWork records.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedManifestWorkSpec {
    /// The ID of the work agent that handles this record.
    #[serde(rename = "agentID", default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// A hash of the hub API server's address, telling which hub the ManifestWork is on.
    pub hub_hash: String,
    /// The name of the ManifestWork on the hub.
    pub manifest_work_name: String,
}

/// What the work agent applied for a ManifestWork.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedManifestWorkStatus {
    /// Every object applied for the ManifestWork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_resources: Option<Vec<AppliedManifestResourceMeta>>,
    /// When the agent found the ManifestWork gone from the hub; the record is evicted once the
    /// grace period configured on the Klusterlet has passed since then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_start_time: Option<Time>,
}

/// One object applied for a ManifestWork.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedManifestResourceMeta {
    /// The API group of the object; empty for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The name of the object.
    pub name: String,
    /// The namespace of the object; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The resource (plural, lower case) of the object.
    pub resource: String,
    /// The UID of the object, which tells it apart from a later object of the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The API version the object was applied at.
    pub version: String,
}
