//! The CSR approving controller (`CSRApprovingController`, addon-framework.md §2.6): approves the
//! add-on agents' CSRs (named `addon…`, labelled with a registered add-on and a cluster) that
//! the add-on's approve check accepts.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestCondition};
use kube::api::PostParams;
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::{ObjectRef, ReflectHandle};
use kube::{Api, ResourceExt};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::labels;

use super::common::{self, Backoff};
use crate::agent::AgentAddon;
use crate::manager::{Context, ManagerError};

/// The controller's name.
pub(crate) const NAME: &str = "CSRApprovingController";

/// Why approving a CSR failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CsrApproveError {
    /// Writing the approval failed.
    #[error("approve certificate signing request {name}: {source}")]
    UpdateApproval {
        /// The CSR.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

/// Whether the CSR carries an Approved or Denied condition.
pub(crate) fn is_approved(csr: &CertificateSigningRequest) -> bool {
    has_condition(csr, "Approved")
}

/// Whether the CSR carries a Denied condition.
pub(crate) fn is_denied(csr: &CertificateSigningRequest) -> bool {
    has_condition(csr, "Denied") || has_condition(csr, "Failed")
}

fn has_condition(csr: &CertificateSigningRequest, type_: &str) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == type_)
}

/// What an add-on agent's CSR belongs to: the add-on, its cluster and its ManagedClusterAddOn.
pub(crate) type CsrOwner = (Arc<dyn AgentAddon>, Arc<ManagedCluster>, Arc<ManagedClusterAddOn>);

/// The add-on, cluster and ManagedClusterAddOn of an add-on agent's CSR, when the CSR is named
/// `addon…`, labelled with a registered add-on and a cluster that exist, and the add-on passes
/// the manager's filter.
pub(crate) fn addon_of(ctx: &Context, csr: &CertificateSigningRequest) -> Option<CsrOwner> {
    if !csr.name_any().starts_with("addon") {
        return None;
    }
    let csr_labels = csr.labels();
    let addon_name = csr_labels.get(labels::ADDON_NAME)?;
    let agent = ctx.addon(addon_name)?.clone();
    let cluster_name = csr_labels.get(labels::CLUSTER_NAME)?;
    let cluster = ctx.clusters.get(&ObjectRef::new(cluster_name))?;
    let addon = ctx
        .managed_addons
        .get(&ObjectRef::new(addon_name).within(cluster_name))?;
    if !common::accepted(ctx.filter, &addon) {
        return None;
    }
    Some((agent, cluster, addon))
}

struct State {
    ctx: Arc<Context>,
    backoff: Backoff,
}

/// Runs the controller until its stream ends.
pub(crate) async fn run(
    ctx: Arc<Context>,
    csrs: ReflectHandle<CertificateSigningRequest>,
) -> Result<(), ManagerError> {
    let events = csrs.filter(|csr| futures::future::ready(!is_approved(csr) && !is_denied(csr)));
    let store = ctx.csrs.clone();
    let state = Arc::new(State {
        ctx,
        backoff: Backoff::default(),
    });
    common::wait_for_caches(&state.ctx).await;
    Controller::for_shared_stream(events, store)
        .with_config(Config::default().concurrency(1))
        .run(
            |csr, state: Arc<State>| async move {
                let result = reconcile(&csr, &state.ctx).await;
                if result.is_ok() {
                    state.backoff.succeeded(&csr.name_any());
                }
                result.map(|()| Action::await_change())
            },
            |csr, error: &CsrApproveError, state: Arc<State>| {
                common::log_failure(error, &csr.name_any(), "approving an add-on CSR failed");
                Action::requeue(state.backoff.failed(&csr.name_any()))
            },
            state,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(ManagerError::ControllerStopped(NAME))
}

#[tracing::instrument(skip_all, fields(csr = %csr.name_any()))]
async fn reconcile(csr: &CertificateSigningRequest, ctx: &Context) -> Result<(), CsrApproveError> {
    if is_approved(csr) || is_denied(csr) {
        return Ok(());
    }
    let Some((agent, cluster, addon)) = addon_of(ctx, csr) else {
        return Ok(());
    };
    let Some(check) = agent.options().registration.and_then(|r| r.csr_approve_check) else {
        return Ok(());
    };
    if !check.approve(&cluster, &addon, csr) {
        tracing::info!("the add-on's check does not approve the CSR");
        return Ok(());
    }
    let mut approved = csr.clone();
    approved
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new)
        .push(CertificateSigningRequestCondition {
            type_: "Approved".into(),
            status: "True".into(),
            reason: Some("AutoApprovedByHubCSRApprovingController".into()),
            message: Some("Auto approving addon agent certificate.".into()),
            last_update_time: Some(common::now()),
            ..Default::default()
        });
    Api::<CertificateSigningRequest>::all(ctx.client.clone())
        .replace_subresource("approval", &csr.name_any(), &PostParams::default(), &approved)
        .await
        .map_err(|source| CsrApproveError::UpdateApproval {
            name: csr.name_any(),
            source,
        })?;
    tracing::info!("approved the add-on CSR");
    Ok(())
}
