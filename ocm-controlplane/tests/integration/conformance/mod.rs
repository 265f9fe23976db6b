//! Conformance replay: every recording of `../shared/apiserver-conformance` (a real kube-apiserver
//! v1.36) is replayed against a fresh embedded server, comparing status codes, Content-Type,
//! `Warning` headers, Status bodies, normalized object bodies and watch event sequences.
//!
//! Run it with `cargo test -p ocm-controlplane --test integration conformance -- --nocapture`.
//! It prints a table of passed/failed/skipped steps per area, the first differences of each
//! failing step and the most common differences, writes the full report to
//! `$CARGO_TARGET_TMPDIR/apiserver-conformance.txt`, and fails if a scenario of an area marked
//! [`Expectation::MustPass`] has a failing step.
//!
//! The harness checks itself in `mock.rs`: replayed against a server answering with the
//! recordings themselves, every step of every scenario passes and every request matches what the
//! recorder sent.
//!
//! Environment:
//! - `OCM_CONFORMANCE_KUBECONFIG=PATH`: replay against the server of an admin kubeconfig instead
//!   (e.g. a real kube-apiserver, which the recordings should match); scenarios run one after
//!   another on that one server, which they leave clean except for the OCM CRDs (so
//!   `crd/install-ocm-crds` matches only on a fresh server). `OCM_CONFORMANCE_CAPABILITIES`
//!   lists the requirement tags it supports (default `all`).
//! - `OCM_CONFORMANCE_FILTER=text`: only scenarios whose `area/name` contains one of the
//!   comma-separated texts.
//! - `OCM_CONFORMANCE_JOBS=N`: scenarios replayed at once against TestEnvs (default 4).
//! - `OCM_CONFORMANCE_DIFFS=N`: differences printed per failing step (default 3, 0 = all).
//! - `OCM_CONFORMANCE_COMPACTION_SECONDS=N`: every TestEnv compacts its history every N seconds
//!   (`0`: never). By default each compacts every 20 s as the recording's server did, and every
//!   3 s for the scenarios that require `compaction`.
//! - `OCM_SHARED_DIR`: where `shared/` is (default `../shared` from the workspace root).

mod compare;
mod fixture;
mod judge;
mod mock;
mod normalize;
mod replay;
mod report;
mod scan;
mod target;
mod watch;

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::time::Instant;

use self::fixture::Scenario;
use self::replay::Replay;
use self::report::{Report, ScenarioResult};
use self::target::Target;

/// Whether an area (or one scenario) must pass or is only reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expectation {
    /// Every judged step must match the recording; the test fails otherwise.
    MustPass,
    /// Results are printed, failures do not fail the test (the server is still being built).
    Report,
}

/// Per area (`crud`) or per scenario (`patch/json-patch`, which wins over its area).
const EXPECTATIONS: &[(&str, Expectation)] = &[
    ("crud", Expectation::MustPass),
    ("list", Expectation::MustPass),
    ("watch", Expectation::MustPass),
    ("crd", Expectation::MustPass),
    ("examples", Expectation::MustPass),
    ("discovery", Expectation::MustPass),
    ("patch", Expectation::MustPass),
    ("lifecycle", Expectation::MustPass),
    ("security", Expectation::MustPass),
];

/// Steps deliberately not judged (they still run, so later steps see their effects):
/// (`area/name`, step index or `None` for every step, reason), e.g.
/// `("crd/openapi-v3-schema-served", Some(0), "the index hashes kube-apiserver's own OpenAPI documents")`.
/// Every entry is listed in the printed report.
const SKIPPED_STEPS: &[(&str, Option<usize>, &str)] = &[
    (
        "security/bootstrap-registration-flow",
        Some(4),
        "the recording's server had the OCM CRDs from crd/install-ocm-crds; the scenario does not \
         require crds:ocm, so a fresh server serves no managedclusters",
    ),
    (
        "security/bootstrap-registration-flow",
        Some(11),
        "deletes the ManagedCluster of step 4 (see there)",
    ),
    (
        "crd/openapi-v3-schema-served",
        Some(0),
        "the index's `?hash=` values are SHA-512 hashes of kube-apiserver's own OpenAPI documents, \
     which no other server produces; paths and Content-Type are still served",
    ),
];

/// Requirement tags the embedded TestEnv provides beyond `crds:ocm` and `namespaces:...`, which
/// the harness sets up itself (`kcm`, `auth:x509`, `auth:bootstrap-token`, `compaction`). `kcm`:
/// the in-process controllers (garbage collector, namespace deletion, ClusterRole aggregation,
/// root CA and default ServiceAccount publishers).
const TESTENV_CAPABILITIES: &[&str] = &["compaction", "kcm", "auth:x509", "auth:bootstrap-token"];

