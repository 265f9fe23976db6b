//! kube-runtime against the embedded control plane: `watcher`, `reflector` (with a forced 410
//! re-list after history compaction) and a `Controller` with `finalizer()` on a test CRD.
//!
//! Every test uses its own namespaces and names and cleans up, so it also runs against a real
//! cluster (`OCM_TEST_HUB_KUBECONFIG`); the forced re-list needs the embedded server's
//! `compact()` and is skipped, saying so, against a real cluster.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher;
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use ocm_controlplane::TestEnv;
use serde::{Deserialize, Serialize};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(20);

/// The label of every ConfigMap these tests create; watches select it, so objects the server
/// adds on its own (a namespace's `kube-root-ca.crt`) stay out of the assertions.
const SUITE: &str = "suite=kube-runtime";

/// A short random suffix so that names do not collide on a shared (real) cluster.
fn unique(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..8])
}

/// Polls `check` until it returns `Some`, failing with `what` after [`DEADLINE`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
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

async fn create_namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let body: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &body).await.unwrap();
}

/// Deletes a namespace; against the embedded server (no namespace controller yet) its objects stay,
/// which no test here depends on.
async fn delete_namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
}

fn configmap(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"suite": "kube-runtime"}},
        "data": {"v": value},
    }))
    .unwrap()
}

fn names<K: Resource>(objects: &[Arc<K>]) -> BTreeSet<String> {
    objects.iter().filter_map(|o| o.meta().name.clone()).collect()
}

/// What a watcher reported, reduced to names and error codes for assertions.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Init,
    InitApply(String),
    InitDone,
    Apply(String),
    Delete(String),
    /// An error item; the code when the server sent a Status (410 for an expired resourceVersion).
    Error(Option<u16>),
}

