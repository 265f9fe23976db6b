//! The hub side of registration: the controllers a cluster manager runs.
//!
//! | module | what it does |
//! |---|---|
//! | [`rbac`] | renders the namespace and RBAC granted to an accepted cluster (pure) |
//! | [`accept`] | accepts, denies and cleans up ManagedClusters |
//! | [`shared_roles`] | the shared ClusterRoles, and the RBAC of clusters that are gone |
//! | [`csr_approval`] | approves renewal CSRs (SubjectAccessReview) and CSRs of configured users |
//! | [`lease`] | creates `managed-cluster-lease`, turns Available Unknown when it expires, clock sync |
//! | [`taint`] | the unreachable / unavailable taints derived from the Available condition |
//! | [`bootstrap`] | the bootstrap RBAC for joining clusters and bootstrap kubeconfigs |
//!
//! [`run`] starts every controller with one [`HubOptions`], over one set of shared informers
//! ([`HubInformers`]): one watch and one store per watched kind, whichever controllers read it.

pub mod accept;
pub mod addon_status;
pub mod bootstrap;
pub mod cleanup;
mod cluster_cache;
pub mod clusterset;
pub mod csr_approval;
mod guarded;
mod informers;
pub mod lease;
mod own_writes;
pub mod rbac;
pub mod shared_roles;
pub mod taint;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::Mutex;
use std::time::Duration;

use crate::events::EventRecorder;
use futures::future::BoxFuture;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Reporter};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::metrics::ControllerMetrics;
pub use informers::HubInformers;

/// The field manager (and event reporter) of the hub's registration controllers.
pub const FIELD_MANAGER: &str = "registration-controller";

/// Options of the hub's registration controllers.
#[derive(Debug, Clone)]
pub struct HubOptions {
    /// Labels added to every namespace and RBAC object the hub creates (upstream `--labels`).
    pub extra_labels: BTreeMap<String, String>,
    /// Users whose first CSR is approved automatically (upstream `--auto-approved-csr-users`).
    /// Either bootstrap ServiceAccount (`agent-registration-bootstrap`, or older `clusteradm`'s
    /// `cluster-bootstrap`, in `open-cluster-management`) stands for both.
    pub auto_approved_csr_users: Vec<String>,
    /// Accept new clusters automatically (feature gate `ManagedClusterAutoApproval`): they get
    /// the annotation `open-cluster-management.io/automatically-accepted-on` and
    /// `hubAcceptsClient: true`, once. (The CSRs of [`Self::auto_approved_csr_users`] are approved
    /// whenever that list is not empty.)
    pub auto_accept: bool,
    /// How long to wait before looking again for remaining ManifestWorks (upstream 5 s).
    pub work_cleanup_requeue: Duration,
    /// Options of the resource cleanup of deleted clusters (add-ons, then ManifestWorks).
    pub cleanup: cleanup::CleanupOptions,
    /// Options of the ManagedClusterSet controllers.
    pub cluster_sets: clusterset::ClusterSetOptions,
    /// Options of the hub-side add-on status controller.
    pub addon_status: addon_status::AddonStatusOptions,
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            extra_labels: BTreeMap::new(),
            auto_approved_csr_users: Vec::new(),
            auto_accept: false,
            work_cleanup_requeue: Duration::from_secs(5),
            cleanup: cleanup::CleanupOptions::default(),
            cluster_sets: clusterset::ClusterSetOptions::default(),
            addon_status: addon_status::AddonStatusOptions::default(),
        }
    }
}

