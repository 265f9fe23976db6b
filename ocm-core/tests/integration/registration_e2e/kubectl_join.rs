//! Joining the way a user does: the agent starts from a bootstrap kubeconfig, the administrator
//! finds its CSR with `kubectl get csr`, approves it with `kubectl certificate approve`, accepts
//! the cluster with `kubectl patch managedcluster ... --type=merge` and waits with `kubectl wait`;
//! then the cluster's own identity (the kubeconfig of its hub-kubeconfig secret) can read and
//! write its namespace on the hub and is forbidden elsewhere. The real `kubectl` is used; the test
//! skips, saying so, when there is none (`$KUBECTL` or `PATH`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use x509_parser::prelude::FromDer;

use super::support::{AGENT, CLUSTER_LABEL, Join, eventually};

/// `$KUBECTL`, else `kubectl` on `PATH`.
fn find_kubectl() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KUBECTL") {
        return Some(PathBuf::from(path));
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
}

/// What one kubectl run printed.
#[derive(Debug)]
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// kubectl with one kubeconfig and its own discovery cache.
struct Kubectl {
    bin: PathBuf,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    /// Runs kubectl with `args` (and `stdin`, if any) off the async runtime, which keeps serving
    /// the embedded servers meanwhile.
    async fn run(&self, args: &[&str], stdin: Option<String>) -> Run {
        let mut command = Command::new(&self.bin);
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let output = tokio::task::spawn_blocking(move || {
            let mut child = command.spawn().unwrap();
            if let Some(text) = stdin {
                child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
            }
            child.wait_with_output().unwrap()
        })
        .await
        .unwrap();
        Run {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Runs kubectl and returns its stdout, failing the test when it fails.
    async fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args, None).await;
        assert!(run.ok, "kubectl {args:?} failed: {}", run.stderr);
        run.stdout
    }

    /// `kubectl auth can-i ...`: whether the answer is yes.
    async fn can_i(&self, args: &[&str]) -> bool {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        let run = self.run(&all, None).await;
        match run.stdout.trim() {
            "yes" => true,
            "no" => false,
            other => panic!("kubectl auth can-i {args:?}: {other:?} / {}", run.stderr),
        }
    }
}

/// The subject (CN, O values) of a PEM certificate request.
fn request_subject(pem: &[u8]) -> (String, Vec<String>) {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem).unwrap();
    let (_, request) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents).unwrap();
    let subject = &request.certification_request_info.subject;
    let cn = subject
        .iter_common_name()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    let orgs = subject
        .iter_organization()
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    (cn, orgs)
}

/// Writes the files of the hub-kubeconfig secret (kubeconfig and the certificate and key it
/// names by relative path) into `dir`; returns the kubeconfig's path.
fn write_identity(secret: &k8s_openapi::api::core::v1::Secret, dir: &Path) -> PathBuf {
    let data = secret.data.as_ref().unwrap();
    for key in ["kubeconfig", "tls.crt", "tls.key"] {
        std::fs::write(dir.join(key), &data[key].0).unwrap();
    }
    dir.join("kubeconfig")
}

