//! The objects of a run, as upstream's placement benchmark creates them: `--clusters`
//! ManagedClusters in one ManagedClusterSet (the exclusive set label), each with a namespace of its
//! own holding an AddOnPlacementScore `demo` with a score `demo`, a ManagedClusterSetBinding of the
//! set in the placements' namespace, and the placements. Beyond upstream's shapes, each cluster
//! reports allocatable and capacity CPU and memory in its status and the scores differ, so that
//! the ResourceAllocatableCPU and AddOn prioritizers have something to rank.
//!
//! Every name starts with the run's prefix and every object carries [`RUN_LABEL`], so that runs
//! on a shared hub do not meet, and [`cleanup`] finds what a run made.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_api::names::labels;
use serde_json::{Value, json};

use super::PlacementLoadError;
use crate::work::works::CreatedAt;

/// A label on every object of a run (value: the run's prefix).
pub const RUN_LABEL: &str = "bench.open-cluster-management.io/placement-load";
/// The AddOnPlacementScore of each cluster and the score in it (upstream's benchmark: `demo`).
pub const SCORE: &str = "demo";
/// The placement that shows the controller is ready, created before the measured ones.
pub const READY_PLACEMENT: &str = "ready";
/// How long the scores stay valid (upstream's benchmark: 1000 minutes).
const SCORE_VALIDITY: Duration = Duration::from_secs(1000 * 60);

/// The names of a run's objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The run's prefix: the placements' namespace, the set, and the start of the cluster names.
    pub run: String,
}

impl Names {
    /// Names with a prefix of their own (from the clock and the process id).
    pub fn generate() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() ^ (d.as_secs() as u32));
        Self {
            run: format!(
                "placement-load-{:08x}",
                nanos ^ std::process::id().rotate_left(16)
            ),
        }
    }

    /// The namespace of the placements and the binding.
    pub fn namespace(&self) -> &str {
        &self.run
    }

    /// The ManagedClusterSet.
    pub fn set(&self) -> &str {
        &self.run
    }

    /// Cluster `index` (also the name of its namespace).
    pub fn cluster(&self, index: usize) -> String {
        format!("{}-c{index:05}", self.run)
    }

    /// Placement `index`.
    pub fn placement(index: usize) -> String {
        format!("placement-{index:05}")
    }
}

/// What a run creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// ManagedClusters.
    pub clusters: usize,
    /// Placements.
    pub placements: usize,
    /// Clusters per placement.
    pub select: usize,
}

impl Shape {
    /// The decisions each placement ends with: `select`, or every cluster when there are fewer.
    pub fn decisions_per_placement(&self) -> usize {
        self.select.min(self.clusters)
    }

    /// Whether the placements end PlacementSatisfied (True): there are `select` clusters.
    pub fn satisfiable(&self) -> bool {
        self.clusters >= self.select
    }
}

fn from_json<K: serde::de::DeserializeOwned>(what: &str, value: Value) -> Result<K, PlacementLoadError> {
    serde_json::from_value(value).map_err(|e| PlacementLoadError::Create {
        what: what.to_string(),
        message: format!("building it: {e}"),
    })
}

fn run_labels(names: &Names) -> Value {
    json!({ (RUN_LABEL): names.run })
}

/// Namespace `name` of the run.
pub fn namespace(names: &Names, name: &str) -> Result<Namespace, PlacementLoadError> {
    from_json(
        &format!("namespace {name}"),
        json!({"metadata": {"name": name, "labels": run_labels(names)}}),
    )
}

/// The run's ManagedClusterSet: its members are the clusters with its name in the set label.
pub fn cluster_set(names: &Names) -> Result<ManagedClusterSet, PlacementLoadError> {
    from_json(
        "the ManagedClusterSet",
        json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSet",
            "metadata": {"name": names.set(), "labels": run_labels(names)},
            "spec": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}},
        }),
    )
}

/// The binding of the set to the placements' namespace.
pub fn binding(names: &Names) -> Result<ManagedClusterSetBinding, PlacementLoadError> {
    from_json(
        "the ManagedClusterSetBinding",
        json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": names.set(), "namespace": names.namespace(), "labels": run_labels(names)},
            "spec": {"clusterSet": names.set()},
        }),
    )
}

