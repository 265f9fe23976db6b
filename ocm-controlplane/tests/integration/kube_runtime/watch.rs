//! `watcher`, streaming lists, `reflector` re-listing after compaction, the metadata API.

use super::*;

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
