//! The informers the hub's registration controllers share: one watch and one reflector store
//! per kind (and label selector), built once by [`super::controllers`] and read by every
//! controller that needs that kind, instead of one watch and one cache per controller.
//!
//! | informer | watches | read by |
//! |---|---|---|
//! | `clusters` | every ManagedCluster | accept, taint, lease, cleanup, housekeeping, add-on status, cluster sets |
//! | `sets` | every ManagedClusterSet | cluster sets (status, managed namespaces, default sets, bindings) |
//! | `namespaces` | Namespaces with the cluster-name label | accept |
//! | `cluster_roles` | ClusterRoles with the cluster-name label | accept, housekeeping |
//! | `cluster_role_bindings` | ClusterRoleBindings with the cluster-name label | accept, housekeeping |
//! | `role_bindings` | RoleBindings with the cluster-name label | accept, housekeeping |
//! | `leases` | Leases with the cluster-name label | lease |
//! | `addons` | every ManagedClusterAddOn | add-on status |
//!
//! An informer's watch starts only when a controller subscribed to it or took its store (see
//! [`HubInformers::run`]). Every object is stripped before it is stored ([`strip`]): the
//! `managedFields` and the `kubectl.kubernetes.io/last-applied-configuration` annotation, which
//! no controller reads and which are most of a small object's size; ManagedClusters also lose
//! what only the agent and placement read ([`strip_cluster`]). Nothing writes a cached
//! object back whole (the controllers send merge patches of the fields they own, or server-side
//! apply objects they render), so what is stripped is never lost on the server.
//!
//! A subscriber receives a [`Change`] for every event, after the store took it: a reconcile that
//! a change triggers never reads a copy older than that change. A subscriber that comes after the
//! first list gets every stored object as [`Change::Applied`] first. After a relist (the watch
//! restarted), objects that disappeared meanwhile are reported as [`Change::Deleted`], then every
//! object as applied, then [`Change::Relisted`].

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta2::ManagedClusterSet;
use ocm_api::names::labels;
use serde::de::DeserializeOwned;

use super::HubError;
use super::own_writes::OwnWrites;

/// The annotation `kubectl apply` keeps its last input in; no hub controller reads it.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What a subscriber of an [`Informer`] is told.
#[derive(Debug)]
pub(crate) enum Change<K> {
    /// The object was created or changed (or listed); the store holds this copy.
    Applied(Arc<K>),
    /// The object was deleted (this is its last copy); the store no longer holds it.
    Deleted(Arc<K>),
    /// A (re)list completed: every object was reported again just before.
    Relisted,
}

/// Kinds an informer can hold.
pub(crate) trait Informed:
    Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static
{
}

impl<K> Informed for K where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static
{
}

/// One shared watch of a kind, its store and its subscribers.
pub(crate) struct Informer<K: Informed> {
    api: Api<K>,
    config: watcher::Config,
    kind: &'static str,
    store: Store<K>,
    /// What is dropped from each object before it is stored.
    strip: fn(&mut K),
    /// Taken by the first [`Informer::run`].
    writer: Mutex<Option<Writer<K>>>,
    subscribers: Mutex<Subscribers<K>>,
    /// Whether a controller subscribed or took the store: only then does [`HubInformers::run`]
    /// start the watch.
    used: AtomicBool,
    /// The controllers' writes the store has not caught up with yet.
    own_writes: Arc<OwnWrites>,
}