/// Why the hub controllers stopped.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// A controller's event stream ended (its watches stopped).
    #[error("the {0} controller stopped")]
    ControllerStopped(&'static str),
    /// A shared informer's watch ended.
    #[error("the shared watch of {0} stopped")]
    InformerStopped(&'static str),
    /// The resource cleanup controller stopped.
    #[error(transparent)]
    Cleanup(#[from] cleanup::CleanupError),
    /// A ManagedClusterSet controller stopped.
    #[error(transparent)]
    ClusterSets(#[from] clusterset::ClusterSetError),
    /// The add-on status controller stopped.
    #[error(transparent)]
    AddonStatus(#[from] addon_status::AddonStatusError),
}

/// A running controller: resolves when it stops.
pub type ControllerFuture = BoxFuture<'static, Result<(), HubError>>;

/// The futures of every hub controller and of the shared watches they read ([`HubInformers`]);
/// [`run`] polls them together. Extend the list to add controllers.
#[must_use]
pub fn controllers(
    client: &kube::Client,
    options: &HubOptions,
    metrics: &ControllerMetrics,
) -> Vec<ControllerFuture> {
    let informers = HubInformers::new(client);
    let mut all: Vec<ControllerFuture> = vec![
        Box::pin(accept::controller(
            client.clone(),
            options.clone(),
            metrics.clone(),
            &informers,
        )),
        Box::pin(shared_roles::controller(
            client.clone(),
            options.clone(),
            metrics.clone(),
            &informers,
        )),
        Box::pin(csr_approval::run(
            client.clone(),
            options.clone(),
            metrics.clone(),
        )),
        Box::pin(lease::controller(client.clone(), metrics.clone(), &informers)),
        Box::pin(taint::controller(client.clone(), metrics.clone(), &informers)),
        Box::pin(err_into(cleanup::controller(
            client.clone(),
            options.cleanup.clone(),
            metrics.clone(),
            &informers,
        ))),
        Box::pin(err_into(clusterset::controllers(
            client.clone(),
            options.cluster_sets.clone(),
            metrics.clone(),
            &informers,
        ))),
        Box::pin(err_into(addon_status::controller(
            client.clone(),
            options.addon_status.clone(),
            metrics.clone(),
            &informers,
        ))),
    ];
    // Last: every controller above has subscribed to what it reads.
    all.push(informers.run());
    all
}

/// Maps a controller's own error into [`HubError`].
async fn err_into<E: Into<HubError>>(
    controller: impl Future<Output = Result<(), E>>,
) -> Result<(), HubError> {
    controller.await.map_err(Into::into)
}

/// Runs every hub registration controller until one stops; dropping the future stops them all.
///
/// # Errors
/// A controller stopped ([`HubError::ControllerStopped`]).
pub async fn run(
    client: kube::Client,
    options: HubOptions,
    metrics: ControllerMetrics,
) -> Result<(), HubError> {
    let (first, _, _) = futures::future::select_all(controllers(&client, &options, &metrics)).await;
    first
}

/// Server-side applies `object` (forced) as [`FIELD_MANAGER`].
pub(crate) async fn apply<K>(api: &Api<K>, object: &K) -> Result<K, kube::Error>
where
    K: Resource + Serialize + DeserializeOwned + Clone + Debug,
{
    api.patch(
        &object.name_any(),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
}

/// Whether `result` failed with NotFound.
pub(crate) fn is_not_found<T>(result: &Result<T, kube::Error>) -> bool {
    matches!(result, Err(kube::Error::Api(status)) if status.code == 404)
}

/// Whether `error` or one of its sources is a 409 Conflict: a routine race with another writer
/// (the object changed since it was read) that the retry resolves, so it is logged at debug level
/// rather than as a warning.
pub(crate) fn is_conflict(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(kube::Error::Api(status)) = error.downcast_ref::<kube::Error>()
            && status.code == 409
        {
            return true;
        }
        current = error.source();
    }
    false
}

/// Logs a failed reconcile or round of `object`: a 409 Conflict at debug level (a routine race
/// with another writer that the retry resolves), any other error as a warning.
pub(crate) fn log_failure(object: &str, error: &(dyn std::error::Error + 'static), what: &str) {
    if is_conflict(error) {
        tracing::debug!(object, %error, "{what}");
    } else {
        tracing::warn!(object, %error, "{what}");
    }
}

/// A recorder of the hub's events.
pub(crate) fn recorder(client: &kube::Client) -> EventRecorder {
    EventRecorder::new(
        client.clone(),
        Reporter {
            controller: FIELD_MANAGER.to_string(),
            instance: None,
        },
    )
}

/// Publishes an event about `object` (in `namespace` when given, e.g. a cluster's namespace for
/// a cluster-scoped ManagedCluster); failures are logged only.
pub(crate) async fn publish<K: Resource<DynamicType = ()>>(
    recorder: &EventRecorder,
    object: &K,
    namespace: Option<&str>,
    warning: bool,
    reason: &str,
    note: String,
) {
    let event = Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.to_string(),
        note: Some(note),
        action: reason.to_string(),
        secondary: None,
    };
    let mut reference = object.object_ref(&());
    if let Some(namespace) = namespace {
        reference.namespace = Some(namespace.to_string());
    }
    if let Err(error) = recorder.publish(&event, &reference).await {
        tracing::debug!(%error, reason, "publishing an event failed");
    }
}

/// Per-key exponential backoff for error policies: 1 s doubling up to 60 s.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    /// The delay before retrying `key` after one more failure.
    pub(crate) fn failed(&self, key: &str) -> Duration {
        let mut failures = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = failures.entry(key.to_string()).or_insert(0);
        *count = count.saturating_add(1);
        Duration::from_secs(1u64 << (*count - 1).min(6)).min(Duration::from_secs(60))
    }

    /// Forgets the failures of `key` after a success.
    pub(crate) fn succeeded(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }
}

/// The current time as a Kubernetes `Time`.
pub(crate) fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_are_found_through_error_sources() {
        let status = |code: u16| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                ..kube::core::Status::default()
            }))
        };
        let conflict = taint::TaintError::PatchTaints {
            cluster: "c1".into(),
            source: status(409),
        };
        assert!(is_conflict(&conflict));
        assert!(is_conflict(&status(409)));
        let not_found = taint::TaintError::PatchTaints {
            cluster: "c1".into(),
            source: status(404),
        };
        assert!(!is_conflict(&not_found));
    }

    #[test]
    fn backoff_doubles_caps_and_resets() {
        let backoff = Backoff::default();
        assert_eq!(backoff.failed("a"), Duration::from_secs(1));
        assert_eq!(backoff.failed("a"), Duration::from_secs(2));
        for _ in 0..10 {
            backoff.failed("a");
        }
        assert_eq!(backoff.failed("a"), Duration::from_secs(60));
        backoff.succeeded("a");
        assert_eq!(backoff.failed("a"), Duration::from_secs(1));
    }
}