fn seen<K: Resource>(item: &Result<watcher::Event<K>, watcher::Error>) -> Seen {
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
fn spawn_reflector(
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

#[tokio::test]
async fn watcher_lists_then_follows_changes() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("rt-watcher");
    create_namespace(&client, &ns).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    api.create(&PostParams::default(), &configmap("pre", "1"))
        .await
        .unwrap();

    let mut events = watcher(api.clone(), watcher::Config::default().labels(SUITE)).boxed();
    let mut next = async || {
        tokio::time::timeout(DEADLINE, events.next())
            .await
            .expect("watcher event within the deadline")
            .expect("the watcher stream does not end")
    };
    assert_eq!(seen(&next().await), Seen::Init);
    assert_eq!(seen(&next().await), Seen::InitApply("pre".into()));
    assert_eq!(seen(&next().await), Seen::InitDone);

    api.create(&PostParams::default(), &configmap("post", "1"))
        .await
        .unwrap();
    assert_eq!(seen(&next().await), Seen::Apply("post".into()));
    api.patch(
        "post",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    match next().await.unwrap() {
        watcher::Event::Apply(cm) => assert_eq!(cm.data.unwrap()["v"], "2"),
        other => panic!("expected the patched object, got {other:?}"),
    }
    // An object that stops matching the label selector is reported as deleted.
    api.patch(
        "post",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"suite": null}}})),
    )
    .await
    .unwrap();
    assert_eq!(seen(&next().await), Seen::Delete("post".into()));
    api.delete("pre", &DeleteParams::default()).await.unwrap();
    assert_eq!(seen(&next().await), Seen::Delete("pre".into()));

    api.delete("post", &DeleteParams::default()).await.unwrap();
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn watcher_streaming_list_uses_initial_events() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("rt-stream");
    create_namespace(&client, &ns).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &configmap(name, "1"))
            .await
            .unwrap();
    }
    // sendInitialEvents=true&resourceVersionMatch=NotOlderThan: the initial state arrives as ADDED
    // events closed by the `k8s.io/initial-events-end` bookmark.
    let (store, log, task) = spawn_reflector(
        api.clone(),
        watcher::Config::default().labels(SUITE).streaming_lists(),
    );
    tokio::time::timeout(DEADLINE, store.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(names(&store.state()), BTreeSet::from(["a".into(), "b".into()]));
    {
        let log = log.lock().unwrap();
        let mut init: Vec<Seen> = log.iter().take(4).cloned().collect();
        init[1..3].sort_by_key(|s| format!("{s:?}"));
        assert_eq!(
            init,
            vec![
                Seen::Init,
                Seen::InitApply("a".into()),
                Seen::InitApply("b".into()),
                Seen::InitDone
            ],
            "{log:?}"
        );
    }
    api.create(&PostParams::default(), &configmap("c", "1"))
        .await
        .unwrap();
    eventually("the reflector to see c", || async {
        store.get(&ObjectRef::new("c").within(&ns)).map(|_| ())
    })
    .await;
    task.abort();
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn reflector_relists_after_compaction_410() {
    let env = TestEnv::hub().await.unwrap();
    let Some(control_plane) = env.control_plane() else {
        eprintln!("skipping reflector_relists_after_compaction_410: needs the embedded server's compact()");
        return;
    };
    let client = env.client().await.unwrap();
    let ns = unique("rt-reflect");
    let noise_ns = unique("rt-noise");
    create_namespace(&client, &ns).await;
    create_namespace(&client, &noise_ns).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let noise: Api<ConfigMap> = Api::namespaced(client.clone(), &noise_ns);
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &configmap(name, "1"))
            .await
            .unwrap();
    }

    // Watches end after 1 s (no bookmark is due that early), so the watcher reconnects from the
    // resourceVersion of the last event it saw.
    let (store, log, task) =
        spawn_reflector(api.clone(), watcher::Config::default().labels(SUITE).timeout(1));
    tokio::time::timeout(DEADLINE, store.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(names(&store.state()), BTreeSet::from(["a".into(), "b".into()]));

    // Live changes reach the store.
    api.create(&PostParams::default(), &configmap("c", "1"))
        .await
        .unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    eventually("the store to hold b and c", || async {
        (names(&store.state()) == BTreeSet::from(["b".into(), "c".into()])).then_some(())
    })
    .await;

    // Writes the watcher does not see move the global revision past its last one; compaction then
    // drops that history, so its next reconnect is answered with a 410 Expired ERROR event and it
    // lists again.
    let inits_before = log.lock().unwrap().iter().filter(|s| **s == Seen::Init).count();
    noise
        .create(&PostParams::default(), &configmap("n", "1"))
        .await
        .unwrap();
    control_plane.compact();
    eventually("a 410 and a second initial list", || async {
        let log = log.lock().unwrap();
        let inits = log.iter().filter(|s| **s == Seen::Init).count();
        let expired = log.contains(&Seen::Error(Some(410)));
        (expired && inits > inits_before && log.last() != Some(&Seen::Init)).then_some(())
    })
    .await;
    {
        let log = log.lock().unwrap();
        let at = log.iter().position(|s| *s == Seen::Error(Some(410))).unwrap();
        assert_eq!(
            log.get(at + 1),
            Some(&Seen::Init),
            "a re-list follows the 410: {log:?}"
        );
    }
    eventually("the re-listed store to be ready with b and c", || async {
        let log = log.lock().unwrap().clone();
        let relisted = log
            .iter()
            .rposition(|s| *s == Seen::InitDone)
            .is_some_and(|done| {
                log.iter()
                    .position(|s| *s == Seen::Error(Some(410)))
                    .is_some_and(|e| e < done)
            });
        (relisted && names(&store.state()) == BTreeSet::from(["b".into(), "c".into()])).then_some(())
    })
    .await;

    // After the re-list the watcher follows live changes again.
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    eventually("the store to see b updated after the re-list", || async {
        store
            .get(&ObjectRef::new("b").within(&ns))
            .filter(|cm| cm.data.as_ref().is_some_and(|d| d["v"] == "2"))
            .map(|_| ())
    })
    .await;

    task.abort();
    noise.delete("n", &DeleteParams::default()).await.unwrap();
    delete_namespace(&client, &ns).await;
    delete_namespace(&client, &noise_ns).await;
}

