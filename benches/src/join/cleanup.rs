//! Removing a run's objects from an external hub: its ManagedClusters (their names start with
//! the run's prefix), their CSRs and their cluster namespaces, so that runs against a shared hub
//! do not pile up. The hub controllers must still run: they remove the clusters' finalizers.

use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::labels;

use super::JoinError;

/// How long the ManagedClusters may take to go (their finalizers are the controllers').
const GONE_TIMEOUT: Duration = Duration::from_secs(180);

/// Whether `name` is one of the run's clusters: `<prefix>-<number>`.
pub fn is_run_cluster(prefix: &str, name: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn api_error(what: String) -> impl FnOnce(kube::Error) -> JoinError {
    move |e| JoinError::Cleanup(format!("{what}: {e}"))
}

async fn delete_ignoring_missing<K>(api: &Api<K>, name: &str) -> Result<(), JoinError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(JoinError::Cleanup(format!("deleting {name}: {e}"))),
    }
}

/// Deletes the run's ManagedClusters and CSRs, waits until the clusters are gone, then deletes
/// their namespaces; returns how many clusters were deleted.
pub async fn delete_run(client: &kube::Client, prefix: &str) -> Result<usize, JoinError> {
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let names: Vec<String> = clusters
        .list_metadata(&ListParams::default())
        .await
        .map_err(api_error("listing ManagedClusters".into()))?
        .items
        .iter()
        .map(ResourceExt::name_any)
        .filter(|name| is_run_cluster(prefix, name))
        .collect();
    for name in &names {
        delete_ignoring_missing(&clusters, name).await?;
    }
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    for csr in csrs
        .list_metadata(&ListParams::default().labels(labels::CLUSTER_NAME))
        .await
        .map_err(api_error("listing CSRs".into()))?
        .items
    {
        let of_run = csr
            .labels()
            .get(labels::CLUSTER_NAME)
            .is_some_and(|cluster| is_run_cluster(prefix, cluster));
        if of_run {
            delete_ignoring_missing(&csrs, &csr.name_any()).await?;
        }
    }
    let deadline = tokio::time::Instant::now() + GONE_TIMEOUT;
    loop {
        let left = clusters
            .list_metadata(&ListParams::default())
            .await
            .map_err(api_error("listing ManagedClusters".into()))?
            .items
            .iter()
            .filter(|c| is_run_cluster(prefix, &c.name_any()))
            .count();
        if left == 0 {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(JoinError::Cleanup(format!(
                "{left} ManagedClusters of run {prefix} still there after {GONE_TIMEOUT:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in &names {
        delete_ignoring_missing(&namespaces, name).await?;
    }
    Ok(names.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_runs_numbered_clusters_are_its_own() {
        assert!(is_run_cluster("join-1a2b", "join-1a2b-0"));
        assert!(is_run_cluster("join-1a2b", "join-1a2b-999"));
        assert!(!is_run_cluster("join-1a2b", "join-1a2b-"));
        assert!(!is_run_cluster("join-1a2b", "join-1a2b-x"));
        assert!(!is_run_cluster("join-1a2b", "join-1a2bc-1"));
        assert!(!is_run_cluster("join-1a2b", "cluster1"));
    }
}
