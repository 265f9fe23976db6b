//! Which cluster an example process talks to: one named by a kubeconfig (a real cluster, or any
//! Kubernetes-compatible server), or an embedded `ocm-controlplane` the process starts itself
//! (`--embedded DIR`), with the OCM CRDs of its role installed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use ocm_api::crd::InstallTarget;
use ocm_controlplane::admission::ClusterAdmission;
use ocm_controlplane::{ControlPlane, ControlPlaneHandle};

/// How long CRDs may take to become Established.
const CRD_TIMEOUT: Duration = Duration::from_secs(60);

/// Reaching a cluster failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The kubeconfig could not be read or used.
    #[error("loading kubeconfig {path}: {message}")]
    LoadKubeconfig {
        /// The file (or `<inferred>` for KUBECONFIG / in-cluster).
        path: String,
        /// Why.
        message: String,
    },
    /// Creating the embedded control plane's data directory failed.
    #[error("creating {path}: {source}")]
    CreateDataDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The embedded control plane did not start.
    #[error("starting the embedded control plane in {path}: {message}")]
    StartEmbedded {
        /// Its data directory.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// Installing the OCM CRDs failed.
    #[error("installing the OCM CRDs: {0}")]
    InstallCrds(#[from] ocm_core::crds::InstallError),
    /// A generated CRD could not be converted for the embedded server.
    #[error("preparing CRD {name} for the embedded server: {source}")]
    PrepareCrd {
        /// The CRD.
        name: String,
        /// Why.
        source: serde_json::Error,
    },
}

/// A cluster an example process uses.
pub struct Cluster {
    client: kube::Client,
    kubeconfig: Option<PathBuf>,
    embedded: Option<ControlPlaneHandle>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("kubeconfig", &self.kubeconfig)
            .field("embedded", &self.embedded.as_ref().map(ControlPlaneHandle::url))
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// The cluster of `kubeconfig`, or of `KUBECONFIG` / `~/.kube/config` / the in-cluster
    /// service account when `None`.
    ///
    /// # Errors
    /// The kubeconfig could not be read or names no usable cluster.
    pub async fn connect(kubeconfig: Option<&Path>) -> Result<Self, ClusterError> {
        let client = match kubeconfig {
            Some(path) => client_from_file(path).await?,
            None => kube::Client::try_default()
                .await
                .map_err(|e| ClusterError::LoadKubeconfig {
                    path: "<inferred>".into(),
                    message: e.to_string(),
                })?,
        };
        Ok(Self {
            client,
            kubeconfig: kubeconfig.map(Path::to_path_buf),
            embedded: None,
        })
    }

    /// Starts an embedded control plane keeping its data in `dir` and serving on `port` of
    /// 127.0.0.1 (0 picks a free one); its admin kubeconfig is `dir/admin.kubeconfig`.
    ///
    /// # Errors
    /// The directory could not be created or the server did not start.
    pub async fn embedded(dir: &Path, port: u16) -> Result<Self, ClusterError> {
        Self::embedded_with_admission(dir, port, None).await
    }

    /// Like [`Cluster::embedded`], for a hub: with `admission`, the control plane admits
    /// ManagedClusters and ManagedClusterSetBindings as upstream's cluster-manager webhooks do
    /// (see `ocm_controlplane::admission`).
    ///
    /// # Errors
    /// The directory could not be created or the server did not start.
    pub async fn embedded_with_admission(
        dir: &Path,
        port: u16,
        admission: Option<ClusterAdmission>,
    ) -> Result<Self, ClusterError> {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        std::fs::create_dir_all(&dir).map_err(|source| ClusterError::CreateDataDir {
            path: dir.clone(),
            source,
        })?;
        let handle = ControlPlane::builder()
            .data_dir(&dir)
            .port(port)
            .cluster_admission(admission)
            .start()
            .await
            .map_err(|e| ClusterError::StartEmbedded {
                path: dir.clone(),
                message: e.to_string(),
            })?;
        let kubeconfig = dir.join("admin.kubeconfig");
        let client = client_from_file(&kubeconfig).await?;
        Ok(Self {
            client,
            kubeconfig: Some(kubeconfig),
            embedded: Some(handle),
        })
    }

    /// Starts an embedded control plane in `dir` on `port`, or — when `port` is `None` — on the
    /// port it used last time (read from `dir/admin.kubeconfig`), so that kubeconfigs handed out
    /// earlier (bootstrap kubeconfigs, the ManagedCluster's URL) keep working across restarts;
    /// on a free port when there was no last time or that port is taken now.
    ///
    /// # Errors
    /// The directory could not be created or the server did not start.
    pub async fn embedded_on_previous_port(dir: &Path, port: Option<u16>) -> Result<Self, ClusterError> {
        Self::embedded_on_previous_port_with_admission(dir, port, None).await
    }

    /// [`Cluster::embedded_on_previous_port`] with the hub's `admission` (see
    /// [`Cluster::embedded_with_admission`]).
    ///
    /// # Errors
    /// The directory could not be created or the server did not start.
    pub async fn embedded_on_previous_port_with_admission(
        dir: &Path,
        port: Option<u16>,
        admission: Option<ClusterAdmission>,
    ) -> Result<Self, ClusterError> {
        if let Some(port) = port {
            return Self::embedded_with_admission(dir, port, admission).await;
        }
        match previous_port(dir) {
            Some(previous) => match Self::embedded_with_admission(dir, previous, admission).await {
                Ok(cluster) => Ok(cluster),
                Err(error) => {
                    tracing::warn!(%error, port = previous, "the previous port is not available; using a free one");
                    Self::embedded_with_admission(dir, 0, admission).await
                }
            },
            None => Self::embedded_with_admission(dir, 0, admission).await,
        }
    }

    /// An admin client of the cluster.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The kubeconfig file this cluster was reached with, if one was named.
    pub fn kubeconfig_path(&self) -> Option<&Path> {
        self.kubeconfig.as_deref()
    }

    /// The embedded control plane, when this process runs one.
    pub fn embedded_handle(&self) -> Option<&ControlPlaneHandle> {
        self.embedded.as_ref()
    }

    /// Installs the OCM CRDs upstream installs on `target` and waits until they are Established.
    /// On an embedded control plane the add-on kinds convert between versions in-process, as
    /// upstream's hub does with its conversion webhook; on any other cluster they are stored as
    /// v1beta1 ([`ocm_api::crd::store_addon_kinds_as_v1beta1`]), so that the v1beta1 clients of
    /// this workspace keep what they write whether or not `hub`'s conversion webhook is
    /// registered.
    ///
    /// # Errors
    /// A CRD could not be generated, applied or did not become Established.
    pub async fn install_crds(&self, target: InstallTarget) -> Result<Vec<String>, ClusterError> {
        let mut crds: Vec<CustomResourceDefinition> = Vec::new();
        for generated in ocm_core::crds::generated(&[target])? {
            let mut crd = generated.crd;
            if let Some(handle) = &self.embedded {
                let converters = handle.api().registry.converters();
                let name = crd.metadata.name.clone().unwrap_or_default();
                let mut json = serde_json::to_value(&crd).map_err(|source| ClusterError::PrepareCrd {
                    name: name.clone(),
                    source,
                })?;
                if ocm_controlplane::conversion::use_in_process_conversion(&mut json, converters) {
                    crd = serde_json::from_value(json)
                        .map_err(|source| ClusterError::PrepareCrd { name, source })?;
                }
            } else {
                ocm_api::crd::store_addon_kinds_as_v1beta1(&mut crd);
            }
            crds.push(crd);
        }
        Ok(ocm_core::crds::install(&self.client, crds, CRD_TIMEOUT).await?)
    }

    /// The API server URL and the CA (PEM) that signs its serving certificate: what a bootstrap
    /// kubeconfig for this cluster needs.
    ///
    /// # Errors
    /// The kubeconfig names no server or no CA.
    pub fn server_and_ca(&self) -> Result<(String, String), ClusterError> {
        if let Some(handle) = &self.embedded {
            return Ok((handle.url().to_string(), handle.credentials().ca_pem.clone()));
        }
        let path = self
            .kubeconfig
            .clone()
            .or_else(|| std::env::var_os("KUBECONFIG").map(PathBuf::from))
            .unwrap_or_else(|| {
                PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".kube/config")
            });
        let error = |message: &str| ClusterError::LoadKubeconfig {
            path: path.display().to_string(),
            message: message.to_string(),
        };
        let kubeconfig = kube::config::Kubeconfig::read_from(&path).map_err(|e| error(&e.to_string()))?;
        let context = kubeconfig.current_context.as_deref().unwrap_or_default();
        let cluster_name = kubeconfig
            .contexts
            .iter()
            .find(|c| c.name == context)
            .and_then(|c| c.context.as_ref())
            .map(|c| c.cluster.clone())
            .ok_or_else(|| error("no current context"))?;
        let cluster = kubeconfig
            .clusters
            .iter()
            .find(|c| c.name == cluster_name)
            .and_then(|c| c.cluster.clone())
            .ok_or_else(|| error("the current context names no cluster"))?;
        let server = cluster.server.ok_or_else(|| error("the cluster has no server"))?;
        let ca = if let Some(data) = cluster.certificate_authority_data {
            // k8s-openapi's ByteString decodes base64.
            let bytes: k8s_openapi::ByteString = serde_json::from_value(serde_json::Value::String(data))
                .map_err(|e| error(&format!("certificate-authority-data: {e}")))?;
            String::from_utf8(bytes.0).map_err(|e| error(&format!("certificate-authority-data: {e}")))?
        } else if let Some(file) = cluster.certificate_authority {
            std::fs::read_to_string(&file).map_err(|e| error(&format!("reading {file}: {e}")))?
        } else {
            return Err(error("the cluster names no certificate authority"));
        };
        Ok((server, ca))
    }

    /// Stops the embedded control plane (if any), letting requests in flight finish for up to
    /// `grace`. The client is dropped first, so that its pooled connections close and the data
    /// directory's database is released: the same directory can be opened again at once.
    pub async fn stop(self, grace: Duration) {
        let Self { client, embedded, .. } = self;
        drop(client);
        if let Some(handle) = embedded {
            handle.shutdown_gracefully(grace).await;
        }
    }
}

