//! The claims the agent reports in `status.clusterClaims` (ocm-core.md §1.9 step 4).
//!
//! Sources are the managed cluster's ClusterClaims (`cluster.open-cluster-management.io/v1alpha1`,
//! feature gate `ClusterClaim`, on by default) and ClusterProperties (`about.k8s.io/v1alpha1`, gate
//! `ClusterProperty`, off by default); a property wins over a claim of the same name, and objects
//! labelled `open-cluster-management.io/spoke-only` are never reported. Reserved claims (the
//! well-known names, or a name ending with a configured suffix) come first, sorted by name; the
//! others follow, sorted by name and cut to `max_custom_cluster_claims`.

use std::collections::BTreeMap;

use kube::api::{Api, ListParams};
use kube::core::ObjectMeta;
use ocm_api::about::v1alpha1::ClusterProperty;
use ocm_api::cluster::v1::ManagedClusterClaim;
use ocm_api::cluster::v1alpha1::ClusterClaim;
use ocm_api::names::{labels, objects};

use super::{Agent, AgentError};

/// Whether an object is kept off the hub (label `open-cluster-management.io/spoke-only`).
fn spoke_only(metadata: &ObjectMeta) -> bool {
    metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(labels::SPOKE_ONLY))
}

/// The reported claims from `properties` and `claims`: spoke-only ones dropped, a property
/// replacing a claim of the same name, reserved ones (the well-known names or a name ending with
/// one of `reserved_suffixes`) first and sorted, then the others sorted and cut to `max_custom`.
/// Returns the claims and whether custom claims were cut.
pub fn cluster_claims(
    properties: &[ClusterProperty],
    claims: &[ClusterClaim],
    max_custom: usize,
    reserved_suffixes: &[String],
) -> (Vec<ManagedClusterClaim>, bool) {
    let mut by_name: BTreeMap<String, Option<String>> = BTreeMap::new();
    let claim_values = claims
        .iter()
        .filter(|c| !spoke_only(&c.metadata))
        .filter_map(|c| Some((c.metadata.name.clone()?, c.spec.value.clone())));
    let property_values = properties
        .iter()
        .filter(|p| !spoke_only(&p.metadata))
        .filter_map(|p| Some((p.metadata.name.clone()?, Some(p.spec.value.clone()))));
    // Properties last: they win on a name clash.
    by_name.extend(claim_values.chain(property_values));

    let (mut reserved, mut custom): (Vec<_>, Vec<_>) = by_name
        .into_iter()
        .map(|(name, value)| ManagedClusterClaim {
            name: Some(name),
            value,
        })
        .partition(|claim| {
            let name = claim.name.as_deref().unwrap_or_default();
            objects::RESERVED_CLUSTER_CLAIMS.contains(&name)
                || reserved_suffixes
                    .iter()
                    .any(|s| !s.is_empty() && name.ends_with(s.as_str()))
        });
    let truncated = custom.len() > max_custom;
    custom.truncate(max_custom);
    reserved.append(&mut custom);
    (reserved, truncated)
}

/// Lists the objects of one claim source; `None` when its CRD is not installed on the managed
/// cluster (a 404), so the source counts as absent rather than empty.
async fn list_source<K>(api: Api<K>) -> Result<Option<Vec<K>>, AgentError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(Some(list.items)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(AgentError::ReadSpoke(error)),
    }
}

/// The claims to report now, from the sources the options enable; `None` when no enabled source
/// exists on the managed cluster (the status keeps what it has).
pub(crate) async fn collect(agent: &Agent) -> Result<Option<(Vec<ManagedClusterClaim>, bool)>, AgentError> {
    let options = &agent.options;
    let claims = if options.cluster_claims {
        list_source(Api::<ClusterClaim>::all(agent.spoke.clone())).await?
    } else {
        None
    };
    let properties = if options.cluster_properties {
        list_source(Api::<ClusterProperty>::all(agent.spoke.clone())).await?
    } else {
        None
    };
    if claims.is_none() && properties.is_none() {
        return Ok(None);
    }
    Ok(Some(cluster_claims(
        &properties.unwrap_or_default(),
        &claims.unwrap_or_default(),
        options.max_custom_cluster_claims,
        &options.reserved_cluster_claim_suffixes,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(name: &str, spoke_only: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            labels: spoke_only
                .then(|| BTreeMap::from([("open-cluster-management.io/spoke-only".into(), String::new())])),
            ..Default::default()
        }
    }

    fn claim(name: &str, spoke_only: bool) -> ClusterClaim {
        let mut claim: ClusterClaim = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.open-cluster-management.io/v1alpha1", "kind": "ClusterClaim",
            "metadata": {}, "spec": {"value": format!("claim-{name}")}}))
        .unwrap();
        claim.metadata = meta(name, spoke_only);
        claim
    }

    fn property(name: &str, spoke_only: bool) -> ClusterProperty {
        let mut property: ClusterProperty = serde_json::from_value(serde_json::json!({
            "apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
            "metadata": {}, "spec": {"value": format!("property-{name}")}}))
        .unwrap();
        property.metadata = meta(name, spoke_only);
        property
    }

    #[test]
    fn claims_reserved_first_custom_sorted_and_capped() {
        let claims = [
            claim("z.custom", false),
            claim("a.custom", false),
            claim("m.custom", false),
            claim("secret", true),
            claim("platform.open-cluster-management.io", false),
            claim("id.k8s.io", false),
            claim("x.mine.example", false),
        ];
        let (out, truncated) = cluster_claims(&[], &claims, 2, &[".mine.example".into()]);
        let names: Vec<_> = out.iter().map(|c| c.name.clone().unwrap()).collect();
        assert_eq!(
            names,
            [
                "id.k8s.io",
                "platform.open-cluster-management.io",
                "x.mine.example",
                "a.custom",
                "m.custom"
            ]
        );
        assert!(truncated);
        assert!(!cluster_claims(&[], &claims, 20, &[]).1);
    }

    #[test]
    fn properties_win_over_claims_and_spoke_only_properties_are_dropped() {
        let claims = [claim("id.k8s.io", false), claim("shared", false)];
        let properties = [
            property("id.k8s.io", false),
            property("only.property", false),
            property("hidden", true),
        ];
        let (out, truncated) = cluster_claims(&properties, &claims, 20, &[]);
        let pairs: Vec<_> = out
            .iter()
            .map(|c| (c.name.clone().unwrap(), c.value.clone().unwrap()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("id.k8s.io".to_string(), "property-id.k8s.io".to_string()),
                ("only.property".to_string(), "property-only.property".to_string()),
                ("shared".to_string(), "claim-shared".to_string()),
            ]
        );
        assert!(!truncated);
    }
}
