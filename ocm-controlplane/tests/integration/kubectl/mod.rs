//! The real `kubectl` binary against the embedded control plane: discovery (`api-resources`,
//! `api-versions`, `version`), `create -f` of the OCM CRDs and of every OCM example, `get` (table with
//! the CRDs' printer columns, `-o yaml|json|jsonpath|name|custom-columns`, `-w`), `replace`,
//! `patch --type=merge|json`, `delete`, `wait --for=condition|jsonpath|delete` and `explain`.
//!
//! The tests skip, saying so, when no `kubectl` is found (`$KUBECTL` or `PATH`), and the example test
//! when `shared/ocm-examples` is absent. Every test uses its own names (or its own server) and cleans
//! up, so they also pass against a real cluster (`OCM_TEST_HUB_KUBECONFIG`).
//!
//! Client-side `apply`, strategic `patch` and `diff` are in `apply_client_side`; `apply
//! --server-side` (conflicts, `--force-conflicts`, moving from client-side apply) in
//! `apply_server_side`. Commands that send protobuf bodies (`kubectl create namespace|configmap|
//! secret ...` and `certificate approve|deny` use client-go's typed clients, which encode built-in
//! kinds as protobuf) are in `typed_clients`; the other modules create with `create -f -` (JSON).
//!
//! `kubectl create`/`replace` validate by default: kubectl reads `/openapi/v3` to learn whether the
//! server checks fields itself (a `fieldValidation` parameter on the kind's operations) and
//! otherwise downloads `/openapi/v2` to check them client-side. `kubectl_create_validates_by_default`
//! checks that; while it fails, the other tests pass `--validate=false` (and say so on stderr), so
//! they still check everything else. `explain` reads the same documents.

mod apply_client_side;
mod apply_server_side;
mod auth;
mod create;
mod delete_cascade;
mod discovery;
mod get;
mod scale;
mod tables;
mod typed_clients;
mod write;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use kube::api::{Api, DeleteParams, Patch, PatchParams};
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

pub(super) const DEADLINE: Duration = Duration::from_secs(30);

pub(super) fn unique(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..8])
}

/// `$KUBECTL`, else `kubectl` on `PATH`.
pub(super) fn find_kubectl() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KUBECTL") {
        return Some(PathBuf::from(p));
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
}

/// What one kubectl run printed.
#[derive(Debug)]
pub(super) struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// kubectl bound to a TestEnv's kubeconfig, with its own discovery cache.
pub(super) struct Kubectl {
    bin: PathBuf,
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
    /// Flags for `create`/`replace` (`--validate=false` while `/openapi/v3` is not served).
    validate: Vec<&'static str>,
    openapi_v3: bool,
}

impl Kubectl {
    /// None (after saying so) when no kubectl binary is available.
    pub(super) async fn new(env: &TestEnv, test: &str) -> Option<Self> {
        let Some(bin) = find_kubectl() else {
            eprintln!("skipping {test}: no kubectl found (set $KUBECTL or put kubectl on PATH)");
            return None;
        };
        let mut k = Self {
            bin,
            kubeconfig: env.kubeconfig_path().to_path_buf(),
            cache: tempfile::tempdir().unwrap(),
            validate: Vec::new(),
            openapi_v3: true,
        };
        // kubectl's default validation works only when /openapi/v3 tells it that the server
        // validates fields itself (a `fieldValidation` parameter on the kind's operations), or
        // when /openapi/v2 is there for client-side checks. Probe it once with a dry run.
        let probe = k
            .run_with_input(
                &["create", "--dry-run=server", "-o", "name", "-f", "-"],
                Some(&namespace_yaml(&unique("kubectl-probe"))),
            )
            .await;
        if !probe.ok {
            assert!(
                probe.stderr.contains("error validating"),
                "probe failed: {probe:?}"
            );
            eprintln!(
                "note ({test}): kubectl's default validation fails against this server ({}); create and \
                 replace run with --validate=false (kubectl_create_validates_by_default checks it)",
                probe.stderr.trim()
            );
            k.validate = vec!["--validate=false"];
        }
        k.openapi_v3 = k.run(&["get", "--raw", "/openapi/v3"]).await.ok;
        Some(k)
    }

