//! Placement → clusters: the clusters a Placement's PlacementDecisions name, by decision group,
//! as the rollout planner takes them.
//!
//! A PlacementDecision belongs to the Placement of its `cluster.open-cluster-management.io/placement`
//! label; its group is named by the `decision-group-name` label and numbered by the
//! `decision-group-index` label, which must be a number (upstream refuses the decisions of a
//! Placement otherwise).

use std::sync::Arc;

use kube::ResourceExt;
use ocm_api::cluster::v1beta1::PlacementDecision;
use ocm_api::names::labels::{DECISION_GROUP_INDEX, DECISION_GROUP_NAME, PLACEMENT};
use ocm_api::rollout::{ClusterGroups, GroupKey};

/// A decision whose group index label is no number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("placement decision {namespace}/{decision}: incorrect group index {index:?}")]
pub struct GroupIndexError {
    /// The decision's namespace.
    pub namespace: String,
    /// The decision.
    pub decision: String,
    /// The label's value (empty when missing).
    pub index: String,
}

/// Whether `decision` belongs to the Placement `namespace/placement`.
#[must_use]
pub fn belongs_to(decision: &PlacementDecision, namespace: &str, placement: &str) -> bool {
    decision.namespace().as_deref() == Some(namespace)
        && decision.labels().get(PLACEMENT).map(String::as_str) == Some(placement)
}

/// The clusters the decisions of `namespace/placement` among `decisions` name, by group.
///
/// # Errors
/// [`GroupIndexError`] when one of its decisions has no numeric group index.
pub fn cluster_groups<'a>(
    namespace: &str,
    placement: &str,
    decisions: impl IntoIterator<Item = &'a Arc<PlacementDecision>>,
) -> Result<ClusterGroups, GroupIndexError> {
    let mut groups = ClusterGroups::new();
    for decision in decisions {
        if !belongs_to(decision, namespace, placement) {
            continue;
        }
        let index_label = decision
            .labels()
            .get(DECISION_GROUP_INDEX)
            .cloned()
            .unwrap_or_default();
        let index = index_label.parse::<i32>().map_err(|_| GroupIndexError {
            namespace: namespace.to_owned(),
            decision: decision.name_any(),
            index: index_label.clone(),
        })?;
        let name = decision
            .labels()
            .get(DECISION_GROUP_NAME)
            .cloned()
            .unwrap_or_default();
        let key = GroupKey::new(&name, index);
        let clusters = decision
            .status
            .as_ref()
            .map(|s| {
                s.decisions
                    .iter()
                    .map(|d| d.cluster_name.as_str())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        groups = groups.with_group(key, clusters);
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use ocm_api::cluster::v1beta1::{ClusterDecision, PlacementDecisionStatus};

    use super::*;

    fn decision(
        name: &str,
        placement: &str,
        index: Option<&str>,
        group: Option<&str>,
        clusters: &[&str],
    ) -> Arc<PlacementDecision> {
        let mut d = PlacementDecision {
            metadata: Default::default(),
            status: None,
        };
        d.metadata.name = Some(name.into());
        d.metadata.namespace = Some("ns".into());
        d.labels_mut().insert(PLACEMENT.into(), placement.into());
        if let Some(index) = index {
            d.labels_mut().insert(DECISION_GROUP_INDEX.into(), index.into());
        }
        if let Some(group) = group {
            d.labels_mut().insert(DECISION_GROUP_NAME.into(), group.into());
        }
        d.status = Some(PlacementDecisionStatus {
            decisions: clusters
                .iter()
                .map(|c| ClusterDecision {
                    cluster_name: (*c).into(),
                    reason: String::new(),
                    score: None,
                })
                .collect(),
        });
        Arc::new(d)
    }

    #[test]
    fn groups_come_from_the_labels_of_the_placements_decisions() {
        let decisions = [
            decision("p-decision-1", "p", Some("0"), Some("canary"), &["c1", "c2"]),
            decision("p-decision-2", "p", Some("1"), None, &["c3"]),
            decision("p-decision-3", "p", Some("1"), None, &["c4"]),
            decision("q-decision-1", "q", Some("0"), None, &["c9"]),
        ];
        let groups = cluster_groups("ns", "p", &decisions).unwrap_or_default();
        let listed: Vec<_> = groups
            .groups()
            .map(|(k, c)| (k.clone(), c.iter().cloned().collect::<Vec<_>>()))
            .collect();
        assert_eq!(
            listed,
            vec![
                (
                    GroupKey::new("canary", 0),
                    vec!["c1".to_string(), "c2".to_string()]
                ),
                (GroupKey::new("", 1), vec!["c3".to_string(), "c4".to_string()]),
            ]
        );
        assert!(
            cluster_groups("other", "p", &decisions)
                .unwrap_or_default()
                .clusters()
                .is_empty()
        );
    }

    #[test]
    fn a_decision_without_a_numeric_index_is_refused() {
        let decisions = [decision("p-decision-1", "p", None, None, &["c1"])];
        assert_eq!(
            cluster_groups("ns", "p", &decisions),
            Err(GroupIndexError {
                namespace: "ns".into(),
                decision: "p-decision-1".into(),
                index: String::new()
            })
        );
    }
}
