//! The add-on agent's hub credentials (addon-framework.md §3.1): the klusterlet's
//! registration agent writes the secret `<addon>-hub-kubeconfig` (keys `kubeconfig`,
//! `tls.crt`, `tls.key`, `cluster-name`) into the install namespace; the agent mounts it as a
//! directory and reads `kubeconfig`, which names the certificate and key as files relative to
//! it. The registration agent rotates the certificate before it expires, so
//! [`HubKubeconfigWatcher`] polls the files and hands out a new [`kube::Client`] when they
//! change (upstream restarts the pod instead, through a config checker).

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The secret key (and mounted file) holding the cluster's name.
pub const CLUSTER_NAME_FILE: &str = "cluster-name";
/// The secret key (and mounted file) holding the kubeconfig.
pub const KUBECONFIG_FILE: &str = "kubeconfig";
/// How often [`HubKubeconfigWatcher`] looks at the files by default.
pub const DEFAULT_POLL_PERIOD: Duration = Duration::from_secs(10);

/// Errors of loading the hub kubeconfig.
#[derive(Debug, thiserror::Error)]
pub enum HubKubeconfigError {
    /// Reading or parsing the kubeconfig file failed.
    #[error("read the hub kubeconfig {}: {source}", path.display())]
    ReadKubeconfig {
        /// The file.
        path: PathBuf,
        /// What kube said.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig does not make a client configuration.
    #[error("load the hub kubeconfig {}: {source}", path.display())]
    LoadKubeconfig {
        /// The file.
        path: PathBuf,
        /// What kube said.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// Building the client failed (bad certificate or key, …).
    #[error("build a hub client from {}: {source}", path.display())]
    BuildClient {
        /// The file.
        path: PathBuf,
        /// What kube said.
        #[source]
        source: crate::client::ClientError,
    },
    /// No cluster name was given and the `cluster-name` file could not be read.
    #[error("read the cluster name from {}: {source}", path.display())]
    ReadClusterName {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The `cluster-name` file is empty.
    #[error("the cluster name file {} is empty", path.display())]
    EmptyClusterName {
        /// The file.
        path: PathBuf,
    },
}

/// A hub client from the kubeconfig file at `path` (relative certificate, key and token
/// files are taken relative to the kubeconfig's directory).
///
/// # Errors
///
/// [`HubKubeconfigError::ReadKubeconfig`], [`HubKubeconfigError::LoadKubeconfig`],
/// [`HubKubeconfigError::BuildClient`].
pub async fn load_client(path: &Path) -> Result<Client, HubKubeconfigError> {
    let kubeconfig = Kubeconfig::read_from(path).map_err(|source| HubKubeconfigError::ReadKubeconfig {
        path: path.to_path_buf(),
        source,
    })?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|source| HubKubeconfigError::LoadKubeconfig {
            path: path.to_path_buf(),
            source,
        })?;
    crate::client::client_for(config).map_err(|source| HubKubeconfigError::BuildClient {
        path: path.to_path_buf(),
        source,
    })
}

/// The managed cluster's name: `flag` when it is non-empty, else the trimmed content of the
/// `cluster-name` file in `secret_dir` (the mounted hub-kubeconfig secret).
///
/// # Errors
///
/// [`HubKubeconfigError::ReadClusterName`] or [`HubKubeconfigError::EmptyClusterName`] when
/// the file is needed and unusable.
pub fn cluster_name(flag: Option<&str>, secret_dir: &Path) -> Result<String, HubKubeconfigError> {
    if let Some(name) = flag.filter(|n| !n.is_empty()) {
        return Ok(name.to_string());
    }
    let path = secret_dir.join(CLUSTER_NAME_FILE);
    let text = std::fs::read_to_string(&path).map_err(|source| HubKubeconfigError::ReadClusterName {
        path: path.clone(),
        source,
    })?;
    let name = text.trim();
    if name.is_empty() {
        return Err(HubKubeconfigError::EmptyClusterName { path });
    }
    Ok(name.to_string())
}

/// The bytes of the kubeconfig and of every file it refers to (certificates, keys, token
/// files): what changes when the registration agent rotates the credentials.
fn fingerprint(path: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap_or_default();
    if let Ok(kubeconfig) = Kubeconfig::read_from(path) {
        let mut files: Vec<String> = Vec::new();
        for named in &kubeconfig.auth_infos {
            if let Some(auth) = &named.auth_info {
                files.extend(auth.client_certificate.clone());
                files.extend(auth.client_key.clone());
                files.extend(auth.token_file.clone());
            }
        }
        for named in &kubeconfig.clusters {
            if let Some(cluster) = &named.cluster {
                files.extend(cluster.certificate_authority.clone());
            }
        }
        for file in files {
            bytes.extend_from_slice(file.as_bytes());
            bytes.extend(std::fs::read(&file).unwrap_or_default());
        }
    }
    bytes
}

/// Watches the mounted hub kubeconfig and keeps a current hub [`Client`]: the files are read
/// every poll period, and when they changed and load, subscribers get the new client. A change
/// that does not load (files half written) is retried next period. Dropping the watcher stops
/// the polling.
pub struct HubKubeconfigWatcher {
    receiver: watch::Receiver<Client>,
    task: JoinHandle<()>,
}

impl HubKubeconfigWatcher {
    /// Loads the client from `path` and starts polling every `period`.
    ///
    /// # Errors
    ///
    /// The error of the first load.
    pub async fn start(path: &Path, period: Duration) -> Result<Self, HubKubeconfigError> {
        let mut seen = fingerprint(path);
        let client = load_client(path).await?;
        let (sender, receiver) = watch::channel(client);
        let path = path.to_path_buf();
        let task = tokio::spawn(async move {
            let mut ticker = tokio::time::interval(period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                let now = fingerprint(&path);
                if now == seen {
                    continue;
                }
                match load_client(&path).await {
                    Ok(client) => {
                        tracing::info!(path = %path.display(), "the hub kubeconfig changed, reloaded the hub client");
                        seen = now;
                        if sender.send(client).is_err() {
                            return;
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "reload the changed hub kubeconfig"),
                }
            }
        });
        Ok(Self { receiver, task })
    }

    /// The current hub client.
    #[must_use]
    pub fn client(&self) -> Client {
        self.receiver.borrow().clone()
    }

    /// A receiver that sees every reloaded client (`changed().await`).
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<Client> {
        self.receiver.clone()
    }
}

impl Drop for HubKubeconfigWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// Writes `tls.crt`, `tls.key` and a kubeconfig naming them relatively, as the
    /// registration agent does; the client certificate's CN is `cn`.
    fn write_secret_dir(dir: &Path, cn: &str) {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, cn);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
        std::fs::write(
            dir.join(KUBECONFIG_FILE),
            "apiVersion: v1\nkind: Config\nclusters:\n- name: hub\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\ncontexts:\n- name: default-context\n  context:\n    cluster: hub\n    user: default-auth\n    namespace: configuration\ncurrent-context: default-context\nusers:\n- name: default-auth\n  user:\n    client-certificate: tls.crt\n    client-key: tls.key\n",
        )
        .unwrap();
    }

    #[tokio::test]
    async fn a_kubeconfig_with_relative_files_loads() {
        let dir = tempfile::tempdir().unwrap();
        write_secret_dir(dir.path(), "a");
        let client = load_client(&dir.path().join(KUBECONFIG_FILE)).await.unwrap();
        assert_eq!(client.default_namespace(), "configuration");
        std::fs::remove_file(dir.path().join("tls.key")).unwrap();
        assert!(load_client(&dir.path().join(KUBECONFIG_FILE)).await.is_err());
    }

    #[test]
    fn the_cluster_name_comes_from_the_flag_or_the_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(cluster_name(Some("flag"), dir.path()).unwrap(), "flag");
        assert!(matches!(
            cluster_name(None, dir.path()),
            Err(HubKubeconfigError::ReadClusterName { .. })
        ));
        std::fs::write(dir.path().join(CLUSTER_NAME_FILE), "  \n").unwrap();
        assert!(matches!(
            cluster_name(Some(""), dir.path()),
            Err(HubKubeconfigError::EmptyClusterName { .. })
        ));
        std::fs::write(dir.path().join(CLUSTER_NAME_FILE), "cluster1\n").unwrap();
        assert_eq!(cluster_name(None, dir.path()).unwrap(), "cluster1");
    }

    #[tokio::test]
    async fn a_rotated_certificate_gives_a_new_client_and_a_broken_one_does_not() {
        let dir = tempfile::tempdir().unwrap();
        write_secret_dir(dir.path(), "first");
        let path = dir.path().join(KUBECONFIG_FILE);
        let watcher = HubKubeconfigWatcher::start(&path, Duration::from_millis(50))
            .await
            .unwrap();
        let mut changes = watcher.subscribe();
        // A half-written rotation (key missing) is not taken.
        std::fs::write(dir.path().join("tls.key"), "not a key").unwrap();
        let waited = tokio::time::timeout(Duration::from_millis(300), changes.changed()).await;
        assert!(waited.is_err(), "a broken kubeconfig must not be handed out");
        // The full rotation is.
        write_secret_dir(dir.path(), "second");
        tokio::time::timeout(Duration::from_secs(10), changes.changed())
            .await
            .unwrap()
            .unwrap();
        let _client = watcher.client();
        // Nothing changes afterwards: no further client.
        let waited = tokio::time::timeout(Duration::from_millis(300), changes.changed()).await;
        assert!(waited.is_err());
    }
}
