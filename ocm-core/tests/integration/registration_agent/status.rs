//! spokecluster_status and spokecluster_claim scenarios.

use k8s_openapi::{
    api::core::v1::{Node, NodeSpec, NodeStatus},
    apimachinery::pkg::api::resource::Quantity,
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use ocm_api::about::v1alpha1::ClusterProperty;
use ocm_api::cluster::v1alpha1::{ClusterClaim, ClusterClaimSpec};
use ocm_core::{metrics::ControllerMetrics, registration::agent};

use super::support::{Setup, eventually};

async fn joined(
    setup: &Setup,
    options: agent::AgentOptions,
) -> tokio::task::JoinHandle<Result<(), agent::AgentError>> {
    let handle = tokio::spawn(agent::run(
        setup.spoke_client.clone(),
        options,
        ControllerMetrics::default(),
    ));
    eventually(30, "bootstrap CSR", || async {
        (!setup.pending_csrs().await.is_empty()).then_some(())
    })
    .await;
    setup.approve_pending().await;
    setup.accept(1).await;
    eventually(30, "Joined", || async {
        setup.condition_true("ManagedClusterJoined").await.then_some(())
    })
    .await;
    handle
}

#[tokio::test]
async fn spokecluster_status_capacity_and_allocatable_from_nodes() {
    let setup = Setup::new("status-1").await;
    if setup.real_spoke() {
        eprintln!(
            "SKIP: capacity and allocatable are sums over every Node of the spoke; a real spoke has \
             its own Nodes, so this test needs the embedded spoke"
        );
        setup.finish().await;
        return;
    }
    let node_name = format!("{}-node", setup.cluster);
    let nodes: Api<Node> = Api::all(setup.spoke_client.clone());
    let resources = |cpu: &str| {
        std::collections::BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity("1Gi".into())),
            ("example.com/gpu".to_string(), Quantity("2".into())),
        ])
    };
    let node = Node {
        metadata: kube::api::ObjectMeta {
            name: Some(node_name.clone()),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        ..Default::default()
    };
    nodes.create(&PostParams::default(), &node).await.unwrap();
    let status = NodeStatus {
        capacity: Some(resources("4")),
        allocatable: Some(resources("3")),
        ..Default::default()
    };
    nodes
        .patch_status(
            &node_name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": status})),
        )
        .await
        .unwrap();

    let handle = joined(&setup, setup.options()).await;
    eventually(30, "capacity", || async {
        let status = setup.cluster().await?.status?;
        let cap = status.capacity?;
        let alloc = status.allocatable?;
        // The Node's own strings, as upstream's agent reports them (`1Gi`, not `1073741824`).
        (cap.get("cpu") == Some(&Quantity("4".into()))
            && cap.get("memory") == Some(&Quantity("1Gi".into()))
            && cap.get("example.com/gpu") == Some(&Quantity("2".into()))
            && alloc.get("cpu") == Some(&Quantity("3".into())))
        .then_some(())
    })
    .await;

    // Cordoned: allocatable no longer counts the node.
    nodes
        .patch(
            &node_name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"unschedulable": true}})),
        )
        .await
        .unwrap();
    eventually(30, "allocatable without the cordoned node", || async {
        let alloc = setup.cluster().await?.status?.allocatable?;
        (!alloc.contains_key("cpu")).then_some(())
    })
    .await;
    handle.abort();
    let _ = handle.await;
    let _ = nodes.delete(&node_name, &Default::default()).await;
    setup.finish().await;
}