struct Subscribers<K> {
    /// Set once the first list is in the store (under this lock, so that a new subscriber takes
    /// its snapshot of the store either before or after a dispatch, never during one).
    listed: bool,
    senders: Vec<mpsc::UnboundedSender<Change<K>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<K: Informed> Informer<K> {
    fn new(api: Api<K>, config: watcher::Config, kind: &'static str) -> Arc<Self> {
        Self::stripping(api, config, kind, strip)
    }

    fn stripping(api: Api<K>, config: watcher::Config, kind: &'static str, strip: fn(&mut K)) -> Arc<Self> {
        let (store, writer) = reflector::store();
        Arc::new(Self {
            api,
            config,
            kind,
            store,
            strip,
            writer: Mutex::new(Some(writer)),
            subscribers: Mutex::new(Subscribers {
                listed: false,
                senders: Vec::new(),
            }),
            used: AtomicBool::new(false),
            own_writes: Arc::default(),
        })
    }

    /// The shared store (a cheap handle). Reconciles read it instead of the API server.
    pub(crate) fn store(&self) -> Store<K> {
        self.used.store(true, Ordering::Relaxed);
        self.store.clone()
    }

    /// Where the controllers note their writes of this kind, and ask whether a cached copy is
    /// older than one of them ([`OwnWrites`]); the informer forgets a write once its store holds it.
    pub(crate) fn own_writes(&self) -> Arc<OwnWrites> {
        self.own_writes.clone()
    }

    /// Every change, in order, from now on (and first the stored objects, if listed already).
    pub(crate) fn changes(&self) -> impl Stream<Item = Change<K>> + Send + 'static {
        self.used.store(true, Ordering::Relaxed);
        let (sender, receiver) = mpsc::unbounded();
        let mut subscribers = lock(&self.subscribers);
        if subscribers.listed {
            for object in self.store.state() {
                // The receiver is in hand: sending cannot fail.
                let _ = sender.unbounded_send(Change::Applied(object));
            }
        }
        subscribers.senders.push(sender);
        receiver
    }

    /// The objects created or changed: the trigger of a controller of this kind
    /// (`Controller::for_shared_stream`).
    pub(crate) fn applied(&self) -> impl Stream<Item = Arc<K>> + Send + 'static {
        self.changes().filter_map(|change| {
            futures::future::ready(match change {
                Change::Applied(object) => Some(object),
                Change::Deleted(_) | Change::Relisted => None,
            })
        })
    }

    /// The objects created, changed or deleted: the trigger of a controller of another kind
    /// that depends on these (`Controller::watches_shared_stream`).
    pub(crate) fn touched(&self) -> impl Stream<Item = Arc<K>> + Send + 'static {
        self.changes().filter_map(|change| {
            futures::future::ready(match change {
                Change::Applied(object) | Change::Deleted(object) => Some(object),
                Change::Relisted => None,
            })
        })
    }

    fn used(&self) -> bool {
        self.used.load(Ordering::Relaxed)
    }

    fn dispatch(&self, subscribers: &mut Subscribers<K>, change: &Change<K>) {
        subscribers.senders.retain(|sender| {
            let copy = match change {
                Change::Applied(object) => Change::Applied(object.clone()),
                Change::Deleted(object) => Change::Deleted(object.clone()),
                Change::Relisted => Change::Relisted,
            };
            sender.unbounded_send(copy).is_ok()
        });
    }

    /// Watches the kind, feeding the store and the subscribers, until the watch ends (it does
    /// not: the watcher retries with backoff). A second call returns at once.
    async fn run(self: Arc<Self>) -> Result<(), HubError> {
        let Some(mut writer) = lock(&self.writer).take() else {
            return Ok(());
        };
        let mut events = std::pin::pin!(
            watcher(self.api.clone(), self.config.clone())
                .default_backoff()
                .modify(self.strip)
        );
        // The objects stored when a relist began, to tell which disappeared during it.
        let mut before_relist: Vec<Arc<K>> = Vec::new();
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    tracing::warn!(%error, kind = self.kind, "watching the hub failed");
                    continue;
                }
            };
            if matches!(event, watcher::Event::Init) {
                before_relist = self.store.state();
            }
            writer.apply_watcher_event(&event);
            match event {
                watcher::Event::Apply(object) => {
                    self.own_writes.stored(&object);
                    let stored = self.store.get(&ObjectRef::from_obj(&object));
                    let mut subscribers = lock(&self.subscribers);
                    let change = Change::Applied(stored.unwrap_or_else(|| Arc::new(object)));
                    self.dispatch(&mut subscribers, &change);
                }
                watcher::Event::Delete(object) => {
                    self.own_writes.deleted(&object);
                    let mut subscribers = lock(&self.subscribers);
                    self.dispatch(&mut subscribers, &Change::Deleted(Arc::new(object)));
                }
                watcher::Event::InitDone => {
                    let now: Vec<Arc<K>> = self.store.state();
                    let present: HashSet<ObjectRef<K>> =
                        now.iter().map(|o| ObjectRef::from_obj(o.as_ref())).collect();
                    let mut subscribers = lock(&self.subscribers);
                    for gone in std::mem::take(&mut before_relist) {
                        if !present.contains(&ObjectRef::from_obj(gone.as_ref())) {
                            self.own_writes.deleted(gone.as_ref());
                            self.dispatch(&mut subscribers, &Change::Deleted(gone));
                        }
                    }
                    for object in now {
                        self.own_writes.stored(object.as_ref());
                        self.dispatch(&mut subscribers, &Change::Applied(object));
                    }
                    self.dispatch(&mut subscribers, &Change::Relisted);
                    subscribers.listed = true;
                }
                watcher::Event::Init | watcher::Event::InitApply(_) => {}
            }
        }
        Err(HubError::InformerStopped(self.kind))
    }
}

