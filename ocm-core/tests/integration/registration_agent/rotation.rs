//! certificate_rotation: the agent renews its client certificate with its own hub identity.

use ocm_core::{metrics::ControllerMetrics, registration::agent};

use super::support::{Setup, eventually};

#[tokio::test]
async fn certificate_rotation_renews_with_the_cluster_identity() {
    let setup = Setup::new("rot-1").await;
    let mut options = setup.options();
    // Rotate as soon as the first certificate is in place.
    options.rotation_threshold = Some(1.0);
    options.rotation_check_period = std::time::Duration::from_millis(200);
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
    let first = eventually(30, "secret", || async { setup.secret().await })
        .await
        .data
        .unwrap()["tls.crt"]
        .clone();

    // The renewal CSR is made by the cluster's own identity, not the bootstrap token.
    let renewal = eventually(30, "renewal CSR", || async {
        setup.pending_csrs().await.into_iter().next()
    })
    .await;
    assert_eq!(
        renewal.spec.username.as_deref(),
        Some(format!("system:open-cluster-management:{}:agent1", setup.cluster).as_str())
    );
    let groups = renewal.spec.groups.clone().unwrap_or_default();
    assert!(
        groups.contains(&format!("system:open-cluster-management:{}", setup.cluster)),
        "{groups:?}"
    );
    setup.approve_pending().await;

    eventually(30, "secret rotated", || async {
        let data = setup.secret().await?.data?;
        (data["tls.crt"] != first).then_some(())
    })
    .await;
    let condition = eventually(30, "ClusterCertificateRotated", || async {
        setup
            .cluster()
            .await?
            .status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "ClusterCertificateRotated")
    })
    .await;
    assert_eq!(condition.status, "True");
    assert_eq!(condition.reason, "ClientCertificateUpdated");
    assert!(
        condition
            .message
            .starts_with("client certificate rotated starting from "),
        "{}",
        condition.message
    );
    assert!(!handle.is_finished());
    handle.abort();
    let _ = handle.await;
    setup.finish().await;
}
