//! The agent deploy controller (`addon-deploy-controller`, addon-framework.md §2.3–§2.5): for
//! every ManagedClusterAddOn of a registered add-on it renders the add-on's manifests and keeps
//! them on the cluster as ManifestWorks, runs the pre-delete hooks, splits objects between the
//! hosting and the managed cluster in hosted mode, and reports health from the works.
//!
//! | syncer | module | what it does |
//! |---|---|---|
//! | default | [`default`] | deploy works in the cluster namespace (`addon-<addon>-deploy-<i>`), `ManifestApplied` |
//! | hosted | [`hosted`] | deploy works in the hosting cluster's namespace, `HostingClusterValidity`, `HostingManifestApplied` |
//! | default hook | [`hook`] | the pre-delete hook work `addon-<addon>-pre-delete`, `HookManifestCompleted` |
//! | hosted hook | [`hosted_hook`] | the hook work on the hosting cluster |
//! | health | [`health`] | `status.healthCheck.mode` and `Available` from the works |
//!
//! A reconcile runs the five syncers in this order on a copy of the ManagedClusterAddOn. If they
//! changed its finalizers, the whole object is updated (the status is recomputed on the next
//! pass); otherwise the status is merge-patched, only when it changed.

mod apply;
mod default;
mod health;
mod hook;
mod hosted;
mod hosted_hook;
pub(crate) mod manifest_configs;
mod works;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::{ObjectRef, ReflectHandle};
use kube::{Api, ResourceExt};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::conditions::ConditionList;
use ocm_api::meta::Condition;
use ocm_api::names::conditions::addon::managed_cluster_addon as addon_conditions;
use ocm_api::names::{finalizers, labels};
use ocm_api::work::v1::ManifestWork;

use crate::agent::{AddonError, AgentAddon, AgentAddonOptions, InstallMode};
use crate::manager::{AddonFilter, Context, ManagerError};

/// The controller's name, in logs and store subscriptions.
pub(crate) const NAME: &str = "addon-deploy-controller";

/// The config resource of add-on templates, which template mode requires.
const ADDON_TEMPLATES: &str = "addontemplates";

/// The API group of the add-on kinds.
const ADDON_GROUP: &str = "addon.open-cluster-management.io";