/// Cluster `index`, a member of the run's set.
pub fn cluster(names: &Names, index: usize) -> Result<ManagedCluster, PlacementLoadError> {
    let name = names.cluster(index);
    from_json(
        &format!("ManagedCluster {name}"),
        json!({
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "metadata": {
                "name": name,
                "labels": {(labels::CLUSTER_SET): names.set(), (RUN_LABEL): names.run},
            },
            "spec": {"hubAcceptsClient": true},
        }),
    )
}

/// The allocatable CPU cores and memory GiB of cluster `index` (out of 32 cores and 64 GiB):
/// spread so that neighbours differ.
pub fn allocatable(index: usize) -> (usize, usize) {
    (2 + (index * 7) % 31, 4 + (index * 13) % 61)
}

/// The status of cluster `index`: capacity and allocatable CPU and memory (a merge patch of the
/// status subresource).
pub fn cluster_status(index: usize) -> Value {
    let (cpu, memory) = allocatable(index);
    json!({"status": {
        "capacity": {"cpu": "32", "memory": "64Gi"},
        "allocatable": {"cpu": cpu.to_string(), "memory": format!("{memory}Gi")},
    }})
}

/// The add-on score of cluster `index`, in -100..=100 (upstream's benchmark gives every
/// cluster 80; differing scores make the AddOn prioritizer rank).
pub fn score_value(index: usize) -> i32 {
    i32::try_from((index * 37) % 201).unwrap_or(0) - 100
}

/// The AddOnPlacementScore of cluster `index`, in the cluster's namespace.
pub fn score(names: &Names, index: usize) -> Result<AddOnPlacementScore, PlacementLoadError> {
    let namespace = names.cluster(index);
    from_json(
        &format!("AddOnPlacementScore {namespace}/{SCORE}"),
        json!({
            "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
            "kind": "AddOnPlacementScore",
            "metadata": {"name": SCORE, "namespace": namespace, "labels": run_labels(names)},
        }),
    )
}

/// The status of cluster `index`'s score, valid until `now` + 1000 minutes (a merge patch of the
/// status subresource).
pub fn score_status(index: usize, now: k8s_openapi::jiff::Timestamp) -> Value {
    let valid_until = now
        .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(
            SCORE_VALIDITY.as_secs() as i64,
        ))
        .unwrap_or(now);
    json!({"status": {
        "scores": [{"name": SCORE, "value": score_value(index)}],
        "validUntil": valid_until.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    }})
}

