//! The add-on agent's lease updater (addon-framework.md §3.2): the agent renews a Lease named
//! after the add-on in its install namespace, which the klusterlet's registration agent reads
//! to set the ManagedClusterAddOn's `Available` condition (health prober `Lease`).
//!
//! Every period (60 s, with a jitter factor of 0.25, sliding: the wait starts after a round
//! ends) one round runs: if a [`HealthCheck`] fails the round is skipped (the lease goes stale
//! and the add-on becomes unavailable); otherwise the lease is created with
//! `leaseDurationSeconds: 60` and `renewTime` now, or its `renewTime` is set to now. With
//! [`LeaseUpdater::with_hub_lease_config`] a NotFound on the managed cluster (no Lease API, no
//! namespace) renews the same lease in the cluster's namespace on the hub instead.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, Client};

/// How often the lease is renewed, and its duration (upstream's
/// `defaultLeaseDurationSeconds`).
pub const LEASE_DURATION_SECONDS: i32 = 60;
/// The jitter factor of the renew period.
pub const JITTER_FACTOR: f64 = 0.25;

/// Errors of renewing the lease.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Reading the lease failed.
    #[error("get lease {namespace}/{name}: {source}")]
    GetLease {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Creating the lease failed.
    #[error("create lease {namespace}/{name}: {source}")]
    CreateLease {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Updating the lease's renew time failed.
    #[error("update lease {namespace}/{name}: {source}")]
    UpdateLease {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

impl LeaseError {
    /// Whether the API answered NotFound (no namespace, or no Lease API).
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        let (Self::GetLease { source, .. }
        | Self::CreateLease { source, .. }
        | Self::UpdateLease { source, .. }) = self;
        matches!(source, kube::Error::Api(status) if status.code == 404)
    }
}

/// A health check run before each renewal (upstream's health check functions); `false`
/// skips the round. Closures `Fn() -> bool` are health checks.
#[async_trait]
pub trait HealthCheck: Send + Sync {
    /// Whether the add-on is healthy now.
    async fn healthy(&self) -> bool;
}

#[async_trait]
impl<F> HealthCheck for F
where
    F: Fn() -> bool + Send + Sync,
{
    async fn healthy(&self) -> bool {
        self()
    }
}

/// What one round did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// A health check failed; nothing was written.
    Skipped,
    /// The lease was renewed on the managed cluster.
    Renewed,
    /// The managed cluster answered NotFound; the lease was renewed on the hub.
    RenewedOnHub,
}

/// Renews an add-on's lease (upstream's `LeaseUpdater`).
#[derive(Clone)]
pub struct LeaseUpdater {
    client: Client,
    name: String,
    namespace: String,
    checks: Vec<Arc<dyn HealthCheck>>,
    hub: Option<(Client, String)>,
    period: Duration,
}

impl LeaseUpdater {
    /// Renews lease `name` (by convention the add-on's name) in `namespace` (the install
    /// namespace) through `client` (the cluster the agent runs on).
    #[must_use]
    pub fn new(client: Client, name: &str, namespace: &str) -> Self {
        Self {
            client,
            name: name.to_string(),
            namespace: namespace.to_string(),
            checks: Vec::new(),
            hub: None,
            period: Duration::from_secs(LEASE_DURATION_SECONDS.unsigned_abs().into()),
        }
    }

    /// Adds health checks; any failing one skips the round.
    #[must_use]
    pub fn with_health_checks(mut self, checks: impl IntoIterator<Item = Arc<dyn HealthCheck>>) -> Self {
        self.checks.extend(checks);
        self
    }

    /// Falls back to the hub (namespace `cluster_name`) when the managed cluster answers
    /// NotFound (upstream's `WithHubLeaseConfig`).
    #[must_use]
    pub fn with_hub_lease_config(mut self, hub: Client, cluster_name: &str) -> Self {
        self.hub = Some((hub, cluster_name.to_string()));
        self
    }

    /// One round: the health checks, then create or renew the lease.
    ///
    /// # Errors
    ///
    /// The managed cluster's error (or, after a NotFound with a hub configured, the hub's).
    pub async fn renew_once(&self) -> Result<Renewal, LeaseError> {
        for check in &self.checks {
            if !check.healthy().await {
                tracing::info!(lease = %self.name, "add-on not healthy, the lease is not renewed");
                return Ok(Renewal::Skipped);
            }
        }
        match renew(&self.client, &self.namespace, &self.name).await {
            Ok(()) => Ok(Renewal::Renewed),
            Err(e) if e.is_not_found() => match &self.hub {
                Some((hub, cluster)) => renew(hub, cluster, &self.name)
                    .await
                    .map(|()| Renewal::RenewedOnHub),
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// Renews forever (run it in a task; drop or abort the task to stop): the first round at
    /// once, then every period with jitter. Errors are logged and retried next round.
    pub async fn run(self) {
        let period = self.period;
        jitter_loop(period, JITTER_FACTOR, || async {
            if let Err(e) = self.renew_once().await {
                tracing::warn!(error = %e, "renew the add-on lease");
            }
        })
        .await;
    }
}

/// Creates the lease or sets its renew time to now.
async fn renew(client: &Client, namespace: &str, name: &str) -> Result<(), LeaseError> {
    let api = Api::<Lease>::namespaced(client.clone(), namespace);
    let now = MicroTime(Timestamp::now());
    let err = |source| (namespace.to_string(), name.to_string(), source);
    match api.get_opt(name).await {
        Ok(None) => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    namespace: Some(namespace.to_string()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    lease_duration_seconds: Some(LEASE_DURATION_SECONDS),
                    renew_time: Some(now),
                    ..LeaseSpec::default()
                }),
            };
            api.create(&PostParams::default(), &lease)
                .await
                .map(|_| ())
                .map_err(|source| {
                    let (namespace, name, source) = err(source);
                    LeaseError::CreateLease {
                        namespace,
                        name,
                        source,
                    }
                })
        }
        Ok(Some(mut lease)) => {
            lease.spec.get_or_insert_with(LeaseSpec::default).renew_time = Some(now);
            api.replace(name, &PostParams::default(), &lease)
                .await
                .map(|_| ())
                .map_err(|source| {
                    let (namespace, name, source) = err(source);
                    LeaseError::UpdateLease {
                        namespace,
                        name,
                        source,
                    }
                })
        }
        Err(source) => {
            let (namespace, name, source) = err(source);
            Err(LeaseError::GetLease {
                namespace,
                name,
                source,
            })
        }
    }
}

/// Runs `round` at once and then again `period` plus up to `factor × period` (random) after
/// each round ends, forever (Kubernetes' sliding `JitterUntil`).
pub(crate) async fn jitter_loop<F, Fut>(period: Duration, factor: f64, mut round: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        round().await;
        tokio::time::sleep(jittered(period, factor)).await;
    }
}