#[tokio::test]
async fn watch_from_compacted_revision_is_expired() {
    let env = TestEnv::hub().await.unwrap();
    let Some(control_plane) = env.control_plane() else {
        eprintln!("skipping watch_from_compacted_revision_is_expired: needs the embedded server's compact()");
        return;
    };
    let client = env.client().await.unwrap();
    let ns = unique("rt-expired");
    create_namespace(&client, &ns).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let old = api
        .create(&PostParams::default(), &configmap("x", "1"))
        .await
        .unwrap()
        .resource_version()
        .unwrap();
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    control_plane.compact();

    // kube-apiserver answers 200 and streams one ERROR event holding a 410 Expired Status.
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), &old)
        .await
        .unwrap()
        .boxed();
    let event = tokio::time::timeout(DEADLINE, stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match event {
        WatchEvent::Error(status) => {
            assert_eq!(
                (status.code, status.reason.as_str()),
                (410, "Expired"),
                "{status:?}"
            );
            assert!(
                status.message.starts_with("too old resource version: "),
                "{status:?}"
            );
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }

    // A list at an exact compacted revision is refused with HTTP 410.
    let err = api
        .list(
            &ListParams::default()
                .at(&old)
                .matching(kube::api::VersionMatch::Exact),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(status) => {
            assert_eq!(
                (status.code, status.reason.as_str()),
                (410, "Expired"),
                "{status:?}"
            );
            assert_eq!(
                status.message,
                "The resourceVersion for the provided list is too old."
            );
        }
        other => panic!("expected a 410 Status, got {other:?}"),
    }
    api.delete("x", &DeleteParams::default()).await.unwrap();
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn metadata_api_and_metadata_watcher() {
    use kube::core::PartialObjectMetaExt;
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("rt-meta");
    create_namespace(&client, &ns).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    api.create(&PostParams::default(), &configmap("m1", "1"))
        .await
        .unwrap();

    // Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1
    let meta = api.get_metadata("m1").await.unwrap();
    assert_eq!(
        (
            meta.types.as_ref().unwrap().api_version.as_str(),
            meta.types.as_ref().unwrap().kind.as_str()
        ),
        ("meta.k8s.io/v1", "PartialObjectMetadata")
    );
    assert_eq!(meta.metadata.labels.as_ref().unwrap()["suite"], "kube-runtime");
    assert!(meta.metadata.uid.is_some() && meta.metadata.managed_fields.is_some());
    // ...List for lists.
    let list = api
        .list_metadata(&ListParams::default().labels(SUITE))
        .await
        .unwrap();
    assert_eq!(list.types.kind, "PartialObjectMetadataList");
    assert_eq!(list.items.len(), 1);
    assert!(list.metadata.resource_version.is_some());

    // A metadata watcher (what Controller::owns uses) lists and watches metadata only.
    let metadata_api: Api<kube::core::PartialObjectMeta<ConfigMap>> = Api::namespaced(client.clone(), &ns);
    let mut events = watcher(metadata_api, watcher::Config::default().labels(SUITE)).boxed();
    let mut next = async || {
        tokio::time::timeout(DEADLINE, events.next())
            .await
            .expect("watcher event within the deadline")
            .expect("the watcher stream does not end")
    };
    assert_eq!(seen(&next().await), Seen::Init);
    assert_eq!(seen(&next().await), Seen::InitApply("m1".into()));
    assert_eq!(seen(&next().await), Seen::InitDone);
    api.create(&PostParams::default(), &configmap("m2", "1"))
        .await
        .unwrap();
    match next().await.unwrap() {
        watcher::Event::Apply(m) => {
            assert_eq!(m.metadata.name.as_deref(), Some("m2"));
            assert_eq!(m.types.unwrap().kind, "PartialObjectMetadata");
        }
        other => panic!("expected m2, got {other:?}"),
    }
    api.delete("m1", &DeleteParams::default()).await.unwrap();
    assert_eq!(seen(&next().await), Seen::Delete("m1".into()));
    // The partial object round-trips into a merge patch of metadata.
    let patch = kube::api::ObjectMeta {
        labels: Some([("extra".to_string(), "yes".to_string())].into()),
        ..Default::default()
    }
    .into_request_partial::<ConfigMap>();
    let patched = api
        .patch_metadata("m2", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["extra"], "yes");

    api.delete("m2", &DeleteParams::default()).await.unwrap();
    delete_namespace(&client, &ns).await;
}

// ---------------------------------------------------------------------------------------------
// Controller + finalizer on a CRD
// ---------------------------------------------------------------------------------------------

/// A test kind: each Widget owns a ConfigMap `widget-<name>` holding its size.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, schemars::JsonSchema)]
#[kube(
    group = "runtime.test.ocm.io",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    printcolumn = r#"{"name":"Size","type":"integer","jsonPath":".spec.size"}"#
)]
struct WidgetSpec {
    size: i32,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    configmap: Option<String>,
}

