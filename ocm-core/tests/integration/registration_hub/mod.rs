//! The hub's registration controllers (ocm-core.md §2.2–2.5, scenarios of §6.1), against a
//! TestEnv hub with no agent: the tests create ManagedClusters and CSRs themselves and act as the
//! administrator would.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers"
)]

mod accept;
mod bootstrap;
mod csr;
mod lease;

use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use kube::ResourceExt;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::work::v1::ManifestWork;
use ocm_controlplane::TestEnv;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::registration::hub::{self, HubOptions};
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

use crate::hub_lock::{HubLock, Lock};

pub use crate::support::{eventually, unique};

/// A hub TestEnv with the OCM CRDs and the hub controllers running (stopped on drop).
pub struct Hub {
    pub env: TestEnv,
    pub client: kube::Client,
    options: HubOptions,
    task: tokio::task::JoinHandle<()>,
    created: std::sync::Mutex<Vec<String>>,
    /// Held while the test runs hub controllers (see [`crate::hub_lock`]).
    _lock: HubLock,
}

fn spawn_controllers(client: kube::Client, options: HubOptions) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let result = hub::run(client, options, ControllerMetrics::default()).await;
        panic!("hub controllers stopped: {result:?}");
    })
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Hub {
    pub async fn start(options: HubOptions) -> Hub {
        Self::start_locked(options, false).await
    }

    /// Like [`Hub::start`], for a test that stops its hub controllers and checks what happens
    /// while they are down: on a shared real hub it waits until no other test runs hub
    /// controllers, and keeps others from starting them meanwhile.
    pub async fn start_alone(options: HubOptions) -> Hub {
        Self::start_locked(options, true).await
    }

    async fn start_locked(options: HubOptions, alone: bool) -> Hub {
        let env = TestEnv::hub().await.unwrap();
        env.install_ocm_crds().await.unwrap();
        let _lock = if alone {
            HubLock::exclusive(&env, Lock::HubControllers).await
        } else {
            HubLock::shared(&env, Lock::HubControllers).await
        };
        let client = env.client().await.unwrap();
        let task = spawn_controllers(client.clone(), options.clone());
        Hub {
            env,
            client,
            options,
            task,
            created: std::sync::Mutex::default(),
            _lock,
        }
    }

    /// Stops the hub controllers (as if the hub process were killed).
    pub async fn stop(&mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }

    /// Starts the hub controllers again.
    pub fn restart(&mut self) {
        self.task = spawn_controllers(self.client.clone(), self.options.clone());
    }

    pub fn clusters(&self) -> Api<ManagedCluster> {
        Api::all(self.client.clone())
    }

    /// Creates a ManagedCluster `name` with the given `hubAcceptsClient` and lease duration.
    pub async fn create_cluster(&self, name: &str, accept: bool, lease_seconds: i32) -> ManagedCluster {
        let cluster: ManagedCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": name},
            "spec": {"hubAcceptsClient": accept, "leaseDurationSeconds": lease_seconds}}))
        .unwrap();
        self.created.lock().unwrap().push(name.to_string());
        self.clusters()
            .create(&PostParams::default(), &cluster)
            .await
            .unwrap()
    }

    /// Creates a ManagedCluster named after `prefix` (unique), accepted, with a 60 s lease, and
    /// waits until the hub reports it accepted; returns its name.
    pub async fn accepted_cluster(&self, prefix: &str) -> String {
        let name = unique(prefix);
        self.create_cluster(&name, true, 60).await;
        self.wait_condition(&name, "HubAcceptedManagedCluster", "True")
            .await;
        name
    }

    /// Removes what the test created through [`Hub::create_cluster`] (clusters, their CSRs and
    /// ManifestWorks, namespaces) plus `extra_clusters`, for runs against shared real clusters.
    /// Call it with the controllers running.
    pub async fn finish(&self, extra_clusters: &[&str]) {
        let mut names = self.created.lock().unwrap().clone();
        names.extend(extra_clusters.iter().map(|n| (*n).to_string()));
        let csrs = Api::<CertificateSigningRequest>::all(self.client.clone());
        for name in &names {
            let by_cluster = kube::api::ListParams::default()
                .labels(&format!("open-cluster-management.io/cluster-name={name}"));
            let _ = csrs.delete_collection(&Default::default(), &by_cluster).await;
            let works = Api::<ManifestWork>::namespaced(self.client.clone(), name);
            if let Ok(list) = works.list(&Default::default()).await {
                for work in list {
                    remove_work(&self.client, name, &work.name_any()).await;
                }
            }
            let _ = self.clusters().delete(name, &Default::default()).await;
        }
        for name in &names {
            let clusters = self.clusters();
            eventually(&format!("{name} removed"), || async {
                clusters.get_opt(name).await.ok()?.is_none().then_some(())
            })
            .await;
            let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(self.client.clone())
                .delete(name, &Default::default())
                .await;
        }
    }

    pub async fn set_accept(&self, name: &str, accept: bool) {
        let patch = serde_json::json!({"spec": {"hubAcceptsClient": accept}});
        self.clusters()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    /// Waits until the cluster's condition `type_` has `status`.
    pub async fn wait_condition(&self, name: &str, type_: &str, status: &str) -> ManagedCluster {
        let clusters = self.clusters();
        eventually(&format!("{name} {type_}={status}"), || async {
            let cluster = clusters.get(name).await.ok()?;
            let list = cluster.status.as_ref()?.conditions.as_ref()?;
            list.iter()
                .any(|c| c.type_ == type_ && c.status == status)
                .then_some(cluster)
        })
        .await
    }

    /// A client for the agent identity of `cluster` (`system:open-cluster-management:<c>:<agent>`
    /// in the cluster group and the managed-clusters group).
    pub async fn agent_client(&self, cluster: &str, agent: &str) -> kube::Client {
        let group = format!("system:open-cluster-management:{cluster}");
        let kubeconfig = identity_kubeconfig(
            &self.env,
            &self.client,
            &format!("system:open-cluster-management:{cluster}:{agent}"),
            &[&group, CLUSTERS_GROUP],
        )
        .await;
        client_from(&kubeconfig).await
    }
}

