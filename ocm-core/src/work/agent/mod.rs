//! The work agent (ocm-core.md §3): it watches the ManifestWorks of its cluster namespace on the
//! hub, applies their manifests to the managed cluster, records what it applied in an
//! AppliedManifestWork there, reports status back to the hub and cleans up when a work goes.
//!
//! | module | what it does |
//! |---|---|
//! | [`mapper`] | kind → resource and scope, by discovery on the managed cluster |
//! | `apply` | the ManifestWork controller: apply order, update strategies, owner references, conditions, resourceStatus (§3.3, §3.4, §3.7) |
//! | `applied` | the AppliedManifestWork: ensuring it, and deleting what a work no longer holds (§3.2, §3.8) |
//! | `manifest_config` | which `manifestConfigs` entry applies to a manifest (update strategy, feedback and condition rules) |
//! | `finalize` | the work finalizer, deleting a ManifestWork and finalizing its AppliedManifestWork (§3.2, §3.6) |
//! | `eviction` | evicting AppliedManifestWorks whose ManifestWork is gone (§3.10) |
//! | [`executor`] | the executor's permission checks before applying a manifest (§3.9) |
//! | [`status`] | the status controller: Available, status feedback, condition rules (§3.5) |
//! | `patch` | merge patches with optimistic concurrency for status, spec and finalizers (§0.4) |
//!
//! [`run`] starts every controller over one shared ManifestWork store (the cluster namespace on
//! the hub) and one shared AppliedManifestWork store (the managed cluster), and returns when one
//! of them stops.

mod applied;
mod apply;
mod eviction;
pub mod executor;
mod finalize;
mod manifest_config;
pub mod mapper;
mod patch;
pub mod status;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::Api;
use kube::runtime::reflector::{self, ReflectHandle, Store};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::work::v1::{AppliedManifestWork, ManifestWork};
use sha2::{Digest, Sha256};

use crate::metrics::ControllerMetrics;

/// The field manager and user agent the work agent writes as (upstream's default).
pub const FIELD_MANAGER: &str = "work-agent";

/// How many events a shared store buffers for each controller subscribed to it.
const SHARED_BUFFER: usize = 1024;

/// Options of the work agent, with upstream's defaults from [`WorkAgentOptions::new`].
#[derive(Debug, Clone)]
pub struct WorkAgentOptions {
    /// The managed cluster's name: the hub namespace whose ManifestWorks the agent applies.
    pub cluster_name: String,
    /// The agent id written into AppliedManifestWorks (`--agent-id`); `None` or empty means the
    /// hub hash. Upstream's operator passes the Klusterlet's UID.
    pub agent_id: Option<String>,
    /// How often the status of each work is read back from the managed cluster
    /// (`--status-sync-interval`, 10 s).
    pub status_sync_interval: Duration,
    /// How long an AppliedManifestWork whose ManifestWork is gone is kept before it is deleted
    /// (`--appliedmanifestwork-eviction-grace-period`, 60 min; 100 years or more disables eviction).
    pub eviction_grace_period: Duration,
    /// The longest raw JSON status feedback value (`--max-json-raw-length`, 1024).
    pub max_json_raw_length: usize,
    /// How many resource watches Watch-type status feedback may open (`--max-feedback-watch`, 50).
    pub max_feedback_watch: usize,
    /// How many works each controller reconciles at once (`--workload-agent-workers`, 10).
    pub workers: u16,
    /// How long after a successful apply a work is applied again (4 min) ...
    pub apply_resync: Duration,
    /// ... stretched by up to this factor at random (0.5: 4 to 6 minutes).
    pub apply_resync_jitter: f64,
    /// Feature gate `RawFeedbackJsonString` (off): status feedback of structured values as JSON.
    pub raw_feedback_json_string: bool,
    /// Feature gate `ExecutorValidatingCaches` (off): cache executor permission checks.
    pub executor_validating_caches: bool,
    /// The hub hash naming this agent's AppliedManifestWorks (`<hubHash>-<work>`); `None` is
    /// upstream's [`hub_hash`] of the hub URL. A simulator running many clusters' agents against
    /// one managed-cluster store gives each cluster a hash of its own, so that their
    /// AppliedManifestWorks of equally named works do not meet.
    pub hub_hash: Option<String>,
}