const FINALIZER: &str = "runtime.test.ocm.io/cleanup";

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ReconcileError(#[from] kube::Error);

#[derive(Default)]
struct Ctx {
    client: Option<kube::Client>,
    /// Names of the widgets whose cleanup ran.
    cleaned: Mutex<Vec<String>>,
    /// Errors of the controller stream (reconcile failures, queue errors), for failure messages.
    errors: Mutex<Vec<String>>,
}

fn owned_name(widget: &Widget) -> String {
    format!("widget-{}", widget.name_any())
}

async fn apply_widget(widget: Arc<Widget>, ctx: &Ctx) -> Result<Action, ReconcileError> {
    let client = ctx.client.clone().unwrap();
    let ns = widget.namespace().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let name = owned_name(&widget);
    let owner = widget.controller_owner_ref(&()).unwrap();
    let desired: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "ownerReferences": [owner]},
        "data": {"size": widget.spec.size.to_string()},
    }))
    .unwrap();
    match cms.get_opt(&name).await? {
        None => {
            cms.create(&PostParams::default(), &desired).await?;
        }
        Some(current) if current.data != desired.data => {
            cms.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"data": desired.data})),
            )
            .await?;
        }
        Some(_) => {}
    }
    let widgets: Api<Widget> = Api::namespaced(client, &ns);
    widgets
        .patch_status(
            &widget.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "observedGeneration": widget.metadata.generation,
                "configmap": name,
            }})),
        )
        .await?;
    Ok(Action::await_change())
}

async fn cleanup_widget(widget: Arc<Widget>, ctx: &Ctx) -> Result<Action, ReconcileError> {
    let client = ctx.client.clone().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client, &widget.namespace().unwrap());
    match cms.delete(&owned_name(&widget), &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(e.into()),
    }
    ctx.cleaned.lock().unwrap().push(widget.name_any());
    Ok(Action::await_change())
}

async fn reconcile(
    widget: Arc<Widget>,
    ctx: Arc<Ctx>,
) -> Result<Action, kube::runtime::finalizer::Error<ReconcileError>> {
    let client = ctx.client.clone().unwrap();
    let api: Api<Widget> = Api::namespaced(client, &widget.namespace().unwrap());
    finalizer(&api, FINALIZER, widget, |event| async move {
        match event {
            FinalizerEvent::Apply(w) => apply_widget(w, &ctx).await,
            FinalizerEvent::Cleanup(w) => cleanup_widget(w, &ctx).await,
        }
    })
    .await
}

async fn install_widget_crd(client: &kube::Client) -> Api<CustomResourceDefinition> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Widget::crd();
    let name = crd.name_any();
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("creating the Widget CRD: {e}"),
    }
    eventually("the Widget CRD to be Established", || async {
        let crd = crds.get(&name).await.ok()?;
        let established = crd
            .status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        established.then_some(())
    })
    .await;
    crds
}

