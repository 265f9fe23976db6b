//! What the deploy, hook, hosted and multi-works tests share: a hub (embedded, or the one of
//! `OCM_TEST_HUB_KUBECONFIG`) with the OCM CRDs, a test add-on whose manifests the test changes,
//! ManagedClusters, ClusterManagementAddOns and ManagedClusterAddOns set up as upstream's
//! addon-framework tests do (the CMA owner reference and `RegistrationApplied` set by the test),
//! and work status moved by hand.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers"
)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use ocm_addon_framework::AddonManager;
use ocm_addon_framework::agent::{AddonError, AgentAddon, AgentAddonOptions};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::work::v1::{Manifest, ManifestWork};
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

/// How long [`eventually`] waits.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A name unique to this test run (DNS-label safe).
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{:x}{:05x}{n}", std::process::id(), nanos >> 12)
}

/// Polls `check` every 100 ms until it returns `Some`, failing the test after [`DEADLINE`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Checks for `secs` seconds that `check` keeps holding.
pub async fn consistently<F, Fut>(secs: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let until = tokio::time::Instant::now() + Duration::from_secs(secs);
    while tokio::time::Instant::now() < until {
        assert!(check().await, "{what} stopped holding");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A manifest from JSON.
pub fn manifest(value: Value) -> Manifest {
    Manifest::try_from(value).unwrap()
}

/// A Deployment manifest in `namespace` named `name` with `replicas`.
pub fn deployment(namespace: &str, name: &str, replicas: i64) -> Manifest {
    manifest(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "agent", "image": "quay.io/test/agent:latest"}]}
            }
        }
    }))
}

/// A test add-on: manifests the test may change, and fixed options.
pub struct TestAddon {
    /// What `manifests` returns.
    pub manifests: Mutex<Vec<Manifest>>,
    /// What `options` returns.
    pub options: AgentAddonOptions,
    /// How many times the manager asked for the manifests.
    pub renders: std::sync::atomic::AtomicUsize,
}

