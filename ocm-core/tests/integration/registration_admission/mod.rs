//! ManagedCluster, ManagedClusterSetBinding and ManifestWork admission (ocm-core.md §2.7, §2.8,
//! §3.11), through the
//! real `kubectl`: on the embedded hub the control plane admits in-process; on a real hub
//! (`OCM_TEST_HUB_KUBECONFIG`) each test serves the webhooks with
//! `ocm_core::registration::webhook` — the server the `hub` binary runs — and registers them
//! under its own configuration names, for objects carrying the test's label only, so that tests
//! sharing the hub do not meet each other's webhooks. Refusals are compared in full, as
//! kube-apiserver relays them from upstream's webhooks.
//!
//! Identities: the bootstrap kubeconfig `hub get-token` hands out, and users impersonated by the
//! admin (`kubectl --as`) with ClusterRoles made by the test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers"
)]

mod cases;
mod manifest_work;
mod server;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use ocm_api::admission::managed_cluster::MutateOptions;
use ocm_controlplane::TestEnv;
use ocm_controlplane::admission::ClusterAdmission;
use ocm_core::registration::hub::bootstrap;
use ocm_core::registration::webhook::{Endpoint, Registration, Reviewer, WebhookServer};
use serde_json::{Value, json};

use crate::support::{server_and_ca, unique};

/// The label by which a test's webhooks on a real hub select its objects.
const RUN_LABEL: &str = "admission-test.open-cluster-management.io/run";

/// What one kubectl run printed.
#[derive(Debug)]
pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// A hub that admits the OCM kinds, with the test's names and identities.
pub struct AdmissionHub {
    pub env: TestEnv,
    pub admin: kube::Client,
    /// The test's run label value (objects carry `RUN_LABEL: run`).
    pub run: String,
    dir: tempfile::TempDir,
    webhooks: Option<(WebhookServer, Registration)>,
    /// Objects to delete at the end, as `kubectl delete` arguments.
    created: std::sync::Mutex<Vec<Vec<String>>>,
}

impl AdmissionHub {
    pub async fn start() -> AdmissionHub {
        let real = std::env::var("OCM_TEST_HUB_KUBECONFIG").is_ok_and(|v| !v.is_empty());
        let env = if real {
            TestEnv::hub().await.unwrap()
        } else {
            TestEnv::start_with(
                ocm_controlplane::ControlPlane::builder()
                    .cluster_admission(Some(ClusterAdmission::default())),
            )
            .await
            .unwrap()
        };
        let admin = env.client().await.unwrap();
        // The hub's CRDs only: these tests need the cluster kinds, nothing of the spoke's.
        // On a shared real hub, as `hub` installs them (add-on kinds stored as v1beta1).
        let crds = ocm_core::crds::generated(&[ocm_api::crd::InstallTarget::Hub])
            .unwrap()
            .into_iter()
            .map(|mut g| {
                if real {
                    ocm_api::crd::store_addon_kinds_as_v1beta1(&mut g.crd);
                }
                g.crd
            })
            .collect();
        ocm_core::crds::install(&admin, crds, Duration::from_secs(60))
            .await
            .unwrap();
        let run = unique("adm");
        let webhooks = if real {
            let reviewer = Reviewer {
                client: admin.clone(),
                mutate: MutateOptions::default(),
                work: Default::default(),
            };
            let server = WebhookServer::start("127.0.0.1:0", &["127.0.0.1".to_string()], reviewer)
                .await
                .unwrap();
            let registration = Registration {
                endpoint: Endpoint::Url(server.url()),
                ca_pem: server.ca_pem().to_string(),
                name_suffix: Some(run.clone()),
                object_selector: Some(json!({"matchLabels": {RUN_LABEL: run}})),
            };
            registration.apply(&admin).await.unwrap();
            Some((server, registration))
        } else {
            None
        };
        let hub = AdmissionHub {
            env,
            admin,
            run,
            dir: tempfile::tempdir().unwrap(),
            webhooks,
            created: std::sync::Mutex::default(),
        };
        hub.wait_for_webhooks().await;
        hub
    }

    /// kube-apiserver serves a new webhook configuration only once its informer saw it: wait until
    /// a dry-run create of a cluster with an http URL is refused.
    async fn wait_for_webhooks(&self) {
        let probe = self.cluster_yaml(&unique("probe"), false, None, &[], Some("http://probe"));
        crate::support::eventually("the admission webhooks to serve", || async {
            let run = self
                .kubectl(
                    None,
                    &["create", "--dry-run=server", "-f", "-"],
                    Some(probe.clone()),
                )
                .await;
            (!run.ok && run.stderr.contains("is invalid in client configs")).then_some(())
        })
        .await;
    }

