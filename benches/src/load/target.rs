//! The server under test: a fresh embedded control plane, or the server a kubeconfig names.
//!
//! The embedded server runs on a runtime of its own (its own worker threads), so that the
//! harness's clients and the server are scheduled like two processes sharing the machine.
//! Only servers on loopback addresses are accepted.

use std::net::IpAddr;
use std::path::Path;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use ocm_controlplane::{ControlPlane, ControlPlaneHandle};

use super::LoadError;

/// A server to load, with what the clients need to reach it.
pub struct Target {
    /// What the report calls it.
    pub description: String,
    /// `https://host:port`.
    pub url: String,
    /// Client configuration (admin credentials).
    pub config: Config,
    /// Whether the harness started the server (then nothing needs cleaning up afterwards).
    pub embedded: bool,
    // Declared before the directory: the server stops before its data directory is removed.
    handle: Option<ControlPlaneHandle>,
    dir: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("description", &self.description)
            .field("url", &self.url)
            .finish()
    }
}

/// Whether a URL host (a name, an IPv4 address or a bracketed IPv6 address) is a loopback address.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Target {
    /// Starts a fresh embedded control plane on the `server` runtime: in memory, or persisting in a
    /// new temporary directory under `data_dir`.
    pub async fn embedded(
        server: &tokio::runtime::Handle,
        data_dir: Option<&Path>,
    ) -> Result<Self, LoadError> {
        let dir = match data_dir {
            Some(parent) => {
                let prepare = |source| LoadError::PrepareDataDir {
                    path: parent.display().to_string(),
                    source,
                };
                std::fs::create_dir_all(parent).map_err(prepare)?;
                Some(
                    tempfile::Builder::new()
                        .prefix("apiserver-load-")
                        .tempdir_in(parent)
                        .map_err(prepare)?,
                )
            }
            None => None,
        };
        let mut builder = ControlPlane::builder();
        if let Some(dir) = &dir {
            builder = builder.data_dir(dir.path());
        }
        let handle = server
            .spawn(async move { builder.start().await })
            .await
            .map_err(|e| LoadError::StartServer(e.to_string()))?
            .map_err(|e| LoadError::StartServer(e.to_string()))?;
        let kubeconfig =
            Kubeconfig::from_yaml(handle.admin_kubeconfig()).map_err(|e| LoadError::ReadKubeconfig {
                path: "of the embedded server".into(),
                message: e.to_string(),
            })?;
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| LoadError::ReadKubeconfig {
                path: "of the embedded server".into(),
                message: e.to_string(),
            })?;
        let persistence = match &dir {
            Some(d) => format!("redb in {}", d.path().display()),
            None => "in memory".into(),
        };
        Ok(Self {
            description: format!("embedded ocm-controlplane ({persistence})"),
            url: handle.url().to_string(),
            config,
            embedded: true,
            handle: Some(handle),
            dir,
        })
    }

    /// The server `path` names (its current context, or `context`); refuses non-loopback servers.
    pub async fn from_kubeconfig(path: &Path, context: Option<&str>) -> Result<Self, LoadError> {
        let read_err = |message: String| LoadError::ReadKubeconfig {
            path: path.display().to_string(),
            message,
        };
        let kubeconfig = Kubeconfig::read_from(path).map_err(|e| read_err(e.to_string()))?;
        let options = KubeConfigOptions {
            context: context.map(str::to_string),
            ..KubeConfigOptions::default()
        };
        let config = Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| read_err(e.to_string()))?;
        let url = config.cluster_url.to_string();
        let host = config.cluster_url.host().unwrap_or_default();
        if !is_loopback_host(host) {
            return Err(LoadError::NotLoopback { url });
        }
        Ok(Self {
            description: format!("server of {}", path.display()),
            url: url.trim_end_matches('/').to_string(),
            config,
            embedded: false,
            handle: None,
            dir: None,
        })
    }

    /// `n` independent kube clients (each with its own connection pool).
    pub fn clients(&self, n: usize) -> Result<Vec<Client>, LoadError> {
        (0..n.max(1))
            .map(|_| Client::try_from(self.config.clone()).map_err(|e| LoadError::BuildClient(e.to_string())))
            .collect()
    }

    /// The embedded control plane, when the harness started one.
    pub fn control_plane(&self) -> Option<&ControlPlaneHandle> {
        self.handle.as_ref()
    }

    /// Whether this target is an embedded server that was started with a data directory.
    pub fn persistent(&self) -> bool {
        self.dir.is_some()
    }
}

/// Creates namespace `name` (an existing one is fine).
pub async fn create_namespace(client: &Client, name: &str) -> Result<(), LoadError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.to_string());
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(LoadError::Prepare {
            what: format!("creating namespace {name}"),
            message: e.to_string(),
        }),
    }
}

/// Deletes every ConfigMap of namespace `name`, then the namespace.
pub async fn delete_namespace(client: &Client, name: &str) -> Result<(), LoadError> {
    let prepare = |message: String| LoadError::Prepare {
        what: format!("deleting namespace {name}"),
        message,
    };
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), name);
    match cms
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
    {
        // kube-apiserver pages through a large collection itself, and its continue token can
        // expire under compaction (410): the namespace's deletion removes what is left.
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 410 => {}
        Err(e) => return Err(prepare(e.to_string())),
    }
    let api: Api<Namespace> = Api::all(client.clone());
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(prepare(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised() {
        for host in ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LocalHost"] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "10.0.0.1",
            "0.0.0.0",
            "example.com",
            "[2001:db8::1]",
            "",
            "localhost.example",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
