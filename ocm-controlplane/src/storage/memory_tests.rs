//! Tests of the in-memory storage: reads, writes, watches, history, persistence.
use super::*;
use serde_json::json;

fn obj(name: &str) -> Value {
    json!({"metadata": {"name": name}})
}

#[tokio::test]
async fn compacted_reads_expire_while_watches_replay() {
    use futures::StreamExt;
    let s = MemoryStorage::in_memory();
    s.create("/core/configmaps/ns/a", obj("a")).await.unwrap();
    s.update("/core/configmaps/ns/a", obj("a"), None).await.unwrap();
    s.update("/core/configmaps/ns/a", obj("a"), None).await.unwrap();
    s.compact_reads(2);
    assert!(matches!(
        s.list("/core/configmaps/", Some(1)).await,
        Err(StorageError::ReadExpired { .. })
    ));
    assert!(s.list("/core/configmaps/", Some(2)).await.is_ok());
    let mut w = s.watch("/core/configmaps/", 1).await.unwrap();
    assert!(matches!(w.next().await, Some(Ok(WatchItem::Event(e))) if e.rv == 2));
}

#[tokio::test]
async fn create_get_update_delete_with_conflicts() {
    let s = MemoryStorage::in_memory();
    let a = s.create("/core/configmaps/ns/a", obj("a")).await.unwrap();
    assert_eq!(a.rv, 1);
    assert_eq!(a.object["metadata"]["resourceVersion"], "1");
    assert!(matches!(
        s.create("/core/configmaps/ns/a", obj("a")).await,
        Err(StorageError::CreateAlreadyExists { .. })
    ));
    let b = s
        .update("/core/configmaps/ns/a", obj("a"), Some(1))
        .await
        .unwrap();
    assert_eq!(b.rv, 2);
    assert!(matches!(
        s.update("/core/configmaps/ns/a", obj("a"), Some(1)).await,
        Err(StorageError::WriteConflict {
            expected: 1,
            actual: 2,
            ..
        })
    ));
    assert!(matches!(
        s.update("/core/configmaps/ns/missing", obj("x"), None).await,
        Err(StorageError::WriteNotFound { .. })
    ));
    assert!(matches!(
        s.delete("/core/configmaps/ns/a", Some(1)).await,
        Err(StorageError::WriteConflict { .. })
    ));
    let d = s.delete("/core/configmaps/ns/a", Some(2)).await.unwrap();
    assert_eq!(d.rv, 3);
    assert_eq!(d.object["metadata"]["resourceVersion"], "3");
    assert!(s.get("/core/configmaps/ns/a").await.unwrap().is_none());
    assert_eq!(s.current_rv(), 3);
}

