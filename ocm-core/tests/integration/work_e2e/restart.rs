//! Killing the work agent in the middle of applying a work: the next agent converges to the same
//! end state — every object once, owned once by the one AppliedManifestWork — and deleting the
//! work then removes what it created.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};
use ocm_api::conditions;
use ocm_api::names::conditions::work::manifest_work as work_conditions;
use ocm_api::work::v1::{AppliedManifestWork, ManifestWork};
use ocm_core::work::agent::{self, WorkAgentOptions};
use serde_json::json;

use super::Clusters;
use crate::support::{eventually_within, server_and_ca};

const CONFIG_MAPS: usize = 60;

fn start_agent(clusters: &Clusters) -> tokio::task::JoinHandle<()> {
    let (server, _) = server_and_ca(clusters.hub.kubeconfig_path());
    let mut options = WorkAgentOptions::new(clusters.cluster.clone());
    options.status_sync_interval = Duration::from_secs(1);
    // An agent id of the test's own: agents sharing a real hub under the default id (the hub
    // hash) would each evict the others' AppliedManifestWorks, whose works are not in their
    // namespaces.
    options.agent_id = Some(clusters.cluster.clone());
    let (hub, spoke) = (clusters.hub_client.clone(), clusters.spoke_client.clone());
    tokio::spawn(async move {
        if let Err(error) = agent::run(hub, &server, spoke, options).await {
            eprintln!("the work agent stopped: {error}");
        }
    })
}

#[tokio::test]
async fn killing_the_agent_mid_apply_converges_without_duplicates() {
    let clusters = Clusters::new("restart").await;
    let ns = clusters.spoke_namespace("restart").await;
    let manifests: Vec<_> = (0..CONFIG_MAPS)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}"), "namespace": ns}, "data": {"i": i.to_string()}})
        })
        .collect();
    let work: ManifestWork = serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "restart", "namespace": clusters.cluster},
        "spec": {"workload": {"manifests": manifests}}}))
    .unwrap();
    let works = Api::<ManifestWork>::namespaced(clusters.hub_client.clone(), &clusters.cluster);
    works.create(&PostParams::default(), &work).await.unwrap();
    let config_maps = Api::<ConfigMap>::namespaced(clusters.spoke_client.clone(), &ns);
    // The work's ConfigMaps (the namespace also holds kube-root-ca.crt).
    let ours = |list: Vec<ConfigMap>| -> Vec<ConfigMap> {
        list.into_iter()
            .filter(|c| c.metadata.name.as_deref().is_some_and(|n| n.starts_with("cm-")))
            .collect()
    };

    // The first agent is killed as soon as it has applied something.
    let first = start_agent(&clusters);
    eventually_within(60, "the first ConfigMap", || async {
        (!ours(config_maps.list(&ListParams::default()).await.unwrap().items).is_empty()).then_some(())
    })
    .await;
    first.abort();
    let _ = first.await;
    let at_kill = ours(config_maps.list(&ListParams::default()).await.unwrap().items).len();
    eprintln!("the first agent was killed with {at_kill} of {CONFIG_MAPS} ConfigMaps applied");

    let second = start_agent(&clusters);
    eventually_within(90, "the work to be Applied", || async {
        let work = works.get("restart").await.ok()?;
        let list = work.status?.conditions?;
        conditions::is_true(&list, work_conditions::APPLIED).then_some(())
    })
    .await;
    let applied: Vec<AppliedManifestWork> = Api::<AppliedManifestWork>::all(clusters.spoke_client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|a| a.spec.manifest_work_name == "restart" && a.name_unchecked().ends_with("-restart"))
        .filter(|a| {
            a.spec.hub_hash
                == ocm_core::work::agent::hub_hash(&server_and_ca(clusters.hub.kubeconfig_path()).0)
        })
        .collect();
    assert_eq!(applied.len(), 1, "one AppliedManifestWork for the work");
    let amw_uid = applied[0].metadata.uid.clone().unwrap();
    let items = ours(config_maps.list(&ListParams::default()).await.unwrap().items);
    assert_eq!(items.len(), CONFIG_MAPS, "each ConfigMap exactly once");
    for cm in &items {
        let owners = cm.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(owners.len(), 1, "{:?} has owners {owners:?}", cm.metadata.name);
        assert_eq!(owners[0].kind, "AppliedManifestWork");
        assert_eq!(owners[0].uid, amw_uid);
    }
    eventually_within(60, "every ConfigMap tracked as applied", || async {
        let amw = Api::<AppliedManifestWork>::all(clusters.spoke_client.clone())
            .get(&applied[0].name_unchecked())
            .await
            .ok()?;
        let tracked = amw.status?.applied_resources?.len();
        (tracked == CONFIG_MAPS).then_some(())
    })
    .await;

    // Deleting the work removes what it created, then the work itself goes.
    works.delete("restart", &DeleteParams::default()).await.unwrap();
    eventually_within(90, "the work and its ConfigMaps to be deleted", || async {
        let gone = works.get_opt("restart").await.unwrap().is_none();
        let left = ours(config_maps.list(&ListParams::default()).await.unwrap().items).len();
        (gone && left == 0).then_some(())
    })
    .await;
    second.abort();
    let _ = second.await;
    let _ = Api::<Namespace>::all(clusters.spoke_client.clone())
        .delete(&ns, &DeleteParams::default())
        .await;
    clusters.finish().await;
}