/// Drops what no hub controller reads from a watched object before it is stored: the
/// `managedFields` and the `kubectl apply` annotation.
pub(crate) fn strip<K: Resource>(object: &mut K) {
    let meta = object.meta_mut();
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
}

/// [`strip`], and what no hub controller reads of a ManagedCluster: the agent's
/// `spec.managedClusterClientConfigs` (with their CA bundles) and its reports of claims, capacity,
/// allocatable and version in the status. (Conditions, managed namespaces, taints, labels,
/// annotations and finalizers are kept.)
pub(crate) fn strip_cluster(cluster: &mut ManagedCluster) {
    strip(cluster);
    cluster.spec.managed_cluster_client_configs = None;
    if let Some(status) = cluster.status.as_mut() {
        status.allocatable = None;
        status.capacity = None;
        status.cluster_claims = None;
        status.version = None;
    }
}

/// The shared informers of the hub controllers (a cheap handle: clones share them).
#[derive(Clone)]
pub struct HubInformers {
    pub(crate) clusters: Arc<Informer<ManagedCluster>>,
    pub(crate) sets: Arc<Informer<ManagedClusterSet>>,
    pub(crate) namespaces: Arc<Informer<Namespace>>,
    pub(crate) cluster_roles: Arc<Informer<ClusterRole>>,
    pub(crate) cluster_role_bindings: Arc<Informer<ClusterRoleBinding>>,
    pub(crate) role_bindings: Arc<Informer<RoleBinding>>,
    pub(crate) leases: Arc<Informer<Lease>>,
    pub(crate) addons: Arc<Informer<ManagedClusterAddOn>>,
}

impl std::fmt::Debug for HubInformers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubInformers").finish_non_exhaustive()
    }
}

impl HubInformers {
    /// The informers of the hub `client` talks to; nothing is watched until [`Self::run`].
    #[must_use]
    pub fn new(client: &kube::Client) -> Self {
        let by_label = watcher::Config::default().labels(labels::CLUSTER_NAME);
        Self {
            clusters: Informer::stripping(
                Api::all(client.clone()),
                watcher::Config::default(),
                "ManagedCluster",
                strip_cluster,
            ),
            sets: Informer::new(
                Api::all(client.clone()),
                watcher::Config::default(),
                "ManagedClusterSet",
            ),
            namespaces: Informer::new(Api::all(client.clone()), by_label.clone(), "Namespace"),
            cluster_roles: Informer::new(Api::all(client.clone()), by_label.clone(), "ClusterRole"),
            cluster_role_bindings: Informer::new(
                Api::all(client.clone()),
                by_label.clone(),
                "ClusterRoleBinding",
            ),
            role_bindings: Informer::new(Api::all(client.clone()), by_label.clone(), "RoleBinding"),
            leases: Informer::new(Api::all(client.clone()), by_label, "Lease"),
            addons: Informer::new(
                Api::all(client.clone()),
                watcher::Config::default(),
                "ManagedClusterAddOn",
            ),
        }
    }

    /// The watches of every informer a controller subscribed to or took the store of so far:
    /// call it after building the controllers. Resolves (with an error) when a watch stops.
    #[must_use]
    pub fn run(&self) -> BoxFuture<'static, Result<(), HubError>> {
        let mut watches: Vec<BoxFuture<'static, Result<(), HubError>>> = Vec::new();
        push_if_used(&mut watches, &self.clusters);
        push_if_used(&mut watches, &self.sets);
        push_if_used(&mut watches, &self.namespaces);
        push_if_used(&mut watches, &self.cluster_roles);
        push_if_used(&mut watches, &self.cluster_role_bindings);
        push_if_used(&mut watches, &self.role_bindings);
        push_if_used(&mut watches, &self.leases);
        push_if_used(&mut watches, &self.addons);
        if watches.is_empty() {
            return futures::future::pending().boxed();
        }
        async move { futures::future::select_all(watches).await.0 }.boxed()
    }
}