/// The port of the server named by `dir/admin.kubeconfig`, if there is one.
pub fn previous_port(dir: &Path) -> Option<u16> {
    let kubeconfig = kube::config::Kubeconfig::read_from(dir.join("admin.kubeconfig")).ok()?;
    let server = kubeconfig.clusters.first()?.cluster.as_ref()?.server.clone()?;
    server.rsplit_once(':')?.1.trim_end_matches('/').parse().ok()
}

/// A client for the cluster and user of the kubeconfig at `path`.
///
/// # Errors
/// The file could not be read or names no usable cluster.
pub async fn client_from_file(path: &Path) -> Result<kube::Client, ClusterError> {
    let error = |message: String| ClusterError::LoadKubeconfig {
        path: path.display().to_string(),
        message,
    };
    let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(|e| error(e.to_string()))?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| error(e.to_string()))?;
    ocm_addon_framework::client::client_for(config).map_err(|e| error(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn embedded_cluster_installs_the_hub_crds_and_stops() {
        let dir = tempfile::tempdir().unwrap();
        let cluster = Cluster::embedded(dir.path(), 0).await.unwrap();
        assert!(dir.path().join("admin.kubeconfig").is_file());
        let names = cluster.install_crds(InstallTarget::Hub).await.unwrap();
        assert!(
            names
                .iter()
                .any(|n| n == "managedclusters.cluster.open-cluster-management.io")
        );
        let api: kube::Api<CustomResourceDefinition> = kube::Api::all(cluster.client());
        let crd = api
            .get("managedclusteraddons.addon.open-cluster-management.io")
            .await
            .unwrap();
        assert!(ocm_core::crds::is_established(&crd));
        cluster.stop(Duration::from_millis(100)).await;
    }

    #[tokio::test]
    async fn an_embedded_cluster_restarts_on_the_same_directory() {
        let dir = tempfile::tempdir().unwrap();
        let cluster = Cluster::embedded(dir.path(), 0).await.unwrap();
        let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(cluster.client());
        api.list(&Default::default()).await.unwrap();
        let (server, ca) = cluster.server_and_ca().unwrap();
        assert!(server.starts_with("https://127.0.0.1:"), "{server}");
        assert!(ca.contains("BEGIN CERTIFICATE"));
        cluster.stop(Duration::from_millis(100)).await;
        let port = previous_port(dir.path()).unwrap();
        assert!(server.ends_with(&format!(":{port}")), "{server}");
        let again = Cluster::embedded_on_previous_port(dir.path(), None)
            .await
            .unwrap();
        assert_eq!(again.embedded_handle().unwrap().addr().port(), port);
        let by_file = Cluster::connect(again.kubeconfig_path()).await.unwrap();
        let (file_server, file_ca) = by_file.server_and_ca().unwrap();
        assert_eq!(file_server, again.embedded_handle().unwrap().url());
        assert_eq!(file_ca, ca);
        again.stop(Duration::from_millis(100)).await;
    }

    #[tokio::test]
    async fn a_missing_kubeconfig_is_a_clear_error() {
        let err = Cluster::connect(Some(Path::new("/nonexistent/kubeconfig")))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/kubeconfig"), "{err}");
    }
}
