//! The Predicate filter: a cluster passes when any of the placement's predicates matches it (every
//! cluster passes when there is none). A predicate's label selector, claim selector and CEL
//! expressions must all match.
//!
//! As upstream, nothing is checked when there is no predicate or no candidate: an invalid selector
//! only makes the placement Misconfigured once there is a cluster to select.

use std::sync::Arc;

use kube::ResourceExt;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::{ClusterClaimSelector, ClusterSelector, Placement};
use ocm_api::meta::LabelSelector;
use ocm_api::selector::{self, Selector};

use super::cel::{CelEnv, CelSelector, json_to_value};
use super::{Code, ScoreSource, Status};

/// The name of the filter, as upstream reports it.
pub const NAME: &str = "Predicate";

/// A compiled cluster selector: labels, claims and CEL expressions, all of which must match.
#[derive(Debug)]
pub struct CompiledSelector {
    labels: Selector,
    claims: Selector,
    cel: Option<CelSelector>,
}

impl CompiledSelector {
    /// Compiles the label and claim selectors (and the CEL expressions when `with_cel`).
    ///
    /// # Errors
    /// The message of the first invalid selector or expression.
    pub fn new(
        labels: Option<&LabelSelector>,
        claims: Option<&ClusterClaimSelector>,
        cel: Option<&[String]>,
    ) -> Result<Self, String> {
        let labels = match labels {
            Some(s) => Selector::from_label_selector(s).map_err(|e| e.to_string())?,
            None => Selector::everything(),
        };
        let claims = match claims {
            Some(s) => selector::claim_selector(s).map_err(|e| e.to_string())?,
            None => Selector::everything(),
        };
        let cel = match cel {
            Some(expressions) if !expressions.is_empty() => Some(CelSelector::compile(expressions)?),
            _ => None,
        };
        Ok(Self { labels, claims, cel })
    }

    /// Compiles a predicate's `requiredClusterSelector`.
    ///
    /// # Errors
    /// The message of the first invalid selector or expression.
    pub fn from_cluster_selector(selector: Option<&ClusterSelector>) -> Result<Self, String> {
        let selector = selector.cloned().unwrap_or_default();
        Self::new(
            selector.label_selector.as_ref(),
            selector.claim_selector.as_ref(),
            selector
                .cel_selector
                .as_ref()
                .and_then(|c| c.cel_expressions.as_deref()),
        )
    }

    /// Whether the selector has CEL expressions.
    #[must_use]
    pub fn has_cel(&self) -> bool {
        self.cel.is_some()
    }

    /// Whether `cluster` matches; `cel` is the CEL environment with the cluster's JSON form, needed
    /// only when [`Self::has_cel`].
    #[must_use]
    pub fn matches(&self, cluster: &ManagedCluster, cel: Option<(&CelEnv, &kube_cel::cel::Value)>) -> bool {
        if !self.labels.matches(cluster.labels()) {
            return false;
        }
        if !self.claims.is_empty() {
            let claims = cluster
                .status
                .as_ref()
                .and_then(|s| s.cluster_claims.as_deref())
                .unwrap_or_default();
            if !self.claims.matches(&selector::claims_as_labels(claims)) {
                return false;
            }
        }
        match (&self.cel, cel) {
            (Some(expressions), Some((env, value))) => expressions.matches(env, value),
            (Some(_), None) => false,
            (None, _) => true,
        }
    }
}