/// Errors of the deploy controller.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeployError {
    /// The add-on could not give its manifests.
    #[error("get the manifests of the add-on: {0}")]
    GetManifests(#[source] AddonError),
    /// An object has an unknown hosted-manifest location.
    #[error("object {object} has an invalid hosted manifest location {location:?}")]
    CheckManifestLocation {
        /// `kind namespace/name` of the object.
        object: String,
        /// The location it names.
        location: String,
    },
    /// The works could not be built.
    #[error("build the ManifestWorks: {0}")]
    BuildWorks(#[source] ocm_api::workbuilder::Error),
    /// Applying a work failed.
    #[error("apply ManifestWork {namespace}/{name}: {source}")]
    ApplyWork {
        /// The work's namespace.
        namespace: String,
        /// The work's name.
        name: String,
        /// What the hub said.
        #[source]
        source: kube::Error,
    },
    /// Deleting a work failed.
    #[error("delete ManifestWork {namespace}/{name}: {source}")]
    DeleteWork {
        /// The work's namespace.
        namespace: String,
        /// The work's name.
        name: String,
        /// What the hub said.
        #[source]
        source: kube::Error,
    },
    /// Updating the ManagedClusterAddOn (its finalizers) failed.
    #[error("update ManagedClusterAddOn {namespace}/{name}: {source}")]
    UpdateAddon {
        /// The add-on's namespace.
        namespace: String,
        /// The add-on's name.
        name: String,
        /// What the hub said.
        #[source]
        source: kube::Error,
    },
    /// Patching the ManagedClusterAddOn's status failed.
    #[error("patch the status of ManagedClusterAddOn {namespace}/{name}: {source}")]
    PatchAddonStatus {
        /// The add-on's namespace.
        namespace: String,
        /// The add-on's name.
        name: String,
        /// What the hub said.
        #[source]
        source: kube::Error,
    },
    /// Several syncers failed.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Syncers(Vec<DeployError>),
}

/// The controller's state: the manager's context and what it remembers between reconciles.
pub(crate) struct DeployContext {
    /// The manager's shared context.
    pub(crate) ctx: Arc<Context>,
    /// Per work (`namespace/name`), the hash of the work last applied and the generation the hub
    /// gave it: an unchanged work is not sent again.
    applied: Mutex<HashMap<String, (u64, Option<i64>)>>,
    /// Per failing ManagedClusterAddOn, the number of failures in a row.
    failures: Mutex<HashMap<ObjectRef<ManagedClusterAddOn>, u32>>,
}

impl DeployContext {
    /// The ManifestWorks API of `namespace`.
    pub(crate) fn works_api(&self, namespace: &str) -> Api<ManifestWork> {
        Api::namespaced(self.ctx.client.clone(), namespace)
    }

    /// The ManagedCluster `name` from the cache.
    pub(crate) fn cluster(&self, name: &str) -> Option<Arc<ManagedCluster>> {
        self.ctx.clusters.get(&ObjectRef::new(name))
    }

    fn backoff(&self, key: &ObjectRef<ManagedClusterAddOn>) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let count = failures.entry(key.clone()).or_insert(0);
        *count = count.saturating_add(1);
        // 5 ms doubling up to 1000 s, as the default controller rate limiter.
        let millis = 5u64.saturating_mul(1u64 << (*count).min(20));
        Duration::from_millis(millis.min(1_000_000))
    }

    fn forget(&self, key: &ObjectRef<ManagedClusterAddOn>) {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

/// What one syncer gets: the add-on, its options, the cluster and the mode.
pub(crate) struct SyncInput<'a> {
    /// The controller's state.
    pub(crate) ctx: &'a DeployContext,
    /// The add-on.
    pub(crate) agent: &'a Arc<dyn AgentAddon>,
    /// Its options, read once per reconcile.
    pub(crate) options: &'a AgentAddonOptions,
    /// The managed cluster.
    pub(crate) cluster: &'a ManagedCluster,
    /// The install mode (Default unless hosted mode is enabled and says otherwise).
    pub(crate) mode: InstallMode,
}

/// Runs the deploy controller until its streams end.
///
/// # Errors
///
/// [`ManagerError::ControllerStopped`] when it stops.
pub(crate) async fn run(
    ctx: Arc<Context>,
    addons: ReflectHandle<ManagedClusterAddOn>,
    works: ReflectHandle<ManifestWork>,
    clusters: ReflectHandle<ManagedCluster>,
    triggers: impl Stream<Item = ObjectRef<ManagedClusterAddOn>> + Send + 'static,
) -> Result<(), ManagerError> {
    let registered: Arc<Vec<String>> = Arc::new(ctx.addons.keys().cloned().collect());
    let addon_events = {
        let registered = registered.clone();
        addons.filter(move |addon| futures::future::ready(registered.contains(&addon.name_any())))
    };
    let work_ctx = ctx.clone();
    let cluster_ctx = ctx.clone();
    let seen_clusters: Mutex<HashMap<String, Arc<ManagedCluster>>> = Mutex::new(HashMap::new());
    let state = Arc::new(DeployContext {
        ctx: ctx.clone(),
        applied: Mutex::new(HashMap::new()),
        failures: Mutex::new(HashMap::new()),
    });
    Controller::for_shared_stream(addon_events, ctx.managed_addons.clone())
        .with_config(Config::default().concurrency(1))
        .watches_shared_stream(works, move |work: Arc<ManifestWork>| work_key(&work, &work_ctx))
        .watches_shared_stream(clusters, move |cluster: Arc<ManagedCluster>| {
            cluster_keys(&cluster, &cluster_ctx, &seen_clusters)
        })
        .reconcile_on(triggers)
        .run(
            |addon, state: Arc<DeployContext>| async move {
                let key = ObjectRef::from_obj(addon.as_ref());
                let result = reconcile(&addon, &state).await;
                if result.is_ok() {
                    state.forget(&key);
                }
                result
            },
            |addon, error: &DeployError, state: Arc<DeployContext>| {
                let object = format!("{}/{}", addon.namespace().unwrap_or_default(), addon.name_any());
                crate::controllers::common::log_failure(error, &object, "deploying the add-on agent failed");
                Action::requeue(state.backoff(&ObjectRef::from_obj(addon.as_ref())))
            },
            state,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(ManagerError::ControllerStopped(NAME))
}

/// The ManagedClusterAddOn a deploy or hook work belongs to: `<addon-namespace label, or the
/// work's namespace>/<addon>`, for works named `addon-<addon>-deploy*` or
/// `addon-<addon>-pre-delete*`.
fn work_key(work: &ManifestWork, ctx: &Context) -> Option<ObjectRef<ManagedClusterAddOn>> {
    let addon = work.labels().get(labels::ADDON_NAME)?;
    ctx.addon(addon)?;
    let name = work.name_any();
    if !name.starts_with(&works::deploy_prefix(addon)) && !name.starts_with(&works::hook_prefix(addon)) {
        return None;
    }
    let namespace = work
        .labels()
        .get(labels::ADDON_NAMESPACE)
        .cloned()
        .or_else(|| work.namespace())?;
    Some(ObjectRef::new(addon).within(&namespace))
}

/// Every ManagedClusterAddOn of `cluster` when the update passes the deploy-trigger filter of
/// any registered add-on; nothing for a cluster seen for the first time.
fn cluster_keys(
    cluster: &Arc<ManagedCluster>,
    ctx: &Context,
    seen: &Mutex<HashMap<String, Arc<ManagedCluster>>>,
) -> Vec<ObjectRef<ManagedClusterAddOn>> {
    let name = cluster.name_any();
    let old = seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(name.clone(), cluster.clone());
    let Some(old) = old else {
        return Vec::new();
    };
    let redeploy = ctx.addons.values().any(|addon| {
        addon
            .options()
            .deploy_trigger_cluster_filter
            .is_some_and(|filter| filter.redeploy(&old, cluster))
    });
    if !redeploy {
        return Vec::new();
    }
    ctx.managed_addons
        .state()
        .iter()
        .filter(|addon| addon.namespace().as_deref() == Some(name.as_str()))
        .map(|addon| ObjectRef::from_obj(addon.as_ref()))
        .collect()
}

/// Whether the manager's filter lets the controller handle `addon`.
fn accepted(filter: AddonFilter, addon: &ManagedClusterAddOn) -> bool {
    match filter {
        AddonFilter::All => true,
        AddonFilter::TemplateBased => addon
            .status
            .as_ref()
            .and_then(|s| s.config_references.as_deref())
            .unwrap_or_default()
            .iter()
            .any(|reference| {
                reference.group.as_deref() == Some(ADDON_GROUP)
                    && reference.resource == ADDON_TEMPLATES
                    && reference
                        .desired_config
                        .as_ref()
                        .and_then(|d| d.spec_hash.as_deref())
                        .is_some_and(|hash| !hash.is_empty())
            }),
    }
}

/// One reconcile of one ManagedClusterAddOn (§2.3.2).
#[tracing::instrument(skip_all, fields(addon = %addon.name_any(), cluster = %addon.namespace().unwrap_or_default()))]
async fn reconcile(addon: &ManagedClusterAddOn, state: &DeployContext) -> Result<Action, DeployError> {
    let Some(agent) = state.ctx.addon(&addon.name_any()) else {
        return Ok(Action::await_change());
    };
    if !accepted(state.ctx.filter, addon) {
        return Ok(Action::await_change());
    }
    let conditions = addon.status.as_ref().map(|s| &s.conditions);
    if conditions
        .and_then(|c| c.find_condition(addon_conditions::REGISTRATION_APPLIED))
        .is_none()
    {
        tracing::debug!("waiting for RegistrationApplied");
        return Ok(Action::await_change());
    }
    let Some(cluster) = state.cluster(&addon.namespace().unwrap_or_default()) else {
        return Ok(Action::await_change());
    };
    let options = agent.options();
    let mode = match &options.hosted_mode {
        Some(hosted) => hosted.info.mode(addon, &cluster),
        None => InstallMode::Default,
    };
    let input = SyncInput {
        ctx: state,
        agent,
        options: &options,
        cluster: &cluster,
        mode,
    };
    let mut updated = addon.clone();
    let mut errors = Vec::new();
    for result in [
        default::sync(&input, &mut updated).await,
        hosted::sync(&input, &mut updated).await,
        hook::sync(&input, &mut updated).await,
        hosted_hook::sync(&input, &mut updated).await,
        health::sync(&input, &mut updated).await,
    ] {
        if let Err(error) = result {
            errors.push(error);
        }
    }
    update_addon(state, addon, &updated).await?;
    match errors.len() {
        0 => Ok(Action::await_change()),
        1 => Err(errors.remove(0)),
        _ => Err(DeployError::Syncers(errors)),
    }
}

/// Writes what the syncers changed: a full update when the finalizers changed (the status is
/// recomputed on the next pass), else a status merge patch when the status changed.
async fn update_addon(
    state: &DeployContext,
    old: &ManagedClusterAddOn,
    new: &ManagedClusterAddOn,
) -> Result<(), DeployError> {
    let name = old.name_any();
    let namespace = old.namespace().unwrap_or_default();
    let api: Api<ManagedClusterAddOn> = Api::namespaced(state.ctx.client.clone(), &namespace);
    if old.metadata.finalizers != new.metadata.finalizers {
        api.replace(&name, &PostParams::default(), new)
            .await
            .map_err(|source| DeployError::UpdateAddon {
                namespace: namespace.clone(),
                name: name.clone(),
                source,
            })?;
        return Ok(());
    }
    let (old_status, new_status) = (
        old.status.clone().unwrap_or_default(),
        new.status.clone().unwrap_or_default(),
    );
    let mut status = serde_json::Map::new();
    if old_status.conditions != new_status.conditions {
        status.insert("conditions".into(), serde_json::json!(new_status.conditions));
    }
    if old_status.health_check != new_status.health_check {
        status.insert("healthCheck".into(), serde_json::json!(new_status.health_check));
    }
    if status.is_empty() {
        return Ok(());
    }
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": old.resource_version()},
        "status": status,
    });
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| DeployError::PatchAddonStatus {
            namespace,
            name,
            source,
        })?;
    Ok(())
}