/// A kubeconfig for `user` in `groups` (at most two): a certificate from the embedded server's
/// client CA, or on a real cluster one the cluster issues for a CSR of signer
/// `kubernetes.io/kube-apiserver-client` the admin creates and approves (the CSR is removed
/// afterwards; it carries no cluster label, so no hub controller takes it for an agent's).
pub async fn identity_kubeconfig(env: &TestEnv, admin: &kube::Client, user: &str, groups: &[&str]) -> String {
    if let Some(plane) = env.control_plane() {
        return plane
            .kubeconfig_for(user, groups, Duration::from_secs(3600))
            .unwrap();
    }
    let key = KeyPair::generate().unwrap();
    let mut csr = agent_csr(&unique("identity"), "", user, groups, USAGES, SIGNER);
    // agent_csr made its own key: the request is rebuilt with one whose private half stays here.
    csr.spec.request = ByteString(request_pem(&key, user, groups).into_bytes());
    csr.metadata.labels = None;
    csr.spec.expiration_seconds = Some(3600);
    let name = csr.metadata.name.clone().unwrap();
    let csrs = Api::<CertificateSigningRequest>::all(admin.clone());
    let mut created = csrs.create(&PostParams::default(), &csr).await.unwrap();
    created.status.get_or_insert_with(Default::default).conditions = Some(vec![
        k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition {
            type_: "Approved".into(),
            status: "True".into(),
            reason: Some("TestIdentity".into()),
            message: Some("a client certificate for a test identity".into()),
            ..Default::default()
        },
    ]);
    csrs.replace_subresource("approval", &name, &PostParams::default(), &created)
        .await
        .unwrap();
    let certificate = eventually("the cluster to issue the identity's certificate", || async {
        let csr = csrs.get(&name).await.ok()?;
        csr.status?.certificate.filter(|c| !c.0.is_empty())
    })
    .await;
    let _ = csrs.delete(&name, &Default::default()).await;
    let (server, ca) = crate::support::server_and_ca(env.kubeconfig_path());
    let b64 = |bytes: &[u8]| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    };
    serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "hub", "cluster": {"server": server, "certificate-authority-data": b64(ca.as_bytes())}}],
        "users": [{"name": user, "user": {"client-certificate-data": b64(&certificate.0),
            "client-key-data": b64(key.serialize_pem().as_bytes())}}],
        "contexts": [{"name": "identity", "context": {"cluster": "hub", "user": user}}],
        "current-context": "identity",
    })
    .to_string()
}

/// A client built from a kubeconfig text.
pub async fn client_from(kubeconfig: &str) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Whether an API call failed with 403.
pub fn forbidden<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> bool {
    matches!(result, Err(kube::Error::Api(ref status)) if status.code == 403)
}

/// A PEM certificate request of `key` for CN `cn` and the organisations `orgs` (at most two).
fn request_pem(key: &KeyPair, cn: &str, orgs: &[&str]) -> String {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    // rcgen keeps one value per DN type: the second O is written under its raw OID 2.5.4.10.
    for (i, o) in orgs.iter().enumerate() {
        let ty = if i == 0 {
            DnType::OrganizationName
        } else {
            DnType::CustomDnType(vec![2, 5, 4, 10])
        };
        dn.push(ty, *o);
    }
    params.distinguished_name = dn;
    params.serialize_request(key).unwrap().pem().unwrap()
}

/// A CSR object for `cluster` (label) with subject `cn` / `orgs` (at most two), `usages` and
/// `signer`; the key stays here.
pub fn agent_csr(
    name: &str,
    cluster: &str,
    cn: &str,
    orgs: &[&str],
    usages: &[&str],
    signer: &str,
) -> CertificateSigningRequest {
    let pem = request_pem(&KeyPair::generate().unwrap(), cn, orgs);
    CertificateSigningRequest {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(
                [(
                    "open-cluster-management.io/cluster-name".to_string(),
                    cluster.to_string(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pem.into_bytes()),
            signer_name: signer.to_string(),
            usages: Some(usages.iter().map(|u| (*u).to_string()).collect()),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    }
}

pub const SIGNER: &str = "kubernetes.io/kube-apiserver-client";
pub const USAGES: &[&str] = &["digital signature", "key encipherment", "client auth"];
pub const CLUSTERS_GROUP: &str = "system:open-cluster-management:managed-clusters";

/// Whether the CSR carries Approved=True.
pub fn approved(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|list| list.iter().any(|c| c.type_ == "Approved" && c.status == "True"))
}

/// A finalizer the tests put on their ManifestWorks, so that a work stays (terminating) after the
/// hub's cleanup deletes it, until the test releases it with [`remove_work`] — the part a work
/// agent plays on a real hub.
pub const WORK_HOLD_FINALIZER: &str = "test.open-cluster-management.io/hold";

/// Releases the test finalizer of a ManifestWork and deletes it (either may already be done).
pub async fn remove_work(client: &kube::Client, namespace: &str, name: &str) {
    let works = Api::<ManifestWork>::namespaced(client.clone(), namespace);
    let release = serde_json::json!({"metadata": {"finalizers": null}});
    let _ = works
        .patch(name, &PatchParams::default(), &Patch::Merge(&release))
        .await;
    match works.delete(name, &Default::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(error) => panic!("deleting ManifestWork {namespace}/{name}: {error}"),
    }
}
