//! The work agent beside the registration agent: it uses the hub credentials the registration
//! agent obtained.
//!
//! The work agent waits until the hub-kubeconfig directory holds a kubeconfig, a client
//! certificate and key and the cluster's name (written by the registration agent once the CSR
//! is approved), then runs [`ocm_core::work::agent`] with a hub client from those files. When the
//! registration agent rotates the certificate (or bootstraps again) the files change: the work
//! agent is restarted with a client of the new credentials — what upstream's agent pod does when
//! its mounted secret changes. A failed agent is restarted after a delay.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::metrics::ControllerMetrics;
use crate::registration::agent::kubeconfig::read_hub_kubeconfig;
use crate::work::agent::{self as work_agent, WorkAgentOptions};
use ocm_api::names::secrets;

/// How often the hub-kubeconfig directory is read while waiting and for rotations.
const CREDENTIALS_CHECK_PERIOD: Duration = Duration::from_secs(2);
/// How long a failed work agent waits before it runs again.
const RESTART_DELAY: Duration = Duration::from_secs(5);

/// The hub credentials the registration agent left in the hub-kubeconfig directory.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HubCredentials {
    /// The cluster's name.
    cluster: String,
    /// The client certificate (PEM), compared to notice rotations.
    certificate: Vec<u8>,
    /// The kubeconfig file's content.
    kubeconfig: Vec<u8>,
}

impl HubCredentials {
    /// The credentials in `dir`, when every file is there.
    fn read(dir: &Path) -> Option<Self> {
        let read = |name: &str| std::fs::read(dir.join(name)).ok().filter(|b| !b.is_empty());
        read(secrets::keys::TLS_KEY)?;
        let cluster = String::from_utf8(read(secrets::keys::CLUSTER_NAME)?).ok()?;
        Some(Self {
            cluster: cluster.trim().to_string(),
            certificate: read(secrets::keys::TLS_CERT)?,
            kubeconfig: read(secrets::keys::KUBECONFIG)?,
        })
    }
}

/// A hub client from the directory's kubeconfig, and the hub's server URL (whose hash names the
/// AppliedManifestWorks).
async fn hub_client(dir: &Path) -> Result<(kube::Client, String), String> {
    let kubeconfig = read_hub_kubeconfig(dir).map_err(|e| e.to_string())?;
    // The server string as written in the kubeconfig: what upstream hashes (`rest.Config.Host`).
    let server = current_server(&kubeconfig).ok_or("the hub kubeconfig names no server")?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| e.to_string())?;
    let client = ocm_addon_framework::client::client_for(config).map_err(|e| e.to_string())?;
    Ok((client, server))
}

/// The `server` of the kubeconfig's current context's cluster.
fn current_server(kubeconfig: &kube::config::Kubeconfig) -> Option<String> {
    let context = kubeconfig.current_context.as_deref()?;
    let cluster = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context)?
        .context
        .as_ref()?
        .cluster
        .clone();
    kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == cluster)?
        .cluster
        .as_ref()?
        .server
        .clone()
}

/// Runs the work agent with the credentials of `hub_kubeconfig_dir` until the process stops:
/// waiting for them, restarting on rotation and after failures. `options.cluster_name` is
/// replaced by the directory's `cluster-name`.
pub async fn run_work_agent(
    spoke: kube::Client,
    hub_kubeconfig_dir: PathBuf,
    options: WorkAgentOptions,
    metrics: ControllerMetrics,
) {
    let mut waiting_logged = false;
    loop {
        let Some(credentials) = HubCredentials::read(&hub_kubeconfig_dir) else {
            if !waiting_logged {
                tracing::info!(dir = %hub_kubeconfig_dir.display(), "the work agent waits for the hub credentials");
                waiting_logged = true;
            }
            tokio::time::sleep(CREDENTIALS_CHECK_PERIOD).await;
            continue;
        };
        waiting_logged = false;
        let (hub, server) = match hub_client(&hub_kubeconfig_dir).await {
            Ok(client) => client,
            Err(error) => {
                tracing::warn!(%error, "building the work agent's hub client failed; retrying");
                tokio::time::sleep(RESTART_DELAY).await;
                continue;
            }
        };
        let options = WorkAgentOptions {
            cluster_name: credentials.cluster.clone(),
            ..options.clone()
        };
        tracing::info!(cluster = %options.cluster_name, hub = %server, "work agent starting");
        let agent = work_agent::run_with_metrics(hub, &server, spoke.clone(), options, metrics.clone());
        tokio::select! {
            result = agent => {
                match result {
                    Ok(()) => tracing::info!("the work agent stopped; starting it again"),
                    Err(error) => tracing::warn!(%error, delay = ?RESTART_DELAY, "the work agent failed; restarting it"),
                }
                tokio::time::sleep(RESTART_DELAY).await;
            }
            () = changed(&hub_kubeconfig_dir, &credentials) => {
                tracing::info!("the hub credentials changed; restarting the work agent with the new ones");
            }
        }
    }
}

/// Returns once the credentials in `dir` differ from `current`.
async fn changed(dir: &Path, current: &HubCredentials) {
    loop {
        tokio::time::sleep(CREDENTIALS_CHECK_PERIOD).await;
        if HubCredentials::read(dir).as_ref() != Some(current) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_need_every_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(HubCredentials::read(dir.path()), None);
        for (name, text) in [
            (secrets::keys::TLS_KEY, "key"),
            (secrets::keys::TLS_CERT, "cert"),
            (secrets::keys::KUBECONFIG, "kc"),
        ] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        assert_eq!(HubCredentials::read(dir.path()), None);
        std::fs::write(dir.path().join(secrets::keys::CLUSTER_NAME), "cluster1\n").unwrap();
        let read = HubCredentials::read(dir.path()).unwrap();
        assert_eq!(read.cluster, "cluster1");
        std::fs::write(dir.path().join(secrets::keys::TLS_CERT), "rotated").unwrap();
        assert_ne!(HubCredentials::read(dir.path()), Some(read));
    }
}
