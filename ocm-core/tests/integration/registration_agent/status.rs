//! spokecluster_status and spokecluster_claim scenarios.

use k8s_openapi::{
    api::core::v1::{Node, NodeSpec, NodeStatus},
    apimachinery::pkg::api::resource::Quantity,
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
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
            name: Some("status-1-node".into()),
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
            "status-1-node",
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
        (cap.get("cpu") == Some(&Quantity("4".into()))
            && cap.get("example.com/gpu") == Some(&Quantity("2".into()))
            && alloc.get("cpu") == Some(&Quantity("3".into())))
        .then_some(())
    })
    .await;

    // Cordoned: allocatable no longer counts the node.
    nodes
        .patch(
            "status-1-node",
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
}

#[tokio::test]
async fn spokecluster_claim_sync_truncate_and_reserved_suffix() {
    let setup = Setup::new("claims-1").await;
    setup.spoke.install_ocm_crds().await.unwrap();
    let claims: Api<ClusterClaim> = Api::all(setup.spoke_client.clone());
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
    handle.abort();
}