/// How often a TestEnv compacts for scenarios that require `compaction` (the recording's server
/// compacted every 20 s; a shorter interval keeps the replay fast, the semantics are the same).
const TESTENV_COMPACTION_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3);

/// How often a TestEnv compacts for the other scenarios: as the recording's server did (its
/// `--etcd-compaction-interval=20s`), so every scenario is replayed with compaction on.
/// `OCM_CONFORMANCE_COMPACTION_SECONDS` sets another interval for every scenario (`0`: off).
const TESTENV_DEFAULT_COMPACTION: std::time::Duration = std::time::Duration::from_secs(20);

/// The compaction interval of the TestEnv of `scenario`.
fn testenv_compaction(scenario: &Scenario) -> Option<std::time::Duration> {
    if let Some(seconds) = std::env::var("OCM_CONFORMANCE_COMPACTION_SECONDS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        return (seconds > 0.0).then(|| std::time::Duration::from_secs_f64(seconds));
    }
    if scenario.requires.iter().any(|tag| tag == "compaction") {
        Some(TESTENV_COMPACTION_INTERVAL)
    } else {
        Some(TESTENV_DEFAULT_COMPACTION)
    }
}

/// The expectation of a scenario.
pub fn expectation(id: &str) -> Expectation {
    let area = id.split('/').next().unwrap_or(id);
    EXPECTATIONS
        .iter()
        .find(|(key, _)| *key == id)
        .or_else(|| EXPECTATIONS.iter().find(|(key, _)| *key == area))
        .map_or(Expectation::Report, |(_, expectation)| *expectation)
}

/// Whether step `index` of scenario `id` is in [`SKIPPED_STEPS`].
pub fn is_listed_skip(id: &str, index: usize) -> bool {
    matches!(Plan.step(id, index), StepPlan::Skip(_))
}

/// Whether a step is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepPlan {
    /// Compared with the recording.
    Judge,
    /// Run but not judged, for this reason.
    Skip(&'static str),
}

/// Answers a watch may give instead of the recorded events, when the README allows both.
type Alternative = fn(&[Value]) -> bool;

/// What the harness does beyond the recordings: skips, allowed alternatives, note actions.
#[derive(Debug, Default)]
pub struct Plan;

impl Plan {
    /// Whether step `index` of scenario `id` is judged.
    pub fn step(&self, id: &str, index: usize) -> StepPlan {
        SKIPPED_STEPS
            .iter()
            .find(|(scenario, step, _)| *scenario == id && step.is_none_or(|step| step == index))
            .map_or(StepPlan::Judge, |(_, _, reason)| StepPlan::Skip(reason))
    }

    /// Another acceptable answer for a watch step.
    pub fn alternative(&self, id: &str, index: usize) -> Option<Alternative> {
        match (id, index) {
            // README: a watch from resourceVersion=1 after compaction may answer with one ERROR
            // event (410 Expired, "too old resource version: 1 (N)") instead of the history.
            ("watch/too-old-resourceversion", 5) => {
                Some(|events| judge::is_single_expired_error(events, "1"))
            }
            _ => None,
        }
    }

    /// Whether [`Plan::before_step`] performs what the scenario's `notes` describe.
    pub fn handles_notes(&self, id: &str) -> bool {
        id == "watch/too-old-resourceversion"
    }

