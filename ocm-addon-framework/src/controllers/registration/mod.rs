//! The registration controller (`addon-registration-controller`, addon-framework.md §2.2): for
//! each ManagedClusterAddOn of a registered add-on that its ClusterManagementAddOn owns, it
//! publishes `status.supportedConfigs`, runs the add-on's permission config, and writes
//! `status.registrations`, `status.namespace` and the `RegistrationApplied` condition.

mod build;

use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::Resource;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, ReflectHandle};
use kube::{Api, ResourceExt};
use ocm_api::addon::v1beta1::{ConfigGroupResource, ManagedClusterAddOn, ManagedClusterAddOnStatus};
use ocm_api::conditions::{ConditionList, Status};
use ocm_api::meta::Condition;
use ocm_api::names::{annotations, conditions::addon::managed_cluster_addon as cond, namespaces};

use super::common::{self, Backoff};
use crate::agent::AddonError;
use crate::manager::{Context, ManagerError};

/// The controller's name.
pub(crate) const NAME: &str = "addon-registration-controller";

/// The message of a True `RegistrationApplied`.
const APPLIED_MESSAGE: &str = "Registration of the addon agent is configured";

/// Why a registration reconcile failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RegistrationError {
    /// The add-on's permission config failed.
    #[error("set the hub permissions of {key}: {source}")]
    ConfigurePermission {
        /// `cluster/addon`.
        key: String,
        /// What failed.
        source: AddonError,
    },
    /// The add-on's registration configurations failed.
    #[error("list the registrations of {key}: {source}")]
    ListRegistrations {
        /// `cluster/addon`.
        key: String,
        /// What failed.
        source: AddonError,
    },
    /// The add-on's install namespace failed.
    #[error("choose the install namespace of {key}: {source}")]
    InstallNamespace {
        /// `cluster/addon`.
        key: String,
        /// What failed.
        source: AddonError,
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
    backoff: Backoff,
    recorder: Recorder,
}

