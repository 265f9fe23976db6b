//! The `AddonManager` (addon-framework.md §2): it holds the add-ons ([`AgentAddon`]) of one
//! add-on hub controller and runs their hub-side controllers over shared caches of the hub.
//!
//! | controller | what it does |
//! |---|---|
//! | registration | `status.supportedConfigs`, `status.registrations`, `status.namespace`, `RegistrationApplied`, the agents' hub permissions (§2.2) |
//! | deploy | the deploy, hook and hosted ManifestWorks, `ManifestApplied`, health (§2.3–§2.5) |
//! | CSR approving / signing | approves and signs the agents' CSRs with the add-on's checks (§2.6, §2.7) |
//! | config | spec hashes of the configs ManagedClusterAddOns and ClusterManagementAddOns refer to (§2.8) |
//!
//! [`AddonManager::run`] starts one watch per kind — ManagedClusters, ManagedClusterAddOns,
//! ClusterManagementAddOns, and the ManifestWorks and CSRs labelled with one of the manager's
//! add-on names — feeding shared reflector stores every controller reads.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::runtime::reflector::{self, ObjectRef, ReflectHandle, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::labels;
use ocm_api::work::v1::ManifestWork;
use tokio::sync::broadcast;

use crate::agent::AgentAddon;

/// How many events a shared store buffers for each controller subscribed to it.
const SHARED_BUFFER: usize = 1024;

/// How many external triggers wait for the controllers before the oldest are dropped.
const TRIGGER_BUFFER: usize = 256;