fn push_if_used<K: Informed>(
    watches: &mut Vec<BoxFuture<'static, Result<(), HubError>>>,
    informer: &Arc<Informer<K>>,
) {
    if informer.used() {
        watches.push(informer.clone().run().boxed());
    }
}

/// Runs `controller` (built from `informers`) together with the watches it subscribed to,
/// `stopped` telling why a watch stopped: what a controller's stand-alone `run` does.
pub(crate) async fn run_alone<E>(
    informers: HubInformers,
    controller: impl Future<Output = Result<(), E>>,
    stopped: impl FnOnce(HubError) -> E,
) -> Result<(), E> {
    let watches = informers.run();
    tokio::select! {
        result = controller => result,
        result = watches => result.map_err(stopped),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;
    use kube::runtime::reflector::store::Writer as StoreWriter;

    #[test]
    fn strip_drops_managed_fields_and_the_last_applied_annotation() {
        let mut namespace = Namespace {
            metadata: ObjectMeta {
                name: Some("c1".into()),
                managed_fields: Some(vec![Default::default()]),
                annotations: Some(
                    [
                        (LAST_APPLIED.to_string(), "{}".to_string()),
                        ("keep".to_string(), "me".to_string()),
                    ]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        strip(&mut namespace);
        assert!(namespace.metadata.managed_fields.is_none());
        assert_eq!(
            namespace.metadata.annotations,
            Some([("keep".to_string(), "me".to_string())].into())
        );
        namespace.metadata.annotations.as_mut().unwrap().remove("keep");
        namespace
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(LAST_APPLIED.into(), "{}".into());
        strip(&mut namespace);
        assert!(namespace.metadata.annotations.is_none());
    }

    #[test]
    fn strip_cluster_keeps_what_the_controllers_read() {
        let mut cluster: ManagedCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": "c1", "labels": {"a": "b"}, "finalizers": ["f"],
                "managedFields": [{"manager": "m"}]},
            "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 60,
                "managedClusterClientConfigs": [{"url": "https://x", "caBundle": "Zm9v"}],
                "taints": [{"key": "k", "effect": "NoSelect"}]},
            "status": {"conditions": [{"type": "T", "status": "True", "reason": "R", "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "capacity": {"cpu": "2"}, "allocatable": {"cpu": "2"},
                "clusterClaims": [{"name": "id.k8s.io", "value": "x"}],
                "version": {"kubernetes": "v1.36.2"},
                "managedNamespaces": [{"clusterSet": "s", "name": "n"}]},
        }))
        .unwrap();
        strip_cluster(&mut cluster);
        let value = serde_json::to_value(&cluster).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                "metadata": {"name": "c1", "labels": {"a": "b"}, "finalizers": ["f"]},
                "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 60,
                    "taints": [{"key": "k", "effect": "NoSelect"}]},
                "status": {"conditions": [{"type": "T", "status": "True", "reason": "R", "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                    "managedNamespaces": [{"clusterSet": "s", "name": "n"}]},
            })
        );
    }

    fn namespace(name: &str) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        }
    }

    #[tokio::test]
    async fn a_late_subscriber_gets_the_stored_objects_first() {
        let client =
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
        let informers = HubInformers::new(&client);
        let informer = &informers.namespaces;
        assert!(!informer.used());
        // Fill the store as the watch would, and mark the first list done.
        let mut writer: StoreWriter<Namespace> = lock(&informer.writer).take().unwrap();
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(namespace("a")));
        writer.apply_watcher_event(&watcher::Event::InitDone);
        lock(&informer.subscribers).listed = true;
        let mut changes = std::pin::pin!(informer.applied());
        assert!(informer.used());
        let first = changes.next().await.unwrap();
        assert_eq!(first.metadata.name.as_deref(), Some("a"));
        // A second run finds the writer taken and returns.
        assert!(informer.clone().run().await.is_ok());
    }
}
