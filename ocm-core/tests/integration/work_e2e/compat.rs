//! Wire compatibility of the work agent with upstream's (issue 14): the same ManifestWorks — every
//! `../shared/ocm-examples/manifestwork-*.yaml` — applied by our agent and by upstream's Go
//! `work agent`, one after the other on the same hub and spoke and the same cluster namespace,
//! must end with the same status: work and manifest condition types, statuses, reasons and
//! messages, resource metas with ordinals, feedback values, and the same AppliedManifestWork
//! name and applied resources.
//!
//! Upstream's agent is the binary named by `OCM_UPSTREAM_WORK_AGENT` (`../shared/tools/real-kube`
//! builds it: `~/.cache/ocm-real-kube/ocm-bin/work`); without it the test says so and skips.
//! The hub and spoke are TestEnvs: our control plane, or — with `OCM_TEST_HUB_KUBECONFIG` /
//! `OCM_TEST_SPOKE_KUBECONFIG` — real kube-apiservers, so one run checks upstream's agent on our
//! hub and the other checks our agent on a real hub. docs/work.md says how to run both.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use ocm_api::work::v1::{AppliedManifestWork, ManifestWork};
use ocm_core::work::agent::{self, WorkAgentOptions};
use serde_json::{Value, json};

use super::{Clusters, normalize};
use crate::support::{eventually_within, server_and_ca};

/// How long one work may take to settle.
const SETTLE_SECS: u64 = 90;
/// The status sync interval both agents run with.
const STATUS_SYNC: Duration = Duration::from_secs(1);

/// The shared directory's examples, or `None` after saying why.
fn examples() -> Option<Vec<PathBuf>> {
    let shared = std::env::var_os("OCM_SHARED_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
        PathBuf::from,
    );
    let dir = shared.join("ocm-examples");
    if !dir.is_dir() {
        eprintln!(
            "SKIP work_compat: {} not found (set OCM_SHARED_DIR)",
            dir.display()
        );
        return None;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("manifestwork-") && n.ends_with(".yaml"))
        })
        .collect();
    files.sort();
    Some(files)
}

/// The example's work, moved to `namespace`, without status or server-set fields.
fn work_of(path: &Path, namespace: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let mut work: Value = serde_saphyr::from_str(&text).unwrap();
    let object = work.as_object_mut().unwrap();
    object.remove("status");
    work["metadata"] = json!({"name": work["metadata"]["name"], "namespace": namespace});
    work
}

/// A TCP port free on loopback right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Which agent applies the works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    Ours,
    Upstream,
}

/// A running agent, stopped when dropped.
enum Running {
    Ours(tokio::task::JoinHandle<()>),
    Upstream(tokio::process::Child),
}

impl Running {
    async fn stop(self) {
        match self {
            Running::Ours(task) => {
                task.abort();
                let _ = task.await;
            }
            Running::Upstream(mut child) => {
                let _ = child.kill().await;
            }
        }
    }
}

struct Setup {
    clusters: Clusters,
    dir: tempfile::TempDir,
}

impl std::ops::Deref for Setup {
    type Target = Clusters;
    fn deref(&self) -> &Clusters {
        &self.clusters
    }
}

impl Setup {
    async fn start(&self, agent: Agent, upstream: &Path) -> Running {
        match agent {
            Agent::Ours => {
                let (server, _) = server_and_ca(self.hub.kubeconfig_path());
                let mut options = WorkAgentOptions::new(self.cluster.clone());
                options.status_sync_interval = STATUS_SYNC;
                // The test's own agent id (both agents use it): agents sharing a real hub under
                // the default id would evict each other's AppliedManifestWorks.
                options.agent_id = Some(self.cluster.clone());
                let (hub, spoke) = (self.hub_client.clone(), self.spoke_client.clone());
                Running::Ours(tokio::spawn(async move {
                    if let Err(error) = agent::run(hub, &server, spoke, options).await {
                        eprintln!("our work agent stopped: {error}");
                    }
                }))
            }
            Agent::Upstream => {
                let log = std::fs::File::create(self.dir.path().join("upstream-work.log")).unwrap();
                let child = tokio::process::Command::new(upstream)
                    .arg("agent")
                    .arg("--kubeconfig")
                    .arg(self.spoke.kubeconfig_path())
                    .arg("--hub-kubeconfig")
                    .arg(self.hub.kubeconfig_path())
                    .arg("--workload-source-config")
                    .arg(self.hub.kubeconfig_path())
                    .arg("--spoke-cluster-name")
                    .arg(&self.cluster)
                    .arg("--agent-id")
                    .arg(&self.cluster)
                    .arg("--namespace")
                    .arg("default")
                    .arg("--disable-leader-election")
                    // Upstream's serving set-up fails on port 0: pick a free port.
                    .arg("--listen")
                    .arg(format!("127.0.0.1:{}", free_port()))
                    .arg(format!("--status-sync-interval={}s", STATUS_SYNC.as_secs()))
                    .stdout(Stdio::null())
                    .stderr(log)
                    .kill_on_drop(true)
                    .spawn()
                    .expect("upstream's work agent starts");
                Running::Upstream(child)
            }
        }
    }