impl TestAddon {
    /// An add-on with these options and manifests.
    pub fn new(options: AgentAddonOptions, manifests: Vec<Manifest>) -> Arc<Self> {
        Arc::new(Self {
            manifests: Mutex::new(manifests),
            options,
            renders: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Waits until the manager stops rendering the add-on (no render for 2 s).
    pub async fn settled(&self) {
        let mut last = usize::MAX;
        let mut since = tokio::time::Instant::now();
        eventually("the manager settled", || {
            let now = self.renders.load(std::sync::atomic::Ordering::SeqCst);
            if now != last {
                last = now;
                since = tokio::time::Instant::now();
            }
            let settled = since.elapsed() >= Duration::from_secs(2);
            async move { settled.then_some(()) }
        })
        .await;
    }

    /// Replaces the manifests.
    pub fn set_manifests(&self, manifests: Vec<Manifest>) {
        *self.manifests.lock().unwrap() = manifests;
    }
}

#[async_trait]
impl AgentAddon for TestAddon {
    async fn manifests(
        &self,
        _cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
    ) -> Result<Vec<Manifest>, AddonError> {
        self.renders.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(self.manifests.lock().unwrap().clone())
    }

    fn options(&self) -> AgentAddonOptions {
        self.options.clone()
    }
}

/// A hub with the OCM CRDs and a running add-on manager; dropping it stops the manager.
pub struct Hub {
    /// The hub (kept alive for the embedded server).
    pub _env: TestEnv,
    /// An admin client.
    pub client: Client,
    /// The manager, for `trigger`.
    pub manager: Arc<AddonManager>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the hub and a manager running `addon`.
pub async fn start(addon: Arc<dyn AgentAddon>) -> Hub {
    let env = TestEnv::hub().await.unwrap();
    env.install_ocm_crds().await.unwrap();
    let client = env.client().await.unwrap();
    let mut manager = AddonManager::new(client.clone());
    manager.add_agent(addon).unwrap();
    let manager = Arc::new(manager);
    let running = manager.clone();
    let task = tokio::spawn(async move {
        if let Err(error) = running.run().await {
            tracing::warn!(%error, "the add-on manager stopped");
        }
    });
    Hub {
        _env: env,
        client,
        manager,
        task,
    }
}

impl Hub {
    /// Creates ManagedCluster `name` and its namespace.
    pub async fn create_cluster(&self, name: &str) {
        let clusters: Api<ManagedCluster> = Api::all(self.client.clone());
        let cluster: ManagedCluster = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "metadata": {"name": name},
            "spec": {"hubAcceptsClient": true}
        }))
        .unwrap();
        clusters.create(&PostParams::default(), &cluster).await.unwrap();
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..Default::default()
            },
            ..Default::default()
        };
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
    }

    /// Creates ClusterManagementAddOn `name`.
    pub async fn create_cma(&self, name: &str) -> ClusterManagementAddOn {
        let cmas: Api<ClusterManagementAddOn> = Api::all(self.client.clone());
        let cma: ClusterManagementAddOn = serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn",
            "metadata": {"name": name},
            "spec": {"addOnMeta": {"displayName": name}}
        }))
        .unwrap();
        cmas.create(&PostParams::default(), &cma).await.unwrap()
    }

    /// Creates ManagedClusterAddOn `addon` in `cluster` with `annotations`, owned by the
    /// ClusterManagementAddOn, and marks its registration applied as the registration
    /// controller would (unless it did already).
    pub async fn create_mca(
        &self,
        cluster: &str,
        addon: &str,
        annotations: BTreeMap<String, String>,
    ) -> ManagedClusterAddOn {
        let cma = self.create_cma(addon).await;
        let api = self.addons(cluster);
        let mca = ManagedClusterAddOn {
            metadata: ObjectMeta {
                name: Some(addon.to_owned()),
                namespace: Some(cluster.to_owned()),
                annotations: Some(annotations),
                owner_references: Some(vec![OwnerReference {
                    api_version: "addon.open-cluster-management.io/v1beta1".into(),
                    kind: "ClusterManagementAddOn".into(),
                    name: addon.to_owned(),
                    uid: cma.uid().unwrap(),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &mca).await.unwrap();
        self.mark_registration_applied(cluster, addon).await;
        api.get(addon).await.unwrap()
    }

    /// Sets `RegistrationApplied` True on the add-on if no controller set it.
    pub async fn mark_registration_applied(&self, cluster: &str, addon: &str) {
        let api = self.addons(cluster);
        eventually("RegistrationApplied", || async {
            let current = api.get(addon).await.unwrap();
            if condition(&current, "RegistrationApplied").is_some() {
                return Some(());
            }
            let mut conditions = current
                .status
                .as_ref()
                .and_then(|s| s.conditions.clone())
                .unwrap_or_default();
            conditions.push(new_condition(
                "RegistrationApplied",
                "True",
                "SetPermissionApplied",
                "set by the test",
            ));
            let patch = json!({
                "metadata": {"resourceVersion": current.resource_version()},
                "status": {"conditions": conditions}
            });
            api.patch_status(addon, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .ok()
                .map(|_| ())
        })
        .await;
    }

    /// The ManagedClusterAddOns of `cluster`.
    pub fn addons(&self, cluster: &str) -> Api<ManagedClusterAddOn> {
        Api::namespaced(self.client.clone(), cluster)
    }

    /// The ManifestWorks of `namespace`.
    pub fn works(&self, namespace: &str) -> Api<ManifestWork> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Waits for work `namespace/name` and returns it once `check` accepts it.
    pub async fn work_where(
        &self,
        namespace: &str,
        name: &str,
        what: &str,
        check: impl Fn(&ManifestWork) -> bool,
    ) -> ManifestWork {
        let api = self.works(namespace);
        eventually(what, || async {
            api.get_opt(name).await.unwrap().filter(|w| check(w))
        })
        .await
    }

    /// Waits until work `namespace/name` is gone.
    pub async fn work_gone(&self, namespace: &str, name: &str) {
        let api = self.works(namespace);
        eventually(&format!("work {namespace}/{name} deleted"), || async {
            api.get_opt(name).await.unwrap().is_none().then_some(())
        })
        .await;
    }

    /// Waits until the add-on's condition `type_` has `status` (and, if given, `reason`).
    pub async fn addon_condition(
        &self,
        cluster: &str,
        addon: &str,
        type_: &str,
        status: &str,
        reason: Option<&str>,
    ) -> ManagedClusterAddOn {
        let api = self.addons(cluster);
        eventually(
            &format!("{type_}={status} {reason:?} on {cluster}/{addon}"),
            || async {
                api.get_opt(addon).await.unwrap().filter(|a| {
                    condition(a, type_)
                        .is_some_and(|c| c.status == status && reason.is_none_or(|r| c.reason == r))
                })
            },
        )
        .await
    }

    /// Sets the work's conditions (type → status) and manifest statuses through the status
    /// subresource.
    pub async fn set_work_status(
        &self,
        namespace: &str,
        name: &str,
        conditions: &[(&str, &str)],
        manifests: Value,
    ) {
        let api = self.works(namespace);
        let conditions: Vec<_> = conditions
            .iter()
            .map(|(type_, status)| new_condition(type_, status, "SetByTest", "set by the test"))
            .collect();
        let mut status = json!({"conditions": conditions});
        if !manifests.is_null() {
            status["resourceStatus"] = json!({"manifests": manifests});
        }
        eventually(&format!("status of work {namespace}/{name} set"), || async {
            api.patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": status})),
            )
            .await
            .ok()
            .map(|_| ())
        })
        .await;
    }

    /// Deletes the add-on, its ClusterManagementAddOn, the clusters and their namespaces
    /// (finalizers of the test dropped first).
    pub async fn cleanup(&self, clusters: &[&str], addon: &str) {
        for cluster in clusters {
            let api = self.addons(cluster);
            if let Ok(Some(mca)) = api.get_opt(addon).await
                && !mca.finalizers().is_empty()
            {
                let patch = json!({"metadata": {"finalizers": null}});
                let _ = api
                    .patch(addon, &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
            }
            let _ = api.delete(addon, &DeleteParams::default()).await;
            let clusters: Api<ManagedCluster> = Api::all(self.client.clone());
            let _ = clusters
                .patch(
                    cluster,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
                )
                .await;
            let _ = clusters.delete(cluster, &DeleteParams::default()).await;
            let namespaces: Api<Namespace> = Api::all(self.client.clone());
            let _ = namespaces.delete(cluster, &DeleteParams::default()).await;
        }
        let cmas: Api<ClusterManagementAddOn> = Api::all(self.client.clone());
        let _ = cmas.delete(addon, &DeleteParams::default()).await;
    }
}

/// A condition as JSON.
pub fn new_condition(type_: &str, status: &str, reason: &str, message: &str) -> ocm_api::meta::Condition {
    ocm_api::meta::Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::now()),
        observed_generation: None,
    }
}

/// The condition of `type_` on the add-on.
pub fn condition<'a>(addon: &'a ManagedClusterAddOn, type_: &str) -> Option<&'a ocm_api::meta::Condition> {
    addon
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// The manifests of a work.
pub fn manifests_of(work: &ManifestWork) -> Vec<Manifest> {
    work.spec
        .workload
        .as_ref()
        .and_then(|w| w.manifests.clone())
        .unwrap_or_default()
}

/// The number of manifest configs of a work.
pub fn configs_of(work: &ManifestWork) -> usize {
    work.spec.manifest_configs.as_ref().map_or(0, Vec::len)
}

/// The resource status of one manifest with integer (or string) feedback values.
pub fn feedback(group: &str, resource: &str, namespace: &str, name: &str, values: &[(&str, Value)]) -> Value {
    let values: Vec<Value> = values
        .iter()
        .map(|(name, value)| match value {
            Value::String(s) => json!({"name": name, "fieldValue": {"type": "String", "string": s}}),
            other => json!({"name": name, "fieldValue": {"type": "Integer", "integer": other}}),
        })
        .collect();
    json!({
        "resourceMeta": {"group": group, "resource": resource, "namespace": namespace, "name": name,
                         "version": "v1", "ordinal": 0},
        "conditions": [],
        "statusFeedback": {"values": values}
    })
}
