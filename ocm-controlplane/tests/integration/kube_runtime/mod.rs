//! kube-runtime against the embedded control plane: `watcher`, `reflector` (with a forced 410
//! re-list after history compaction) and a `Controller` with `finalizer()` on a test CRD.
//!
//! | module | what it covers |
//! |---|---|
//! | `watch` | `watcher`, streaming lists, `reflector` re-listing after a 410, the metadata API |
//! | `controller` | a `Controller` with `finalizer()` on a test CRD |
//!
//! Every test uses its own namespaces and names and cleans up, so it also runs against a real
//! cluster (`OCM_TEST_HUB_KUBECONFIG`); the forced re-list needs the embedded server's
//! `compact()` and is skipped, saying so, against a real cluster.

pub(super) use std::collections::BTreeSet;
pub(super) use std::future::Future;
pub(super) use std::sync::{Arc, Mutex};
pub(super) use std::time::Duration;

pub(super) use futures::StreamExt;
pub(super) use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
pub(super) use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
pub(super) use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
pub(super) use kube::runtime::controller::{Action, Controller};
pub(super) use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
pub(super) use kube::runtime::reflector::{self, ObjectRef};
pub(super) use kube::runtime::watcher;
pub(super) use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
pub(super) use ocm_controlplane::TestEnv;
pub(super) use serde::{Deserialize, Serialize};
pub(super) use serde_json::json;

pub(super) const DEADLINE: Duration = Duration::from_secs(20);

/// The label of every ConfigMap these tests create; watches select it, so objects the server
/// adds on its own (a namespace's `kube-root-ca.crt`) stay out of the assertions.
pub(super) const SUITE: &str = "suite=kube-runtime";

/// A short random suffix so that names do not collide on a shared (real) cluster.
pub(super) fn unique(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..8])
}

/// Polls `check` until it returns `Some`, failing with `what` after [`DEADLINE`].
pub(super) async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {DEADLINE:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(super) async fn create_namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let body: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &body).await.unwrap();
}

/// Deletes a namespace; against the embedded server (no namespace controller yet) its objects stay,
/// which no test here depends on.
pub(super) async fn delete_namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
}

pub(super) fn configmap(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"suite": "kube-runtime"}},
        "data": {"v": value},
    }))
    .unwrap()
}

pub(super) fn names<K: Resource>(objects: &[Arc<K>]) -> BTreeSet<String> {
    objects.iter().filter_map(|o| o.meta().name.clone()).collect()
}

/// What a watcher reported, reduced to names and error codes for assertions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seen {
    Init,
    InitApply(String),
    InitDone,
    Apply(String),
    Delete(String),
    /// An error item; the code when the server sent a Status (410 for an expired resourceVersion).
    Error(Option<u16>),
}

pub(super) fn seen<K: Resource>(item: &Result<watcher::Event<K>, watcher::Error>) -> Seen {
    let name = |o: &K| o.meta().name.clone().unwrap_or_default();
    match item {
        Ok(watcher::Event::Init) => Seen::Init,
        Ok(watcher::Event::InitApply(o)) => Seen::InitApply(name(o)),
        Ok(watcher::Event::InitDone) => Seen::InitDone,
        Ok(watcher::Event::Apply(o)) => Seen::Apply(name(o)),
        Ok(watcher::Event::Delete(o)) => Seen::Delete(name(o)),
        Err(watcher::Error::WatchError(status)) => Seen::Error(Some(status.code)),
        Err(watcher::Error::InitialListFailed(kube::Error::Api(status))) => Seen::Error(Some(status.code)),
        Err(_) => Seen::Error(None),
    }
}

/// Runs a reflector over ConfigMaps in `ns` in the background, recording what its watcher saw.
pub(super) fn spawn_reflector(
    api: Api<ConfigMap>,
    config: watcher::Config,
) -> (
    reflector::Store<ConfigMap>,
    Arc<Mutex<Vec<Seen>>>,
    tokio::task::JoinHandle<()>,
) {
    let (reader, writer) = reflector::store();
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    let task = tokio::spawn(async move {
        let mut stream = reflector::reflector(writer, watcher(api, config)).boxed();
        while let Some(item) = stream.next().await {
            sink.lock().unwrap().push(seen(&item));
        }
    });
    (reader, log, task)
}

mod controller;
mod watch;
