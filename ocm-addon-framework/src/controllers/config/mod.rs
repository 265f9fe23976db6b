//! The config controllers (addon-framework.md §2.8): `addon-config-controller` records, on each
//! ManagedClusterAddOn, the generation of its configs and the spec hashes of the configs its own
//! `spec.configs` names; `management-addon-config-controller` records on each
//! ClusterManagementAddOn the spec hashes of its default and install-progression configs.
//!
//! Both watch every config type (group, version, resource) the manager's add-ons support, in
//! shared caches, and reconcile the add-ons that refer to a config when it changes.

mod addon_config;
mod cma_config;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::channel::mpsc;
use futures::{FutureExt, StreamExt};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::{self, ObjectRef, ReflectHandle, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ConfigSpecHash, ManagedClusterAddOn};

use crate::manager::{Context, ControllerFuture, ManagerError};

/// A config type as the config references name it: (group, resource).
pub(crate) type GroupResource = (String, String);

/// The caches of every supported config type, by group and resource.
pub(crate) struct ConfigStores {
    stores: BTreeMap<GroupResource, ConfigStore>,
}

/// The cache of one config type and whether it has listed its type once.
struct ConfigStore {
    resource: ApiResource,
    store: Store<DynamicObject>,
    ready: Arc<AtomicBool>,
}

/// What a cache knows of a config.
pub(crate) enum Lookup {
    /// The cache has not listed the type yet: nothing is known.
    NotReady,
    /// The config does not exist.
    Missing,
    /// The config.
    Found(Arc<DynamicObject>),
}

impl ConfigStores {
    /// Whether a cache exists for this group and resource.
    pub(crate) fn supports(&self, group: Option<&str>, resource: &str) -> bool {
        self.stores
            .contains_key(&(group.unwrap_or_default().to_string(), resource.to_string()))
    }

    /// The config `namespace/name` of this group and resource, as far as the cache knows
    /// (`Missing` also for an unsupported type).
    pub(crate) fn get(
        &self,
        group: Option<&str>,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Lookup {
        let Some(cache) = self
            .stores
            .get(&(group.unwrap_or_default().to_string(), resource.to_string()))
        else {
            return Lookup::Missing;
        };
        if !cache.ready.load(Ordering::Acquire) {
            return Lookup::NotReady;
        }
        let mut key = ObjectRef::<DynamicObject>::new_with(name, cache.resource.clone());
        if let Some(namespace) = namespace.filter(|n| !n.is_empty()) {
            key = key.within(namespace);
        }
        cache.store.get(&key).map_or(Lookup::Missing, Lookup::Found)
    }
}

/// Whether `desired` names the config `namespace/name`.
pub(crate) fn names(desired: &ConfigSpecHash, namespace: Option<&str>, name: &str) -> bool {
    desired.name == name && desired.namespace.as_deref().unwrap_or_default() == namespace.unwrap_or_default()
}

/// Starts both config controllers and the watches of the supported config types; `None` when
/// no add-on supports a config type (upstream starts neither controller then).
pub(crate) fn controllers(
    ctx: &Arc<Context>,
    addons: ReflectHandle<ManagedClusterAddOn>,
    cmas: ReflectHandle<ClusterManagementAddOn>,
) -> Option<Vec<ControllerFuture>> {
    let gvrs: BTreeSet<_> = ctx
        .addons
        .values()
        .flat_map(|a| a.options().supported_configs)
        .collect();
    if gvrs.is_empty() {
        return None;
    }
    let (addon_tx, addon_rx) = mpsc::unbounded::<ObjectRef<ManagedClusterAddOn>>();
    let (cma_tx, cma_rx) = mpsc::unbounded::<ObjectRef<ClusterManagementAddOn>>();
    let mut stores = BTreeMap::new();
    let mut futures: Vec<ControllerFuture> = Vec::new();
    for gvr in gvrs {
        let api_version = if gvr.group.is_empty() {
            gvr.version.clone()
        } else {
            format!("{}/{}", gvr.group, gvr.version)
        };
        let ar = ApiResource {
            group: gvr.group.clone(),
            version: gvr.version.clone(),
            api_version,
            kind: String::new(),
            plural: gvr.resource.clone(),
        };
        let writer = reflector::store::Writer::<DynamicObject>::new(ar.clone());
        let reader = writer.as_reader();
        let ready = Arc::new(AtomicBool::new(false));
        stores.insert(
            (gvr.group.clone(), gvr.resource.clone()),
            ConfigStore {
                resource: ar.clone(),
                store: reader,
                ready: ready.clone(),
            },
        );
        let api = Api::<DynamicObject>::all_with(ctx.client.clone(), &ar);
        let watch_ctx = ctx.clone();
        let (addon_tx, cma_tx) = (addon_tx.clone(), cma_tx.clone());
        let group_resource = (gvr.group.clone(), gvr.resource.clone());
        futures.push(Box::pin(
            watcher(api, watcher::Config::default())
                .default_backoff()
                .reflect(writer)
                .for_each(move |event| {
                    match event {
                        Ok(
                            watcher::Event::Apply(config)
                            | watcher::Event::InitApply(config)
                            | watcher::Event::Delete(config),
                        ) => {
                            enqueue_referrers(&watch_ctx, &group_resource, &config, &addon_tx, &cma_tx);
                        }
                        Ok(watcher::Event::InitDone) => ready.store(true, Ordering::Release),
                        Ok(watcher::Event::Init) => {}
                        Err(error) => tracing::warn!(%error, "watching add-on configs failed"),
                    }
                    futures::future::ready(())
                })
                .map(|()| Err(ManagerError::WatchStopped("add-on config"))),
        ));
    }
    let stores = Arc::new(ConfigStores { stores });
    futures.push(Box::pin(addon_config::run(
        ctx.clone(),
        stores.clone(),
        addons,
        addon_rx,
    )));
    futures.push(Box::pin(cma_config::run(ctx.clone(), stores, cmas, cma_rx)));
    Some(futures)
}

/// Sends the ManagedClusterAddOns and ClusterManagementAddOns referring to `config` to their
/// controllers (upstream's `addonByConfig` and `clusterManagementAddonByConfig` indexes).
fn enqueue_referrers(
    ctx: &Context,
    (group, resource): &GroupResource,
    config: &DynamicObject,
    addon_tx: &mpsc::UnboundedSender<ObjectRef<ManagedClusterAddOn>>,
    cma_tx: &mpsc::UnboundedSender<ObjectRef<ClusterManagementAddOn>>,
) {
    let (namespace, name) = (config.namespace(), config.name_any());
    let matches = |g: Option<&str>, r: &str, desired: Option<&ConfigSpecHash>| {
        g.unwrap_or_default() == group
            && r == resource
            && desired.is_some_and(|d| names(d, namespace.as_deref(), &name))
    };
    for addon in ctx.managed_addons.state() {
        let refers = addon
            .status
            .as_ref()
            .and_then(|s| s.config_references.as_deref())
            .unwrap_or_default()
            .iter()
            .any(|r| matches(r.group.as_deref(), &r.resource, r.desired_config.as_ref()));
        if refers {
            let _ = addon_tx.unbounded_send(ObjectRef::from_obj(addon.as_ref()));
        }
    }
    for cma in ctx.cluster_management_addons.state() {
        let Some(status) = cma.status.as_ref() else {
            continue;
        };
        let defaults = status
            .default_config_references
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|r| matches(r.group.as_deref(), &r.resource, r.desired_config.as_ref()));
        let progressions = status
            .install_progressions
            .as_deref()
            .unwrap_or_default()
            .iter()
            .flat_map(|p| p.config_references.as_deref().unwrap_or_default())
            .any(|r| matches(r.group.as_deref(), &r.resource, r.desired_config.as_ref()));
        if defaults || progressions {
            let _ = cma_tx.unbounded_send(ObjectRef::from_obj(cma.as_ref()));
        }
    }
}