#[tokio::test]
async fn controller_with_finalizer_reconciles_and_cleans_up() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let crds = install_widget_crd(&client).await;
    let ns = unique("rt-ctrl");
    create_namespace(&client, &ns).await;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), &ns);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    // The discovery of the new kind may lag the Established condition for a moment.
    eventually("Widgets to be served", || async {
        widgets.list(&ListParams::default()).await.ok()
    })
    .await;

    let ctx = Arc::new(Ctx {
        client: Some(client.clone()),
        ..Ctx::default()
    });
    let controller = Controller::new(widgets.clone(), watcher::Config::default())
        .owns(cms.clone(), watcher::Config::default())
        .run(
            reconcile,
            |_, _, _| Action::requeue(Duration::from_millis(200)),
            ctx.clone(),
        );
    let sink = ctx.clone();
    let task = tokio::spawn(async move {
        let mut results = controller.boxed();
        while let Some(result) = results.next().await {
            if let Err(e) = result {
                // Shown with the test's output when it fails.
                eprintln!("controller error: {e:?}");
                sink.errors.lock().unwrap().push(format!("{e:?}"));
            }
        }
    });
    let errors = || ctx.errors.lock().unwrap().clone();

    // Create: the finalizer is added first, then the owned ConfigMap and the status are written.
    let widget = Widget::new("w1", WidgetSpec { size: 3 });
    widgets.create(&PostParams::default(), &widget).await.unwrap();
    let reconciled = eventually("w1 to carry the finalizer and a status", || async {
        let w = widgets.get("w1").await.ok()?;
        let done = w.finalizers().iter().any(|f| f == FINALIZER)
            && w.status.as_ref().and_then(|s| s.observed_generation) == Some(1);
        done.then_some(w)
    })
    .await;
    assert_eq!(reconciled.finalizers(), [FINALIZER.to_string()], "{:?}", errors());
    assert_eq!(reconciled.status.unwrap().configmap.as_deref(), Some("widget-w1"));
    let owned = cms.get("widget-w1").await.unwrap();
    assert_eq!(owned.data.unwrap()["size"], "3");
    let owner = &owned.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("Widget", "w1", Some(true))
    );
    assert_eq!(Some(&owner.uid), reconciled.metadata.uid.as_ref());

    // A spec change bumps the generation and is reconciled into the ConfigMap.
    widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 5}})),
        )
        .await
        .unwrap();
    eventually("the size change to be reconciled", || async {
        let cm = cms.get("widget-w1").await.ok()?;
        let w = widgets.get("w1").await.ok()?;
        let done = cm.data.as_ref().is_some_and(|d| d["size"] == "5")
            && w.status.as_ref().and_then(|s| s.observed_generation) == Some(2);
        done.then_some(())
    })
    .await;

    // The owned ConfigMap is watched: deleting it behind the controller's back recreates it.
    cms.delete("widget-w1", &DeleteParams::default()).await.unwrap();
    eventually("the owned ConfigMap to be recreated", || async {
        cms.get_opt("widget-w1").await.ok().flatten()
    })
    .await;

    // Delete: the finalizer holds the object (deletionTimestamp set) until cleanup has run, then
    // the finalizer is removed and the object disappears.
    widgets.delete("w1", &DeleteParams::default()).await.unwrap();
    eventually("w1 to be gone", || async {
        matches!(widgets.get_opt("w1").await, Ok(None)).then_some(())
    })
    .await;
    assert_eq!(
        *ctx.cleaned.lock().unwrap(),
        vec!["w1".to_string()],
        "{:?}",
        errors()
    );
    assert!(
        cms.get_opt("widget-w1").await.unwrap().is_none(),
        "cleanup deleted the owned ConfigMap"
    );

    // A widget created with a foreign finalizer already present gets ours appended (JSON patch
    // `test` of the whole list, then `add` at `/-`), and deletion waits for both.
    let mut second = Widget::new("w2", WidgetSpec { size: 1 });
    second.metadata.finalizers = Some(vec!["example.com/other".into()]);
    widgets.create(&PostParams::default(), &second).await.unwrap();
    eventually("w2 to carry both finalizers", || async {
        let w = widgets.get("w2").await.ok()?;
        (w.finalizers() == ["example.com/other".to_string(), FINALIZER.to_string()]).then_some(())
    })
    .await;
    widgets.delete("w2", &DeleteParams::default()).await.unwrap();
    let held = eventually("w2's cleanup to run and our finalizer to be removed", || async {
        let w = widgets.get("w2").await.ok()?;
        (w.finalizers() == ["example.com/other".to_string()]).then_some(w)
    })
    .await;
    assert!(held.metadata.deletion_timestamp.is_some());
    assert!(ctx.cleaned.lock().unwrap().contains(&"w2".to_string()));
    widgets
        .patch(
            "w2",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    eventually("w2 to be gone", || async {
        matches!(widgets.get_opt("w2").await, Ok(None)).then_some(())
    })
    .await;

    task.abort();
    delete_namespace(&client, &ns).await;
    crds.delete(&Widget::crd().name_any(), &DeleteParams::default())
        .await
        .unwrap();
}