/// Runs the controller until its streams end.
pub(crate) async fn run(
    ctx: Arc<Context>,
    addons: ReflectHandle<ManagedClusterAddOn>,
    triggers: impl Stream<Item = ObjectRef<ManagedClusterAddOn>> + Send + 'static,
) -> Result<(), ManagerError> {
    let registered = ctx.clone();
    let events =
        addons.filter(move |addon| futures::future::ready(registered.addon(&addon.name_any()).is_some()));
    let store = ctx.managed_addons.clone();
    let recorder = Recorder::new(
        ctx.client.clone(),
        Reporter {
            controller: NAME.to_string(),
            instance: None,
        },
    );
    let state = Arc::new(State {
        ctx,
        backoff: Backoff::default(),
        recorder,
    });
    common::wait_for_caches(&state.ctx).await;
    Controller::for_shared_stream(events, store)
        .with_config(Config::default().concurrency(1))
        .reconcile_on(triggers)
        .run(
            |addon, state: Arc<State>| async move {
                let key = key(&addon);
                let result = reconcile(&addon, &state).await;
                if result.is_ok() {
                    state.backoff.succeeded(&key);
                }
                result.map(|()| Action::await_change())
            },
            |addon, error: &RegistrationError, state: Arc<State>| {
                common::log_failure(error, &key(&addon), "add-on registration failed");
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
async fn reconcile(current: &ManagedClusterAddOn, state: &State) -> Result<(), RegistrationError> {
    let ctx = state.ctx.as_ref();
    let key = key(current);
    let cluster_name = current.namespace().unwrap_or_default();
    let Some(agent) = ctx.addon(&current.name_any()).cloned() else {
        return Ok(());
    };
    let Some(cluster) = ctx.clusters.get(&ObjectRef::new(&cluster_name)) else {
        return Ok(());
    };
    if !common::accepted(ctx.filter, current) || !common::owned_by_cma(current) {
        return Ok(());
    }
    let options = agent.options();
    let mut status = current.status.clone().unwrap_or_default();

    // supportedConfigs first; a change is written on its own and the next event goes on.
    let supported: Vec<ConfigGroupResource> = options
        .supported_configs
        .iter()
        .map(|gvr| ConfigGroupResource {
            group: Some(gvr.group.clone()),
            resource: gvr.resource.clone(),
        })
        .collect();
    let supported = (!supported.is_empty()).then_some(supported);
    if status.supported_configs != supported {
        status.supported_configs = supported;
        return patch(ctx, current, &status, &key).await;
    }

    let Some(registration) = options.registration else {
        set_applied(
            &mut status,
            Status::True,
            cond::reasons::REGISTRATION_NIL,
            APPLIED_MESSAGE,
        );
        return patch(ctx, current, &status, &key).await;
    };

    let mut permission_ready = true;
    if let Some(permission) = &registration.permission_config {
        match permission.configure(&cluster, current).await {
            Ok(()) => {}
            Err(AddonError::SubjectNotReady) => permission_ready = false,
            Err(source) => {
                set_applied(
                    &mut status,
                    Status::False,
                    cond::reasons::REGISTRATION_SET_PERMISSION_FAILED,
                    &format!("Failed to set permission for hub agent: {source}"),
                );
                patch(ctx, current, &status, &key).await?;
                // The add-on's author or the hub's admin has to act: say so where they look.
                let event = Event {
                    type_: EventType::Warning,
                    reason: cond::reasons::REGISTRATION_SET_PERMISSION_FAILED.to_string(),
                    note: Some(format!("Failed to set permission for hub agent: {source}")),
                    action: "SetPermission".to_string(),
                    secondary: None,
                };
                if let Err(error) = state.recorder.publish(&event, &current.object_ref(&())).await {
                    tracing::debug!(%error, "publishing an event failed");
                }
                return Err(RegistrationError::ConfigurePermission { key, source });
            }
        }
    }

    let Some(configurations) = &registration.configurations else {
        set_applied(
            &mut status,
            Status::True,
            cond::reasons::REGISTRATION_NIL,
            APPLIED_MESSAGE,
        );
        return patch(ctx, current, &status, &key).await;
    };
    let wanted = configurations
        .configurations(&cluster, current)
        .await
        .map_err(|source| RegistrationError::ListRegistrations {
            key: key.clone(),
            source,
        })?;
    let registrations = build::registrations(
        &cluster_name,
        &current.name_any(),
        &wanted,
        status.registrations.as_deref().unwrap_or_default(),
    );
    status.registrations = (!registrations.is_empty()).then_some(registrations);

    let mut namespace = namespaces::ADDON_AGENT.to_string();
    if let Some(annotated) = current
        .annotations()
        .get(annotations::V1ALPHA1_INSTALL_NAMESPACE)
        .filter(|n| !n.is_empty())
    {
        namespace.clone_from(annotated);
    }
    if let Some(install_namespace) = &options.install_namespace {
        let chosen = install_namespace
            .install_namespace(current)
            .await
            .map_err(|source| RegistrationError::InstallNamespace {
                key: key.clone(),
                source,
            })?;
        if !chosen.is_empty() {
            namespace = chosen;
        }
    }
    status.namespace = Some(namespace);

    if permission_ready {
        set_applied(
            &mut status,
            Status::True,
            cond::reasons::REGISTRATION_SET_PERMISSION_APPLIED,
            APPLIED_MESSAGE,
        );
    } else {
        set_applied(
            &mut status,
            Status::False,
            cond::reasons::REGISTRATION_PERMISSION_CONFIG_PENDING,
            &AddonError::SubjectNotReady.to_string(),
        );
    }
    patch(ctx, current, &status, &key).await
}

fn set_applied(status: &mut ManagedClusterAddOnStatus, value: Status, reason: &str, message: &str) {
    status.conditions.set_condition(Condition::new(
        cond::REGISTRATION_APPLIED,
        value,
        reason,
        message,
        common::now(),
    ));
}

/// Writes `status` when it differs from the status of `current`.
async fn patch(
    ctx: &Context,
    current: &ManagedClusterAddOn,
    status: &ManagedClusterAddOnStatus,
    key: &str,
) -> Result<(), RegistrationError> {
    let serialize = |source| RegistrationError::SerializeStatus {
        key: key.to_string(),
        source,
    };
    let old = serde_json::to_value(current.status.clone().unwrap_or_default()).map_err(serialize)?;
    let new = serde_json::to_value(status).map_err(serialize)?;
    let Some(body) = common::status_patch(
        &old,
        &new,
        current.metadata.uid.as_deref(),
        current.metadata.resource_version.as_deref(),
    ) else {
        return Ok(());
    };
    Api::<ManagedClusterAddOn>::namespaced(ctx.client.clone(), &current.namespace().unwrap_or_default())
        .patch_status(&current.name_any(), &PatchParams::default(), &Patch::Merge(&body))
        .await
        .map_err(|source| RegistrationError::PatchStatus {
            key: key.to_string(),
            source,
        })?;
    Ok(())
}