/// Sets a condition on the add-on's status.
pub(crate) fn set_condition(
    addon: &mut ManagedClusterAddOn,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
) {
    set_condition_status(
        addon,
        type_,
        ocm_api::conditions::Status::from(status),
        reason,
        message,
    );
}

/// Sets a condition (of any status) on the add-on's status.
pub(crate) fn set_condition_status(
    addon: &mut ManagedClusterAddOn,
    type_: &str,
    status: ocm_api::conditions::Status,
    reason: &str,
    message: &str,
) {
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    addon
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .set_condition(Condition::new(type_, status, reason, message, now));
}

/// The condition of `type_` on the add-on, if any.
pub(crate) fn condition<'a>(addon: &'a ManagedClusterAddOn, type_: &str) -> Option<&'a Condition> {
    addon
        .status
        .as_ref()
        .and_then(|s| s.conditions.find_condition(type_))
}

/// Whether the add-on carries `finalizer`.
pub(crate) fn has_finalizer(addon: &ManagedClusterAddOn, finalizer: &str) -> bool {
    addon.finalizers().iter().any(|f| f == finalizer)
}

/// Adds `finalizer` (and strips the deprecated ones); tells whether it was new.
pub(crate) fn add_finalizer(addon: &mut ManagedClusterAddOn, finalizer: &str) -> bool {
    let list = addon.metadata.finalizers.get_or_insert_with(Vec::new);
    list.retain(|f| !finalizers::ADDON_DEPRECATED.contains(&f.as_str()));
    if list.iter().any(|f| f == finalizer) {
        return false;
    }
    list.push(finalizer.to_owned());
    true
}

