//! `management-addon-config-controller`: the spec hashes of a ClusterManagementAddOn's
//! `status.defaultConfigReferences` and `status.installProgressions[].configReferences`
//! (supported types with a name; a config that does not exist hashes to `""`).

use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::{ObjectRef, ReflectHandle};
use kube::{Api, ResourceExt};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ConfigSpecHash};

use super::addon_config::NOT_READY_RETRY;
use super::{ConfigStores, Lookup, hash};
use crate::controllers::common::{self, Backoff};
use crate::manager::{Context, ManagerError};

/// The controller's name.
pub(crate) const NAME: &str = "management-addon-config-controller";

/// Why recording config hashes on a ClusterManagementAddOn failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CmaConfigError {
    /// A config could not be hashed.
    #[error("hash config {config} of {cma}: {source}")]
    HashConfig {
        /// The ClusterManagementAddOn.
        cma: String,
        /// The config.
        config: String,
        /// What failed.
        source: ocm_api::spec_hash::Error,
    },
    /// Serializing the status failed.
    #[error("serialize the status of {cma}: {source}")]
    SerializeStatus {
        /// The ClusterManagementAddOn.
        cma: String,
        /// What failed.
        source: serde_json::Error,
    },
    /// Patching the status failed.
    #[error("patch the status of {cma}: {source}")]
    PatchStatus {
        /// The ClusterManagementAddOn.
        cma: String,
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
    cmas: ReflectHandle<ClusterManagementAddOn>,
    config_changes: impl Stream<Item = ObjectRef<ClusterManagementAddOn>> + Send + 'static,
) -> Result<(), ManagerError> {
    let registered = ctx.clone();
    let events = cmas.filter(move |cma| futures::future::ready(registered.addon(&cma.name_any()).is_some()));
    let store = ctx.cluster_management_addons.clone();
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
            |cma, state: Arc<State>| async move {
                let result = reconcile(&cma, &state).await;
                if result.is_ok() {
                    state.backoff.succeeded(&cma.name_any());
                }
                result
            },
            |cma, error: &CmaConfigError, state: Arc<State>| {
                crate::controllers::common::log_failure(
                    error,
                    &cma.name_any(),
                    "recording the ClusterManagementAddOn's config hashes failed",
                );
                Action::requeue(state.backoff.failed(&cma.name_any()))
            },
            state,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(ManagerError::ControllerStopped(NAME))
}

/// Sets the spec hash of `desired` (a config of this group and resource) from the cache;
/// `false` when the cache has not listed the type yet (the hash is left alone).
fn set_hash(
    configs: &ConfigStores,
    cma: &str,
    group: Option<&str>,
    resource: &str,
    desired: Option<&mut ConfigSpecHash>,
) -> Result<bool, CmaConfigError> {
    let Some(desired) = desired else {
        return Ok(true);
    };
    if desired.name.is_empty() || !configs.supports(group, resource) {
        return Ok(true);
    }
    let spec_hash = match configs.get(group, resource, desired.namespace.as_deref(), &desired.name) {
        Lookup::Found(config) => hash(&config).map_err(|source| CmaConfigError::HashConfig {
            cma: cma.to_string(),
            config: desired.name.clone(),
            source,
        })?,
        Lookup::Missing => String::new(),
        Lookup::NotReady => return Ok(false),
    };
    desired.spec_hash = Some(spec_hash);
    Ok(true)
}

#[tracing::instrument(skip_all, fields(cma = %current.name_any()))]
async fn reconcile(current: &ClusterManagementAddOn, state: &State) -> Result<Action, CmaConfigError> {
    let name = current.name_any();
    if state.ctx.addon(&name).is_none() {
        return Ok(Action::await_change());
    }
    let Some(old_status) = current.status.as_ref() else {
        return Ok(Action::await_change());
    };
    let mut status = old_status.clone();
    let mut ready = true;
    for reference in status.default_config_references.iter_mut().flatten() {
        ready &= set_hash(
            &state.configs,
            &name,
            reference.group.as_deref(),
            &reference.resource,
            reference.desired_config.as_mut(),
        )?;
    }
    for progression in status.install_progressions.iter_mut().flatten() {
        for reference in progression.config_references.iter_mut().flatten() {
            ready &= set_hash(
                &state.configs,
                &name,
                reference.group.as_deref(),
                &reference.resource,
                reference.desired_config.as_mut(),
            )?;
        }
    }
    let next = if ready {
        Action::await_change()
    } else {
        Action::requeue(NOT_READY_RETRY)
    };
    let serialize = |source| CmaConfigError::SerializeStatus {
        cma: name.clone(),
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
    Api::<ClusterManagementAddOn>::all(state.ctx.client.clone())
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&body))
        .await
        .map_err(|source| CmaConfigError::PatchStatus {
            cma: name.clone(),
            source,
        })?;
    Ok(next)
}