/// Errors of the add-on manager.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// [`AddonManager::add_agent`] got an add-on without a name.
    #[error("addon name should be set")]
    AddAgentWithoutName,
    /// [`AddonManager::add_agent`] got a second add-on of the same name.
    #[error("an agent is added for the addon {0} already")]
    AddAgentTwice(String),
    /// [`AddonManager::run`] was called without any add-on.
    #[error("no add-on was added to the manager")]
    RunWithoutAddons,
    /// A controller could not subscribe to a shared store.
    #[error("subscribe controller {0} to a shared store")]
    Subscribe(&'static str),
    /// A watch of the hub stopped.
    #[error("the watch of {0} stopped")]
    WatchStopped(&'static str),
    /// A controller stopped.
    #[error("controller {0} stopped")]
    ControllerStopped(&'static str),
}

/// Which ManagedClusterAddOns the controllers handle (upstream's template mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AddonFilter {
    /// Every ManagedClusterAddOn of a registered add-on.
    #[default]
    All,
    /// Only those whose `status.configReferences` hold an `addontemplates` config with a spec
    /// hash (every controller but the config controller; upstream's `WithTemplateMode(true)`).
    TemplateBased,
}

/// What every controller of the manager shares.
pub(crate) struct Context {
    /// The hub.
    pub(crate) client: Client,
    /// The add-ons by name.
    pub(crate) addons: BTreeMap<String, Arc<dyn AgentAddon>>,
    /// Which ManagedClusterAddOns the controllers handle.
    pub(crate) filter: AddonFilter,
    /// Every ManagedCluster.
    pub(crate) clusters: Store<ManagedCluster>,
    /// Every ManagedClusterAddOn (of any add-on; controllers skip the others).
    pub(crate) managed_addons: Store<ManagedClusterAddOn>,
    /// Every ClusterManagementAddOn.
    pub(crate) cluster_management_addons: Store<ClusterManagementAddOn>,
    /// The ManifestWorks labelled with one of the manager's add-on names.
    pub(crate) works: Store<ManifestWork>,
    /// The CSRs labelled with one of the manager's add-on names.
    pub(crate) csrs: Store<CertificateSigningRequest>,
}

impl Context {
    /// The add-on of this name, if the manager has it.
    pub(crate) fn addon(&self, name: &str) -> Option<&Arc<dyn AgentAddon>> {
        self.addons.get(name)
    }
}

/// The writers of the shared stores, handing out one event stream per controller.
pub(crate) struct Informers {
    clusters: reflector::store::Writer<ManagedCluster>,
    managed_addons: reflector::store::Writer<ManagedClusterAddOn>,
    cluster_management_addons: reflector::store::Writer<ClusterManagementAddOn>,
    works: reflector::store::Writer<ManifestWork>,
    csrs: reflector::store::Writer<CertificateSigningRequest>,
    triggers: broadcast::Sender<ObjectRef<ManagedClusterAddOn>>,
}

impl Informers {
    /// A stream of the ManagedClusters the store sees, for the controller `who`.
    pub(crate) fn clusters(&self, who: &'static str) -> Result<ReflectHandle<ManagedCluster>, ManagerError> {
        self.clusters.subscribe().ok_or(ManagerError::Subscribe(who))
    }

    /// A stream of the ManagedClusterAddOns the store sees, for the controller `who`.
    pub(crate) fn managed_addons(
        &self,
        who: &'static str,
    ) -> Result<ReflectHandle<ManagedClusterAddOn>, ManagerError> {
        self.managed_addons
            .subscribe()
            .ok_or(ManagerError::Subscribe(who))
    }

    /// A stream of the ClusterManagementAddOns the store sees, for the controller `who`.
    pub(crate) fn cluster_management_addons(
        &self,
        who: &'static str,
    ) -> Result<ReflectHandle<ClusterManagementAddOn>, ManagerError> {
        self.cluster_management_addons
            .subscribe()
            .ok_or(ManagerError::Subscribe(who))
    }

    /// A stream of the add-on ManifestWorks the store sees, for the controller `who`.
    pub(crate) fn works(&self, who: &'static str) -> Result<ReflectHandle<ManifestWork>, ManagerError> {
        self.works.subscribe().ok_or(ManagerError::Subscribe(who))
    }

    /// A stream of the add-on CSRs the store sees, for the controller `who`.
    pub(crate) fn csrs(
        &self,
        who: &'static str,
    ) -> Result<ReflectHandle<CertificateSigningRequest>, ManagerError> {
        self.csrs.subscribe().ok_or(ManagerError::Subscribe(who))
    }

    /// The `cluster/addon` keys [`AddonManager::trigger`] asks to reconcile.
    pub(crate) fn triggers(&self) -> impl Stream<Item = ObjectRef<ManagedClusterAddOn>> + Send + 'static {
        futures::stream::unfold(self.triggers.subscribe(), |mut receiver| async move {
            loop {
                match receiver.recv().await {
                    Ok(key) => return Some((key, receiver)),
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "add-on triggers were dropped");
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
    }
}

/// A running controller or watch: resolves when it stops.
pub(crate) type ControllerFuture = BoxFuture<'static, Result<(), ManagerError>>;

/// The hub side of one or more add-ons (upstream's `AddonManager`).
///
/// Add the add-ons with [`add_agent`](Self::add_agent), then [`run`](Self::run) until shutdown;
/// [`trigger`](Self::trigger) asks for a reconcile of one add-on on one cluster at any time.
pub struct AddonManager {
    client: Client,
    addons: BTreeMap<String, Arc<dyn AgentAddon>>,
    filter: AddonFilter,
    triggers: broadcast::Sender<ObjectRef<ManagedClusterAddOn>>,
}

impl AddonManager {
    /// A manager of no add-ons yet, talking to the hub through `client`.
    #[must_use]
    pub fn new(client: Client) -> Self {
        let (triggers, _) = broadcast::channel(TRIGGER_BUFFER);
        Self {
            client,
            addons: BTreeMap::new(),
            filter: AddonFilter::All,
            triggers,
        }
    }

    /// Handles only template-based ManagedClusterAddOns (upstream's `WithTemplateMode`).
    #[must_use]
    pub fn with_filter(mut self, filter: AddonFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Adds an add-on.
    ///
    /// # Errors
    ///
    /// [`ManagerError::AddAgentWithoutName`] for an empty name,
    /// [`ManagerError::AddAgentTwice`] for a name already added.
    pub fn add_agent(&mut self, addon: Arc<dyn AgentAddon>) -> Result<(), ManagerError> {
        let name = addon.options().addon_name;
        if name.is_empty() {
            return Err(ManagerError::AddAgentWithoutName);
        }
        if self.addons.contains_key(&name) {
            return Err(ManagerError::AddAgentTwice(name));
        }
        self.addons.insert(name, addon);
        Ok(())
    }

    /// The names of the add-ons added.
    pub fn addon_names(&self) -> impl Iterator<Item = &str> {
        self.addons.keys().map(String::as_str)
    }

    /// Reconciles add-on `addon` on cluster `cluster` now (upstream's `Trigger`): the deploy and
    /// registration controllers run for it even though nothing changed on the hub.
    pub fn trigger(&self, cluster: &str, addon: &str) {
        // No receiver means the manager is not running: there is nothing to reconcile.
        let _ = self.triggers.send(ObjectRef::new(addon).within(cluster));
    }

    /// Runs every controller until one stops; dropping the future stops them all.
    ///
    /// # Errors
    ///
    /// [`ManagerError::RunWithoutAddons`] with no add-on; otherwise the controller or watch that
    /// stopped.
    pub async fn run(&self) -> Result<(), ManagerError> {
        if self.addons.is_empty() {
            return Err(ManagerError::RunWithoutAddons);
        }
        let (clusters, clusters_writer) = reflector::store_shared::<ManagedCluster>(SHARED_BUFFER);
        let (managed_addons, managed_addons_writer) =
            reflector::store_shared::<ManagedClusterAddOn>(SHARED_BUFFER);
        let (cluster_management_addons, cma_writer) =
            reflector::store_shared::<ClusterManagementAddOn>(SHARED_BUFFER);
        let (works, works_writer) = reflector::store_shared::<ManifestWork>(SHARED_BUFFER);
        let (csrs, csrs_writer) = reflector::store_shared::<CertificateSigningRequest>(SHARED_BUFFER);
        let informers = Informers {
            clusters: clusters_writer,
            managed_addons: managed_addons_writer,
            cluster_management_addons: cma_writer,
            works: works_writer,
            csrs: csrs_writer,
            triggers: self.triggers.clone(),
        };
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            addons: self.addons.clone(),
            filter: self.filter,
            clusters,
            managed_addons,
            cluster_management_addons,
            works,
            csrs,
        });
        tracing::info!(addons = ?self.addons.keys().collect::<Vec<_>>(), "starting the add-on manager");
        let controllers: Vec<ControllerFuture> = controllers(&ctx, &informers)?;

        // The shared watches feed every controller; they start last, once all subscribed.
        let addon_selector = format!(
            "{} in ({})",
            labels::ADDON_NAME,
            self.addons.keys().cloned().collect::<Vec<_>>().join(",")
        );
        let Informers {
            clusters,
            managed_addons,
            cluster_management_addons,
            works,
            csrs,
            triggers: _,
        } = informers;
        let client = &self.client;
        let mut all = controllers;
        all.push(reflect(
            Api::all(client.clone()),
            watcher::Config::default(),
            clusters,
            "ManagedCluster",
        ));
        all.push(reflect(
            Api::all(client.clone()),
            watcher::Config::default(),
            managed_addons,
            "ManagedClusterAddOn",
        ));
        all.push(reflect(
            Api::all(client.clone()),
            watcher::Config::default(),
            cluster_management_addons,
            "ClusterManagementAddOn",
        ));
        all.push(reflect(
            Api::all(client.clone()),
            watcher::Config::default().labels(&addon_selector),
            works,
            "ManifestWork",
        ));
        all.push(reflect(
            Api::all(client.clone()),
            watcher::Config::default().labels(&addon_selector),
            csrs,
            "CertificateSigningRequest",
        ));
        let (first, _, _) = futures::future::select_all(all).await;
        first
    }
}

/// The controllers of the manager, each subscribed to the shared stores it reads.
fn controllers(ctx: &Arc<Context>, informers: &Informers) -> Result<Vec<ControllerFuture>, ManagerError> {
    let mut controllers: Vec<ControllerFuture> = vec![
        Box::pin(crate::controllers::registration::run(
            ctx.clone(),
            informers.managed_addons(crate::controllers::registration::NAME)?,
            informers.triggers(),
        )),
        Box::pin(crate::controllers::deploy::run(
            ctx.clone(),
            informers.managed_addons(crate::controllers::deploy::NAME)?,
            informers.works(crate::controllers::deploy::NAME)?,
            informers.clusters(crate::controllers::deploy::NAME)?,
            informers.triggers(),
        )),
        Box::pin(crate::controllers::csr_approve::run(
            ctx.clone(),
            informers.csrs(crate::controllers::csr_approve::NAME)?,
        )),
        Box::pin(crate::controllers::csr_sign::run(
            ctx.clone(),
            informers.csrs(crate::controllers::csr_sign::NAME)?,
        )),
    ];
    if let Some(config_controllers) = crate::controllers::config::controllers(
        ctx,
        informers.managed_addons("addon-config-controller")?,
        informers.cluster_management_addons("management-addon-config-controller")?,
    ) {
        controllers.extend(config_controllers);
    }
    Ok(controllers)
}

/// A watch of `api` feeding the shared store `writer`, resolving (with an error) when it stops.
fn reflect<K>(
    api: Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    kind: &'static str,
) -> ControllerFuture
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    Box::pin(
        watcher(api, config)
            .default_backoff()
            .reflect_shared(writer)
            .for_each(move |event| async move {
                if let Err(error) = event {
                    tracing::warn!(%error, kind, "watching the hub failed");
                }
            })
            .map(move |()| Err(ManagerError::WatchStopped(kind))),
    )
}
