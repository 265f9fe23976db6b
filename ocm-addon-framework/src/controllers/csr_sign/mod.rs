//! The CSR signing controller (`CSRSignController`, addon-framework.md §2.7): issues the
//! certificates of approved add-on agent CSRs of custom signers (any signer but
//! `kubernetes.io/kube-apiserver-client`) with the add-on's signer.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::ReflectHandle;
use kube::{Api, ResourceExt};
use ocm_api::names::subjects;

use super::common::{self, Backoff};
use super::csr_approve::{addon_of, is_approved, is_denied};
use crate::agent::AddonError;
use crate::manager::{Context, ManagerError};

/// The controller's name.
pub(crate) const NAME: &str = "CSRSignController";

/// Why signing a CSR failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CsrSignError {
    /// The add-on's signer failed.
    #[error("sign certificate signing request {name}: {source}")]
    Sign {
        /// The CSR.
        name: String,
        /// What failed.
        source: AddonError,
    },
    /// The signer returned no certificate.
    #[error("invalid client certificate generated for addon csr {0}")]
    EmptyCertificate(String),
    /// Writing the certificate failed.
    #[error("write the certificate of certificate signing request {name}: {source}")]
    UpdateStatus {
        /// The CSR.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

/// Whether the controller has to sign `csr`: approved, not denied, no certificate yet, and a
/// custom signer.
fn to_sign(csr: &CertificateSigningRequest) -> bool {
    is_approved(csr)
        && !is_denied(csr)
        && csr
            .status
            .as_ref()
            .and_then(|s| s.certificate.as_ref())
            .is_none_or(|c| c.0.is_empty())
        && csr.spec.signer_name != subjects::KUBE_APISERVER_CLIENT_SIGNER
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
    let events = csrs.filter(|csr| futures::future::ready(to_sign(csr)));
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
            |csr, error: &CsrSignError, state: Arc<State>| {
                common::log_failure(error, &csr.name_any(), "signing an add-on CSR failed");
                Action::requeue(state.backoff.failed(&csr.name_any()))
            },
            state,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(ManagerError::ControllerStopped(NAME))
}

#[tracing::instrument(skip_all, fields(csr = %csr.name_any()))]
async fn reconcile(csr: &CertificateSigningRequest, ctx: &Context) -> Result<(), CsrSignError> {
    if !to_sign(csr) {
        return Ok(());
    }
    let Some((agent, cluster, addon)) = addon_of(ctx, csr) else {
        return Ok(());
    };
    let Some(signer) = agent.options().registration.and_then(|r| r.csr_sign) else {
        return Ok(());
    };
    let name = csr.name_any();
    let certificate = signer
        .sign(&cluster, &addon, csr)
        .map_err(|source| CsrSignError::Sign {
            name: name.clone(),
            source,
        })?;
    if certificate.is_empty() {
        return Err(CsrSignError::EmptyCertificate(name));
    }
    let body = serde_json::json!({"status": {"certificate": ByteString(certificate)}});
    Api::<CertificateSigningRequest>::all(ctx.client.clone())
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&body))
        .await
        .map_err(|source| CsrSignError::UpdateStatus {
            name: name.clone(),
            source,
        })?;
    tracing::info!("signed the add-on CSR");
    Ok(())
}
