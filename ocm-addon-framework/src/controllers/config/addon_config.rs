//! `addon-config-controller`: for each supported `status.configReferences` entry of a
//! ManagedClusterAddOn, the config's generation (`lastObservedGeneration`) and, for configs the
//! add-on's own `spec.configs` names, `desiredConfig.specHash`. Hashes of configs inherited from
//! the ClusterManagementAddOn come from its status (see the sibling `cma_config`). Not subject to
//! the manager's template filter.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::{ObjectRef, ReflectHandle};
use kube::{Api, ResourceExt};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;

use super::{ConfigStores, Lookup, hash, names};
use crate::controllers::common::{self, Backoff};
use crate::manager::{Context, ManagerError};

/// When to look again while a config cache has not listed its type yet.
pub(crate) const NOT_READY_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// The controller's name.
pub(crate) const NAME: &str = "addon-config-controller";

/// Why recording config hashes on a ManagedClusterAddOn failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AddonConfigError {
    /// A config could not be hashed.
    #[error("hash config {config} of {key}: {source}")]
    HashConfig {
        /// `cluster/addon`.
        key: String,
        /// The config.
        config: String,
        /// What failed.
        source: ocm_api::spec_hash::Error,
    },
    /// Serializing the status failed.
    #[error("serialize the status of {key}: {source}")]
    SerializeStatus {
        /// `cluster/addon`.
        key: String,
        /// What failed.
        source: serde_json::Error,
    },
    /// Patching the status failed.
    #[error("patch the status of {key}: {source}")]
    PatchStatus {
        /// `cluster/addon`.
        key: String,
        /// The API error.
        source: kube::Error,
    },
}

struct State {
    ctx: Arc<Context>,
    configs: Arc<ConfigStores>,
    backoff: Backoff,
}

/// Runs the controller until its streams end.
pub(crate) async fn run(
    ctx: Arc<Context>,
    configs: Arc<ConfigStores>,
    addons: ReflectHandle<ManagedClusterAddOn>,
    config_changes: impl Stream<Item = ObjectRef<ManagedClusterAddOn>> + Send + 'static,
) -> Result<(), ManagerError> {
    let registered = ctx.clone();
    let events =
        addons.filter(move |addon| futures::future::ready(registered.addon(&addon.name_any()).is_some()));
    let store = ctx.managed_addons.clone();
    let state = Arc::new(State {
        ctx,
        configs,
        backoff: Backoff::default(),
    });
    common::wait_for_caches(&state.ctx).await;
    Controller::for_shared_stream(events, store)
        .with_config(Config::default().concurrency(1))
        .reconcile_on(config_changes)
        .run(
            |addon, state: Arc<State>| async move {
                let key = key(&addon);
                let result = reconcile(&addon, &state).await;
                if result.is_ok() {
                    state.backoff.succeeded(&key);
                }
                result
            },
            |addon, error: &AddonConfigError, state: Arc<State>| {
                crate::controllers::common::log_failure(
                    error,
                    &key(&addon),
                    "recording the add-on's config hashes failed",
                );
                Action::requeue(state.backoff.failed(&key(&addon)))
            },
            state,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(ManagerError::ControllerStopped(NAME))
}

fn key(addon: &ManagedClusterAddOn) -> String {
    format!("{}/{}", addon.namespace().unwrap_or_default(), addon.name_any())
}

#[tracing::instrument(skip_all, fields(addon = %key(current)))]
async fn reconcile(current: &ManagedClusterAddOn, state: &State) -> Result<Action, AddonConfigError> {
    let key = key(current);
    let name = current.name_any();
    if state.ctx.addon(&name).is_none()
        || state
            .ctx
            .cluster_management_addons
            .get(&ObjectRef::new(&name))
            .is_none()
    {
        return Ok(Action::await_change());
    }
    let Some(old_status) = current.status.as_ref() else {
        return Ok(Action::await_change());
    };
    let mut status = old_status.clone();
    let mut next = Action::await_change();
    let spec_configs = current.spec.configs.as_deref().unwrap_or_default();
    for reference in status.config_references.iter_mut().flatten() {
        let group = reference.group.clone();
        if !state.configs.supports(group.as_deref(), &reference.resource) {
            continue;
        }
        let Some(desired) = reference.desired_config.as_mut() else {
            continue;
        };
        let config = match state.configs.get(
            group.as_deref(),
            &reference.resource,
            desired.namespace.as_deref(),
            &desired.name,
        ) {
            Lookup::Found(config) => config,
            Lookup::Missing => continue,
            Lookup::NotReady => {
                next = Action::requeue(NOT_READY_RETRY);
                continue;
            }
        };
        reference.last_observed_generation = config.metadata.generation;
        let own = spec_configs.iter().any(|c| {
            c.group.as_deref().unwrap_or_default() == group.as_deref().unwrap_or_default()
                && c.resource == reference.resource
                && names(desired, c.namespace.as_deref(), &c.name)
        });
        if own {
            let spec_hash = hash(&config).map_err(|source| AddonConfigError::HashConfig {
                key: key.clone(),
                config: desired.name.clone(),
                source,
            })?;
            desired.spec_hash = Some(spec_hash);
        }
    }
    let serialize = |source| AddonConfigError::SerializeStatus {
        key: key.clone(),
        source,
    };
    let old = serde_json::to_value(old_status).map_err(serialize)?;
    let new = serde_json::to_value(&status).map_err(serialize)?;
    let Some(body) = common::status_patch(
        &old,
        &new,
        current.metadata.uid.as_deref(),
        current.metadata.resource_version.as_deref(),
    ) else {
        return Ok(next);
    };
    Api::<ManagedClusterAddOn>::namespaced(
        state.ctx.client.clone(),
        &current.namespace().unwrap_or_default(),
    )
    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&body))
    .await
    .map_err(|source| AddonConfigError::PatchStatus {
        key: key.clone(),
        source,
    })?;
    Ok(next)
}
