//! The fleet simulator: clusters sharing one store join a hub, apply equally named works apart,
//! run their add-on agents, and churn (leases stopping and coming back, a cluster going away,
//! certificate rotation). The hub is a [`Fleet`]'s with no clusters of its own (embedded, or
//! `OCM_TEST_HUB_KUBECONFIG`'s).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::conditions::{ConditionList, Status};
use ocm_api::meta::Condition;
use ocm_api::names::conditions::cluster::managed_cluster;
use ocm_api::names::labels;
use ocm_api::work::v1::{AppliedManifestWork, ManifestWork};
use ocm_testkit::sim::{AddonAgent, SimOptions, Simulator, StoreClients, embedded_store, process_memory};
use ocm_testkit::{Fleet, FleetOptions};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(90);

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{prefix}-{:x}{:05x}", std::process::id(), nanos >> 12)
}

/// The Available condition's status of ManagedCluster `name` (Joined must be True for `True`).
async fn available(hub: &kube::Client, name: &str) -> Option<Status> {
    let cluster = Api::<ManagedCluster>::all(hub.clone())
        .get_opt(name)
        .await
        .ok()??;
    let conditions = cluster.status?.conditions?;
    let of = |t: &str| conditions.find_condition(t).and_then(Condition::status);
    match (of(managed_cluster::JOINED), of(managed_cluster::AVAILABLE)) {
        (Some(Status::True), Some(status)) => Some(status),
        _ => None,
    }
}

async fn wait_until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn delete_clusters(hub: &kube::Client, names: &[String]) {
    for name in names {
        let _ = Api::<ManagedCluster>::all(hub.clone())
            .delete(name, &DeleteParams::background())
            .await;
    }
}

#[tokio::test]
async fn simulated_clusters_join_apply_works_run_addons_and_churn() {
    let hub_fleet = Fleet::start(FleetOptions::new(Vec::<String>::new()))
        .await
        .unwrap();
    let hub = hub_fleet.hub_client();
    let (store, spoke) = embedded_store().await.unwrap();
    let addon_runs = Arc::new(AtomicUsize::new(0));
    let runs = addon_runs.clone();
    let addon: AddonAgent = Arc::new(move |ctx| {
        let runs = runs.clone();
        Box::pin(async move {
            assert!(ctx.hub_kubeconfig_dir.ends_with(&ctx.name));
            runs.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<()>().await;
        })
    });
    let mut options = SimOptions::new(
        3,
        unique("sim"),
        hub_fleet.bootstrap_kubeconfig(),
        hub_fleet.dir().join("sim"),
    );
    options.healthcheck_period = Duration::from_secs(2);
    options.status_sync_interval = Duration::from_secs(1);
    options.concurrency = 2;
    options.addon_agents = vec![addon];
    // Cluster 1 on an HTTP/2 client of the store, clusters 0 and 2 on kube's own client.
    let http2 = StoreClients::of_env(&store, 3).await.unwrap();
    let clients = StoreClients::new(vec![spoke.clone(), http2.for_cluster(0).clone()]).unwrap();
    assert_eq!((http2.len(), clients.len()), (1, 2));
    let sim = Simulator::start(clients, options).await.unwrap();
    let names: Vec<String> = sim.cluster_names().map(String::from).collect();
    assert_eq!(names.len(), 3);
    for name in &names {
        wait_until(&format!("{name} Joined and Available"), || async {
            available(&hub, name).await == Some(Status::True)
        })
        .await;
        assert!(sim.started(name).is_some());
    }
    assert!(sim.all_started());
    assert_eq!(
        addon_runs.load(Ordering::SeqCst),
        3,
        "one add-on agent per cluster"
    );
    assert!(process_memory().is_some_and(|(rss, peak)| rss > 0 && peak >= rss));

    // The same work name on every cluster: each applied by its own agent, apart in the store.
    for name in &names {
        let work: ManifestWork = serde_json::from_value(json!({
            "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": "same-name"},
            "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("{name}-config"), "namespace": "default"},
                "data": {"cluster": name}}]}}
        }))
        .unwrap();
        Api::<ManifestWork>::namespaced(hub.clone(), name)
            .create(&PostParams::default(), &work)
            .await
            .unwrap();
    }
    let config_maps = Api::<ConfigMap>::namespaced(spoke.clone(), "default");
    for name in &names {
        wait_until(&format!("the work of {name} applied"), || async {
            config_maps
                .get_opt(&format!("{name}-config"))
                .await
                .unwrap()
                .is_some()
        })
        .await;
    }
    let applied = Api::<AppliedManifestWork>::all(spoke.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    let ours: Vec<_> = applied
        .items
        .iter()
        .filter(|a| names.contains(&a.spec.agent_id.clone().unwrap_or_default()))
        .collect();
    assert_eq!(ours.len(), 3, "one AppliedManifestWork per cluster");

    // Leases stopping: a paused cluster turns Unknown on the hub, and Available again on resume.
    Api::<ManagedCluster>::all(hub.clone())
        .patch(
            &names[0],
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"leaseDurationSeconds": 1}})),
        )
        .await
        .unwrap();
    sim.pause(0);
    assert!(!sim.is_running(0));
    wait_until("the paused cluster to be not Available", || async {
        matches!(
            available(&hub, &names[0]).await,
            Some(Status::Unknown | Status::False)
        )
    })
    .await;
    sim.resume(0);
    assert!(sim.is_running(0));
    wait_until("the resumed cluster to be Available again", || async {
        available(&hub, &names[0]).await == Some(Status::True)
    })
    .await;
    assert_eq!(
        addon_runs.load(Ordering::SeqCst),
        4,
        "the add-on agent restarts with its cluster"
    );

    // Going away: agents stop and the credentials are dropped.
    let dir = sim.cluster(1).unwrap().hub_kubeconfig_dir.clone();
    assert!(dir.join("kubeconfig").exists());
    sim.remove(1).await;
    assert!(!sim.is_running(1));
    assert!(!dir.exists());
    drop(sim);
    delete_clusters(&hub, &names).await;
    hub_fleet.cleanup().await.unwrap();
}

