//! ocm-core.md §6.1 scenarios that need the agent and the hub controllers together:
//! managedcluster_lease (recover after agent stop, with the `unreachable` taint),
//! spokeagent_restart (Joined removed while the agent is down comes back) and
//! certificate_rotation (the renewal CSR is approved by the hub, not by the test).

use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Patch, PatchParams};
use ocm_api::names::taints;
use ocm_core::registration::hub::csr_approval::APPROVED_REASON;

use super::support::{Join, eventually};

/// The taint keys on the cluster.
async fn taint_keys(join: &Join) -> Option<Vec<String>> {
    let cluster = join.cluster().await?;
    Some(
        cluster
            .spec
            .taints
            .unwrap_or_default()
            .into_iter()
            .map(|t| t.key)
            .collect(),
    )
}

/// The join of a user approving the first CSR by hand, with a lease of one second.
async fn joined(join: &mut Join) -> Vec<u8> {
    join.start_hub();
    join.wait_pending_csr().await;
    assert_eq!(join.approve_pending().await, 1);
    join.accept(1).await;
    join.wait_joined().await
}

#[tokio::test]
async fn managedcluster_lease_agent_stopped_goes_unknown_and_unreachable_then_recovers() {
    let mut join = Join::new("lease").await;
    join.start_agent();
    joined(&mut join).await;
    eventually(30, "no taints while Available", || async {
        taint_keys(&join).await.filter(Vec::is_empty)
    })
    .await;

    // The agent stops: after 5 × 1 s without a renewal, Unknown and the unreachable taint.
    join.kill_agent().await;
    join.wait_condition("ManagedClusterConditionAvailable", "Unknown")
        .await;
    eventually(30, "the unreachable taint", || async {
        taint_keys(&join)
            .await
            .filter(|keys| keys.iter().any(|k| k == taints::UNREACHABLE))
    })
    .await;

    // spokeagent_restart: Joined removed while the agent is down is reported again.
    let cluster = join.cluster().await.unwrap();
    let kept: Vec<_> = cluster
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.type_ != "ManagedClusterJoined")
        .collect();
    join.clusters()
        .patch_status(
            &join.cluster,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"conditions": kept}})),
        )
        .await
        .unwrap();
    assert_eq!(join.condition("ManagedClusterJoined").await, None);

    // Restarted on the credentials kept in its secret: Joined and Available again, no taint,
    // and no new CSR.
    join.start_agent();
    join.wait_condition("ManagedClusterJoined", "True").await;
    join.wait_condition("ManagedClusterConditionAvailable", "True")
        .await;
    eventually(30, "taints removed", || async {
        taint_keys(&join).await.filter(Vec::is_empty)
    })
    .await;
    assert_eq!(join.csrs().await.len(), 1);
    join.finish().await;
}

/// Whether the CSR was approved by the hub's approving controller.
fn approved_by_hub(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|list| {
            list.iter().any(|c| {
                c.type_ == "Approved" && c.status == "True" && c.reason.as_deref() == Some(APPROVED_REASON)
            })
        })
}

#[tokio::test]
async fn certificate_rotation_renewal_auto_approved_by_the_hub() {
    let mut join = Join::new("rotate").await;
    let mut options = join.agent_options();
    // Rotate as soon as the first certificate is in place.
    options.rotation_threshold = Some(1.0);
    options.rotation_check_period = Duration::from_millis(500);
    join.start_agent_with(options);
    let first = joined(&mut join).await;

    // Nobody approves by hand from here on: the renewal is approved by the hub.
    let renewed = eventually(30, "a renewed certificate in the secret", || async {
        let data = join.secret().await?.data?;
        let cert = data.get("tls.crt")?.0.clone();
        (cert != first).then_some(cert)
    })
    .await;
    assert_ne!(renewed, first);
    let csrs = join.csrs().await;
    let by_hub: Vec<_> = csrs.iter().filter(|c| approved_by_hub(c)).collect();
    assert!(!by_hub.is_empty(), "no CSR approved by the hub: {csrs:?}");
    for csr in &by_hub {
        assert_eq!(
            csr.spec.username.as_deref(),
            Some(
                format!(
                    "system:open-cluster-management:{}:{}",
                    join.cluster,
                    super::support::AGENT
                )
                .as_str()
            ),
            "the hub approves renewals made with the cluster's own identity only"
        );
    }
    eventually(30, "ClusterCertificateRotated", || async {
        join.cluster()
            .await?
            .status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "ClusterCertificateRotated" && c.status == "True")
    })
    .await;
    join.wait_condition("ManagedClusterJoined", "True").await;
    join.finish().await;
}