    pub(super) fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.cache.path())
            .arg("--request-timeout=30s")
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    pub(super) async fn run_with_input(&self, args: &[&str], input: Option<&str>) -> Run {
        let mut cmd = self.command(args);
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let input = input.map(str::to_string);
        tokio::task::spawn_blocking(move || {
            let mut child = cmd.spawn().expect("spawning kubectl");
            if let Some(input) = input {
                let mut stdin = child.stdin.take().unwrap();
                stdin.write_all(input.as_bytes()).unwrap();
            }
            let out = child.wait_with_output().expect("running kubectl");
            Run {
                ok: out.status.success(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        })
        .await
        .unwrap()
    }

    pub(super) async fn run(&self, args: &[&str]) -> Run {
        self.run_with_input(args, None).await
    }

    /// Runs kubectl, asserting success; returns stdout.
    pub(super) async fn ok(&self, args: &[&str]) -> String {
        let r = self.run(args).await;
        assert!(
            r.ok,
            "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
            r.stdout, r.stderr
        );
        r.stdout
    }

    /// Runs kubectl, asserting failure; returns stderr.
    pub(super) async fn fails(&self, args: &[&str]) -> String {
        let r = self.run(args).await;
        assert!(!r.ok, "kubectl {args:?} succeeded:\nstdout: {}", r.stdout);
        r.stderr
    }

    /// `kubectl <verb> [--validate=false] -f - <extra>` with `yaml` on stdin, asserting success.
    pub(super) async fn with_stdin(&self, verb: &str, yaml: &str, extra: &[&str]) -> String {
        let mut args = vec![verb];
        args.extend(&self.validate);
        args.extend(["-f", "-"]);
        args.extend(extra);
        let r = self.run_with_input(&args, Some(yaml)).await;
        assert!(
            r.ok,
            "kubectl {args:?} failed:\nstdin: {yaml}\nstdout: {}\nstderr: {}",
            r.stdout, r.stderr
        );
        r.stdout
    }

    /// `kubectl create -f` of a file or directory (recursively), returning the whole run.
    pub(super) async fn create_file(&self, path: &Path) -> Run {
        let path = path.to_str().unwrap();
        let mut args = vec!["create"];
        args.extend(&self.validate);
        args.extend(["-R", "-f", path]);
        self.run(&args).await
    }

    /// Starts a long-running kubectl (`get -w`) whose stdout lines are read as they come.
    pub(super) fn stream(&self, args: &[&str]) -> Streaming {
        let mut child = self.command(args).spawn().expect("spawning kubectl");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Streaming { child, lines }
    }
}

/// A running kubectl; killed when dropped.
pub(super) struct Streaming {
    child: std::process::Child,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Streaming {
    pub(super) async fn next_line(&mut self) -> String {
        tokio::time::timeout(DEADLINE, self.lines.recv())
            .await
            .expect("a line from kubectl within the deadline")
            .expect("kubectl kept running")
    }

    /// The next JSON document kubectl prints (`-o json` spreads one over many lines).
    pub(super) async fn next_json(&mut self) -> Value {
        let mut text = String::new();
        loop {
            text.push_str(&self.next_line().await);
            text.push('\n');
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                return v;
            }
        }
    }

    /// Kills kubectl; returns what it printed on stderr.
    pub(super) fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut stderr = String::new();
        if let Some(pipe) = self.child.stderr.as_mut() {
            let _ = std::io::Read::read_to_string(pipe, &mut stderr);
        }
        stderr
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A kubectl table: column names and rows of cells, cut at the header's column offsets.
#[derive(Debug)]
pub(super) struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(super) fn parse(text: &str) -> Table {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let header = lines.next().unwrap_or_default();
        let re = regex::Regex::new(r"\S+(?: \S+)*").unwrap();
        let spans: Vec<(usize, String)> = re
            .find_iter(header)
            .map(|m| (m.start(), m.as_str().to_string()))
            .collect();
        let rows = lines
            .map(|line| {
                (0..spans.len())
                    .map(|i| {
                        let start = spans[i].0.min(line.len());
                        let end = spans.get(i + 1).map_or(line.len(), |s| s.0.min(line.len()));
                        line[start..end].trim().to_string()
                    })
                    .collect()
            })
            .collect();
        Table {
            columns: spans.into_iter().map(|(_, n)| n).collect(),
            rows,
        }
    }

    pub(super) fn row(&self, name_column: usize, name: &str) -> &Vec<String> {
        self.rows
            .iter()
            .find(|r| r.get(name_column).map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("no row {name} in {self:?}"))
    }
}

pub(super) fn columns(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The workspace's `ocm-api/crds` directory.
pub(super) fn ocm_crd_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ocm-api/crds")
}

/// `shared/ocm-examples`, or None after saying why the test is skipped.
pub(super) fn examples_dir(test: &str) -> Option<PathBuf> {
    let shared = std::env::var_os("OCM_SHARED_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
        PathBuf::from,
    );
    let dir = shared.join("ocm-examples");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipping {test}: {} not found (set OCM_SHARED_DIR to run it)",
            dir.display()
        );
        None
    }
}

pub(super) fn namespace_yaml(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n")
}

pub(super) fn managed_cluster_yaml(name: &str, label: &str) -> String {
    format!(
        "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: {name}\n  \
         labels:\n    suite: {label}\nspec:\n  hubAcceptsClient: true\n  managedClusterClientConfigs:\n  \
         - url: https://{name}.example.com:6443\n"
    )
}

pub(super) fn condition(type_: &str, status: &str) -> Value {
    json!({"type": type_, "status": status, "reason": "Test", "message": "set by the kubectl test",
           "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

pub(super) const MC: &str = "managedcluster.cluster.open-cluster-management.io";
