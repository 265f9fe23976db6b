//! Decision groups and the PlacementDecision pages that hold them.
//!
//! The group length is `clustersPerDecisionGroup`: a count, or a percentage of the chosen clusters
//! rounded up (`100%` by default); a length ≤ 0 or beyond the chosen clusters means all of them.
//! Each named group in `decisionGroups` takes, in order, the chosen clusters its selector (labels
//! and claims, no CEL) matches that no earlier group took, sorted by name and cut into chunks of
//! the group length, each chunk a group of that name. The remaining clusters, sorted by name, are
//! chunked into groups with an empty name. With no cluster at all there is one empty group.
//!
//! Each group is split into PlacementDecisions of at most 100 clusters (one empty decision for an
//! empty group), named `<placement>-decision-<k>` with `k` counting from 1 across all groups.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::{
    ClusterDecision, DecisionGroupStatus, Placement, PlacementDecision, PlacementDecisionStatus,
};
use ocm_api::names::labels::{DECISION_GROUP_INDEX, DECISION_GROUP_NAME, PLACEMENT};
use ocm_api::names::objects::MAX_DECISIONS_PER_PLACEMENT_DECISION;

use super::predicate::CompiledSelector;
use super::{Code, Status};

/// One PlacementDecision: its name and clusters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionPage {
    /// `<placement>-decision-<k>`.
    pub name: String,
    /// At most 100 cluster names, sorted.
    pub clusters: Vec<String>,
}

/// A decision group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The group's position, from 0.
    pub index: usize,
    /// The group's name; empty for groups of clusters no named group took.
    pub name: String,
    /// The group's clusters, sorted by name.
    pub clusters: Vec<String>,
    /// The PlacementDecisions holding the clusters.
    pub pages: Vec<DecisionPage>,
}

impl Group {
    /// The group's entry in the placement's status.
    #[must_use]
    pub fn status(&self) -> DecisionGroupStatus {
        DecisionGroupStatus {
            cluster_count: Some(i32::try_from(self.clusters.len()).unwrap_or(i32::MAX)),
            decision_group_index: Some(i32::try_from(self.index).unwrap_or(i32::MAX)),
            decision_group_name: Some(self.name.clone()),
            decisions: Some(self.pages.iter().map(|p| p.name.clone()).collect()),
        }
    }
}

/// The group length for `total` chosen clusters.
///
/// # Errors
/// A Misconfigured status for a string that is not a percentage.
pub fn group_length(value: Option<&IntOrString>, total: usize) -> Result<usize, Status> {
    let length: i64 = match value {
        None => 0,
        Some(IntOrString::Int(n)) => i64::from(*n),
        Some(IntOrString::String(s)) => {
            let not_percentage = || {
                Status::new(
                    "",
                    Code::Misconfigured,
                    format!("{s} invalid type: string is not a percentage"),
                )
            };
            let number = s.strip_suffix('%').ok_or_else(not_percentage)?;
            let percent: f64 = number.trim().parse().map_err(|_| not_percentage())?;
            #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
            let length = (percent / 100.0 * total as f64).ceil() as i64;
            length
        }
    };
    let total_i = i64::try_from(total).unwrap_or(i64::MAX);
    if length <= 0 || length > total_i {
        return Ok(total);
    }
    Ok(usize::try_from(length).unwrap_or(total))
}

/// Splits sorted `clusters` into chunks of `length` named `name`.
fn chunk(name: &str, mut clusters: Vec<String>, length: usize, into: &mut Vec<(String, Vec<String>)>) {
    clusters.sort();
    let length = length.max(1);
    for part in clusters.chunks(length) {
        into.push((name.to_string(), part.to_vec()));
    }
}

/// The decision groups (name and clusters) of the chosen `clusters`, and the status of grouping.
///
/// On an invalid group selector the groups built so far are returned with a Misconfigured status,
/// as upstream; on an invalid group length, none.
#[must_use]
pub fn decision_groups(
    placement: &Placement,
    clusters: &[Arc<ManagedCluster>],
) -> (Vec<(String, Vec<String>)>, Status) {
    let strategy = placement
        .spec
        .decision_strategy
        .as_ref()
        .and_then(|d| d.group_strategy.clone())
        .unwrap_or_default();
    let mut groups = Vec::new();
    let length = match group_length(strategy.clusters_per_decision_group.as_ref(), clusters.len()) {
        Ok(length) => length,
        Err(status) => return (groups, status),
    };
    let mut remaining: BTreeSet<String> = clusters.iter().map(|c| c.name_any()).collect();
    for group in strategy.decision_groups.iter().flatten() {
        let selector = &group.group_cluster_selector;
        let selector = match CompiledSelector::new(
            selector.label_selector.as_ref(),
            selector.claim_selector.as_ref(),
            None,
        ) {
            Ok(s) => s,
            Err(message) => return (groups, Status::new("", Code::Misconfigured, message)),
        };
        let mut matched = Vec::new();
        for cluster in clusters {
            let name = cluster.name_any();
            if remaining.contains(&name) && selector.matches(cluster, None) {
                remaining.remove(&name);
                matched.push(name);
            }
        }
        chunk(&group.group_name, matched, length, &mut groups);
    }
    chunk("", remaining.into_iter().collect(), length, &mut groups);
    if groups.is_empty() {
        groups.push((String::new(), Vec::new()));
    }
    (groups, Status::default())
}