#[tokio::test]
async fn spokecluster_joining_with_kubectl_and_the_cluster_identity_stays_in_its_namespace() {
    let Some(bin) = find_kubectl() else {
        eprintln!("SKIP: no kubectl found ($KUBECTL or PATH); this test drives the join with it");
        return;
    };
    let mut join = Join::new("kubectl").await;
    let cache = tempfile::tempdir().unwrap();
    let admin = Kubectl {
        bin: bin.clone(),
        kubeconfig: join.hub.kubeconfig_path().to_path_buf(),
        cache: cache.path().join("admin"),
    };
    join.start_hub();
    join.start_agent();
    let cluster = join.cluster.clone();
    let selector = format!("{CLUSTER_LABEL}={cluster}");

    // `kubectl get csr` shows the pending CSR of the cluster.
    let table = eventually(30, "kubectl get csr shows a Pending CSR", || async {
        let out = admin.ok(&["get", "csr", "-l", &selector]).await;
        out.contains("Pending").then_some(out)
    })
    .await;
    assert!(table.contains(&format!("{cluster}-")), "{table}");
    let list: serde_json::Value =
        serde_json::from_str(&admin.ok(&["get", "csr", "-l", &selector, "-o", "json"]).await).unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "one CSR: {list}");
    let csr = &items[0];
    let csr_name = csr["metadata"]["name"].as_str().unwrap().to_string();
    assert!(csr_name.starts_with(&format!("{cluster}-")), "{csr_name}");
    assert_eq!(csr["spec"]["signerName"], "kubernetes.io/kube-apiserver-client");
    let usages: Vec<&str> = csr["spec"]["usages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    assert!(usages.contains(&"client auth"), "{usages:?}");
    use base64::Engine;
    let request = base64::engine::general_purpose::STANDARD
        .decode(csr["spec"]["request"].as_str().unwrap())
        .unwrap();
    let (cn, orgs) = request_subject(&request);
    assert_eq!(cn, format!("system:open-cluster-management:{cluster}:{AGENT}"));
    assert!(
        orgs.contains(&format!("system:open-cluster-management:{cluster}")),
        "{orgs:?}"
    );
    assert!(
        orgs.contains(&"system:open-cluster-management:managed-clusters".to_string()),
        "{orgs:?}"
    );
    // The ManagedCluster is there, not accepted yet.
    let managed: serde_json::Value = serde_json::from_str(
        &admin
            .ok(&[
                "get",
                "managedcluster",
                &cluster,
                "-o",
                "json",
                "--show-managed-fields",
            ])
            .await,
    )
    .unwrap();
    assert_eq!(managed["spec"]["hubAcceptsClient"], false, "{managed:#}");

    admin.ok(&["certificate", "approve", &csr_name]).await;
    admin
        .ok(&[
            "patch",
            "managedcluster",
            &cluster,
            "-p",
            r#"{"spec":{"hubAcceptsClient":true}}"#,
            "--type=merge",
        ])
        .await;
    for condition in [
        "HubAcceptedManagedCluster",
        "ManagedClusterJoined",
        "ManagedClusterConditionAvailable",
    ] {
        admin
            .ok(&[
                "wait",
                &format!("--for=condition={condition}"),
                &format!("managedcluster/{cluster}"),
                "--timeout=30s",
            ])
            .await;
    }
    assert_eq!(join.csrs().await.len(), 1, "one CSR for the whole join");

    // The cluster's identity, from its hub-kubeconfig secret. The agent is stopped so that the
    // lease written below is the test's alone.
    join.wait_secret().await;
    let secret = join.secret().await.unwrap();
    join.kill_agent().await;
    let files = tempfile::tempdir().unwrap();
    let identity = Kubectl {
        bin,
        kubeconfig: write_identity(&secret, files.path()),
        cache: cache.path().join("identity"),
    };
    // Reads and writes in its own namespace...
    for (verb, resource, subresource) in [
        ("get", "leases", ""),
        ("update", "leases", ""),
        ("get", "managedclusteraddons.addon.open-cluster-management.io", ""),
        (
            "update",
            "managedclusteraddons.addon.open-cluster-management.io",
            "status",
        ),
        ("list", "manifestworks.work.open-cluster-management.io", ""),
        ("patch", "manifestworks.work.open-cluster-management.io", "status"),
    ] {
        let sub = format!("--subresource={subresource}");
        for (namespace, allowed) in [(cluster.as_str(), true), ("default", false)] {
            let mut args = vec![verb, resource, "-n", namespace];
            if !subresource.is_empty() {
                args.push(&sub);
            }
            assert_eq!(
                identity.can_i(&args).await,
                allowed,
                "{verb} {resource} {subresource} in {namespace}"
            );
        }
    }
    // ... its own ManagedCluster and nothing else cluster-wide.
    assert!(
        identity
            .can_i(&[
                "get",
                &format!("managedclusters.cluster.open-cluster-management.io/{cluster}")
            ])
            .await
    );
    assert!(
        !identity
            .can_i(&[
                "get",
                "managedclusters.cluster.open-cluster-management.io/another-cluster"
            ])
            .await
    );
    assert!(!identity.can_i(&["get", "secrets", "-A"]).await);
    assert!(!identity.can_i(&["create", "namespaces"]).await);

    // Real requests: read and replace its lease; the same elsewhere is Forbidden.
    let lease = identity
        .ok(&[
            "get",
            "lease",
            "managed-cluster-lease",
            "-n",
            &cluster,
            "-o",
            "json",
        ])
        .await;
    let mut lease: serde_json::Value = serde_json::from_str(&lease).unwrap();
    lease["metadata"]["annotations"] = serde_json::json!({"e2e.open-cluster-management.io/touched": "yes"});
    let replaced = identity
        .run(
            &["replace", "--validate=false", "-f", "-"],
            Some(lease.to_string()),
        )
        .await;
    assert!(replaced.ok, "replace own lease: {}", replaced.stderr);
    let denied = identity.run(&["get", "leases", "-n", "kube-system"], None).await;
    assert!(!denied.ok && denied.stderr.contains("Forbidden"), "{denied:?}");
    let configmap = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{cluster}-e2e"), "namespace": "default"}});
    let denied = identity
        .run(
            &["create", "--validate=false", "-f", "-"],
            Some(configmap.to_string()),
        )
        .await;
    assert!(!denied.ok && denied.stderr.contains("Forbidden"), "{denied:?}");

    join.finish().await;
}
