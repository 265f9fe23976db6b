//! What the work agent tests share: a hub with the OCM CRDs and a unique cluster namespace, a
//! spoke with the AppliedManifestWork CRD and a unique namespace for the applied objects, a work
//! agent running in the background (stopped, restarted or replaced by the test), helpers to
//! build ManifestWorks and read their conditions, and cleanup of everything on both clusters.
//!
//! Every name is unique per test (works are named after the cluster, so AppliedManifestWork
//! names `<hubHash>-<work>` never meet another test's on a shared real spoke), and every agent
//! has its own agent id, so its finalize and eviction controllers never touch another test's
//! AppliedManifestWorks. Runs unchanged on real clusters (`OCM_TEST_HUB_KUBECONFIG`,
//! `OCM_TEST_SPOKE_KUBECONFIG`).

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use ocm_api::meta::Condition;
use ocm_api::work::v1::{
    AppliedManifestWork, DeleteOption, Manifest, ManifestConfigOption, ManifestWork, ManifestWorkSpec,
    ManifestsTemplate,
};
use ocm_controlplane::TestEnv;
use ocm_core::work::agent::{self, WorkAgentOptions};
use serde_json::{Value, json};

pub use crate::support::{eventually, eventually_within, unique};

/// A hub and a spoke for one test, and the work agent of its cluster.
pub struct WorkEnv {
    /// Kept alive for the test's duration.
    pub hub: TestEnv,
    /// Kept alive for the test's duration.
    pub spoke: TestEnv,
    pub hub_client: kube::Client,
    pub spoke_client: kube::Client,
    /// The cluster name: the hub namespace of the works.
    pub cluster: String,
    /// A namespace on the spoke for the objects the works apply.
    pub namespace: String,
    /// The hub's server URL as the agent sees it.
    pub hub_url: String,
    /// The agent id of [`WorkEnv::options`].
    pub agent_id: String,
    agent: Option<tokio::task::JoinHandle<()>>,
    extra_agents: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for WorkEnv {
    fn drop(&mut self) {
        if let Some(agent) = self.agent.take() {
            agent.abort();
        }
        for agent in self.extra_agents.drain(..) {
            agent.abort();
        }
    }
}

impl WorkEnv {
    /// A hub (OCM CRDs, the cluster namespace) and a spoke (OCM CRDs, the test namespace); no
    /// agent yet.
    pub async fn new(prefix: &str) -> Self {
        let hub = TestEnv::hub().await.unwrap();
        hub.install_ocm_crds().await.unwrap();
        let spoke = TestEnv::spoke().await.unwrap();
        spoke.install_ocm_crds().await.unwrap();
        let hub_client = hub.client().await.unwrap();
        let spoke_client = spoke.client().await.unwrap();
        let cluster = unique(prefix);
        let namespace = format!("{cluster}-ns");
        create_namespace(&hub_client, &cluster).await;
        create_namespace(&spoke_client, &namespace).await;
        let (hub_url, _) = crate::support::server_and_ca(hub.kubeconfig_path());
        Self {
            hub,
            spoke,
            hub_client,
            spoke_client,
            agent_id: format!("{cluster}-agent"),
            cluster,
            namespace,
            hub_url,
            agent: None,
            extra_agents: Vec::new(),
        }
    }

    /// [`WorkEnv::new`] with the agent started with [`WorkEnv::options`].
    pub async fn started(prefix: &str) -> Self {
        let mut env = Self::new(prefix).await;
        env.start_agent(env.options());
        env
    }

    /// Agent options for this test: its own agent id, short periods.
    pub fn options(&self) -> WorkAgentOptions {
        let mut options = WorkAgentOptions::new(&self.cluster);
        options.agent_id = Some(self.agent_id.clone());
        options.status_sync_interval = Duration::from_secs(1);
        options.apply_resync = Duration::from_secs(5);
        options.workers = 4;
        options
    }

    /// Starts the agent (replacing a running one) with `options` against this hub.
    pub fn start_agent(&mut self, options: WorkAgentOptions) {
        self.stop_agent();
        self.agent = Some(self.spawn_agent(self.hub_client.clone(), self.hub_url.clone(), options));
    }

    /// Starts another agent, e.g. of a second hub, kept until the test ends.
    pub fn start_extra_agent(&mut self, hub: kube::Client, hub_url: String, options: WorkAgentOptions) {
        let handle = self.spawn_agent(hub, hub_url, options);
        self.extra_agents.push(handle);
    }

