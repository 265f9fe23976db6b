//! The hub: a fresh `ocm-controlplane` (a child process when the binary is found, else in this
//! process) writing an audit log, or an external hub given by its admin kubeconfig (e.g. a real
//! kube-apiserver); with the OCM CRDs installed, the bootstrap RBAC applied and a bootstrap
//! kubeconfig for the agents.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use ocm_controlplane::{ControlPlane, ControlPlaneHandle};

use super::JoinError;
use crate::load::LoadError;
use crate::load::child::{ChildServer, find_server_binary};

/// The user of the bootstrap kubeconfig (the ServiceAccount `clusteradm get token` uses).
pub const BOOTSTRAP_USER: &str = "system:serviceaccount:open-cluster-management:agent-registration-bootstrap";

/// How long CRDs may take to become Established.
const CRD_TIMEOUT: Duration = Duration::from_secs(60);

enum Server {
    Child(ChildServer),
    InProcess(ControlPlaneHandle),
    /// Not ours: nothing to stop, no audit log.
    External,
}

/// A running hub.
pub struct Hub {
    server: Server,
    /// An admin client.
    pub client: Client,
    /// `https://127.0.0.1:port`.
    pub url: String,
    /// The serving CA (PEM).
    pub ca_pem: String,
    /// The admin kubeconfig file (for the controllers' child process).
    pub admin_kubeconfig: PathBuf,
    /// The audit log: one JSON line per request (none on an external hub: see
    /// [`Hub::counts_requests`]).
    pub audit_log: PathBuf,
}

impl Hub {
    /// Starts a hub with its files under `dir`: the child process when `binary` (or the
    /// `ocm-controlplane` next to this executable) exists and `in_process` is false, else an
    /// in-process server on `server_runtime`.
    pub async fn start(
        dir: &Path,
        binary: Option<&Path>,
        in_process: bool,
        server_runtime: &tokio::runtime::Handle,
    ) -> Result<Self, JoinError> {
        Self::start_named("hub", dir, binary, in_process, server_runtime).await
    }

    /// [`Self::start`] for a control plane called `name` (its audit log is `<name>-audit.log`
    /// and an in-process server's kubeconfig `<name>-admin.kubeconfig` in `dir`), so that one
    /// harness can run several (a hub and a spoke).
    pub async fn start_named(
        name: &str,
        dir: &Path,
        binary: Option<&Path>,
        in_process: bool,
        server_runtime: &tokio::runtime::Handle,
    ) -> Result<Self, JoinError> {
        let audit_log = dir.join(format!("{name}-audit.log"));
        let binary = if in_process {
            None
        } else {
            find_server_binary(binary)
        };
        let (server, admin_kubeconfig) = match binary {
            Some(binary) => {
                let extra = ["--audit-log-path".into(), audit_log.clone().into_os_string()];
                let child = ChildServer::spawn_with_args(&binary, Some(dir), &extra).await?;
                let path = child.kubeconfig_path().to_path_buf();
                (Server::Child(child), path)
            }
            None => {
                let builder = ControlPlane::builder().audit_log(Some(audit_log.clone()));
                let handle = server_runtime
                    .spawn(async move { builder.start().await })
                    .await
                    .map_err(|e| LoadError::StartServer(e.to_string()))?
                    .map_err(|e| LoadError::StartServer(e.to_string()))?;
                let path = dir.join(format!("{name}-admin.kubeconfig"));
                std::fs::write(&path, handle.admin_kubeconfig()).map_err(|source| JoinError::File {
                    what: "writing",
                    path: path.display().to_string(),
                    source,
                })?;
                (Server::InProcess(handle), path)
            }
        };
        Self::with_kubeconfig(server, admin_kubeconfig, audit_log).await
    }

    /// An external hub (e.g. a real kube-apiserver) of the admin kubeconfig `kubeconfig`: not
    /// started or stopped here, and without an audit log.
    pub async fn external(kubeconfig: &Path) -> Result<Self, JoinError> {
        Self::with_kubeconfig(Server::External, kubeconfig.to_path_buf(), PathBuf::new()).await
    }