/// Numbers the groups and splits them into PlacementDecision pages of `placement`.
#[must_use]
pub fn paginate(placement: &str, groups: Vec<(String, Vec<String>)>) -> Vec<Group> {
    let mut next = 1;
    groups
        .into_iter()
        .enumerate()
        .map(|(index, (name, clusters))| {
            let mut pages: Vec<DecisionPage> = clusters
                .chunks(MAX_DECISIONS_PER_PLACEMENT_DECISION)
                .map(|part| DecisionPage {
                    name: String::new(),
                    clusters: part.to_vec(),
                })
                .collect();
            if pages.is_empty() {
                pages.push(DecisionPage {
                    name: String::new(),
                    clusters: Vec::new(),
                });
            }
            for page in &mut pages {
                page.name = format!("{placement}-decision-{next}");
                next += 1;
            }
            Group {
                index,
                name,
                clusters,
                pages,
            }
        })
        .collect()
}

/// The labels of a PlacementDecision of `placement` in `group`.
#[must_use]
pub fn decision_labels(placement: &str, group: &Group) -> BTreeMap<String, String> {
    BTreeMap::from([
        (PLACEMENT.to_string(), placement.to_string()),
        (DECISION_GROUP_NAME.to_string(), group.name.clone()),
        (DECISION_GROUP_INDEX.to_string(), group.index.to_string()),
    ])
}