    fn spawn_agent(
        &self,
        hub: kube::Client,
        hub_url: String,
        options: WorkAgentOptions,
    ) -> tokio::task::JoinHandle<()> {
        let spoke = self.spoke_client.clone();
        tokio::spawn(async move {
            let result = agent::run(hub, &hub_url, spoke, options).await;
            panic!("the work agent stopped: {result:?}");
        })
    }

    /// Stops the agent (as a killed process would: nothing is cleaned up).
    pub fn stop_agent(&mut self) {
        if let Some(agent) = self.agent.take() {
            agent.abort();
        }
    }

    /// The hub hash of this hub.
    pub fn hub_hash(&self) -> String {
        agent::hub_hash(&self.hub_url)
    }

    /// A work name unique to this test.
    pub fn work_name(&self, name: &str) -> String {
        format!("{}-{name}", self.cluster)
    }

    /// The AppliedManifestWork name of work `work`.
    pub fn applied_name(&self, work: &str) -> String {
        format!("{}-{work}", self.hub_hash())
    }

    pub fn works(&self) -> Api<ManifestWork> {
        Api::namespaced(self.hub_client.clone(), &self.cluster)
    }

    pub fn applied(&self) -> Api<AppliedManifestWork> {
        Api::all(self.spoke_client.clone())
    }

