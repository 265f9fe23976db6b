//! Reading the applied objects for the status controller, and the `Watch` feedback scrape type.
//!
//! An object is read from a watch cache when one is running and has listed its objects, else
//! with a live GET. A manifest whose settings ask for `feedbackScrapeType: Watch` registers the
//! work with a watch of its object's resource in its namespace (one watch per resource and
//! namespace, shared by works, at most `max-feedback-watch` of them — beyond that the manifest
//! is silently polled); every change of a registered object then wakes the work's status sync
//! at once. A manifest back on `Poll`, or a work that is gone, unregisters; a watch nobody is
//! registered with stops.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use ocm_api::conditions::Status;
use ocm_api::meta::Condition;
use ocm_api::names::conditions::work::manifest::{AVAILABLE, reasons};
use ocm_api::work::v1::ManifestResourceMeta;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

/// A watched resource in one namespace (`""`: cluster-scoped or all namespaces).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct WatchKey {
    group: String,
    version: String,
    resource: String,
    namespace: String,
}

impl WatchKey {
    fn of(meta: &ManifestResourceMeta) -> Self {
        Self {
            group: meta.group.clone().unwrap_or_default(),
            version: meta.version.clone().unwrap_or_default(),
            resource: meta.resource.clone().unwrap_or_default(),
            namespace: meta.namespace.clone().unwrap_or_default(),
        }
    }
}

/// One running watch and the works registered with it, by object name.
struct Watch {
    store: Store<DynamicObject>,
    listed: Arc<AtomicBool>,
    /// `(work name, object name)`.
    registrations: Arc<Mutex<HashSet<(String, String)>>>,
    task: JoinHandle<()>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads applied objects and runs the `Watch` scrape type's watches.
pub(crate) struct ObjectReader {
    spoke: Client,
    max_watches: usize,
    wake: UnboundedSender<String>,
    watches: Mutex<HashMap<WatchKey, Watch>>,
}

impl std::fmt::Debug for ObjectReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectReader")
            .field("max_watches", &self.max_watches)
            .finish_non_exhaustive()
    }
}

fn api_resource(meta: &ManifestResourceMeta) -> ApiResource {
    let gvk = GroupVersionKind::gvk(
        meta.group.as_deref().unwrap_or_default(),
        meta.version.as_deref().unwrap_or_default(),
        meta.kind.as_deref().unwrap_or_default(),
    );
    ApiResource::from_gvk_with_plural(&gvk, meta.resource.as_deref().unwrap_or_default())
}

/// The object with `apiVersion` and `kind` filled in from the status entry where missing (list
/// items of a watch carry none).
fn with_type(meta: &ManifestResourceMeta, object: Option<Value>) -> Option<Value> {
    let mut object = object?;
    if let Some(map) = object.as_object_mut() {
        let group = meta.group.as_deref().unwrap_or_default();
        let version = meta.version.as_deref().unwrap_or_default();
        if !map.contains_key("apiVersion") {
            let api_version = if group.is_empty() {
                version.to_string()
            } else {
                format!("{group}/{version}")
            };
            map.insert("apiVersion".into(), Value::String(api_version));
        }
        if let Some(kind) = meta.kind.as_deref().filter(|_| !map.contains_key("kind")) {
            map.insert("kind".into(), Value::String(kind.to_string()));
        }
    }
    Some(object)
}

fn available(status: Status, reason: &str, message: &str, now: &Time) -> Condition {
    Condition::new(AVAILABLE, status, reason, message, now.clone())
}

impl ObjectReader {
    /// A reader asking `spoke`, waking works through `wake` when a watched object changes.
    pub(crate) fn new(spoke: Client, max_watches: usize, wake: UnboundedSender<String>) -> Self {
        Self {
            spoke,
            max_watches,
            wake,
            watches: Mutex::new(HashMap::new()),
        }
    }

    /// The object a manifest status entry names, and its manifest condition `Available`
    /// (without the object when it is missing or could not be read).
    pub(crate) async fn get(&self, meta: &ManifestResourceMeta, now: &Time) -> (Option<Value>, Condition) {
        let incomplete = [&meta.resource, &meta.version, &meta.name]
            .iter()
            .any(|f| f.as_deref().unwrap_or_default().is_empty());
        if incomplete {
            return (
                None,
                available(
                    Status::Unknown,
                    reasons::INCOMPLETE_RESOURCE_META,
                    "Resource meta is incomplete",
                    now,
                ),
            );
        }
        match self.read(meta).await {
            Ok(Some(object)) => (
                Some(object),
                available(
                    Status::True,
                    reasons::RESOURCE_AVAILABLE,
                    "Resource is available",
                    now,
                ),
            ),
            Ok(None) => (
                None,
                available(
                    Status::False,
                    reasons::RESOURCE_NOT_AVAILABLE,
                    "Resource is not available",
                    now,
                ),
            ),
            Err(e) => (
                None,
                available(
                    Status::Unknown,
                    reasons::FETCHING_RESOURCE_FAILED,
                    &format!("Failed to fetch resource: {e}"),
                    now,
                ),
            ),
        }
    }