/// The clusters of `clusters` that match a predicate of `placement`.
///
/// # Errors
/// A Misconfigured status when a selector or CEL expression is invalid.
pub fn filter(
    placement: &Placement,
    clusters: &[Arc<ManagedCluster>],
    scores: &Arc<dyn ScoreSource>,
) -> Result<Vec<Arc<ManagedCluster>>, Status> {
    let predicates = placement.spec.predicates.as_deref().unwrap_or_default();
    if predicates.is_empty() || clusters.is_empty() {
        return Ok(clusters.to_vec());
    }
    let selectors = predicates
        .iter()
        .map(|p| CompiledSelector::from_cluster_selector(p.required_cluster_selector.as_ref()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|message| Status::new(NAME, Code::Misconfigured, message))?;
    let env = selectors
        .iter()
        .any(CompiledSelector::has_cel)
        .then(|| CelEnv::new(scores.clone()));
    Ok(clusters
        .iter()
        .filter(|cluster| {
            // The cluster's CEL form is built once, and only if a selector gets that far.
            let mut value = None;
            selectors.iter().any(|s| {
                let cel = match &env {
                    Some(env) if s.has_cel() => {
                        let v = value.get_or_insert_with(|| {
                            json_to_value(&serde_json::to_value(cluster.as_ref()).unwrap_or_default())
                        });
                        Some((env, &*v))
                    }
                    _ => None,
                };
                s.matches(cluster, cel)
            })
        })
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::schedule::testing::*;
    use ocm_api::cluster::v1beta1::{ClusterCelSelector, ClusterPredicate};
    use ocm_api::meta::LabelSelectorRequirement;

    fn with_predicates(predicates: Vec<ClusterSelector>) -> Placement {
        let mut p = placement("ns", "p");
        p.spec.predicates = Some(
            predicates
                .into_iter()
                .map(|s| ClusterPredicate {
                    required_cluster_selector: Some(s),
                })
                .collect(),
        );
        p
    }

    fn labels(pairs: &[(&str, &str)]) -> Option<LabelSelector> {
        Some(LabelSelector {
            match_labels: Some(pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()),
            match_expressions: None,
        })
    }

    fn claims(key: &str, op: &str, values: &[&str]) -> Option<ClusterClaimSelector> {
        Some(ClusterClaimSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.into(),
                operator: op.into(),
                values: Some(values.iter().map(|v| (*v).into()).collect()),
            }]),
        })
    }

    fn run(p: &Placement, world: &World) -> Result<Vec<String>, Status> {
        filter(p, &world.clusters, &world.score_source).map(|c| names(&c))
    }

    fn world() -> World {
        World::new()
            .cluster(cluster("c1").label("cloud", "aws").claim("region", "us-east"))
            .cluster(cluster("c2").label("cloud", "gcp").claim("region", "eu-west"))
            .cluster(cluster("c3").label("cloud", "aws").claim("region", "eu-west"))
    }

    #[test]
    fn no_predicate_passes_everything() {
        assert_eq!(run(&placement("ns", "p"), &world()).unwrap(), ["c1", "c2", "c3"]);
    }

    #[test]
    fn label_selector() {
        let p = with_predicates(vec![ClusterSelector {
            label_selector: labels(&[("cloud", "aws")]),
            ..Default::default()
        }]);
        assert_eq!(run(&p, &world()).unwrap(), ["c1", "c3"]);
    }

    #[test]
    fn claim_selector() {
        let p = with_predicates(vec![ClusterSelector {
            claim_selector: claims("region", "In", &["eu-west"]),
            ..Default::default()
        }]);
        assert_eq!(run(&p, &world()).unwrap(), ["c2", "c3"]);
    }

    #[test]
    fn selectors_of_one_predicate_are_anded_predicates_are_ored() {
        let p = with_predicates(vec![ClusterSelector {
            label_selector: labels(&[("cloud", "aws")]),
            claim_selector: claims("region", "In", &["eu-west"]),
            ..Default::default()
        }]);
        assert_eq!(run(&p, &world()).unwrap(), ["c3"]);
        let p = with_predicates(vec![
            ClusterSelector {
                label_selector: labels(&[("cloud", "gcp")]),
                ..Default::default()
            },
            ClusterSelector {
                claim_selector: claims("region", "In", &["us-east"]),
                ..Default::default()
            },
        ]);
        assert_eq!(run(&p, &world()).unwrap(), ["c1", "c2"]);
    }

    #[test]
    fn cel_selector() {
        let p = with_predicates(vec![ClusterSelector {
            cel_selector: Some(ClusterCelSelector {
                cel_expressions: Some(vec!["managedCluster.metadata.labels['cloud'] == 'gcp'".into()]),
            }),
            ..Default::default()
        }]);
        assert_eq!(run(&p, &world()).unwrap(), ["c2"]);
    }

    #[test]
    fn invalid_selectors_are_misconfigured_once_there_are_clusters() {
        let p = with_predicates(vec![ClusterSelector {
            claim_selector: claims("region", "Exists", &["x"]),
            ..Default::default()
        }]);
        let status = run(&p, &world()).unwrap_err();
        assert_eq!((status.code, status.plugin.as_str()), (Code::Misconfigured, NAME));
        let p = with_predicates(vec![ClusterSelector {
            cel_selector: Some(ClusterCelSelector {
                cel_expressions: Some(vec!["managedCluster.metadata.name ==".into()]),
            }),
            ..Default::default()
        }]);
        let status = run(&p, &world()).unwrap_err();
        assert!(
            status.message.starts_with("compilation failed"),
            "{}",
            status.message
        );
        // Nothing to select: nothing checked, as upstream.
        assert_eq!(run(&p, &World::new()).unwrap(), Vec::<String>::new());
    }
}