    /// Applies `work` with `agent` running, waits until its status settles and returns it with the
    /// AppliedManifestWork, normalized; then deletes the work and waits until it is gone.
    async fn outcome(&self, agent: Agent, upstream: &Path, work: &Value) -> Value {
        let running = self.start(agent, upstream).await;
        let works = Api::<ManifestWork>::namespaced(self.hub_client.clone(), &self.cluster);
        let name = work["metadata"]["name"].as_str().unwrap().to_string();
        let typed: ManifestWork = serde_json::from_value(work.clone()).unwrap();
        works.create(&PostParams::default(), &typed).await.unwrap();
        let Some(settled) = settle(&works, &name).await else {
            let log = std::fs::read_to_string(self.dir.path().join("upstream-work.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            panic!(
                "{name} did not settle with {agent:?} in {SETTLE_SECS}s; upstream's log ends:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        };
        let applied = Api::<AppliedManifestWork>::all(self.spoke_client.clone())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|a| a.spec.manifest_work_name == name)
            .map(|a| normalize::applied(&a))
            .collect::<Vec<_>>();
        works.delete(&name, &DeleteParams::default()).await.unwrap();
        eventually_within(SETTLE_SECS, &format!("{name} to be deleted ({agent:?})"), || {
            let works = works.clone();
            let name = name.clone();
            async move { works.get_opt(&name).await.unwrap().is_none().then_some(()) }
        })
        .await;
        running.stop().await;
        json!({"status": settled, "applied": applied})
    }
}

/// The work's normalized status once it has conditions and stayed the same for 3 s; `None`
/// when that did not happen in time.
async fn settle(works: &Api<ManifestWork>, name: &str) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(SETTLE_SECS);
    let (mut last, mut since) = (Value::Null, tokio::time::Instant::now());
    loop {
        if let Ok(current) = works.get(name).await {
            let status = normalize::work_status(&current);
            let has_conditions = status["conditions"].as_array().is_some_and(|c| !c.is_empty());
            if status != last {
                (last, since) = (status, tokio::time::Instant::now());
            } else if has_conditions && since.elapsed() >= Duration::from_secs(3) {
                return Some(last);
            }
        }
        if tokio::time::Instant::now() >= deadline {
            eprintln!("{name}: last status {last}");
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn both_agents_write_the_same_status_for_the_examples() {
    let Some(upstream) = std::env::var_os("OCM_UPSTREAM_WORK_AGENT").map(PathBuf::from) else {
        eprintln!(
            "SKIP work_compat: set OCM_UPSTREAM_WORK_AGENT to upstream's `work` binary \
             (~/.cache/ocm-real-kube/ocm-bin/work, built by ../shared/tools/real-kube)"
        );
        return;
    };
    let Some(files) = examples() else { return };
    let setup = Setup {
        clusters: Clusters::new("compat").await,
        dir: tempfile::tempdir().unwrap(),
    };
    let mut differences = Vec::new();
    for path in &files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let work = work_of(path, &setup.cluster);
        let ours = setup.outcome(Agent::Ours, &upstream, &work).await;
        let theirs = setup.outcome(Agent::Upstream, &upstream, &work).await;
        if ours == theirs {
            eprintln!("{file}: same status");
        } else {
            differences.push(format!("{file}:\n  ours:     {ours}\n  upstream: {theirs}"));
        }
    }
    setup.clusters.finish().await;
    assert!(
        differences.is_empty(),
        "{} of {} examples differ (upstream's log: {}):\n{}",
        differences.len(),
        files.len(),
        setup.dir.path().join("upstream-work.log").display(),
        differences.join("\n")
    );
}
