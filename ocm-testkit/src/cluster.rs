//! One managed cluster of a fleet: its control plane and its klusterlet agents.

use std::path::{Path, PathBuf};

use ocm_api::crd::InstallTarget;
use ocm_controlplane::TestEnv;
use ocm_core::klusterlet;
use ocm_core::metrics::ControllerMetrics;
use ocm_core::registration::agent::AgentOptions;
use ocm_core::work::agent::WorkAgentOptions;

use crate::{FleetError, FleetOptions, client_of};

/// A managed cluster of a [`Fleet`](crate::Fleet).
pub struct ManagedClusterEnv {
    name: String,
    env: TestEnv,
    client: kube::Client,
    hub_kubeconfig_dir: PathBuf,
    agent_namespace: String,
}

impl std::fmt::Debug for ManagedClusterEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedClusterEnv")
            .field("name", &self.name)
            .field("kubeconfig", &self.env.kubeconfig_path())
            .finish()
    }
}

impl ManagedClusterEnv {
    /// Starts the control plane of cluster `name` (the cluster of `OCM_TEST_SPOKE_KUBECONFIG`
    /// when `may_be_real` and it is set) and its agents, joining with `bootstrap_kubeconfig`.
    pub(crate) async fn start(
        name: &str,
        may_be_real: bool,
        bootstrap_kubeconfig: &Path,
        dir: &Path,
        options: &FleetOptions,
    ) -> Result<(Self, tokio::task::JoinHandle<()>), FleetError> {
        let real = may_be_real && std::env::var("OCM_TEST_SPOKE_KUBECONFIG").is_ok_and(|v| !v.is_empty());
        let env = if real {
            TestEnv::spoke().await
        } else {
            TestEnv::start().await
        }
        .map_err(|source| FleetError::StartControlPlane {
            which: name.to_string(),
            source,
        })?;
        let client = client_of(&env, name).await?;
        let crds = ocm_core::crds::generated(&[InstallTarget::Managed])
            .map_err(|e| FleetError::InstallCrds {
                which: name.to_string(),
                message: e.to_string(),
            })?
            .into_iter()
            .map(|generated| generated.crd)
            .collect();
        ocm_core::crds::install(&client, crds, std::time::Duration::from_secs(30))
            .await
            .map_err(|e| FleetError::InstallCrds {
                which: name.to_string(),
                message: e.to_string(),
            })?;
        let hub_kubeconfig_dir = dir.join(name).join("hub-kubeconfig");
        let mut agent = AgentOptions::new(bootstrap_kubeconfig.to_path_buf(), hub_kubeconfig_dir.clone());
        agent.cluster_name = Some(name.to_string());
        agent.cluster_healthcheck_period = std::time::Duration::from_secs(5);
        agent.poll_period = std::time::Duration::from_millis(250);
        agent.addon_sync_period = options.addon_sync_period;
        // On a real spoke other tests' agents may run too: this one keeps its credentials in a
        // namespace of its own.
        if real {
            agent.component_namespace = format!("{name}-agent");
        }
        if let Some(handle) = env.control_plane() {
            agent.external_server_urls = vec![handle.url().to_string()];
            agent.spoke_ca_bundle = Some(handle.credentials().ca_pem.clone().into_bytes());
        }
        klusterlet::ensure_namespace(&client, &agent.component_namespace).await?;
        let mut work = WorkAgentOptions::new(name.to_string());
        work.status_sync_interval = options.status_sync_interval;
        work.agent_id = Some(name.to_string());
        let agent_namespace = agent.component_namespace.clone();
        let agents = klusterlet::run(client.clone(), agent, work, ControllerMetrics::default());
        let cluster = name.to_string();
        let task = tokio::spawn(async move {
            if let Err(error) = agents.await {
                tracing::error!(%error, %cluster, "the klusterlet agents stopped");
            }
        });
        Ok((
            Self {
                name: name.to_string(),
                env,
                client,
                hub_kubeconfig_dir,
                agent_namespace,
            },
            task,
        ))
    }

    /// The cluster's name (its namespace on the hub).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// An admin client of the managed cluster.
    #[must_use]
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The managed cluster's admin kubeconfig file.
    #[must_use]
    pub fn kubeconfig(&self) -> &Path {
        self.env.kubeconfig_path()
    }

    /// The directory where the registration agent keeps the cluster's hub credentials.
    #[must_use]
    pub fn hub_kubeconfig_dir(&self) -> &Path {
        &self.hub_kubeconfig_dir
    }

    /// The agents' namespace on the managed cluster.
    #[must_use]
    pub fn agent_namespace(&self) -> &str {
        &self.agent_namespace
    }
}