/// Placement `name` asking for `select` clusters, as upstream's benchmark placement: prioritizer
/// mode Exact with weight 1 on the add-on score `demo/demo`, ResourceAllocatableCPU and Balance.
pub fn placement(names: &Names, name: &str, select: usize) -> Result<Placement, PlacementLoadError> {
    from_json(
        &format!("Placement {}/{name}", names.namespace()),
        json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": name, "namespace": names.namespace(), "labels": run_labels(names)},
            "spec": {
                "numberOfClusters": select,
                "prioritizerPolicy": {
                    "mode": "Exact",
                    "configurations": [
                        {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": SCORE, "scoreName": SCORE}}, "weight": 1},
                        {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"}, "weight": 1},
                        {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Balance"}, "weight": 1},
                    ],
                },
            },
        }),
    )
}

fn create_error(what: String) -> impl FnOnce(kube::Error) -> PlacementLoadError {
    move |e| PlacementLoadError::Create {
        what,
        message: e.to_string(),
    }
}

/// Creates the placements' namespace, the set and its binding, then the clusters with their
/// status, namespaces and scores, `concurrency` clusters at a time.
pub async fn create_fleet(
    client: &Client,
    names: &Names,
    clusters: usize,
    concurrency: usize,
) -> Result<(), PlacementLoadError> {
    let pp = PostParams::default();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(&pp, &namespace(names, names.namespace())?)
        .await
        .map_err(create_error(format!("namespace {}", names.namespace())))?;
    Api::<ManagedClusterSet>::all(client.clone())
        .create(&pp, &cluster_set(names)?)
        .await
        .map_err(create_error("the ManagedClusterSet".into()))?;
    Api::<ManagedClusterSetBinding>::namespaced(client.clone(), names.namespace())
        .create(&pp, &binding(names)?)
        .await
        .map_err(create_error("the ManagedClusterSetBinding".into()))?;
    let now = k8s_openapi::jiff::Timestamp::now();
    futures::stream::iter(0..clusters)
        .map(|index| create_cluster(client, names, index, now))
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

async fn create_cluster(
    client: &Client,
    names: &Names,
    index: usize,
    now: k8s_openapi::jiff::Timestamp,
) -> Result<(), PlacementLoadError> {
    let pp = PostParams::default();
    let name = names.cluster(index);
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    clusters
        .create(&pp, &cluster(names, index)?)
        .await
        .map_err(create_error(format!("ManagedCluster {name}")))?;
    clusters
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(cluster_status(index)),
        )
        .await
        .map_err(create_error(format!("the status of ManagedCluster {name}")))?;
    Api::<Namespace>::all(client.clone())
        .create(&pp, &namespace(names, &name)?)
        .await
        .map_err(create_error(format!("namespace {name}")))?;
    let scores: Api<AddOnPlacementScore> = Api::namespaced(client.clone(), &name);
    scores
        .create(&pp, &score(names, index)?)
        .await
        .map_err(create_error(format!("AddOnPlacementScore {name}/{SCORE}")))?;
    scores
        .patch_status(
            SCORE,
            &PatchParams::default(),
            &Patch::Merge(score_status(index, now)),
        )
        .await
        .map_err(create_error(format!(
            "the status of AddOnPlacementScore {name}/{SCORE}"
        )))?;
    Ok(())
}

/// Creates placement `name` (one asking for `select` clusters).
pub async fn create_placement(
    client: &Client,
    names: &Names,
    name: &str,
    select: usize,
) -> Result<(), PlacementLoadError> {
    Api::<Placement>::namespaced(client.clone(), names.namespace())
        .create(&PostParams::default(), &placement(names, name, select)?)
        .await
        .map_err(create_error(format!("Placement {name}")))?;
    Ok(())
}

/// Creates the measured placements of `shape`, `concurrency` at a time, noting in `created` when
/// each create was sent.
pub async fn create_placements(
    client: Client,
    names: Names,
    shape: Shape,
    concurrency: usize,
    created: CreatedAt,
) -> Result<(), PlacementLoadError> {
    futures::stream::iter(0..shape.placements)
        .map(|index| {
            let (client, names, created) = (&client, &names, created.clone());
            async move {
                let name = Names::placement(index);
                if let Ok(mut map) = created.lock() {
                    map.insert(name.clone(), tokio::time::Instant::now());
                }
                create_placement(client, names, &name, shape.select).await
            }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

fn ignore_missing<T>(what: String, result: Result<T, kube::Error>) -> Result<(), PlacementLoadError> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(PlacementLoadError::Cleanup {
            what,
            message: e.to_string(),
        }),
    }
}

/// Deletes what the run made on `client`'s hub: the placements and their decisions, the
/// namespaces (with the binding and the scores), the clusters and the set; `concurrency`
/// namespaces at a time.
pub async fn cleanup(client: &Client, names: &Names, concurrency: usize) -> Result<(), PlacementLoadError> {
    let dp = DeleteParams::default();
    let by_run = ListParams::default().labels(&format!("{RUN_LABEL}={}", names.run));
    let placements: Api<Placement> = Api::namespaced(client.clone(), names.namespace());
    ignore_missing(
        "placements".into(),
        placements.delete_collection(&dp, &ListParams::default()).await,
    )?;
    let decisions: Api<PlacementDecision> = Api::namespaced(client.clone(), names.namespace());
    ignore_missing(
        "placement decisions".into(),
        decisions.delete_collection(&dp, &ListParams::default()).await,
    )?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let list = namespaces
        .list_metadata(&by_run)
        .await
        .map_err(|e| PlacementLoadError::Cleanup {
            what: "namespaces".into(),
            message: e.to_string(),
        })?;
    futures::stream::iter(list.items.into_iter().filter_map(|ns| ns.metadata.name))
        .map(|name| {
            let (namespaces, dp) = (namespaces.clone(), dp.clone());
            async move { ignore_missing(format!("namespace {name}"), namespaces.delete(&name, &dp).await) }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await?;
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    ignore_missing("clusters".into(), clusters.delete_collection(&dp, &by_run).await)?;
    let sets: Api<ManagedClusterSet> = Api::all(client.clone());
    ignore_missing(
        format!("ManagedClusterSet {}", names.set()),
        sets.delete(names.set(), &dp).await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names { run: "pl-1".into() }
    }

    #[test]
    fn names_are_unique_per_run_and_sort_by_index() {
        let n = names();
        assert_eq!((n.namespace(), n.set()), ("pl-1", "pl-1"));
        assert_eq!(n.cluster(7), "pl-1-c00007");
        assert_eq!(Names::placement(42), "placement-00042");
        assert!(Names::placement(9) < Names::placement(10));
        let generated = Names::generate();
        assert!(generated.run.starts_with("placement-load-"), "{generated:?}");
        // A DNS label: the longest cluster name must fit in 63 characters.
        assert!(generated.cluster(99_999).len() <= 63);
    }

    #[test]
    fn clusters_are_members_of_the_set_with_resources() {
        let c = cluster(&names(), 3).unwrap();
        assert_eq!(c.metadata.name.as_deref(), Some("pl-1-c00003"));
        let l = c.metadata.labels.unwrap();
        assert_eq!(l[labels::CLUSTER_SET], "pl-1");
        assert_eq!(l[RUN_LABEL], "pl-1");
        let status = cluster_status(3);
        assert_eq!(status["status"]["allocatable"]["cpu"], "23");
        assert_eq!(status["status"]["allocatable"]["memory"], "43Gi");
        assert_eq!(status["status"]["capacity"]["cpu"], "32");
        // The status is a valid ManagedCluster status.
        let typed: ManagedCluster = serde_json::from_value(json!({
            "metadata": {"name": "x"}, "spec": {}, "status": status["status"],
        }))
        .unwrap();
        assert!(typed.status.is_some());
        let (cpu, memory) = (0..1000)
            .map(allocatable)
            .fold((usize::MAX, 0), |(lo, hi), (c, m)| {
                (lo.min(c.min(m)), hi.max(c.max(m)))
            });
        assert!(cpu >= 2 && memory <= 64, "{cpu} {memory}");
    }

    #[test]
    fn sets_bindings_and_scores_point_at_each_other() {
        let n = names();
        let set = cluster_set(&n).unwrap();
        assert_eq!(set.metadata.name.as_deref(), Some("pl-1"));
        let b = binding(&n).unwrap();
        assert_eq!(b.metadata.namespace.as_deref(), Some("pl-1"));
        assert_eq!(b.spec.cluster_set.as_deref(), Some("pl-1"));
        let s = score(&n, 5).unwrap();
        assert_eq!(s.metadata.namespace.as_deref(), Some("pl-1-c00005"));
        assert_eq!(s.metadata.name.as_deref(), Some(SCORE));
        let now = k8s_openapi::jiff::Timestamp::from_second(0).unwrap();
        let status = score_status(5, now);
        assert_eq!(status["status"]["scores"][0]["name"], SCORE);
        assert_eq!(status["status"]["scores"][0]["value"], 85);
        assert_eq!(status["status"]["validUntil"], "1970-01-01T16:40:00Z");
        assert!((0..1000).map(score_value).all(|v| (-100..=100).contains(&v)));
        let ns = namespace(&n, "pl-1-c00005").unwrap();
        assert_eq!(ns.metadata.labels.unwrap()[RUN_LABEL], "pl-1");
    }

    #[test]
    fn placements_are_upstreams_benchmark_placement() {
        let p = placement(&names(), "placement-00001", 10).unwrap();
        assert_eq!(p.metadata.namespace.as_deref(), Some("pl-1"));
        assert_eq!(p.spec.number_of_clusters, Some(10));
        let policy = p.spec.prioritizer_policy.unwrap();
        assert_eq!(policy.mode.as_deref(), Some("Exact"));
        let configs = policy.configurations.unwrap();
        assert_eq!(configs.len(), 3);
        assert!(configs.iter().all(|c| c.weight == Some(1)));
        let add_on = configs[0].score_coordinate.add_on.as_ref().unwrap();
        assert_eq!(
            (add_on.resource_name.as_str(), add_on.score_name.as_str()),
            (SCORE, SCORE)
        );
        let built_in: Vec<_> = configs[1..]
            .iter()
            .map(|c| c.score_coordinate.built_in.as_deref().unwrap())
            .collect();
        assert_eq!(built_in, ["ResourceAllocatableCPU", "Balance"]);
    }
}
