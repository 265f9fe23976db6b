//! kube-rs against the embedded control plane: CRUD, patch, conflicts, watch, CRDs.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use ocm_controlplane::TestEnv;
use serde_json::json;

fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "data": data.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
    }))
    .unwrap()
}

async fn namespace(client: &kube::Client, name: &str) {
    let ns: Api<Namespace> = Api::all(client.clone());
    let body: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    ns.create(&PostParams::default(), &body).await.unwrap();
}

#[tokio::test]
async fn configmap_crud_patch_conflict() {
    let env = TestEnv::start().await.unwrap();
    let client = env.client().await.unwrap();
    namespace(&client, "t1").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "t1");
    let created = api
        .create(&PostParams::default(), &cm("c1", &[("a", "1")]))
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some());
    let got = api.get("c1").await.unwrap();
    assert_eq!(got.data.as_ref().unwrap()["a"], "1");
    let list = api.list(&ListParams::default().labels("app=demo")).await.unwrap();
    assert_eq!(list.items.len(), 1);

    let mut changed = got.clone();
    changed.data.as_mut().unwrap().insert("b".into(), "2".into());
    let replaced = api.replace("c1", &PostParams::default(), &changed).await.unwrap();
    assert_ne!(replaced.metadata.resource_version, got.metadata.resource_version);
    // The stale object conflicts.
    let err = api
        .replace("c1", &PostParams::default(), &changed)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref e) if e.code == 409 && e.reason == "Conflict"),
        "{err:?}"
    );

    let merged = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": null, "c": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(merged.data.as_ref().unwrap().len(), 2);
    let patched = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([{"op": "replace", "path": "/data/b", "value": "x"}])).unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.as_ref().unwrap()["b"], "x");

    api.delete("c1", &DeleteParams::default()).await.unwrap();
    let err = api.get("c1").await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref e) if e.code == 404));
}

#[tokio::test]
async fn watch_delivers_events_in_order() {
    let env = TestEnv::start().await.unwrap();
    let client = env.client().await.unwrap();
    namespace(&client, "w1").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "w1");
    let list = api.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &cm("a", &[("k", "1")]))
        .await
        .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let mut kinds = Vec::new();
    while kinds.len() < 3 {
        let ev = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match ev {
            WatchEvent::Added(_) => kinds.push("ADDED"),
            WatchEvent::Modified(_) => kinds.push("MODIFIED"),
            WatchEvent::Deleted(_) => kinds.push("DELETED"),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(kinds, vec!["ADDED", "MODIFIED", "DELETED"]);
}

#[tokio::test]
async fn watcher_runtime_sees_objects() {
    use kube::runtime::{WatchStreamExt, watcher};
    let env = TestEnv::start().await.unwrap();
    let client = env.client().await.unwrap();
    namespace(&client, "r1").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "r1");
    api.create(&PostParams::default(), &cm("pre", &[])).await.unwrap();
    // kube-root-ca.crt is in every namespace, as on a real cluster.
    let mut objects = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .try_filter(|cm| std::future::ready(cm.metadata.name.as_deref() != Some("kube-root-ca.crt")))
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), objects.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.metadata.name.as_deref(), Some("pre"));
    api.create(&PostParams::default(), &cm("post", &[]))
        .await
        .unwrap();
    let second = tokio::time::timeout(Duration::from_secs(10), objects.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(second.metadata.name.as_deref(), Some("post"));
}

#[tokio::test]
async fn ocm_crds_install_and_serve() {
    let env = TestEnv::start().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    let gvk = kube::api::GroupVersionKind::gvk("cluster.open-cluster-management.io", "v1", "ManagedCluster");
    let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, "managedclusters");
    let api: Api<kube::api::DynamicObject> = Api::all_with(client, &ar);
    let obj: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": "c1"}, "spec": {"hubAcceptsClient": true}, "status": {"ignored": true}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.data.get("status").is_none());
    let bad: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": "c2"}, "spec": {"hubAcceptsClient": "yes"}
    }))
    .unwrap();
    let err = api.create(&PostParams::default(), &bad).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref e) if e.code == 422), "{err:?}");
}

/// A watch selecting one name (in a namespace, and across namespaces) gets that object's events
/// only — not those of names that begin or end like it, nor of the same name elsewhere — with
/// their kinds, as kube-apiserver sends them.
#[tokio::test]
async fn a_name_selected_watch_sees_only_that_name() {
    use crate::garbage_collection::{create_namespace, delete_namespace, unique};
    // The hub of OCM_TEST_HUB_KUBECONFIG when set: kube-apiserver answers the same.
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let (ns, other) = (unique("watch-name"), unique("watch-name"));
    create_namespace(&client, &ns).await;
    create_namespace(&client, &other).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let params = WatchParams::default().fields("metadata.name=w").timeout(20);
    let mut here = api.watch(&params, &rv).await.unwrap().boxed();
    let everywhere_api: Api<ConfigMap> = Api::all(client.clone());
    let mut everywhere = everywhere_api.watch(&params, &rv).await.unwrap().boxed();

    let elsewhere: Api<ConfigMap> = Api::namespaced(client.clone(), &other);
    for name in ["wa", "aw", "w"] {
        api.create(&PostParams::default(), &cm(name, &[("k", "1")]))
            .await
            .unwrap();
    }
    elsewhere
        .create(&PostParams::default(), &cm("w", &[("k", "1")]))
        .await
        .unwrap();
    for name in ["wa", "w"] {
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "2"}})),
        )
        .await
        .unwrap();
    }
    for name in ["aw", "w"] {
        api.delete(name, &DeleteParams::default()).await.unwrap();
    }

    async fn next_events(
        stream: &mut (impl futures::Stream<Item = Result<WatchEvent<ConfigMap>, kube::Error>> + Unpin),
        count: usize,
    ) -> Vec<(&'static str, String, String)> {
        let mut seen = Vec::new();
        while seen.len() < count {
            let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
                .await
                .expect("an event within 10 s")
                .expect("the watch is open")
                .unwrap();
            let (kind, object) = match event {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(e) => panic!("{e:?}"),
            };
            seen.push((
                kind,
                object.metadata.namespace.unwrap_or_default(),
                object.metadata.name.unwrap_or_default(),
            ));
        }
        seen
    }
    let w = |kind: &'static str, ns: &str| (kind, ns.to_string(), "w".to_string());
    assert_eq!(
        next_events(&mut here, 3).await,
        [w("ADDED", &ns), w("MODIFIED", &ns), w("DELETED", &ns)]
    );
    let mut across = next_events(&mut everywhere, 4).await;
    across.sort();
    let mut want = vec![
        w("ADDED", &ns),
        w("MODIFIED", &ns),
        w("DELETED", &ns),
        w("ADDED", &other),
    ];
    want.sort();
    assert_eq!(across, want);
    // Nothing else arrives: the next event, if any, is a bookmark or the end of the watch.
    let extra = tokio::time::timeout(Duration::from_millis(500), here.next()).await;
    assert!(
        !matches!(
            extra,
            Ok(Some(Ok(WatchEvent::Added(_)
                | WatchEvent::Modified(_)
                | WatchEvent::Deleted(_))))
        ),
        "{extra:?}"
    );
    delete_namespace(&client, &ns).await;
    delete_namespace(&client, &other).await;
}