/// `period` plus a random share of up to `factor × period`.
fn jittered(period: Duration, factor: f64) -> Duration {
    let share: f64 = rand::random::<f64>() * factor.max(0.0);
    period + period.mul_f64(share)
}

/// A health check: some pod in `namespace` matching `label_selector` is Running (upstream's
/// `CheckAddonPodFunc`).
#[derive(Clone)]
pub struct AddonPodRunning {
    client: Client,
    namespace: String,
    label_selector: String,
}

impl AddonPodRunning {
    /// Checks the pods of `namespace` matching `label_selector` through `client`.
    #[must_use]
    pub fn new(client: Client, namespace: &str, label_selector: &str) -> Self {
        Self {
            client,
            namespace: namespace.to_string(),
            label_selector: label_selector.to_string(),
        }
    }
}

#[async_trait]
impl HealthCheck for AddonPodRunning {
    async fn healthy(&self) -> bool {
        let api = Api::<Pod>::namespaced(self.client.clone(), &self.namespace);
        match api
            .list(&ListParams::default().labels(&self.label_selector))
            .await
        {
            Ok(pods) => pods
                .items
                .iter()
                .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")),
            Err(e) => {
                tracing::warn!(error = %e, namespace = %self.namespace, "list the add-on pods");
                false
            }
        }
    }
}

/// A health check: the managed cluster's API server answers `/livez` with 200, or, when
/// `/livez` answers 404 or 403, `/healthz` with 200 (upstream's
/// `CheckManagedClusterHealthFunc`).
#[derive(Clone)]
pub struct ManagedClusterHealth {
    client: Client,
}

impl ManagedClusterHealth {
    /// Checks the API server `client` talks to.
    #[must_use]
    pub const fn new(client: Client) -> Self {
        Self { client }
    }

    async fn get(&self, path: &str) -> Result<(), kube::Error> {
        let request = http::Request::get(path)
            .body(Vec::new())
            .map_err(kube::Error::HttpError)?;
        self.client.request_text(request).await.map(|_| ())
    }
}

#[async_trait]
impl HealthCheck for ManagedClusterHealth {
    async fn healthy(&self) -> bool {
        match self.get("/livez").await {
            Ok(()) => true,
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 403 => {
                self.get("/healthz").await.is_ok()
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[test]
    fn jitter_stays_within_the_factor() {
        let period = Duration::from_secs(60);
        for _ in 0..1000 {
            let d = jittered(period, JITTER_FACTOR);
            assert!(d >= period && d <= Duration::from_secs(75), "{d:?}");
        }
        assert_eq!(jittered(period, 0.0), period);
    }

    #[tokio::test(start_paused = true)]
    async fn rounds_run_at_once_then_every_jittered_period_after_the_round_ends() {
        let rounds = Arc::new(AtomicU32::new(0));
        let counter = rounds.clone();
        let task = tokio::spawn(async move {
            jitter_loop(Duration::from_secs(60), JITTER_FACTOR, || {
                let counter = counter.clone();
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    // A slow round: sliding means the next wait starts only after this.
                    tokio::time::sleep(Duration::from_secs(10)).await;
                }
            })
            .await;
        });
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(rounds.load(Ordering::SeqCst), 1);
        // The round ends at 10 s; the next one comes between 70 s and 85 s.
        tokio::time::sleep(Duration::from_secs(69)).await;
        assert_eq!(rounds.load(Ordering::SeqCst), 1);
        tokio::time::sleep(Duration::from_secs(16)).await;
        assert_eq!(rounds.load(Ordering::SeqCst), 2);
        // 850 s more: rounds start every 70 s to 85 s.
        tokio::time::sleep(Duration::from_secs(10 * 85)).await;
        let n = rounds.load(Ordering::SeqCst);
        assert!((11..=14).contains(&n), "{n} rounds");
        task.abort();
    }
}
