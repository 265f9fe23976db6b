//! The ManifestWorks of a run: `--works` works in the cluster namespace, each with
//! `--manifests-per-work` ConfigMaps of `--configmap-bytes` bytes of payload for one namespace of
//! the spoke, created by the harness a bounded number at a time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::{StreamExt, TryStreamExt};
use kube::Api;
use kube::api::PostParams;
use ocm_api::work::v1::ManifestWork;
use tokio::time::Instant;

use super::WorkError;

/// The managed cluster's name (the hub namespace of the works).
pub const CLUSTER: &str = "work-load-cluster";
/// The spoke namespace the ConfigMaps go to.
pub const SPOKE_NAMESPACE: &str = "work-load";
/// A label on every ConfigMap of a run (the spoke watch selects by it).
pub const LABEL: &str = "bench.open-cluster-management.io/work-load";

/// What the works hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Works.
    pub works: usize,
    /// ConfigMaps per work.
    pub manifests_per_work: usize,
    /// Payload bytes per ConfigMap.
    pub configmap_bytes: usize,
}

impl Shape {
    /// ConfigMaps over all works.
    pub fn manifests(&self) -> usize {
        self.works * self.manifests_per_work
    }
}

/// The name of work `index`.
pub fn work_name(index: usize) -> String {
    format!("work-{index:05}")
}

/// The name of ConfigMap `manifest` of work `index`.
pub fn configmap_name(index: usize, manifest: usize) -> String {
    format!("work-{index:05}-cm-{manifest:03}")
}

/// Work `index` of `shape`.
pub fn manifest_work(shape: &Shape, index: usize) -> Result<ManifestWork, WorkError> {
    let payload = "x".repeat(shape.configmap_bytes);
    let manifests: Vec<serde_json::Value> = (0..shape.manifests_per_work)
        .map(|m| {
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": configmap_name(index, m),
                    "namespace": SPOKE_NAMESPACE,
                    "labels": {LABEL: "true"},
                },
                "data": {"payload": payload},
            })
        })
        .collect();
    let work = serde_json::json!({
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": work_name(index), "namespace": CLUSTER},
        "spec": {"workload": {"manifests": manifests}},
    });
    serde_json::from_value(work).map_err(|e| WorkError::CreateWork {
        name: work_name(index),
        message: format!("building it: {e}"),
    })
}

/// When each work's create request was sent.
pub type CreatedAt = Arc<Mutex<HashMap<String, Instant>>>;

/// Creates the works of `shape` through `hub`, `concurrency` at a time, noting in `created`
/// when each create was sent.
pub async fn create_all(
    hub: kube::Client,
    shape: Shape,
    concurrency: usize,
    created: CreatedAt,
) -> Result<(), WorkError> {
    let api: Api<ManifestWork> = Api::namespaced(hub, CLUSTER);
    futures::stream::iter(0..shape.works)
        .map(|index| {
            let api = api.clone();
            let created = created.clone();
            async move {
                let work = manifest_work(&shape, index)?;
                let name = work_name(index);
                if let Ok(mut map) = created.lock() {
                    map.insert(name.clone(), Instant::now());
                }
                api.create(&PostParams::default(), &work)
                    .await
                    .map_err(|e| WorkError::CreateWork {
                        name,
                        message: e.to_string(),
                    })?;
                Ok::<(), WorkError>(())
            }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_holds_its_configmaps() {
        let shape = Shape {
            works: 3,
            manifests_per_work: 2,
            configmap_bytes: 5,
        };
        assert_eq!(shape.manifests(), 6);
        let work = manifest_work(&shape, 2).unwrap();
        assert_eq!(work.metadata.name.as_deref(), Some("work-00002"));
        assert_eq!(work.metadata.namespace.as_deref(), Some(CLUSTER));
        let manifests = work.spec.workload.and_then(|w| w.manifests).unwrap_or_default();
        assert_eq!(manifests.len(), 2);
        let cm = &manifests[1].0;
        assert_eq!(cm["metadata"]["name"], "work-00002-cm-001");
        assert_eq!(cm["metadata"]["namespace"], SPOKE_NAMESPACE);
        assert_eq!(cm["metadata"]["labels"][LABEL], "true");
        assert_eq!(cm["data"]["payload"], "xxxxx");
    }
}
