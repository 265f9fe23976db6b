//! The [`PlacementDecision`] kind: the clusters a placement chose.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

crate::resource::custom_resource! {
    /// A page of the clusters a [`Placement`](super::Placement) chose, written only by the
    /// placement controller.
    ///
    /// A placement's decisions live in its namespace, are named `<placement>-decision-<n>`, hold
    /// at most 100 clusters each and carry the label
    /// [`labels::PLACEMENT`](crate::names::labels::PLACEMENT)`=<placement>`, along with the index and name of
    /// their decision group. Consumers list them by that label.
    pub struct PlacementDecision {
        group: crate::cluster::GROUP,
        version: "v1beta1",
        plural: "placementdecisions",
        scope: Namespaced,
        short_names: [],
        status: PlacementDecisionStatus,
        printer_columns: [],
        description: "A page of the clusters a Placement chose, written by the placement controller. A \
            placement's decisions live in its namespace, hold at most 100 clusters each and carry the label \
            cluster.open-cluster-management.io/placement=<placement name>.",
    }
}

impl PlacementDecision {
    /// The names of the clusters this decision holds, in order.
    ///
    /// ```
    /// use ocm_api::cluster::v1beta1::PlacementDecision;
    ///
    /// let decision: PlacementDecision = serde_json::from_value(serde_json::json!({
    ///     "metadata": {"name": "web-decision-1", "namespace": "apps"},
    ///     "status": {"decisions": [
    ///         {"clusterName": "east", "reason": ""},
    ///         {"clusterName": "west", "reason": ""}
    ///     ]}
    /// }))?;
    /// assert_eq!(decision.cluster_names().collect::<Vec<_>>(), ["east", "west"]);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn cluster_names(&self) -> impl Iterator<Item = &str> {
        self.status
            .iter()
            .flat_map(|status| &status.decisions)
            .map(|decision| decision.cluster_name.as_str())
    }
}

/// The clusters of one placement decision.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementDecisionStatus {
    /// The chosen clusters, at most 100.
    pub decisions: Vec<ClusterDecision>,
}

/// One chosen cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDecision {
    /// The name of the ManagedCluster.
    pub cluster_name: String,
    /// Why the cluster was chosen; usually empty.
    pub reason: String,
    /// The cluster's total prioritizer score; absent when zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
}