/// The spec hash of a config as the API server stores it.
pub(crate) fn hash(config: &DynamicObject) -> Result<String, ocm_api::spec_hash::Error> {
    let value = serde_json::to_value(config).map_err(ocm_api::spec_hash::Error::SerializeConfiguration)?;
    ocm_api::spec_hash::spec_hash(&value)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use super::*;
    use serde_json::json;

    /// addon-framework.md §5.3: the upstream vectors, from the object as stored.
    #[test]
    fn spec_hash_of_a_dynamic_config_matches_the_upstream_vectors() {
        for (value, expected) in [
            (
                "test",
                "ea4e6089e8b2f584c1cd8b86e16a15df3186b30744f433ede7436091c93a4cc7",
            ),
            (
                "test1",
                "b746cc98936955dd2168640f0011a14f2a74be306c747bc8ba829328cc772690",
            ),
            (
                "test2",
                "3e6348b0c0f0a341ce28d0a2f99bc41fc63fb17d947eb5a45284729fbeb63b32",
            ),
            (
                "test3",
                "9b3c6d09731ed254589fa4fc2936e6fb00537de92da5e035183da313eb98d27e",
            ),
        ] {
            let config: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "AddOnDeploymentConfig",
                "metadata": {"name": "c", "namespace": "n", "generation": 1, "resourceVersion": "5"},
                "spec": {"agentInstallNamespace": "open-cluster-management-agent-addon",
                         "customizedVariables": [{"name": value, "value": value}],
                         "proxyConfig": {}},
                "status": {"x": 1}
            }))
            .unwrap();
            assert_eq!(hash(&config).unwrap(), expected);
        }
    }

    #[test]
    fn a_desired_config_names_a_namespace_and_name() {
        let desired = ConfigSpecHash {
            name: "a".into(),
            namespace: None,
            spec_hash: None,
        };
        assert!(names(&desired, None, "a"));
        assert!(names(&desired, Some(""), "a"));
        assert!(!names(&desired, Some("n"), "a"));
        assert!(!names(&desired, None, "b"));
    }
}