#[tokio::test]
async fn spokecluster_claim_sync_truncate_and_reserved_suffix() {
    let setup = Setup::new("claims-1").await;
    setup.spoke.install_ocm_crds().await.unwrap();
    let claims: Api<ClusterClaim> = Api::all(setup.spoke_client.clone());
    let properties: Api<ClusterProperty> = Api::all(setup.spoke_client.clone());
    let ours = [
        "id.k8s.io",
        "c.custom",
        "a.custom",
        "b.custom",
        "z.reserved.example",
        "hidden",
    ];
    // Claims and properties are cluster-scoped: on a real spoke, those of an earlier run that
    // failed are removed first, and a spoke with claims of its own cannot give the exact lists.
    let remove_ours = || async {
        for name in ours {
            let _ = claims.delete(name, &Default::default()).await;
        }
        let _ = properties.delete("id.k8s.io", &Default::default()).await;
        eventually(30, "the test's claims removed", || async {
            let left = claims.list(&Default::default()).await.ok()?;
            (!left
                .items
                .iter()
                .any(|c| ours.contains(&c.metadata.name.as_deref().unwrap_or_default())))
            .then_some(())
        })
        .await;
    };
    remove_ours().await;
    let foreign = claims.list(&Default::default()).await.unwrap().items.len()
        + properties.list(&Default::default()).await.unwrap().items.len();
    if foreign > 0 {
        eprintln!(
            "SKIP: the spoke has {foreign} ClusterClaims/ClusterProperties of its own; the exact \
             claim lists this test checks need a spoke without any"
        );
        setup.finish().await;
        return;
    }
    for name in [
        "id.k8s.io",
        "c.custom",
        "a.custom",
        "b.custom",
        "z.reserved.example",
    ] {
        let claim = ClusterClaim::new(
            name,
            ClusterClaimSpec {
                value: Some(format!("v-{name}")),
            },
        );
        claims.create(&PostParams::default(), &claim).await.unwrap();
    }
    let mut hidden = ClusterClaim::new(
        "hidden",
        ClusterClaimSpec {
            value: Some("x".into()),
        },
    );
    hidden.metadata.labels =
        Some([("open-cluster-management.io/spoke-only".to_string(), String::new())].into());
    claims.create(&PostParams::default(), &hidden).await.unwrap();

    let mut options = setup.options();
    options.max_custom_cluster_claims = 2;
    options.reserved_cluster_claim_suffixes = vec![".reserved.example".into()];
    options.cluster_properties = true;
    let handle = joined(&setup, options).await;
    let names = || async {
        let claims = setup.cluster().await?.status?.cluster_claims?;
        Some(claims.into_iter().filter_map(|c| c.name).collect::<Vec<_>>())
    };
    eventually(30, "claims", || async {
        (names().await? == ["id.k8s.io", "z.reserved.example", "a.custom", "b.custom"]).then_some(())
    })
    .await;

    // Deleting a claim is reflected: c.custom now fits under the cap.
    claims.delete("a.custom", &Default::default()).await.unwrap();
    eventually(30, "claims after delete", || async {
        (names().await? == ["id.k8s.io", "z.reserved.example", "b.custom", "c.custom"]).then_some(())
    })
    .await;

    // spokecluster_claim: cluster properties. A ClusterProperty wins over the claim of its name.
    let property: ClusterProperty = serde_json::from_value(serde_json::json!({
        "apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
        "metadata": {"name": "id.k8s.io"}, "spec": {"value": "from-property"}}))
    .unwrap();
    properties
        .create(&PostParams::default(), &property)
        .await
        .unwrap();
    eventually(30, "property wins", || async {
        let claims = setup.cluster().await?.status?.cluster_claims?;
        claims
            .into_iter()
            .any(|c| c.name.as_deref() == Some("id.k8s.io") && c.value.as_deref() == Some("from-property"))
            .then_some(())
    })
    .await;
    handle.abort();
    let _ = handle.await;
    remove_ours().await;
    setup.finish().await;
}

/// Managed namespaces: a namespace listed in `status.managedNamespaces` (the hub fills it from
/// the cluster's sets) is created on the managed cluster with the hub's label, and released
/// (label "false", never deleted) once no longer listed.
#[tokio::test]
async fn spokecluster_managed_namespaces_created_and_released() {
    let setup = Setup::new("mns-1").await;
    // The test writes status.managedNamespaces, which the hub's cluster-set controller owns: on a
    // shared hub no other test may run hub controllers meanwhile.
    let _lock = crate::hub_lock::HubLock::exclusive(&setup.hub, crate::hub_lock::Lock::HubControllers).await;
    let handle = joined(&setup, setup.options()).await;
    let bootstrap =
        kube::config::Kubeconfig::read_from(setup.dir.path().join("bootstrap.kubeconfig")).unwrap();
    let server = bootstrap.clusters[0]
        .cluster
        .as_ref()
        .unwrap()
        .server
        .clone()
        .unwrap();
    let label = ocm_api::names::labels::managed_namespace(&ocm_api::spec_hash::hub_hash(&server));
    let namespace = format!("mns-{}", std::process::id());
    let clusters: Api<ocm_api::cluster::v1::ManagedCluster> = Api::all(setup.hub_client.clone());
    let set_list = |names: Vec<String>| {
        let entries: Vec<_> = names
            .iter()
            .map(|n| serde_json::json!({"clusterSet": "set1", "name": n}))
            .collect();
        serde_json::json!({"status": {"managedNamespaces": entries}})
    };
    clusters
        .patch_status(
            &setup.cluster,
            &PatchParams::default(),
            &Patch::Merge(set_list(vec![namespace.clone()])),
        )
        .await
        .unwrap();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(setup.spoke_client.clone());
    let label_value = || async {
        let ns = namespaces.get_opt(&namespace).await.ok()??;
        ns.metadata.labels?.get(&label).cloned()
    };
    eventually(30, "namespace labelled true", || async {
        (label_value().await? == "true").then_some(())
    })
    .await;
    eventually(30, "NamespaceAvailable", || async {
        let entries = setup.cluster().await?.status?.managed_namespaces?;
        let condition = entries.first()?.conditions.as_ref()?.first()?.clone();
        (condition.type_ == "NamespaceAvailable"
            && condition.status == "True"
            && condition.reason == "NamespaceApplied")
            .then_some(())
    })
    .await;
    clusters
        .patch_status(
            &setup.cluster,
            &PatchParams::default(),
            &Patch::Merge(set_list(vec![])),
        )
        .await
        .unwrap();
    eventually(30, "namespace released", || async {
        (label_value().await? == "false").then_some(())
    })
    .await;
    handle.abort();
    let _ = handle.await;
    let _ = namespaces.delete(&namespace, &Default::default()).await;
    setup.finish().await;
}
