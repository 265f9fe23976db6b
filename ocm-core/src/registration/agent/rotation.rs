//! Rotating the cluster's client certificate (ocm-core.md §1.5 c): when at most a random 20–25 %
//! of its life remains, request a new one with the hub credentials, save it, and record
//! `ClusterCertificateRotated` on the ManagedCluster.

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use ocm_api::{
    cluster::v1::ManagedCluster,
    conditions::{ConditionList, Status},
    meta::Condition,
    names::{conditions::cluster::managed_cluster, secrets},
};

use super::{Agent, AgentError, bootstrap, csr};

/// The controller name in metrics and logs.
const CONTROLLER: &str = "client-certificate-rotation";

/// RFC 3339 of Unix seconds, as upstream's condition message prints the certificate window.
fn rfc3339(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// Sets `ClusterCertificateRotated` on the ManagedCluster (merge patch on `/status`, only when it
/// changes).
async fn set_condition(
    agent: &Agent,
    hub: &kube::Client,
    status: Status,
    reason: &str,
    message: &str,
) -> Result<(), AgentError> {
    let api: Api<ManagedCluster> = Api::all(hub.clone());
    let err = |source| AgentError::PatchStatus {
        name: agent.cluster.clone(),
        source,
    };
    let Some(cluster) = api.get_opt(&agent.cluster).await.map_err(err)? else {
        return Ok(());
    };
    let mut conditions = cluster.status.as_ref().and_then(|s| s.conditions.clone());
    let changed = conditions.set_condition(Condition::new(
        managed_cluster::CERTIFICATE_ROTATED,
        status,
        reason,
        message,
        Time(Timestamp::now()),
    ));
    if !changed {
        return Ok(());
    }
    let patch = serde_json::json!({
        "metadata": {"uid": cluster.metadata.uid, "resourceVersion": cluster.metadata.resource_version},
        "status": {"conditions": conditions},
    });
    api.patch_status(&agent.cluster, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(err)?;
    Ok(())
}

/// One check: rotate if the certificate on disk is due. Returns whether it rotated.
async fn check(agent: &Agent, hub: &kube::Client) -> Result<bool, AgentError> {
    let pem =
        std::fs::read(agent.options.hub_kubeconfig_dir.join(secrets::keys::TLS_CERT)).unwrap_or_default();
    let due = match csr::validity(&pem) {
        Some((nb, na)) => csr::needs_rotation(
            nb,
            na,
            chrono::Utc::now().timestamp(),
            agent
                .options
                .rotation_threshold
                .unwrap_or_else(csr::rotation_threshold),
        ),
        None => true,
    };
    if !due {
        return Ok(false);
    }
    tracing::info!(cluster = %agent.cluster, "CertificateRotationStarted");
    match bootstrap::request_certificate(agent, hub).await {
        Ok(Some((cert, key))) => {
            let window = csr::validity(&cert);
            // The secret first, then the condition, so a failure here never leads to a second CSR.
            bootstrap::save_credentials(agent, cert, key).await?;
            let message = window.map_or_else(String::new, |(nb, na)| {
                format!(
                    "client certificate rotated starting from {} to {}",
                    rfc3339(nb),
                    rfc3339(na)
                )
            });
            set_condition(
                agent,
                hub,
                Status::True,
                managed_cluster::reasons::CERTIFICATE_UPDATED,
                &message,
            )
            .await?;
            Ok(true)
        }
        Ok(None) => {
            set_condition(
                agent,
                hub,
                Status::False,
                managed_cluster::reasons::CERTIFICATE_UPDATE_FAILED,
                "the certificate signing request was not issued (denied, removed or too many CSRs)",
            )
            .await?;
            Ok(false)
        }
        Err(e) => {
            set_condition(
                agent,
                hub,
                Status::False,
                managed_cluster::reasons::CERTIFICATE_UPDATE_FAILED,
                &e.to_string(),
            )
            .await?;
            Err(e)
        }
    }
}

/// Copies the hub-kubeconfig secret into its files, then checks the certificate every period and rotates it when due. Returns only when the hub
/// kubeconfig becomes invalid.
pub(crate) async fn run(agent: &Agent) -> Result<(), AgentError> {
    loop {
        // Keep the files in step with the secret (upstream's HubKubeconfigSecretController).
        if let Err(e) = bootstrap::sync_files_from_secret(&agent.spoke, &agent.options).await {
            tracing::warn!(cluster = %agent.cluster, error = %e, "copying the hub-kubeconfig secret failed");
        }
        let hub = agent.hub_client().await?;
        let result = check(agent, &hub).await;
        agent.metrics.reconciled(CONTROLLER, result.is_ok());
        if let Err(e) = result {
            tracing::warn!(cluster = %agent.cluster, error = %e, "certificate rotation failed");
        }
        tokio::time::sleep(agent.options.rotation_check_period).await;
    }
}