#[tokio::test]
async fn rv_is_monotonic_and_list_is_prefix_scoped() {
    let s = MemoryStorage::in_memory();
    let mut last = 0;
    for i in 0..20 {
        let ns = if i % 2 == 0 { "a" } else { "b" };
        let st = s
            .create(&format!("/core/configmaps/{ns}/c{i:02}"), obj("x"))
            .await
            .unwrap();
        assert!(st.rv > last);
        last = st.rv;
    }
    let list = s.list("/core/configmaps/a/", None).await.unwrap();
    assert_eq!(list.items.len(), 10);
    assert_eq!(list.rv, 20);
    let keys: Vec<_> = list.items.iter().map(|(k, _)| k.clone()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

#[tokio::test]
async fn list_at_past_revision_rolls_back() {
    let s = MemoryStorage::in_memory();
    s.create("/g/r/ns/a", obj("a")).await.unwrap(); // 1
    s.create("/g/r/ns/b", obj("b")).await.unwrap(); // 2
    s.update("/g/r/ns/a", json!({"metadata": {"name": "a"}, "v": 2}), None)
        .await
        .unwrap(); // 3
    s.delete("/g/r/ns/b", None).await.unwrap(); // 4
    let at2 = s.list("/g/r/", Some(2)).await.unwrap();
    assert_eq!(at2.items.len(), 2);
    assert_eq!(at2.items[0].1.rv, 1);
    assert!(at2.items[0].1.object.get("v").is_none());
    let at4 = s.list("/g/r/", Some(4)).await.unwrap();
    assert_eq!(at4.items.len(), 1);
    assert!(matches!(
        s.list("/g/r/", Some(9)).await,
        Err(StorageError::ReadTooLarge { .. })
    ));
    s.compact(3);
    assert!(matches!(
        s.list("/g/r/", Some(2)).await,
        Err(StorageError::ReadExpired { .. })
    ));
    assert_eq!(s.list("/g/r/", Some(3)).await.unwrap().items.len(), 2);
}

#[tokio::test]
async fn watch_replays_from_retained_rv_then_follows_live() {
    let s = MemoryStorage::in_memory();
    s.create("/g/r/ns/a", obj("a")).await.unwrap(); // 1
    s.create("/g/other/ns/x", obj("x")).await.unwrap(); // 2
    s.update("/g/r/ns/a", obj("a"), None).await.unwrap(); // 3
    let mut w = s.watch("/g/r/", 0).await.unwrap();
    let mut events = Vec::new();
    while events.len() < 2 {
        if let WatchItem::Event(e) = w.next().await.unwrap().unwrap() {
            // The object before the change, parsed when asked for: none for the create.
            let prev_rv = e
                .prev()
                .map(|p| p.unwrap()["metadata"]["resourceVersion"].clone());
            events.push((e.kind, e.rv, prev_rv));
        }
    }
    assert_eq!(
        events,
        vec![
            (EventType::Added, 1, None),
            (EventType::Modified, 3, Some(json!("1")))
        ]
    );
    s.delete("/g/r/ns/a", None).await.unwrap(); // 4
    loop {
        if let WatchItem::Event(e) = w.next().await.unwrap().unwrap() {
            assert_eq!((e.kind, e.rv), (EventType::Deleted, 4));
            assert_eq!(e.prev().unwrap().unwrap()["metadata"]["resourceVersion"], "3");
            // The last state, at the delete's revision.
            assert_eq!(e.object().unwrap()["metadata"]["resourceVersion"], "4");
            break;
        }
    }
}

#[tokio::test]
async fn watch_from_too_old_rv_expires() {
    let s = MemoryStorage::open(MemoryStorageOptions {
        history_capacity: 3,
        database: None,
    })
    .unwrap();
    for i in 0..10 {
        s.create(&format!("/g/r/ns/{i}"), obj("x")).await.unwrap();
    }
    assert_eq!(s.oldest_rv(), 7);
    assert!(matches!(
        s.watch("/g/r/", 2).await.err(),
        Some(StorageError::ReadExpired {
            requested: 2,
            oldest: 7
        })
    ));
    let mut w = s.watch("/g/r/", 7).await.unwrap();
    let first = w.next().await.unwrap().unwrap();
    assert!(matches!(first, WatchItem::Event(e) if e.rv == 8));
    // A watcher that falls behind the retained history is told so and closed.
    for i in 10..20 {
        s.create(&format!("/g/r/ns/{i}"), obj("x")).await.unwrap();
    }
    let mut saw_expired = false;
    while let Some(item) = w.next().await {
        if item.is_err() {
            saw_expired = true;
        }
    }
    assert!(saw_expired);
}

#[tokio::test]
async fn writes_apply_when_called_and_their_futures_wait_for_durability() {
    let dir = tempfile::tempdir().unwrap();
    let s = MemoryStorage::open(MemoryStorageOptions {
        history_capacity: 100,
        database: Some(dir.path().join("state.redb")),
    })
    .unwrap();
    // Each write below sees the ones before it applied, though none has been awaited yet.
    let create = s.create("/g/r/ns/a", obj("a"));
    let again = s.create("/g/r/ns/a", obj("a"));
    let update = s.update("/g/r/ns/a", json!({"metadata": {"name": "a"}, "v": 1}), Some(1));
    let stale = s.update("/g/r/ns/a", obj("a"), Some(1));
    let delete = s.delete("/g/r/ns/a", Some(2));
    assert!(matches!(
        again.await,
        Err(StorageError::CreateAlreadyExists { .. })
    ));
    assert!(matches!(
        stale.await,
        Err(StorageError::WriteConflict { actual: 2, .. })
    ));
    assert_eq!(delete.await.unwrap().rv, 3);
    // Awaiting a write waits for it to be durable: then reads show it.
    assert_eq!(s.current_rv(), 3);
    assert_eq!(update.await.unwrap().object["v"], 1);
    assert_eq!(create.await.unwrap().rv, 1);
    assert!(s.get("/g/r/ns/a").await.unwrap().is_none());
}

#[tokio::test]
async fn an_objects_changes_share_its_key_with_the_index() {
    let s = MemoryStorage::in_memory();
    let key = "/core/configmaps/ns/shared-key";
    s.create(key, obj("shared-key")).await.unwrap();
    s.update(key, obj("shared-key"), None).await.unwrap();
    s.create("/core/configmaps/ns/other", obj("other")).await.unwrap();
    s.update(key, obj("shared-key"), None).await.unwrap();
    let inner = s.lock();
    let (indexed, _) = inner.objects.get_key_value(key).unwrap();
    let changes: Vec<&Arc<Change>> = inner.history.iter().filter(|c| &*c.key == key).collect();
    assert_eq!(changes.len(), 3);
    for change in changes {
        assert!(
            Arc::ptr_eq(&change.key, indexed),
            "rv {} has its own key",
            change.rv
        );
    }
    let other = inner
        .history
        .iter()
        .find(|c| &*c.key == "/core/configmaps/ns/other")
        .unwrap();
    assert!(!Arc::ptr_eq(&other.key, indexed));
}

#[tokio::test]
async fn persistence_reloads_objects_and_revision() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.redb");
    let options = MemoryStorageOptions {
        history_capacity: 100,
        database: Some(db.clone()),
    };
    {
        let s = MemoryStorage::open(options.clone()).unwrap();
        s.create("/g/r/ns/a", obj("a")).await.unwrap();
        s.create("/g/r/ns/b", obj("b")).await.unwrap();
        s.update("/g/r/ns/a", json!({"metadata": {"name": "a"}, "v": 1}), None)
            .await
            .unwrap();
        s.delete("/g/r/ns/b", None).await.unwrap();
    }
    let s = MemoryStorage::open(options).unwrap();
    assert_eq!(s.current_rv(), 4);
    let a = s.get("/g/r/ns/a").await.unwrap().unwrap();
    assert_eq!(a.rv, 3);
    assert_eq!(a.object["v"], 1);
    assert!(s.get("/g/r/ns/b").await.unwrap().is_none());
    assert_eq!(s.create("/g/r/ns/c", obj("c")).await.unwrap().rv, 5);
    assert!(matches!(
        s.watch("/g/r/", 1).await.err(),
        Some(StorageError::ReadExpired { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_are_committed_together_and_survive_a_reopen() {
    use futures::StreamExt;
    let dir = tempfile::tempdir().unwrap();
    let options = MemoryStorageOptions {
        history_capacity: 1000,
        database: Some(dir.path().join("state.redb")),
    };
    {
        let s = MemoryStorage::open(options.clone()).unwrap();
        let mut watch = s.watch("/g/r/", 0).await.unwrap();
        let writes = (0..200).map(|i| {
            let s = s.clone();
            tokio::spawn(async move { s.create(&format!("/g/r/ns/o{i:03}"), obj("o")).await })
        });
        let written = futures::future::join_all(writes).await;
        let mut rvs: Vec<u64> = written.into_iter().map(|w| w.unwrap().unwrap().rv).collect();
        rvs.sort_unstable();
        assert_eq!(rvs, (1..=200).collect::<Vec<_>>());
        // Every acknowledged write is visible to reads and watches.
        assert_eq!(s.current_rv(), 200);
        assert_eq!(s.list("/g/r/", None).await.unwrap().items.len(), 200);
        let mut seen = 0;
        while seen < 200 {
            if let Some(Ok(WatchItem::Event(_))) = watch.next().await {
                seen += 1;
            }
        }
    }
    let s = MemoryStorage::open(options).unwrap();
    assert_eq!(s.current_rv(), 200);
    assert_eq!(s.list("/g/r/", None).await.unwrap().items.len(), 200);
}

/// A waker that counts its wake-ups.
struct CountingWaker(std::sync::atomic::AtomicUsize);

impl futures::task::ArcWake for CountingWaker {
    fn wake_by_ref(arc_self: &Arc<Self>) {
        arc_self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test]
async fn watchers_wake_for_their_own_resource_type_only() {
    use futures::StreamExt;
    use std::sync::atomic::Ordering;
    use std::task::{Context, Poll};
    let s = MemoryStorage::in_memory();
    let counter = Arc::new(CountingWaker(Default::default()));
    let waker = futures::task::waker(counter.clone());
    let mut cx = Context::from_waker(&waker);
    let mut csrs = s
        .watch("/certificates.k8s.io/certificatesigningrequests/", 0)
        .await
        .unwrap();
    let mut all = s.watch("/", 0).await.unwrap();
    assert!(csrs.poll_next_unpin(&mut cx).is_pending());
    for i in 0..50 {
        s.create(&format!("/coordination.k8s.io/leases/ns/{i}"), obj("l"))
            .await
            .unwrap();
    }
    // Nothing of its type changed: the CSR watcher was not woken.
    assert_eq!(counter.0.load(Ordering::SeqCst), 0);
    s.create("/certificates.k8s.io/certificatesigningrequests/c1", obj("c1"))
        .await
        .unwrap();
    assert!(counter.0.load(Ordering::SeqCst) > 0);
    let Poll::Ready(Some(Ok(WatchItem::Event(e)))) = csrs.poll_next_unpin(&mut cx) else {
        panic!("the CSR's change is ready");
    };
    assert_eq!(
        (e.rv, &*e.key),
        (51, "/certificates.k8s.io/certificatesigningrequests/c1")
    );
    // A watcher of every type is woken by each.
    let all_counter = Arc::new(CountingWaker(Default::default()));
    let all_waker = futures::task::waker(all_counter.clone());
    let mut all_cx = Context::from_waker(&all_waker);
    while let Poll::Ready(Some(Ok(_))) = all.poll_next_unpin(&mut all_cx) {}
    s.create("/coordination.k8s.io/leases/ns/x", obj("x"))
        .await
        .unwrap();
    assert!(all_counter.0.load(Ordering::SeqCst) > 0);
    assert!(matches!(all.next().await, Some(Ok(WatchItem::Event(e))) if e.rv == 52));
}

#[tokio::test]
async fn a_quiet_types_watcher_outlives_other_types_churn_but_not_its_own() {
    use futures::StreamExt;
    let s = MemoryStorage::open(MemoryStorageOptions {
        history_capacity: 4,
        database: None,
    })
    .unwrap();
    s.create("/g/quiet/a", obj("a")).await.unwrap();
    let mut quiet = s.watch("/g/quiet/", 1).await.unwrap();
    let mut busy = s.watch("/g/busy/", 1).await.unwrap();
    // Ten changes of another type push everything of the quiet type's past out of the history.
    for i in 0..10 {
        s.create(&format!("/g/busy/{i}"), obj("b")).await.unwrap();
    }
    assert_eq!(s.oldest_rv(), 7);
    s.create("/g/quiet/b", obj("b")).await.unwrap();
    // The quiet watcher missed nothing of its own: it goes on to its next change.
    let next = quiet.next().await.unwrap().unwrap();
    assert!(matches!(next, WatchItem::Event(e) if e.rv == 12 && &*e.key == "/g/quiet/b"));
    // The busy watcher's changes 2..=7 are gone before it read them: it expires.
    let mut expired = false;
    while let Some(item) = busy.next().await {
        match item {
            Err(StorageError::ReadExpired { requested: 1, .. }) => expired = true,
            Err(other) => panic!("unexpected error {other}"),
            Ok(_) => {}
        }
    }
    assert!(expired);
}

/// A ConfigMap-like object large enough for deflating to pay (it repeats itself).
fn big(name: &str, n: usize) -> Value {
    json!({"metadata": {"name": name, "labels": {"n": n.to_string()}}, "data": {"text": "the same words again and again ".repeat(20)}})
}

#[tokio::test]
async fn superseded_versions_are_deflated_behind_the_shared_tail_and_still_replayed() {
    use futures::StreamExt;
    let s = MemoryStorage::open(MemoryStorageOptions {
        history_capacity: 10_000,
        database: None,
    })
    .unwrap();
    let writes = SHARED_TAIL + 500;
    s.create("/core/configmaps/ns/a", big("a", 0)).await.unwrap();
    for n in 1..writes {
        s.update("/core/configmaps/ns/a", big("a", n), None)
            .await
            .unwrap();
    }
    s.create("/core/configmaps/ns/gone", big("gone", 0))
        .await
        .unwrap();
    s.delete("/core/configmaps/ns/gone", None).await.unwrap();
    for n in 0..SHARED_TAIL {
        s.create(&format!("/core/configmaps/ns/filler-{n}"), obj("f"))
            .await
            .unwrap();
    }
    {
        let inner = s.lock();
        let deflated = |v: &Version| v.plain_bytes().is_none();
        // Every change behind the tail: the version it superseded is deflated and is the very
        // version the change before it wrote; the current version stays plain (the index's).
        let old: Vec<&Arc<Change>> = inner.history.iter().take(writes).collect();
        for pair in old.windows(2) {
            let prev = pair[1].prev.as_ref().unwrap();
            assert!(Arc::ptr_eq(prev, &pair[0].object));
            assert!(deflated(prev), "rv {} not deflated", pair[0].rv);
        }
        assert!(!deflated(&old[writes - 1].object));
        let current = inner.objects.get("/core/configmaps/ns/a").unwrap();
        assert!(Arc::ptr_eq(
            &old[writes - 1].object.plain_bytes().unwrap(),
            &current.bytes
        ));
        // A deleted object's last state, only the history's, is deflated too.
        let deleted = inner
            .history
            .iter()
            .find(|c| c.kind == EventType::Deleted)
            .unwrap();
        assert!(deflated(&deleted.object) && deflated(deleted.prev.as_ref().unwrap()));
        // The tail's changes are plain.
        assert!(
            inner
                .history
                .iter()
                .rev()
                .take(SHARED_TAIL)
                .all(|c| !deflated(&c.object))
        );
    }
    // A watcher replaying the whole history reads every version back, in order.
    let mut w = s.watch("/core/configmaps/ns/", 0).await.unwrap();
    let mut seen = 0;
    while seen < writes {
        let WatchItem::Event(e) = w.next().await.unwrap().unwrap() else {
            continue;
        };
        assert_eq!(e.object().unwrap(), {
            let mut want = big("a", seen);
            set_resource_version(&mut want, e.rv);
            want
        });
        if seen > 0 {
            assert_eq!(
                e.prev().unwrap().unwrap()["metadata"]["labels"]["n"],
                (seen - 1).to_string()
            );
        }
        seen += 1;
    }
    let WatchItem::Event(created) = w.next().await.unwrap().unwrap() else {
        panic!("no event")
    };
    let WatchItem::Event(deleted) = w.next().await.unwrap().unwrap() else {
        panic!("no event")
    };
    assert_eq!(
        (created.kind, deleted.kind),
        (EventType::Added, EventType::Deleted)
    );
    assert_eq!(
        deleted.object().unwrap()["metadata"]["resourceVersion"],
        deleted.rv.to_string()
    );
    // A read at an old revision gets the deflated version back.
    let at = s.list("/core/configmaps/ns/a", Some(10)).await.unwrap();
    assert_eq!(at.items[0].1.object["metadata"]["labels"]["n"], "9");
}