    /// The admin kubeconfig file.
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.env.kubeconfig_path().to_path_buf()
    }

    /// A bootstrap kubeconfig (what `hub get-token` writes), as a file.
    pub async fn bootstrap_kubeconfig(&self) -> PathBuf {
        let (server, ca) = server_and_ca(self.env.kubeconfig_path());
        let text = bootstrap::bootstrap_kubeconfig(&self.admin, &server, &ca, Duration::from_secs(3600))
            .await
            .unwrap();
        let path = self
            .dir
            .path()
            .join(format!("{}.kubeconfig", unique("bootstrap")));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Runs kubectl as `user` (`None`: the admin; `Some(path)`: that kubeconfig; see
    /// [`Identity`]).
    pub async fn kubectl(&self, identity: Option<&Identity>, args: &[&str], stdin: Option<String>) -> Run {
        let mut command = Command::new(std::env::var_os("KUBECTL").unwrap_or_else(|| "kubectl".into()));
        command.arg("--cache-dir").arg(self.dir.path().join("cache"));
        match identity {
            Some(Identity::Kubeconfig(path)) => {
                command.arg("--kubeconfig").arg(path);
            }
            Some(Identity::User(user)) => {
                command
                    .arg("--kubeconfig")
                    .arg(self.admin_kubeconfig())
                    .arg(format!("--as={user}"))
                    .arg("--as-group=system:authenticated");
            }
            None => {
                command.arg("--kubeconfig").arg(self.admin_kubeconfig());
            }
        }
        command
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let output = tokio::task::spawn_blocking(move || {
            let mut child = command.spawn().expect("kubectl runs");
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

    /// `kubectl apply`-able YAML (JSON) of a ManagedCluster carrying the run label.
    pub fn cluster_yaml(
        &self,
        name: &str,
        accept: bool,
        set: Option<&str>,
        taints: &[Value],
        url: Option<&str>,
    ) -> String {
        let mut labels = json!({RUN_LABEL: self.run});
        if let Some(set) = set {
            labels["cluster.open-cluster-management.io/clusterset"] = json!(set);
        }
        let mut spec = json!({"hubAcceptsClient": accept});
        if !taints.is_empty() {
            spec["taints"] = json!(taints);
        }
        if let Some(url) = url {
            spec["managedClusterClientConfigs"] = json!([{"url": url}]);
        }
        json!({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": name, "labels": labels}, "spec": spec})
        .to_string()
    }

    /// Remembers an object to delete at the end (`kubectl delete` arguments).
    pub fn created(&self, args: &[&str]) {
        self.created
            .lock()
            .unwrap()
            .push(args.iter().map(|s| (*s).to_string()).collect());
    }

    /// A user allowed `rules` (ClusterRole rules as JSON) cluster-wide, impersonated by the admin.
    pub async fn user_with(&self, rules: Value) -> Identity {
        let user = unique("adm-user");
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": user}, "rules": rules});
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]});
        for object in [role, binding] {
            let run = self
                .kubectl(None, &["create", "-f", "-"], Some(object.to_string()))
                .await;
            assert!(run.ok, "creating RBAC: {}", run.stderr);
        }
        self.created(&["clusterrolebinding", &user]);
        self.created(&["clusterrole", &user]);
        let identity = Identity::User(user);
        // RBAC reaches the authorizer through a watch: wait until the first rule applies.
        let first = |field: &str| rules[0][field][0].as_str().unwrap().to_string();
        let resource = format!("{}.{}", first("resources"), first("apiGroups"));
        let verb = first("verbs");
        let probe = ["auth", "can-i", verb.as_str(), resource.as_str()];
        crate::support::eventually("the user's RBAC to apply", || async {
            self.kubectl(Some(&identity), &probe, None)
                .await
                .stdout
                .trim()
                .eq("yes")
                .then_some(())
        })
        .await;
        identity
    }

    /// Deletes what the test made, and the test's webhook configurations.
    pub async fn cleanup(self) {
        let created = std::mem::take(&mut *self.created.lock().unwrap());
        for args in created.iter().rev() {
            let mut all = vec!["delete", "--ignore-not-found", "--wait=false"];
            all.extend(args.iter().map(String::as_str));
            let _ = self.kubectl(None, &all, None).await;
        }
        if let Some((_server, registration)) = &self.webhooks {
            registration.remove(&self.admin).await.unwrap();
        }
    }
}

/// Who runs kubectl.
#[derive(Debug, Clone)]
pub enum Identity {
    /// The credentials of a kubeconfig file.
    Kubeconfig(PathBuf),
    /// A user the admin impersonates (in `system:authenticated`).
    User(String),
}

impl Identity {
    /// The user name the webhooks see.
    pub fn name(&self) -> &str {
        match self {
            Identity::User(u) => u,
            Identity::Kubeconfig(_) => "",
        }
    }
}