    /// The object from a listed watch, else from the API server; `None` when it does not exist.
    async fn read(&self, meta: &ManifestResourceMeta) -> Result<Option<Value>, kube::Error> {
        let name = meta.name.as_deref().unwrap_or_default();
        let namespace = meta.namespace.as_deref().unwrap_or_default();
        let cached = {
            let watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
            watches
                .get(&WatchKey::of(meta))
                .filter(|w| w.listed.load(Ordering::Acquire))
                .map(|w| {
                    let resource = api_resource(meta);
                    let mut key = ObjectRef::<DynamicObject>::new_with(name, resource);
                    if !namespace.is_empty() {
                        key = key.within(namespace);
                    }
                    w.store.get(&key)
                })
        };
        if let Some(found) = cached {
            return Ok(found.and_then(|o| with_type(meta, serde_json::to_value(o.as_ref()).ok())));
        }
        let resource = api_resource(meta);
        let api: Api<DynamicObject> = if namespace.is_empty() {
            Api::all_with(self.spoke.clone(), &resource)
        } else {
            Api::namespaced_with(self.spoke.clone(), namespace, &resource)
        };
        let object = api.get_opt(name).await?;
        Ok(object.and_then(|o| with_type(meta, serde_json::to_value(o).ok())))
    }

    /// Registers `work` for changes of the object `meta` names, starting the watch of its
    /// resource if needed and allowed.
    pub(crate) fn register(&self, work: &str, meta: &ManifestResourceMeta) {
        let key = WatchKey::of(meta);
        let registration = (work.to_string(), meta.name.clone().unwrap_or_default());
        let mut watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(watch) = watches.get(&key) {
            watch
                .registrations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(registration);
            return;
        }
        if watches.len() >= self.max_watches {
            tracing::info!(
                resource = %key.resource,
                namespace = %key.namespace,
                "the number of feedback watches reached its limit, polling instead"
            );
            return;
        }
        let watch = self.start(meta, HashSet::from([registration]));
        watches.insert(key, watch);
    }

    fn start(&self, meta: &ManifestResourceMeta, registered: HashSet<(String, String)>) -> Watch {
        let resource = api_resource(meta);
        let namespace = meta.namespace.clone().unwrap_or_default();
        let api: Api<DynamicObject> = if namespace.is_empty() {
            Api::all_with(self.spoke.clone(), &resource)
        } else {
            Api::namespaced_with(self.spoke.clone(), &namespace, &resource)
        };
        let writer = reflector::store::Writer::<DynamicObject>::new(resource);
        let store = writer.as_reader();
        let listed = Arc::new(AtomicBool::new(false));
        let registrations = Arc::new(Mutex::new(registered));
        let task = {
            let listed = Arc::clone(&listed);
            let registrations = Arc::clone(&registrations);
            let wake = self.wake.clone();
            let ready = store.clone();
            tokio::spawn(async move {
                let marker = tokio::spawn(async move {
                    if ready.wait_until_ready().await.is_ok() {
                        listed.store(true, Ordering::Release);
                    }
                });
                let mut events = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .reflect(writer)
                    .boxed();
                while let Some(event) = events.next().await {
                    let object = match event {
                        Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => o,
                        Ok(_) => continue,
                        Err(e) => {
                            tracing::debug!(error = %e, "feedback watch failed, retrying");
                            continue;
                        }
                    };
                    let name = object.name_any();
                    let works: Vec<String> = registrations
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .iter()
                        .filter(|(_, object_name)| *object_name == name)
                        .map(|(work, _)| work.clone())
                        .collect();
                    for work in works {
                        if wake.send(work).is_err() {
                            marker.abort();
                            return;
                        }
                    }
                }
                marker.abort();
            })
        };
        Watch {
            store,
            listed,
            registrations,
            task,
        }
    }

    /// Unregisters `work` from the object `meta` names; a watch left without registrations
    /// stops.
    pub(crate) fn unregister(&self, work: &str, meta: &ManifestResourceMeta) {
        let key = WatchKey::of(meta);
        let mut watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(watch) = watches.get(&key) else {
            return;
        };
        let empty = {
            let mut registrations = watch.registrations.lock().unwrap_or_else(PoisonError::into_inner);
            registrations.remove(&(work.to_string(), meta.name.clone().unwrap_or_default()));
            registrations.is_empty()
        };
        if empty {
            watches.remove(&key);
        }
    }

    /// Unregisters the works `alive` says are gone from every watch.
    pub(crate) fn retain_works(&self, alive: impl Fn(&str) -> bool) {
        let mut watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        watches.retain(|_, watch| {
            let mut registrations = watch.registrations.lock().unwrap_or_else(PoisonError::into_inner);
            registrations.retain(|(work, _)| alive(work));
            !registrations.is_empty()
        });
    }
}