    async fn with_kubeconfig(
        server: Server,
        admin_kubeconfig: PathBuf,
        audit_log: PathBuf,
    ) -> Result<Self, JoinError> {
        let kubeconfig = Kubeconfig::read_from(&admin_kubeconfig).map_err(|e| LoadError::ReadKubeconfig {
            path: admin_kubeconfig.display().to_string(),
            message: e.to_string(),
        })?;
        let (url, ca_pem) = server_and_ca(&kubeconfig)?;
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| LoadError::ReadKubeconfig {
                path: admin_kubeconfig.display().to_string(),
                message: e.to_string(),
            })?;
        let client = Client::try_from(config).map_err(|e| LoadError::BuildClient(e.to_string()))?;
        Ok(Self {
            server,
            client,
            url,
            ca_pem,
            admin_kubeconfig,
            audit_log,
        })
    }

    /// Whether the hub writes an audit log the harness can count requests in (not an external
    /// hub).
    pub fn counts_requests(&self) -> bool {
        !matches!(self.server, Server::External)
    }

    /// Whether the hub is an external one ([`Hub::external`]).
    pub fn is_external(&self) -> bool {
        matches!(self.server, Server::External)
    }

    /// The hub's process id when it runs as a child (its memory is then its own).
    pub fn pid(&self) -> Option<u32> {
        match &self.server {
            Server::Child(child) => Some(child.pid()),
            Server::InProcess(_) | Server::External => None,
        }
    }

    /// What the report calls the hub.
    pub fn description(&self) -> String {
        match &self.server {
            Server::Child(child) => format!(
                "ocm-controlplane serve, child process {} (redb in a fresh data dir)",
                child.pid()
            ),
            Server::InProcess(_) => "embedded ocm-controlplane in the harness process (in memory)".into(),
            Server::External => format!(
                "the external hub {} (kubeconfig {})",
                self.url,
                self.admin_kubeconfig.display()
            ),
        }
    }

    /// Installs the OCM CRDs and waits until they are Established.
    pub async fn install_crds(&self) -> Result<(), JoinError> {
        self.install_crds_where(|_| true).await
    }

    /// Installs the OCM CRDs upstream installs on `target` (the hub's or a managed cluster's) and
    /// waits until they are Established.
    pub async fn install_crds_for(&self, target: ocm_api::crd::InstallTarget) -> Result<(), JoinError> {
        self.install_crds_where(|t| t == target).await
    }

    async fn install_crds_where(
        &self,
        wanted: impl Fn(ocm_api::crd::InstallTarget) -> bool,
    ) -> Result<(), JoinError> {
        let crds = ocm_api::crd::all()
            .map_err(|e| JoinError::PrepareHub(format!("generating CRDs: {e}")))?
            .into_iter()
            .filter(|generated| wanted(generated.target))
            .map(|generated| generated.crd)
            .collect();
        ocm_core::crds::install(&self.client, crds, CRD_TIMEOUT)
            .await
            .map_err(|e| JoinError::PrepareHub(format!("installing CRDs: {e}")))?;
        Ok(())
    }

    /// Installs the hub's OCM CRDs that the hub lacks (an external hub's own are left as they
    /// are) and waits until they are Established; returns the names installed.
    pub async fn install_missing_hub_crds(&self) -> Result<Vec<String>, JoinError> {
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        let api: kube::Api<CustomResourceDefinition> = kube::Api::all(self.client.clone());
        let mut missing = Vec::new();
        for generated in ocm_core::crds::generated(&[ocm_api::crd::InstallTarget::Hub])
            .map_err(|e| JoinError::PrepareHub(format!("generating CRDs: {e}")))?
        {
            let name = generated.crd.metadata.name.clone().unwrap_or_default();
            let present = api
                .get_opt(&name)
                .await
                .map_err(|e| JoinError::PrepareHub(format!("reading CRD {name}: {e}")))?
                .is_some();
            if !present {
                missing.push(generated.crd);
            }
        }
        if missing.is_empty() {
            return Ok(Vec::new());
        }
        ocm_core::crds::install(&self.client, missing, CRD_TIMEOUT)
            .await
            .map_err(|e| JoinError::PrepareHub(format!("installing CRDs: {e}")))
    }

    /// Applies the bootstrap RBAC and returns a bootstrap kubeconfig (a token of the
    /// `agent-registration-bootstrap` ServiceAccount, valid for a day).
    pub async fn bootstrap_kubeconfig(&self) -> Result<String, JoinError> {
        ocm_core::registration::hub::bootstrap::bootstrap_kubeconfig(
            &self.client,
            &self.url,
            &self.ca_pem,
            Duration::from_secs(24 * 3600),
        )
        .await
        .map_err(|e| JoinError::PrepareHub(format!("bootstrap kubeconfig: {e}")))
    }

    /// Stops the hub.
    pub async fn stop(self) {
        match self.server {
            Server::Child(child) => child.stop().await,
            Server::InProcess(handle) => handle.shutdown(),
            Server::External => {}
        }
    }
}

/// The server URL and CA (PEM; inline data or a file) of a kubeconfig's first cluster.
fn server_and_ca(kubeconfig: &Kubeconfig) -> Result<(String, String), JoinError> {
    let cluster = kubeconfig
        .clusters
        .first()
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| JoinError::PrepareHub("the admin kubeconfig names no cluster".into()))?;
    let url = cluster.server.clone().unwrap_or_default();
    let ca = match (
        &cluster.certificate_authority_data,
        &cluster.certificate_authority,
    ) {
        (Some(b64), _) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| JoinError::PrepareHub(format!("the admin kubeconfig's CA data: {e}")))?,
        (None, Some(file)) => std::fs::read(file).map_err(|source| JoinError::File {
            what: "reading the hub CA",
            path: file.clone(),
            source,
        })?,
        (None, None) => return Err(JoinError::PrepareHub("the admin kubeconfig has no CA".into())),
    };
    let ca_pem = String::from_utf8(ca).map_err(|e| JoinError::PrepareHub(format!("the hub CA: {e}")))?;
    Ok((url, ca_pem))
}