impl WorkAgentOptions {
    /// Upstream's defaults for the agent of `cluster_name`.
    #[must_use]
    pub fn new(cluster_name: impl Into<String>) -> Self {
        Self {
            cluster_name: cluster_name.into(),
            agent_id: None,
            status_sync_interval: Duration::from_secs(10),
            eviction_grace_period: Duration::from_secs(60 * 60),
            max_json_raw_length: 1024,
            max_feedback_watch: 50,
            workers: 10,
            apply_resync: Duration::from_secs(4 * 60),
            apply_resync_jitter: 0.5,
            raw_feedback_json_string: false,
            executor_validating_caches: false,
            hub_hash: None,
        }
    }
}

/// Why the work agent stopped.
#[derive(Debug, thiserror::Error)]
pub enum WorkAgentError {
    /// A controller's event stream ended.
    #[error("the {0} controller stopped")]
    ControllerStopped(&'static str),
    /// A shared watch ended.
    #[error("the {0} watch stopped")]
    WatchStopped(&'static str),
    /// A controller could not subscribe to a shared store.
    #[error("subscribing the {0} controller to a shared store")]
    Subscribe(&'static str),
}

/// The hub hash: lowercase hex SHA-256 of the hub's server URL as configured (upstream
/// `helper.HubHash` of `rest.Config.Host`); AppliedManifestWorks are named `<hubHash>-<work>`.
#[must_use]
pub fn hub_hash(server_url: &str) -> String {
    let digest = Sha256::digest(server_url.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What every controller of the agent shares.
pub(crate) struct Context {
    /// The hub (ManifestWorks of the cluster namespace).
    pub(crate) hub: kube::Client,
    /// The managed cluster.
    pub(crate) spoke: kube::Client,
    /// The cluster name (hub namespace).
    pub(crate) cluster: String,
    /// [`hub_hash`] of the hub URL.
    pub(crate) hub_hash: String,
    /// The agent id (option, else the hub hash).
    pub(crate) agent_id: String,
    pub(crate) options: WorkAgentOptions,
    /// The ManifestWorks of the cluster namespace (the one store every controller reads).
    pub(crate) works: Store<ManifestWork>,
    /// The AppliedManifestWorks of the managed cluster.
    pub(crate) applied: Store<AppliedManifestWork>,
    pub(crate) mapper: mapper::ResourceMapper,
    pub(crate) metrics: ControllerMetrics,
    /// The executor permission checks of the apply path (§3.9).
    pub(crate) executor: executor::ExecutorValidator,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("cluster", &self.cluster)
            .field("hub_hash", &self.hub_hash)
            .field("agent_id", &self.agent_id)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// The ManifestWorks API of the cluster namespace.
    pub(crate) fn works_api(&self) -> Api<ManifestWork> {
        Api::namespaced(self.hub.clone(), &self.cluster)
    }

    /// The AppliedManifestWorks API of the managed cluster.
    pub(crate) fn applied_api(&self) -> Api<AppliedManifestWork> {
        Api::all(self.spoke.clone())
    }

    /// The name of the AppliedManifestWork of work `work`: `<hubHash>-<work>`.
    pub(crate) fn applied_name(&self, work: &str) -> String {
        format!("{}-{work}", self.hub_hash)
    }

    /// The ManifestWork name of an AppliedManifestWork of this hub, if `applied` is one.
    pub(crate) fn work_name_of<'a>(&self, applied: &'a str) -> Option<&'a str> {
        applied
            .strip_prefix(self.hub_hash.as_str())
            .and_then(|rest| rest.strip_prefix('-'))
    }
}

/// The writers of the shared stores, handing out one event stream per controller.
pub(crate) struct Informers {
    works: reflector::store::Writer<ManifestWork>,
    applied: reflector::store::Writer<AppliedManifestWork>,
}

impl Informers {
    /// A stream of the ManifestWorks the store sees, for the controller `who`.
    pub(crate) fn works(&self, who: &'static str) -> Result<ReflectHandle<ManifestWork>, WorkAgentError> {
        self.works.subscribe().ok_or(WorkAgentError::Subscribe(who))
    }

    /// A stream of the AppliedManifestWorks the store sees, for the controller `who`.
    pub(crate) fn applied(
        &self,
        who: &'static str,
    ) -> Result<ReflectHandle<AppliedManifestWork>, WorkAgentError> {
        self.applied.subscribe().ok_or(WorkAgentError::Subscribe(who))
    }
}

/// A running controller or watch: resolves when it stops.
pub(crate) type ControllerFuture = BoxFuture<'static, Result<(), WorkAgentError>>;

/// Runs the work agent of `options.cluster_name` until a controller stops; dropping the future
/// stops it. `hub_server_url` is the hub's server URL as configured in the hub kubeconfig (its
/// hash names the AppliedManifestWorks).
///
/// # Errors
/// A controller or watch stopped.
pub async fn run(
    hub: kube::Client,
    hub_server_url: &str,
    spoke: kube::Client,
    options: WorkAgentOptions,
) -> Result<(), WorkAgentError> {
    run_with_metrics(hub, hub_server_url, spoke, options, ControllerMetrics::default()).await
}

/// [`run`], counting reconciliations in `metrics`.
///
/// # Errors
/// A controller or watch stopped.
pub async fn run_with_metrics(
    hub: kube::Client,
    hub_server_url: &str,
    spoke: kube::Client,
    options: WorkAgentOptions,
    metrics: ControllerMetrics,
) -> Result<(), WorkAgentError> {
    let hub_hash = options
        .hub_hash
        .clone()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| hub_hash(hub_server_url));
    let agent_id = options
        .agent_id
        .clone()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| hub_hash.clone());
    let (works, works_writer) = reflector::store_shared::<ManifestWork>(SHARED_BUFFER);
    let (applied, applied_writer) = reflector::store_shared::<AppliedManifestWork>(SHARED_BUFFER);
    let informers = Informers {
        works: works_writer,
        applied: applied_writer,
    };
    let options_caches = options.executor_validating_caches;
    let ctx = Arc::new(Context {
        mapper: mapper::ResourceMapper::new(spoke.clone()),
        cluster: options.cluster_name.clone(),
        hub: hub.clone(),
        spoke: spoke.clone(),
        hub_hash,
        agent_id,
        options,
        works,
        applied,
        metrics,
        executor: executor::ExecutorValidator::new(spoke.clone(), options_caches),
    });
    tracing::info!(cluster = %ctx.cluster, hub_hash = %ctx.hub_hash, agent_id = %ctx.agent_id, "starting the work agent");
    let mut controllers: Vec<ControllerFuture> = vec![
        Box::pin(finalize::run_add_finalizer(
            ctx.clone(),
            informers.works("add-finalizer")?,
        )),
        Box::pin(apply::run(ctx.clone(), informers.works("manifestwork")?)),
        Box::pin(finalize::run_work_finalize(
            ctx.clone(),
            informers.works("manifestwork-finalize")?,
            informers.applied("manifestwork-finalize")?,
        )),
        Box::pin(finalize::run_applied_finalize(
            ctx.clone(),
            informers.applied("appliedmanifestwork-finalize")?,
        )),
        Box::pin(eviction::run(
            ctx.clone(),
            informers.applied("unmanaged-appliedmanifestwork")?,
            informers.works("unmanaged-appliedmanifestwork")?,
        )),
    ];
    controllers.push(Box::pin(status::controller::run(
        ctx.clone(),
        informers.works("status")?,
    )));
    if ctx.options.executor_validating_caches {
        let executor = ctx.executor.clone();
        controllers.push(Box::pin(async move {
            executor.run_cache_invalidation().await.map_err(|error| {
                tracing::warn!(%error, "the executor cache invalidation stopped");
                WorkAgentError::ControllerStopped("executor-cache")
            })?;
            Err(WorkAgentError::ControllerStopped("executor-cache"))
        }));
    }
    // The shared watches feed every controller above; they start last, once all subscribed.
    let Informers { works, applied } = informers;
    let works_api: Api<ManifestWork> = Api::namespaced(hub, &ctx.cluster);
    controllers.push(Box::pin(
        watcher(works_api, watcher::Config::default())
            .default_backoff()
            .reflect_shared(works)
            .for_each(|event| async move {
                if let Err(error) = event {
                    tracing::warn!(%error, "watching ManifestWorks on the hub failed");
                }
            })
            .map(|()| Err(WorkAgentError::WatchStopped("ManifestWork"))),
    ));
    controllers.push(Box::pin(
        watcher(Api::<AppliedManifestWork>::all(spoke), watcher::Config::default())
            .default_backoff()
            .reflect_shared(applied)
            .for_each(|event| async move {
                if let Err(error) = event {
                    tracing::warn!(%error, "watching AppliedManifestWorks failed");
                }
            })
            .map(|()| Err(WorkAgentError::WatchStopped("AppliedManifestWork"))),
    ));
    let (first, _, _) = futures::future::select_all(controllers).await;
    first
}

/// The current time as a Kubernetes `Time`.
pub(crate) fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now())
}