#[tokio::test]
async fn simulated_clusters_rotate_their_certificates() {
    let hub_fleet = Fleet::start(FleetOptions::new(Vec::<String>::new()))
        .await
        .unwrap();
    let hub = hub_fleet.hub_client();
    let (_store, spoke) = embedded_store().await.unwrap();
    let mut options = SimOptions::new(
        2,
        unique("rot"),
        hub_fleet.bootstrap_kubeconfig(),
        hub_fleet.dir().join("sim"),
    );
    options.work_agents = false;
    options.healthcheck_period = Duration::from_secs(2);
    options.rotate_every = Some(Duration::from_secs(2));
    let sim = Simulator::start(spoke, options).await.unwrap();
    let names: Vec<String> = sim.cluster_names().map(String::from).collect();
    let csrs: Api<CertificateSigningRequest> = Api::all(hub.clone());
    for name in &names {
        wait_until(&format!("{name} to rotate its certificate"), || async {
            let list = csrs
                .list(&ListParams::default().labels(&format!("{}={name}", labels::CLUSTER_NAME)))
                .await
                .unwrap();
            list.items.len() >= 2
        })
        .await;
        wait_until(&format!("{name} Available after rotating"), || async {
            available(&hub, name).await == Some(Status::True)
        })
        .await;
    }
    assert_eq!(sim.counters().failed_runs.load(Ordering::Relaxed), 0);
    drop(sim);
    delete_clusters(&hub, &names).await;
    for csr in csrs.list(&ListParams::default()).await.unwrap().items {
        let of_run = csr
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::CLUSTER_NAME))
            .is_some_and(|c| names.contains(c));
        if of_run {
            let _ = csrs
                .delete(csr.metadata.name.as_deref().unwrap(), &DeleteParams::default())
                .await;
        }
    }
    hub_fleet.cleanup().await.unwrap();
}
