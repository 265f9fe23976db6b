//! Renewing `managed-cluster-lease` in the cluster's namespace on the hub while the hub accepts
//! the cluster (ocm-core.md §1.8).

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::Lease, apimachinery::pkg::apis::meta::v1::MicroTime, jiff::Timestamp,
};
use kube::{Api, api::PostParams};
use ocm_api::{
    cluster::v1::ManagedCluster,
    conditions,
    names::{conditions::cluster::managed_cluster, leases},
};

use super::{Agent, AgentError};

/// The controller name in metrics and logs.
const CONTROLLER: &str = "managed-cluster-lease";

/// The renewal period of a `leaseDurationSeconds` (0 or unset → 60 s).
pub fn lease_period(lease_duration_seconds: Option<i32>) -> Duration {
    let secs = match lease_duration_seconds {
        Some(s) if s > 0 => s,
        _ => leases::DEFAULT_DURATION_SECONDS,
    };
    Duration::from_secs(u64::try_from(secs).unwrap_or(60))
}

/// `period` stretched by a random factor in [1, 1.25): the sliding jitter of upstream's loop.
pub fn jittered(period: Duration, random: f64) -> Duration {
    period.mul_f64(1.0 + 0.25 * random.clamp(0.0, 1.0))
}

/// One renewal: GET and UPDATE the lease with `renewTime = now`.
async fn renew(hub: &kube::Client, cluster: &str) -> Result<(), AgentError> {
    let api: Api<Lease> = Api::namespaced(hub.clone(), cluster);
    let err = |source| AgentError::UpdateLease {
        namespace: cluster.to_string(),
        name: leases::MANAGED_CLUSTER.to_string(),
        source,
    };
    let mut lease = api.get(leases::MANAGED_CLUSTER).await.map_err(err)?;
    lease.spec.get_or_insert_with(Default::default).renew_time = Some(MicroTime(Timestamp::now()));
    api.replace(leases::MANAGED_CLUSTER, &PostParams::default(), &lease)
        .await
        .map_err(err)?;
    Ok(())
}

/// Renews the lease every jittered period while `HubAcceptedManagedCluster` is True; the period
/// follows `spec.leaseDurationSeconds`. Returns only when the hub kubeconfig becomes invalid.
pub(crate) async fn run(agent: &Agent) -> Result<(), AgentError> {
    let mut updating = false;
    let mut accepted = agent.accepted.subscribe();
    loop {
        accepted.mark_unchanged();
        let hub = agent.hub_client().await?;
        let clusters: Api<ManagedCluster> = Api::all(hub.clone());
        let mut period = lease_period(None);
        match super::status::own_cluster(&clusters, &agent.cluster).await {
            Ok(Some(cluster)) => {
                period = lease_period(cluster.spec.lease_duration_seconds);
                let accepted = cluster
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_deref())
                    .is_some_and(|cs| conditions::is_true(cs, managed_cluster::HUB_ACCEPTED));
                if accepted != updating {
                    updating = accepted;
                    let event = if accepted {
                        "ManagedClusterLeaseUpdateStarted"
                    } else {
                        "ManagedClusterLeaseUpdateStoped"
                    };
                    tracing::info!(cluster = %agent.cluster, event, "lease updater");
                }
                if accepted {
                    let result = renew(&hub, &agent.cluster).await;
                    agent.metrics.reconciled(CONTROLLER, result.is_ok());
                    if let Err(e) = result {
                        tracing::warn!(cluster = %agent.cluster, error = %e, "renewing the lease failed");
                    }
                }
            }
            Ok(None) => updating = false,
            Err(e) => {
                updating = false;
                tracing::warn!(cluster = %agent.cluster, error = %e, "reading the ManagedCluster failed");
            }
        }
        if updating {
            tokio::time::sleep(jittered(period, rand::random())).await;
        } else {
            // Not accepted (or not readable) yet: the status loop polls the cluster while it
            // waits for acceptance; look again as soon as it saw the acceptance change, or after
            // a lease period.
            let _ = tokio::time::timeout(period, accepted.changed()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_defaults_to_sixty_seconds() {
        assert_eq!(lease_period(None), Duration::from_secs(60));
        assert_eq!(lease_period(Some(0)), Duration::from_secs(60));
        assert_eq!(lease_period(Some(2)), Duration::from_secs(2));
    }

    #[test]
    fn jitter_stretches_by_at_most_a_quarter() {
        let p = Duration::from_secs(60);
        assert_eq!(jittered(p, 0.0), p);
        assert_eq!(jittered(p, 1.0), Duration::from_secs(75));
        assert!(jittered(p, 0.5) > p && jittered(p, 0.5) < Duration::from_secs(75));
    }
}