/// Removes `finalizer` (and the deprecated ones); tells whether anything was removed.
pub(crate) fn remove_finalizer(addon: &mut ManagedClusterAddOn, finalizer: &str) -> bool {
    let Some(list) = addon.metadata.finalizers.as_mut() else {
        return false;
    };
    let before = list.len();
    list.retain(|f| f != finalizer && !finalizers::ADDON_DEPRECATED.contains(&f.as_str()));
    let removed = list.len() != before;
    if list.is_empty() {
        addon.metadata.finalizers = None;
    }
    removed
}

/// Whether an object is being deleted.
pub(crate) fn deleting<K: kube::Resource>(object: &K) -> bool {
    object.meta().deletion_timestamp.is_some()
}

/// The `{"<resource>[.<group>]/<namespace>/<name>": "<specHash>"}` map of the add-on's config
/// references with a desired config; `None` without config references.
pub(crate) fn config_spec_hashes(addon: &ManagedClusterAddOn) -> Option<BTreeMap<String, String>> {
    let references = addon.status.as_ref()?.config_references.as_deref()?;
    if references.is_empty() {
        return None;
    }
    Some(
        references
            .iter()
            .filter_map(|reference| {
                let desired = reference.desired_config.as_ref()?;
                let group = reference.group.as_deref().unwrap_or_default();
                let resource = if group.is_empty() {
                    reference.resource.clone()
                } else {
                    format!("{}.{group}", reference.resource)
                };
                Some((
                    format!(
                        "{resource}/{}/{}",
                        desired.namespace.as_deref().unwrap_or_default(),
                        desired.name
                    ),
                    desired.spec_hash.clone().unwrap_or_default(),
                ))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use ocm_api::addon::v1beta1::{ConfigReference, ConfigSpecHash, ManagedClusterAddOnStatus};

    use super::*;

    #[test]
    fn spec_hashes_name_resource_group_namespace_and_name() {
        let mut addon = ManagedClusterAddOn::default();
        assert_eq!(config_spec_hashes(&addon), None);
        addon.status = Some(ManagedClusterAddOnStatus {
            config_references: Some(vec![
                ConfigReference {
                    group: Some(ADDON_GROUP.into()),
                    resource: ADDON_TEMPLATES.into(),
                    desired_config: Some(ConfigSpecHash {
                        name: "tmpl".into(),
                        namespace: None,
                        spec_hash: Some("abc".into()),
                    }),
                    ..Default::default()
                },
                ConfigReference {
                    resource: "configmaps".into(),
                    desired_config: Some(ConfigSpecHash {
                        name: "c".into(),
                        namespace: Some("ns".into()),
                        spec_hash: Some("def".into()),
                    }),
                    ..Default::default()
                },
                ConfigReference {
                    resource: "secrets".into(),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        });
        let hashes = config_spec_hashes(&addon).unwrap();
        assert_eq!(
            serde_json::to_string(&hashes).unwrap(),
            r#"{"addontemplates.addon.open-cluster-management.io//tmpl":"abc","configmaps/ns/c":"def"}"#
        );
        assert!(accepted(AddonFilter::TemplateBased, &addon));
        assert!(!accepted(
            AddonFilter::TemplateBased,
            &ManagedClusterAddOn::default()
        ));
    }

    #[test]
    fn finalizer_changes_strip_the_deprecated_ones() {
        let mut addon = ManagedClusterAddOn::default();
        addon.metadata.finalizers = Some(vec![
            finalizers::ADDON_PRE_DELETE_DEPRECATED.into(),
            "other".into(),
        ]);
        assert!(add_finalizer(&mut addon, finalizers::ADDON_PRE_DELETE));
        assert!(!add_finalizer(&mut addon, finalizers::ADDON_PRE_DELETE));
        assert_eq!(addon.finalizers(), ["other", finalizers::ADDON_PRE_DELETE]);
        assert!(remove_finalizer(&mut addon, finalizers::ADDON_PRE_DELETE));
        assert_eq!(addon.finalizers(), ["other"]);
    }
}