    pub fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.spoke_client.clone(), &self.namespace)
    }

    /// A ConfigMap manifest in the test namespace.
    pub fn configmap(&self, name: &str, data: Value) -> Manifest {
        manifest(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": self.namespace},
            "data": data,
        }))
    }

    /// Creates work `name` (see [`WorkEnv::work_name`]) with `manifests`.
    pub async fn create_work(&self, name: &str, manifests: Vec<Manifest>) -> ManifestWork {
        self.create_work_with(name, manifests, None, Vec::new()).await
    }

    /// Creates work `name` with manifests, delete option and manifest configs.
    pub async fn create_work_with(
        &self,
        name: &str,
        manifests: Vec<Manifest>,
        delete_option: Option<DeleteOption>,
        configs: Vec<ManifestConfigOption>,
    ) -> ManifestWork {
        let mut work = ManifestWork::new(&self.work_name(name), work_spec(manifests));
        work.spec.delete_option = delete_option;
        work.spec.manifest_configs = Some(configs).filter(|c| !c.is_empty());
        self.works().create(&PostParams::default(), &work).await.unwrap()
    }

    /// Replaces the manifests of work `name`.
    pub async fn set_manifests(&self, name: &str, manifests: Vec<Manifest>) {
        let patch = json!({"spec": {"workload": {"manifests": manifests}}});
        self.works()
            .patch(
                &self.work_name(name),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .unwrap();
    }

    /// Merge-patches the spec of work `name`.
    pub async fn patch_spec(&self, name: &str, spec: Value) {
        self.works()
            .patch(
                &self.work_name(name),
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": spec})),
            )
            .await
            .unwrap();
    }

    /// Work `name`, if it exists.
    pub async fn work(&self, name: &str) -> Option<ManifestWork> {
        self.works().get_opt(&self.work_name(name)).await.unwrap()
    }

    /// Waits until work `name` has condition `type_` with `status` at its current generation.
    pub async fn wait_work_condition(&self, name: &str, type_: &str, status: &str) -> ManifestWork {
        eventually(&format!("work {name} {type_}={status}"), || async {
            let work = self.work(name).await?;
            let generation = work.metadata.generation;
            let condition = work_condition(&work, type_)?;
            (condition.status == status && condition.observed_generation == generation).then_some(work)
        })
        .await
    }

    /// The statuses of the `type_` condition of each manifest in resourceStatus, in order.
    pub async fn manifest_statuses(&self, name: &str, type_: &str) -> Vec<String> {
        let work = self.work(name).await.unwrap();
        manifest_conditions(&work)
            .iter()
            .map(|m| {
                m.conditions
                    .iter()
                    .find(|c| c.type_ == type_)
                    .map(|c| c.status.clone())
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The ConfigMap `name` of the test namespace, if it exists.
    pub async fn configmap_opt(&self, name: &str) -> Option<ConfigMap> {
        self.configmaps().get_opt(name).await.unwrap()
    }

    /// Waits until ConfigMap `name` exists and `check` holds for it.
    pub async fn wait_configmap(&self, name: &str, check: impl Fn(&ConfigMap) -> bool) -> ConfigMap {
        eventually(&format!("ConfigMap {name}"), || async {
            self.configmap_opt(name).await.filter(|cm| check(cm))
        })
        .await
    }

    /// Waits until ConfigMap `name` is gone.
    pub async fn wait_configmap_gone(&self, name: &str) {
        eventually(&format!("ConfigMap {name} gone"), || async {
            self.configmap_opt(name).await.is_none().then_some(())
        })
        .await;
    }

    /// The AppliedManifestWork of work `name`, if it exists.
    pub async fn applied_work(&self, name: &str) -> Option<AppliedManifestWork> {
        self.applied()
            .get_opt(&self.applied_name(&self.work_name(name)))
            .await
            .unwrap()
    }

    /// The names of the resources the AppliedManifestWork of work `name` records.
    pub async fn applied_names(&self, name: &str) -> Vec<String> {
        self.applied_work(name)
            .await
            .and_then(|a| a.status)
            .and_then(|s| s.applied_resources)
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.name)
            .collect()
    }

    /// Deletes work `name` (its finalizer keeps it until the agent is done).
    pub async fn delete_work(&self, name: &str) {
        let _ = self
            .works()
            .delete(&self.work_name(name), &DeleteParams::default())
            .await;
    }

    /// Waits until work `name` is gone from the hub.
    pub async fn wait_work_gone(&self, name: &str) {
        eventually(&format!("work {name} gone"), || async {
            self.work(name).await.is_none().then_some(())
        })
        .await;
    }

    /// Removes what the test made: works (finalizers released), AppliedManifestWorks of this
    /// test's agents, the hub's cluster namespace and the spoke's test namespace.
    pub async fn finish(mut self) {
        self.stop_agent();
        for agent in self.extra_agents.drain(..) {
            agent.abort();
        }
        let clear = json!({"metadata": {"finalizers": null}});
        for work in self.works().list(&ListParams::default()).await.unwrap() {
            let _ = self
                .works()
                .patch(&work.name_any(), &PatchParams::default(), &Patch::Merge(&clear))
                .await;
            let _ = self
                .works()
                .delete(&work.name_any(), &DeleteParams::default())
                .await;
        }
        for amw in self.applied().list(&ListParams::default()).await.unwrap() {
            let ours = amw
                .spec
                .agent_id
                .as_deref()
                .is_some_and(|id| id.starts_with(&self.cluster))
                || amw.spec.manifest_work_name.starts_with(&self.cluster);
            if ours {
                let _ = self
                    .applied()
                    .patch(&amw.name_any(), &PatchParams::default(), &Patch::Merge(&clear))
                    .await;
                let _ = self
                    .applied()
                    .delete(&amw.name_any(), &DeleteParams::default())
                    .await;
            }
        }
        let _ = Api::<Namespace>::all(self.hub_client.clone())
            .delete(&self.cluster, &DeleteParams::default())
            .await;
        let _ = Api::<Namespace>::all(self.spoke_client.clone())
            .delete(&self.namespace, &DeleteParams::default())
            .await;
    }

    /// A dynamic Api of the spoke for `api_version`/`kind`/`plural`, in `namespace` or cluster-wide.
    pub fn spoke_dynamic(
        &self,
        api_version: &str,
        kind: &str,
        plural: &str,
        namespace: Option<&str>,
    ) -> Api<DynamicObject> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let resource = kube::api::ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: api_version.into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        match namespace {
            Some(ns) => Api::namespaced_with(self.spoke_client.clone(), ns, &resource),
            None => Api::all_with(self.spoke_client.clone(), &resource),
        }
    }
}

async fn create_namespace(client: &kube::Client, name: &str) {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// A manifest from JSON.
pub fn manifest(value: Value) -> Manifest {
    Manifest::try_from(value).unwrap()
}

/// A spec with these manifests.
pub fn work_spec(manifests: Vec<Manifest>) -> ManifestWorkSpec {
    ManifestWorkSpec {
        workload: Some(ManifestsTemplate {
            manifests: Some(manifests),
        }),
        ..ManifestWorkSpec::default()
    }
}

/// The condition `type_` of a work.
pub fn work_condition<'a>(work: &'a ManifestWork, type_: &str) -> Option<&'a Condition> {
    work.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// The manifest conditions of a work's resourceStatus.
pub fn manifest_conditions(work: &ManifestWork) -> Vec<ocm_api::work::v1::ManifestCondition> {
    work.status
        .as_ref()
        .and_then(|s| s.resource_status.as_ref())
        .and_then(|r| r.manifests.clone())
        .unwrap_or_default()
}

/// The UIDs of the owner references of an object's metadata.
pub fn owner_uids(meta: &ObjectMeta) -> Vec<String> {
    meta.owner_references
        .iter()
        .flatten()
        .map(|o| o.uid.clone())
        .collect()
}
