//! Durability and concurrency: concurrent writers with optimistic concurrency lose no update, a
//! watch over 100 000 events delivers every one in order, and a server killed with SIGKILL keeps
//! every write it acknowledged (run as the built `ocm-controlplane` binary).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use ocm_controlplane::TestEnv;
use serde_json::json;

fn unique(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..8])
}

fn configmap(name: &str, data: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap()
}

async fn create_namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let body: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &body).await.unwrap();
}

fn rv_of(cm: &ConfigMap) -> u64 {
    cm.metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .expect("numeric resourceVersion")
}

const WRITERS: usize = 16;
const UPDATES_PER_WRITER: usize = 25;

/// 16 writers increment one ConfigMap (a shared counter and one counter per writer) with
/// read-modify-write and retries on 409 Conflict: no update is lost, none applied twice.
#[tokio::test]
async fn concurrent_writers_with_conflict_retries_lose_no_update() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("writers");
    create_namespace(&client, &ns).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    api.create(
        &PostParams::default(),
        &configmap("counter", json!({"total": "0"})),
    )
    .await
    .unwrap();

    let conflicts = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let api = api.clone();
        let conflicts = conflicts.clone();
        writers.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            let key = format!("w{w:02}");
            for _ in 0..UPDATES_PER_WRITER {
                loop {
                    let mut cm = api.get("counter").await.unwrap();
                    let data = cm.data.get_or_insert_with(Default::default);
                    let bump = |v: Option<&String>| v.map_or(0, |s| s.parse::<usize>().unwrap()) + 1;
                    let total = bump(data.get("total"));
                    let mine = bump(data.get(&key));
                    data.insert("total".into(), total.to_string());
                    data.insert(key.clone(), mine.to_string());
                    match api.replace("counter", &PostParams::default(), &cm).await {
                        Ok(written) => {
                            acked.push(rv_of(&written));
                            break;
                        }
                        Err(kube::Error::Api(e)) if e.code == 409 => {
                            assert_eq!(e.reason, "Conflict", "{e:?}");
                            conflicts.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("update failed: {e}"),
                    }
                }
            }
            acked
        }));
    }
    let mut rvs = Vec::new();
    for w in writers {
        rvs.extend(w.await.unwrap());
    }
    let fin = api.get("counter").await.unwrap();
    let data = fin.data.unwrap();
    assert_eq!(data["total"], (WRITERS * UPDATES_PER_WRITER).to_string());
    for w in 0..WRITERS {
        assert_eq!(
            data[&format!("w{w:02}")],
            UPDATES_PER_WRITER.to_string(),
            "writer {w}"
        );
    }
    let distinct: BTreeSet<u64> = rvs.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        WRITERS * UPDATES_PER_WRITER,
        "every acknowledged update has its own resourceVersion"
    );
    assert_eq!(
        rv_of_str(fin.metadata.resource_version.as_deref()),
        *distinct.last().unwrap()
    );
    eprintln!(
        "{} updates by {WRITERS} writers, {} conflicts retried",
        WRITERS * UPDATES_PER_WRITER,
        conflicts.load(Ordering::Relaxed)
    );
    let namespaces: Api<Namespace> = Api::all(client);
    let _ = namespaces.delete(&ns, &Default::default()).await;
}

fn rv_of_str(rv: Option<&str>) -> u64 {
    rv.and_then(|rv| rv.parse().ok())
        .expect("numeric resourceVersion")
}

const WATCH_EVENTS: usize = 100_000;
const WATCH_WRITERS: usize = 32;

