//! What every area of the integration tests shares: unique names, polling with a deadline, and
//! the CSRs of a joining cluster on the hub (listing, pending, approving as `kubectl certificate
//! approve` does).

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers")]

use std::{future::Future, path::Path, time::Duration};

use base64::Engine;

use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestCondition};
use kube::{
    Api,
    api::{ListParams, PostParams},
};

/// The label the agent puts on its CSRs.
pub const CLUSTER_LABEL: &str = "open-cluster-management.io/cluster-name";

/// How long [`eventually`] waits.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A name unique to this test run (lowercase, DNS-label safe): the prefix, the process id, the
/// clock and a counter, so that runs sharing a real cluster never meet each other's leftovers.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{:x}{:05x}{n}", std::process::id(), nanos >> 12)
}

/// Polls `check` until it returns `Some`, failing the test after [`DEADLINE`].
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    eventually_within(DEADLINE.as_secs(), what, check).await
}

/// Polls `check` every 100 ms until it returns `Some`, failing the test after `secs` seconds.
pub async fn eventually_within<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {secs}s waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The CSRs of `cluster` on the hub (by the agent's cluster-name label).
pub async fn cluster_csrs(hub: &kube::Client, cluster: &str) -> Vec<CertificateSigningRequest> {
    Api::<CertificateSigningRequest>::all(hub.clone())
        .list(&ListParams::default().labels(&format!("{CLUSTER_LABEL}={cluster}")))
        .await
        .unwrap()
        .items
}

/// Whether the CSR is neither Approved nor Denied.
pub fn is_pending(csr: &CertificateSigningRequest) -> bool {
    !csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Approved" || c.type_ == "Denied"))
}

/// Approves every pending CSR of `cluster` through the approval subresource, as `kubectl
/// certificate approve` does (the cluster's signer then issues it); returns how many.
pub async fn approve_pending(hub: &kube::Client, cluster: &str) -> usize {
    let api = Api::<CertificateSigningRequest>::all(hub.clone());
    let pending: Vec<_> = cluster_csrs(hub, cluster)
        .await
        .into_iter()
        .filter(is_pending)
        .collect();
    for csr in &pending {
        let name = csr.metadata.name.clone().unwrap();
        let mut csr = csr.clone();
        csr.status.get_or_insert_with(Default::default).conditions =
            Some(vec![CertificateSigningRequestCondition {
                type_: "Approved".into(),
                status: "True".into(),
                reason: Some("TestApproved".into()),
                message: Some("approved by the test".into()),
                ..Default::default()
            }]);
        api.replace_subresource("approval", &name, &PostParams::default(), &csr)
            .await
            .unwrap();
    }
    pending.len()
}

/// Server URL and CA (PEM) of the first cluster of a kubeconfig file.
pub fn server_and_ca(kubeconfig: &Path) -> (String, String) {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let cluster = kubeconfig.clusters[0].cluster.clone().unwrap();
    let ca = match (cluster.certificate_authority_data, cluster.certificate_authority) {
        (Some(data), _) => base64::engine::general_purpose::STANDARD.decode(data).unwrap(),
        (None, Some(file)) => std::fs::read(file).unwrap(),
        (None, None) => panic!("the hub kubeconfig names no CA"),
    };
    (cluster.server.unwrap(), String::from_utf8(ca).unwrap())
}