/// `base` stretched by a random factor in `[0, jitter)` (client-go `wait.Jitter`).
pub(crate) fn jitter(base: Duration, jitter: f64) -> Duration {
    let factor = 1.0 + rand::random::<f64>() * jitter.max(0.0);
    base.mul_f64(factor)
}

/// Whether an API call failed with `code`.
/// What a condition shows of an API error: the server's message alone, as client-go's error
/// text is (other errors as they print).
pub(crate) fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn is_status(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == code)
}

/// Per-key exponential backoff (client-go's item exponential failure rate limiter): `base`
/// doubling per failure up to `max`.
#[derive(Debug)]
pub(crate) struct Backoff {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    /// A backoff from `base` to `max`.
    pub(crate) fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The delay before retrying `key` after one more failure.
    pub(crate) fn failed(&self, key: &str) -> Duration {
        let mut failures = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = failures.entry(key.to_string()).or_insert(0);
        let exponent = (*count).min(30);
        *count = count.saturating_add(1);
        self.base.saturating_mul(1u32 << exponent).min(self.max)
    }

    /// Forgets the failures of `key`.
    pub(crate) fn forget(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }
}

/// Logs a failed reconcile: a 409 Conflict at debug level (a race the retry resolves), anything
/// else as a warning.
pub(crate) fn log_failure(object: &str, error: &(dyn std::error::Error + 'static), what: &str) {
    crate::registration::hub::log_failure(object, error, what);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_hash_is_sha256_hex_of_the_url() {
        // sha256("https://127.0.0.1:6443")
        let hash = hub_hash("https://127.0.0.1:6443");
        assert_eq!(hash.len(), 64);
        assert!(
            hash.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(
            hub_hash(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_ne!(hub_hash("https://a:6443"), hub_hash("https://a:6443/"));
    }

    #[test]
    fn defaults_are_upstreams() {
        let options = WorkAgentOptions::new("cluster1");
        assert_eq!(options.cluster_name, "cluster1");
        assert_eq!(options.status_sync_interval, Duration::from_secs(10));
        assert_eq!(options.eviction_grace_period, Duration::from_secs(3600));
        assert_eq!(options.max_json_raw_length, 1024);
        assert_eq!(options.max_feedback_watch, 50);
        assert_eq!(options.workers, 10);
        assert_eq!(options.apply_resync, Duration::from_secs(240));
        assert!(!options.raw_feedback_json_string && !options.executor_validating_caches);
    }

    #[test]
    fn jitter_stays_within_the_factor() {
        for _ in 0..100 {
            let d = jitter(Duration::from_secs(240), 0.5);
            assert!(d >= Duration::from_secs(240) && d < Duration::from_secs(360));
        }
    }

    #[test]
    fn backoff_doubles_up_to_max_and_forgets() {
        let backoff = Backoff::new(Duration::from_millis(5), Duration::from_secs(1000));
        assert_eq!(backoff.failed("w"), Duration::from_millis(5));
        assert_eq!(backoff.failed("w"), Duration::from_millis(10));
        for _ in 0..40 {
            backoff.failed("w");
        }
        assert_eq!(backoff.failed("w"), Duration::from_secs(1000));
        backoff.forget("w");
        assert_eq!(backoff.failed("w"), Duration::from_millis(5));
    }
}