/// The controller owner reference of a placement's decisions.
#[must_use]
pub fn owner_reference(placement: &Placement) -> OwnerReference {
    OwnerReference {
        api_version: "cluster.open-cluster-management.io/v1beta1".to_string(),
        kind: "Placement".to_string(),
        name: placement.name_any(),
        uid: placement.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The PlacementDecision object of `page` in `group`.
#[must_use]
pub fn decision_object(placement: &Placement, group: &Group, page: &DecisionPage) -> PlacementDecision {
    PlacementDecision {
        metadata: ObjectMeta {
            name: Some(page.name.clone()),
            namespace: placement.namespace(),
            labels: Some(decision_labels(&placement.name_any(), group)),
            owner_references: Some(vec![owner_reference(placement)]),
            ..ObjectMeta::default()
        },
        status: Some(PlacementDecisionStatus {
            decisions: page
                .clusters
                .iter()
                .map(|c| ClusterDecision {
                    cluster_name: c.clone(),
                    reason: String::new(),
                    score: None,
                })
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::schedule::testing::*;
    use ocm_api::cluster::v1beta1::{DecisionGroup, DecisionStrategy, GroupClusterSelector, GroupStrategy};
    use ocm_api::meta::LabelSelector;

    fn with_groups(per_group: Option<IntOrString>, groups: &[(&str, &str, &str)]) -> Placement {
        let mut p = placement("ns", "p");
        p.spec.decision_strategy = Some(DecisionStrategy {
            group_strategy: Some(GroupStrategy {
                clusters_per_decision_group: per_group,
                decision_groups: Some(
                    groups
                        .iter()
                        .map(|(name, k, v)| DecisionGroup {
                            group_cluster_selector: GroupClusterSelector {
                                claim_selector: None,
                                label_selector: Some(LabelSelector {
                                    match_labels: Some([((*k).to_string(), (*v).to_string())].into()),
                                    match_expressions: None,
                                }),
                            },
                            group_name: (*name).into(),
                        })
                        .collect(),
                ),
            }),
        });
        p
    }

    fn shape(groups: &[(String, Vec<String>)]) -> Vec<(String, usize)> {
        groups.iter().map(|(n, c)| (n.clone(), c.len())).collect()
    }

    #[test]
    fn group_length_from_count_or_percentage() {
        assert_eq!(group_length(None, 7).unwrap(), 7);
        assert_eq!(group_length(Some(&IntOrString::Int(2)), 7).unwrap(), 2);
        assert_eq!(group_length(Some(&IntOrString::Int(0)), 7).unwrap(), 7);
        assert_eq!(group_length(Some(&IntOrString::Int(10)), 7).unwrap(), 7);
        assert_eq!(
            group_length(Some(&IntOrString::String("25%".into())), 7).unwrap(),
            2
        );
        // 7% of 100 is 7.000000000000001 in floating point: 8, as upstream.
        assert_eq!(
            group_length(Some(&IntOrString::String("7%".into())), 100).unwrap(),
            8
        );
        assert_eq!(
            group_length(Some(&IntOrString::String("100%".into())), 0).unwrap(),
            0
        );
        let err = group_length(Some(&IntOrString::String("3".into())), 7).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (Code::Misconfigured, "3 invalid type: string is not a percentage")
        );
    }

    #[test]
    fn named_groups_first_then_the_rest_in_chunks() {
        let clusters: Vec<_> = [
            cluster("c5").label("vendor", "OpenShift"),
            cluster("c1"),
            cluster("c3").label("vendor", "OpenShift"),
            cluster("c2"),
            cluster("c4"),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let p = with_groups(Some(IntOrString::Int(2)), &[("canary", "vendor", "OpenShift")]);
        let (groups, status) = decision_groups(&p, &clusters);
        assert_eq!(status.code, Code::Success);
        assert_eq!(
            shape(&groups),
            [("canary".into(), 2), (String::new(), 2), (String::new(), 1)]
        );
        assert_eq!(groups[0].1, ["c3", "c5"]);
        assert_eq!(groups[1].1, ["c1", "c2"]);
        let pages = paginate("p", groups);
        let names: Vec<_> = pages
            .iter()
            .flat_map(|g| g.pages.iter().map(|p| p.name.as_str()))
            .collect();
        assert_eq!(names, ["p-decision-1", "p-decision-2", "p-decision-3"]);
        assert_eq!(pages[2].status().decision_group_index, Some(2));
    }

    #[test]
    fn a_cluster_belongs_to_the_first_named_group_matching_it() {
        let clusters: Vec<_> = [
            cluster("c1").label("a", "1").label("b", "1"),
            cluster("c2").label("b", "1"),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let p = with_groups(None, &[("first", "a", "1"), ("second", "b", "1")]);
        let (groups, _) = decision_groups(&p, &clusters);
        assert_eq!(
            groups,
            [
                ("first".into(), vec!["c1".to_string()]),
                ("second".into(), vec!["c2".to_string()])
            ]
        );
    }

    #[test]
    fn no_cluster_gives_one_empty_group_and_decision() {
        let (groups, _) = decision_groups(&placement("ns", "p"), &[]);
        let groups = paginate("p", groups);
        assert_eq!(groups.len(), 1);
        assert_eq!(
            groups[0].pages,
            [DecisionPage {
                name: "p-decision-1".into(),
                clusters: vec![]
            }]
        );
        assert_eq!(groups[0].status().cluster_count, Some(0));
    }

    #[test]
    fn pages_hold_at_most_100_clusters() {
        let clusters: Vec<String> = (0..250).map(|i| format!("c{i:03}")).collect();
        let groups = paginate(
            "p",
            vec![
                (String::from("g"), clusters.clone()),
                (String::new(), vec!["z".into()]),
            ],
        );
        let sizes: Vec<_> = groups[0]
            .pages
            .iter()
            .map(|p| (p.name.as_str(), p.clusters.len()))
            .collect();
        assert_eq!(
            sizes,
            [("p-decision-1", 100), ("p-decision-2", 100), ("p-decision-3", 50)]
        );
        assert_eq!(groups[1].pages[0].name, "p-decision-4");
    }

    #[test]
    fn decision_objects_are_labelled_and_owned() {
        let p = placement("ns", "web");
        let groups = paginate("web", vec![("canary".into(), vec!["c1".into()])]);
        let d = decision_object(&p, &groups[0], &groups[0].pages[0]);
        assert_eq!(d.name_any(), "web-decision-1");
        assert_eq!(d.labels()[PLACEMENT], "web");
        assert_eq!(d.labels()[DECISION_GROUP_NAME], "canary");
        assert_eq!(d.labels()[DECISION_GROUP_INDEX], "0");
        let owner = &d.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller, owner.uid.as_str()),
            ("Placement", Some(true), "uid-web")
        );
        assert_eq!(d.cluster_names().collect::<Vec<_>>(), ["c1"]);
    }

    #[test]
    fn an_invalid_group_selector_keeps_the_groups_built_so_far() {
        let clusters: Vec<_> = [cluster("c1").label("a", "1")]
            .into_iter()
            .map(Arc::new)
            .collect();
        let p = with_groups(None, &[("ok", "a", "1"), ("bad", "-bad-", "1")]);
        let (groups, status) = decision_groups(&p, &clusters);
        assert_eq!(status.code, Code::Misconfigured);
        assert_eq!(groups.len(), 1);
    }
}
