//! The klusterlet's agents in one process, as upstream's klusterlet runs them in singleton mode:
//! the registration agent (run again, bootstrapping anew, when its hub credentials stop working)
//! and the work agent on the credentials the registration agent obtains ([`run_work_agent`],
//! restarted when they rotate). The `klusterlet` and `quickstart` binaries and `ocm-testkit` run
//! them through [`run`].

mod work;

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ObjectMeta, PostParams};

use crate::metrics::ControllerMetrics;
use crate::registration::agent::{self, AgentError, AgentOptions};
use crate::work::agent::WorkAgentOptions;

pub use work::run_work_agent;

/// How long to wait before running the registration agent again after it failed (a pod restart
/// upstream).
const RESTART_DELAY: Duration = Duration::from_secs(5);

/// Runs the registration agent of `options` and the work agent of `work_options` on the managed
/// cluster `spoke` until the registration agent gives up.
///
/// # Errors
/// The bootstrap kubeconfig cannot be read (running again would not help).
pub async fn run(
    spoke: kube::Client,
    options: AgentOptions,
    work_options: WorkAgentOptions,
    metrics: ControllerMetrics,
) -> Result<(), AgentError> {
    let work_agent = run_work_agent(
        spoke.clone(),
        options.hub_kubeconfig_dir.clone(),
        work_options,
        metrics.clone(),
    );
    tokio::select! {
        result = run_registration_agent(spoke, options, metrics) => result,
        () = work_agent => Ok(()),
    }
}

/// Runs the registration agent, running it again (re-bootstrapping) when its hub credentials stop
/// working or it fails in a way a restart may fix, as upstream's pod is restarted.
///
/// # Errors
/// The bootstrap kubeconfig cannot be read (a restart would not help).
pub async fn run_registration_agent(
    spoke: kube::Client,
    options: AgentOptions,
    metrics: ControllerMetrics,
) -> Result<(), AgentError> {
    loop {
        match agent::run(spoke.clone(), options.clone(), metrics.clone()).await {
            Ok(()) => return Ok(()),
            Err(error @ AgentError::ReadBootstrapKubeconfig { .. }) => return Err(error),
            Err(AgentError::HubKubeconfigInvalid(dir)) => {
                tracing::info!(dir = %dir.display(), "hub kubeconfig no longer valid; bootstrapping again");
            }
            Err(error) => {
                tracing::warn!(%error, delay = ?RESTART_DELAY, "the registration agent failed; restarting it");
                tokio::time::sleep(RESTART_DELAY).await;
            }
        }
    }
}

/// What failed while preparing the managed cluster for the agents.
#[derive(Debug, thiserror::Error)]
pub enum KlusterletError {
    /// Creating the agents' namespace failed.
    #[error("creating namespace {namespace}: {source}")]
    CreateNamespace {
        /// The namespace.
        namespace: String,
        /// The API error.
        source: kube::Error,
    },
}

/// Creates `namespace` on the managed cluster if it is missing (the agent's component namespace,
/// which upstream's operator creates).
///
/// # Errors
/// [`KlusterletError::CreateNamespace`] when the cluster refuses it.
pub async fn ensure_namespace(client: &kube::Client, namespace: &str) -> Result<(), KlusterletError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let object = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.to_string()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(source) => Err(KlusterletError::CreateNamespace {
            namespace: namespace.to_string(),
            source,
        }),
    }
}
