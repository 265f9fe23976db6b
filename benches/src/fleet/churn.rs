//! Churn as the hub sees it: how many of a set of clusters are Available, how long until a
//! paused or removed set is not and a resumed set is again, and how many certificates the
//! clusters had signed (one CSR per bootstrap or rotation).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::labels;
use serde::Serialize;
use tokio::time::Instant;

use super::SimRunError;
use crate::join::progress::reached;

/// How often the hub is asked while waiting.
const POLL: Duration = Duration::from_millis(500);

/// What one churn step took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ChurnStep {
    /// Clusters in the step.
    pub clusters: usize,
    /// Until the hub marked all of them not Available, seconds.
    pub unavailable_after_s: f64,
    /// Until all were Available again after they came back (paused clusters only), seconds.
    pub available_again_after_s: Option<f64>,
}

/// Sets `spec.leaseDurationSeconds` of the clusters `names`.
pub async fn set_lease_duration(
    hub: &kube::Client,
    names: &[String],
    seconds: u32,
) -> Result<(), SimRunError> {
    let api: Api<ManagedCluster> = Api::all(hub.clone());
    let patch = serde_json::json!({"spec": {"leaseDurationSeconds": seconds}});
    futures::stream::iter(names)
        .map(|name| {
            let (api, patch) = (&api, &patch);
            async move {
                api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map(|_| ())
                    .map_err(|source| SimRunError::Hub {
                        what: format!("setting the lease duration of {name}"),
                        source,
                    })
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// How many of `names` the hub shows Joined and Available.
pub async fn count_available(hub: &kube::Client, names: &HashSet<String>) -> Result<usize, SimRunError> {
    let clusters = Api::<ManagedCluster>::all(hub.clone())
        .list(&ListParams::default())
        .await
        .map_err(|source| SimRunError::Hub {
            what: "listing ManagedClusters".into(),
            source,
        })?;
    Ok(clusters
        .items
        .iter()
        .filter(|c| names.contains(&c.name_any()) && reached(c).2)
        .count())
}

/// Waits until `wanted(available count)` holds for `names`; returns how long it took.
pub async fn wait_for(
    hub: &kube::Client,
    names: &HashSet<String>,
    what: &'static str,
    timeout: Duration,
    wanted: impl Fn(usize) -> bool,
) -> Result<Duration, SimRunError> {
    let start = Instant::now();
    loop {
        let available = count_available(hub, names).await?;
        if wanted(available) {
            return Ok(start.elapsed());
        }
        if start.elapsed() >= timeout {
            return Err(SimRunError::ChurnTimeout {
                what,
                done: available,
                expected: names.len(),
                timeout,
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The CSRs of each of `names` (by the cluster-name label), fewest first: (cluster, count).
pub async fn csrs_per_cluster(hub: &kube::Client, names: &HashSet<String>) -> Result<CsrCounts, SimRunError> {
    let csrs = Api::<CertificateSigningRequest>::all(hub.clone())
        .list_metadata(&ListParams::default().labels(labels::CLUSTER_NAME))
        .await
        .map_err(|source| SimRunError::Hub {
            what: "listing CSRs".into(),
            source,
        })?;
    let mut counts: BTreeMap<&str, usize> = names.iter().map(|n| (n.as_str(), 0)).collect();
    for csr in &csrs.items {
        if let Some(count) = csr
            .labels()
            .get(labels::CLUSTER_NAME)
            .and_then(|cluster| counts.get_mut(cluster.as_str()))
        {
            *count += 1;
        }
    }
    Ok(CsrCounts::of(counts.values().copied()))
}

/// CSRs per cluster over a set of clusters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CsrCounts {
    /// The fewest of any cluster.
    pub min: usize,
    /// The most of any cluster.
    pub max: usize,
    /// All of them.
    pub total: usize,
}

impl CsrCounts {
    /// The counts of `per_cluster`.
    pub fn of(per_cluster: impl IntoIterator<Item = usize>) -> Self {
        let mut counts = Self {
            min: usize::MAX,
            ..Self::default()
        };
        for n in per_cluster {
            counts.min = counts.min.min(n);
            counts.max = counts.max.max(n);
            counts.total += n;
        }
        if counts.min == usize::MAX {
            counts.min = 0;
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_counts_take_min_max_and_total() {
        assert_eq!(
            CsrCounts::of([3, 1, 2]),
            CsrCounts {
                min: 1,
                max: 3,
                total: 6
            }
        );
        assert_eq!(CsrCounts::of([]), CsrCounts::default());
    }
}