/// Watches from before 100 000 concurrent creates (each one after the first from the last
/// resourceVersion the previous one delivered) receive an ADDED event for each, in strictly
/// increasing resourceVersion order, with none missing or repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_over_100k_events_delivers_all_in_order() {
    let env = TestEnv::start().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = "watch-100k";
    create_namespace(&client, ns).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let start_rv = api
        .list(&ListParams::default().limit(1))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let started = Instant::now();
    let watch_api = api.clone();
    let watcher = tokio::spawn(async move {
        let mut last = rv_of_str(Some(&start_rv));
        let mut names = BTreeSet::new();
        // A watch ends at its timeout (290 s, under kube-apiserver's 30-minute limit); as every
        // client does, the next one starts at the last resourceVersion seen, so the check below
        // is that nothing is missing or repeated across watches, however slow the writes are.
        while names.len() < WATCH_EVENTS {
            let mut stream = watch_api
                .watch(&WatchParams::default().timeout(290), &last.to_string())
                .await
                .unwrap()
                .boxed();
            while names.len() < WATCH_EVENTS {
                match stream.try_next().await.unwrap() {
                    Some(WatchEvent::Added(cm)) => {
                        let rv = rv_of(&cm);
                        assert!(rv > last, "resourceVersion {rv} after {last}: out of order");
                        last = rv;
                        assert!(names.insert(cm.metadata.name.unwrap()), "event repeated");
                    }
                    Some(WatchEvent::Bookmark(_)) => {}
                    Some(other) => panic!("unexpected event {other:?}"),
                    None => break,
                }
            }
        }
        names
    });

    let next = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..WATCH_WRITERS)
        .map(|_| {
            let api = api.clone();
            let next = next.clone();
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= WATCH_EVENTS {
                        break;
                    }
                    let cm = configmap(&format!("cm-{i:06}"), json!({"i": i.to_string()}));
                    api.create(&PostParams::default(), &cm).await.unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let written = started.elapsed();
    let names = tokio::time::timeout(Duration::from_secs(120), watcher)
        .await
        .expect("the watch delivered every event within 120 s")
        .unwrap();
    let delivered = started.elapsed();
    assert_eq!(names.len(), WATCH_EVENTS);
    assert_eq!(names.first().map(String::as_str), Some("cm-000000"));
    eprintln!(
        "{WATCH_EVENTS} creates by {WATCH_WRITERS} writers in {written:.1?}, all watch events delivered after {delivered:.1?}"
    );
}

/// A `serve` process of the built binary, killed when dropped.
struct Server {
    child: Child,
    kubeconfig: std::path::PathBuf,
}

impl Server {
    fn start(data_dir: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ocm-controlplane"))
            .args(["serve", "--port", "0", "--log-level", "warn", "--data-dir"])
            .arg(data_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        // The first line names the URL once the listener is bound and admin.kubeconfig written.
        let first = lines.next().expect("the server printed its address").unwrap();
        assert!(
            first.starts_with("ocm-controlplane serving at https://"),
            "{first}"
        );
        std::thread::spawn(move || for _ in lines {});
        Self {
            child,
            kubeconfig: data_dir.join("admin.kubeconfig"),
        }
    }

    async fn client(&self) -> kube::Client {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        kube::Client::try_from(config).unwrap()
    }

    fn kill9(&mut self) {
        self.child.kill().unwrap(); // SIGKILL on Unix
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const ACKED_BEFORE_KILL: usize = 300;

/// Writers create and update ConfigMaps until the server has acknowledged 300 writes; the server
/// is then killed with SIGKILL while writes are still in flight. After a restart on the same data
/// directory every acknowledged write is there with its resourceVersion, and new writes get
/// larger resourceVersions.
#[tokio::test]
async fn sigkill_after_acknowledged_writes_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path());
    let client = server.client().await;
    create_namespace(&client, "durable").await;
    let api: Api<ConfigMap> = Api::namespaced(client, "durable");

    // name -> (resourceVersion, data) of the last acknowledged write.
    let acked = Arc::new(std::sync::Mutex::new(BTreeMap::<String, (u64, String)>::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (api, acked, count, stop) = (api.clone(), acked.clone(), count.clone(), stop.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let name = format!("w{w}-{i}");
                    let Ok(created) = api
                        .create(&PostParams::default(), &configmap(&name, json!({"v": "created"})))
                        .await
                    else {
                        break; // the server is gone
                    };
                    acked
                        .lock()
                        .unwrap()
                        .insert(name.clone(), (rv_of(&created), "created".into()));
                    count.fetch_add(1, Ordering::SeqCst);
                    let mut changed = created;
                    changed.data = Some([("v".to_string(), "updated".to_string())].into());
                    let Ok(updated) = api.replace(&name, &PostParams::default(), &changed).await else {
                        break;
                    };
                    acked
                        .lock()
                        .unwrap()
                        .insert(name, (rv_of(&updated), "updated".into()));
                    count.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while count.load(Ordering::SeqCst) < ACKED_BEFORE_KILL {
        assert!(
            Instant::now() < deadline,
            "{} writes acknowledged in 60 s",
            count.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Snapshot what was acknowledged, then kill with writes still in flight.
    let before: BTreeMap<String, (u64, String)> = acked.lock().unwrap().clone();
    server.kill9();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let after_kill: BTreeMap<String, (u64, String)> = acked.lock().unwrap().clone();

    let server = Server::start(dir.path());
    let api: Api<ConfigMap> = Api::namespaced(server.client().await, "durable");
    let list = api.list(&ListParams::default()).await.unwrap();
    let stored: BTreeMap<String, ConfigMap> = list
        .items
        .into_iter()
        .map(|cm| (cm.metadata.name.clone().unwrap(), cm))
        .collect();
    let mut max_acked = 0;
    // Every write acknowledged before the process died (the snapshot, plus anything acknowledged
    // between the snapshot and the kill) is stored as acknowledged; the only thing that may be
    // newer is the update that was in flight when the process died (committed, not acknowledged).
    for (name, (rv, v)) in &after_kill {
        let cm = stored
            .get(name)
            .unwrap_or_else(|| panic!("acknowledged {name} lost after SIGKILL"));
        let stored_v = &cm.data.as_ref().unwrap()["v"];
        if rv_of(cm) == *rv {
            assert_eq!(stored_v, v, "{name}");
        } else {
            assert!(
                rv_of(cm) > *rv,
                "{name}: stored resourceVersion {} < acknowledged {rv}",
                rv_of(cm)
            );
            assert_eq!((v.as_str(), stored_v.as_str()), ("created", "updated"), "{name}");
        }
        max_acked = max_acked.max(*rv);
    }
    for name in before.keys() {
        assert!(stored.contains_key(name), "{name} lost");
    }
    let list_rv = rv_of_str(list.metadata.resource_version.as_deref());
    assert!(
        list_rv >= max_acked,
        "list resourceVersion {list_rv} < acknowledged {max_acked}"
    );
    let fresh = api
        .create(&PostParams::default(), &configmap("after-restart", json!({})))
        .await
        .unwrap();
    assert!(rv_of(&fresh) > list_rv, "resourceVersion went back after restart");
    eprintln!(
        "{} writes acknowledged before SIGKILL ({} objects); all served after restart, next resourceVersion {}",
        count.load(Ordering::SeqCst),
        after_kill.len(),
        rv_of(&fresh)
    );
}