    /// Performs what a scenario's `notes` say the recorder did before step `index`.
    pub async fn before_step(&self, replay: &Replay<'_>, index: usize) -> Result<(), String> {
        match (replay.scenario.id().as_str(), index) {
            // "between the steps the recorder made 5 unrecorded updates and waited 50s so that etcd
            // compaction ran": updates of item-0 (data.i = v0..v4), then wait until the list's
            // resourceVersion of step 4 is compacted.
            ("watch/too-old-resourceversion", 5) => {
                let item = "/api/v1/namespaces/cf-watch-old/configmaps/item-0";
                for i in 0..5 {
                    let patch = json!({"data": {"i": format!("v{i}")}});
                    let answer = replay
                        .send_admin("PATCH", item, "application/merge-patch+json", &patch)
                        .await?;
                    if answer.status != 200 {
                        return Err(format!(
                            "unrecorded update {i} of item-0: {} {}",
                            answer.status,
                            answer.text()
                        ));
                    }
                }
                let list = replay.resolve(concat!(
                    "/api/v1/namespaces/cf-watch-old/configmaps",
                    "?labelSelector=set%3Dseed&resourceVersion=<rv:4>&resourceVersionMatch=Exact"
                ));
                let deadline = Instant::now() + Duration::from_secs(120);
                loop {
                    let answer = replay
                        .send_admin("GET", &list, "application/json", &Value::Null)
                        .await?;
                    if answer.status == 410 {
                        return Ok(());
                    }
                    if Instant::now() > deadline {
                        return Err("the server did not compact its history within 120 s".into());
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            _ => Ok(()),
        }
    }
}

/// Scenarios selected by `OCM_CONFORMANCE_FILTER`.
fn selected(scenarios: Vec<Scenario>) -> Vec<Scenario> {
    let Ok(filter) = std::env::var("OCM_CONFORMANCE_FILTER") else {
        return scenarios;
    };
    let texts: Vec<&str> = filter
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    scenarios
        .into_iter()
        .filter(|s| texts.iter().any(|text| s.id().contains(text)))
        .collect()
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Replays against one server named by a kubeconfig, scenario after scenario.
async fn replay_on_kubeconfig(path: &Path, scenarios: &[Scenario], shared: &Path) -> Report {
    let capabilities: Vec<String> = std::env::var("OCM_CONFORMANCE_CAPABILITIES")
        .unwrap_or_else(|_| "all".into())
        .split(',')
        .map(|tag| tag.trim().to_string())
        .collect();
    let label = format!("the server of {}", path.display());
    let target = Target::from_kubeconfig(path, &label, capabilities)
        .await
        .unwrap_or_else(|e| panic!("connecting to {}: {e}", path.display()));
    let mut results = Vec::new();
    for scenario in scenarios {
        results.push(replay::run(&target, scenario, shared, &Plan).await);
    }
    Report {
        target: label,
        scenarios: results,
    }
}

/// Replays every scenario against its own fresh TestEnv, a few at a time.
async fn replay_on_testenv(scenarios: &[Scenario], shared: &Path) -> Report {
    let capabilities: Vec<String> = TESTENV_CAPABILITIES.iter().map(|tag| tag.to_string()).collect();
    let jobs = env_number("OCM_CONFORMANCE_JOBS", 4).max(1);
    let mut results: Vec<ScenarioResult> = futures::stream::iter(scenarios)
        .map(|scenario| {
            let capabilities = capabilities.clone();
            async move {
                let builder = ocm_controlplane::ControlPlane::builder()
                    .compaction_interval(testenv_compaction(scenario));
                let env = ocm_controlplane::TestEnv::start_with(builder)
                    .await
                    .expect("starting a TestEnv");
                let target = Target::from_kubeconfig(env.kubeconfig_path(), "TestEnv", capabilities)
                    .await
                    .expect("connecting to the TestEnv");
                let result = replay::run(&target, scenario, shared, &Plan).await;
                drop(target);
                drop(env);
                result
            }
        })
        .buffer_unordered(jobs)
        .collect()
        .await;
    results.sort_by(|a, b| a.id.cmp(&b.id));
    Report {
        target: "a fresh ocm_controlplane::TestEnv per scenario".into(),
        scenarios: results,
    }
}

/// Prints the report and writes the full one next to the test binary's temporary files.
fn publish(report: &Report) -> PathBuf {
    let diffs = env_number("OCM_CONFORMANCE_DIFFS", 3);
    let table = report.table(expectation);
    let full = format!(
        "{table}\nSkipped:\n{}\nMost common differences:\n{}\n{}",
        report.skips(),
        report.common_causes(40),
        report.failures(0)
    );
    let directory = option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let file = directory.join("apiserver-conformance.txt");
    if let Err(error) = std::fs::write(&file, &full) {
        eprintln!("could not write {}: {error}", file.display());
    }
    let (passed, failed, skipped) = report.totals();
    println!("{table}");
    println!("{passed} steps passed, {failed} failed, {skipped} skipped\n");
    println!("Skipped:\n{}", report.skips());
    println!("Most common differences:\n{}", report.common_causes(25));
    println!(
        "Failing steps (first {diffs} differences each; all in {}):\n{}",
        file.display(),
        report.failures(diffs)
    );
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_conformance_replay() {
    let Some(shared) = fixture::shared_dir("apiserver_conformance_replay") else {
        return;
    };
    let scenarios = selected(fixture::load_all(&shared));
    let report = match std::env::var_os("OCM_CONFORMANCE_KUBECONFIG") {
        Some(path) => replay_on_kubeconfig(Path::new(&path), &scenarios, &shared).await,
        None => replay_on_testenv(&scenarios, &shared).await,
    };
    let file = publish(&report);
    let failing = report.failing_must_pass(expectation);
    assert!(
        failing.is_empty(),
        "scenarios that must pass have failing steps: {failing:?} (full report: {})",
        file.display()
    );
}
