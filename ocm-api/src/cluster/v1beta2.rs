//! `cluster.open-cluster-management.io/v1beta2`: cluster sets — [`ManagedClusterSet`] groups
//! managed clusters, and [`ManagedClusterSetBinding`] makes a set usable from one namespace.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::meta::{Condition, LabelSelector};
use crate::names::labels::CLUSTER_SET as CLUSTER_SET_LABEL;

crate::resource::custom_resource! {
    /// A named group of managed clusters.
    ///
    /// By default a set's members are the clusters labelled
    /// [`labels::CLUSTER_SET`](crate::names::labels::CLUSTER_SET)`=<set name>`;
    /// a set of selector type `LabelSelector` takes every cluster its label selector matches
    /// instead. A set is usable from a namespace once a [`ManagedClusterSetBinding`] binds it there.
    pub struct ManagedClusterSet {
        group: super::GROUP,
        version: "v1beta2",
        plural: "managedclustersets",
        scope: Cluster,
        short_names: ["mclset", "mclsets"],
        spec: ManagedClusterSetSpec,
        spec_required: false,
        status: ManagedClusterSetStatus,
        printer_columns: [
            ("Empty", "string", ".status.conditions[?(@.type==\"ClusterSetEmpty\")].status"),
            ("Age", "date", ".metadata.creationTimestamp"),
        ],
        description: "A named group of managed clusters. By default its members are the clusters labelled \
            cluster.open-cluster-management.io/clusterset=<set name>; a set with selector type LabelSelector \
            takes every cluster its label selector matches instead. A ManagedClusterSetBinding makes the set \
            usable from a namespace.",
    }
}

impl ManagedClusterSet {
    /// The label selector that picks this set's member clusters, or `None` when the set selects no
    /// cluster at all.
    ///
    /// For an `ExclusiveClusterSetLabel` set (the default when the selector type is absent) the
    /// members are the clusters labelled [`labels::CLUSTER_SET`](crate::names::labels::CLUSTER_SET)
    /// with the set's name; for a
    /// `LabelSelector` set they are the clusters its label selector matches, and a
    /// `LabelSelector` set without a label selector selects none.
    ///
    /// ```
    /// use ocm_api::{cluster::v1beta2::ManagedClusterSet, names::labels};
    ///
    /// let set = ManagedClusterSet::new("dev", Default::default());
    /// let selector = set.member_selector().unwrap();
    /// let match_labels = selector.match_labels.unwrap();
    /// assert_eq!(match_labels[labels::CLUSTER_SET], "dev");
    /// ```
    #[must_use]
    pub fn member_selector(&self) -> Option<LabelSelector> {
        let selector = self.spec.cluster_selector.as_ref();
        match selector.and_then(|s| s.selector_type).unwrap_or_default() {
            SelectorType::ExclusiveClusterSetLabel => {
                let name = self.metadata.name.clone().unwrap_or_default();
                Some(LabelSelector {
                    match_expressions: None,
                    match_labels: Some(BTreeMap::from([(CLUSTER_SET_LABEL.to_owned(), name)])),
                })
            }
            SelectorType::LabelSelector => selector.and_then(|s| s.label_selector.clone()),
        }
    }
}

/// Which clusters a cluster set holds and which namespaces it manages on them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}))]
pub struct ManagedClusterSetSpec {
    /// How the set chooses its member clusters; by the cluster-set label when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"selectorType": "ExclusiveClusterSetLabel"}))]
    pub cluster_selector: Option<ManagedClusterSelector>,
    /// Namespaces that the agent of every member cluster creates and keeps on its cluster. Each
    /// cluster reports their state in its `status.managedNamespaces`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub managed_namespaces: Option<Vec<ManagedNamespaceConfig>>,
}

/// How a cluster set chooses its member clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSelector {
    /// The clusters a `LabelSelector` set holds; an empty selector matches every cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// How members are chosen; `ExclusiveClusterSetLabel` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = "ExclusiveClusterSetLabel"))]
    pub selector_type: Option<SelectorType>,
}

/// How a cluster set chooses its member clusters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum SelectorType {
    /// The clusters labelled `cluster.open-cluster-management.io/clusterset=<set name>`; a cluster
    /// is in at most one set of this type.
    #[default]
    ExclusiveClusterSetLabel,
    /// The clusters the set's label selector matches; sets of this type may overlap.
    LabelSelector,
}

/// A namespace that a cluster set keeps on each of its member clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedNamespaceConfig {
    /// The namespace's name, a DNS label.
    #[schemars(length(max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub name: String,
}

/// The observed state of a cluster set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSetStatus {
    /// The conditions of the set, such as `ClusterSetEmpty`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

crate::resource::custom_resource! {
    /// Makes a [`ManagedClusterSet`] usable from the namespace of the binding.
    ///
    /// Placements (and the ClusterProfiles OCM maintains) only see the clusters of sets bound to
    /// their own namespace. The binding must be named after the set it binds, and creating it needs
    /// permission to `create` the `managedclustersets/bind` subresource of that set.
    pub struct ManagedClusterSetBinding {
        group: super::GROUP,
        version: "v1beta2",
        plural: "managedclustersetbindings",
        scope: Namespaced,
        short_names: ["mclsetbinding", "mclsetbindings"],
        spec: ManagedClusterSetBindingSpec,
        spec_required: false,
        status: ManagedClusterSetBindingStatus,
        printer_columns: [],
        description: "Makes a ManagedClusterSet usable from the namespace of the binding: placements only see \
            the clusters of sets bound to their own namespace. The binding is named after the set it binds.",
    }
}

/// The cluster set a binding binds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSetBindingSpec {
    /// Which ManagedClusterSet this binding makes usable in its namespace; must be the same as the
    /// binding's own name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub cluster_set: Option<String>,
}

/// The observed state of a cluster set binding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSetBindingStatus {
    /// The conditions of the binding, such as `Bound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(json: serde_json::Value) -> ManagedClusterSet {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn exclusive_set_selects_by_its_label() {
        let explicit = set(serde_json::json!({
            "metadata": {"name": "prod"},
            "spec": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}
        }));
        let implicit = set(serde_json::json!({"metadata": {"name": "prod"}}));
        for s in [explicit, implicit] {
            let selector = s.member_selector().unwrap();
            assert_eq!(
                serde_json::to_value(selector).unwrap(),
                serde_json::json!({"matchLabels": {CLUSTER_SET_LABEL: "prod"}})
            );
        }
    }

    #[test]
    fn label_selector_set_uses_its_selector_or_selects_nothing() {
        let global = set(serde_json::json!({
            "metadata": {"name": "global"},
            "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}}
        }));
        assert_eq!(global.member_selector(), Some(LabelSelector::default()));
        let without = set(serde_json::json!({
            "metadata": {"name": "broken"},
            "spec": {"clusterSelector": {"selectorType": "LabelSelector"}}
        }));
        assert_eq!(without.member_selector(), None);
    }
}
