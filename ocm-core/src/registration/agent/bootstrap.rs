//! Bootstrap (ocm-core.md §1.4–1.6): with the bootstrap kubeconfig, create the ManagedCluster and
//! a CSR, wait for the certificate, write `hub-kubeconfig-secret` and its files.

use std::{collections::BTreeMap, path::Path};

use futures::StreamExt;
use k8s_openapi::{
    ByteString,
    api::{certificates::v1::CertificateSigningRequest, core::v1::Secret},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::runtime::watcher;
use kube::{Api, api::PostParams};
use ocm_api::{
    cluster::v1::{ClientConfig, ManagedCluster, ManagedClusterSpec},
    names::secrets,
};
use rand::Rng;

use super::{Agent, AgentError, AgentOptions, CLUSTER_ANNOTATION_PREFIX, csr, kubeconfig};

/// The cluster and agent names: options, else the files of the hub-kubeconfig directory, else
/// random (a UUID-shaped name for the cluster, five lowercase alphanumerics for the agent).
pub(crate) fn resolve_names(options: &AgentOptions) -> (String, String) {
    let from_file = |key: &str| {
        std::fs::read_to_string(options.hub_kubeconfig_dir.join(key))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let cluster = options
        .cluster_name
        .clone()
        .or_else(|| from_file(secrets::keys::CLUSTER_NAME))
        .unwrap_or_else(random_uuid);
    let agent = options
        .agent_name
        .clone()
        .or_else(|| from_file(secrets::keys::AGENT_NAME))
        .unwrap_or_else(|| random_alphanumerics(5));
    (cluster, agent)
}

fn random_alphanumerics(n: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..n)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
        .collect()
}

fn random_uuid() -> String {
    let b: [u8; 16] = rand::random();
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// A client from the kubeconfig of the hub-kubeconfig directory `dir` (certificate paths relative
/// to it).
pub(crate) async fn client_from_dir(dir: &Path) -> Result<kube::Client, AgentError> {
    client_from_kubeconfig(kubeconfig::read_hub_kubeconfig(dir)?).await
}

async fn client_from_kubeconfig(kc: kube::config::Kubeconfig) -> Result<kube::Client, AgentError> {
    let config = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| AgentError::BuildHubClient(e.to_string()))?;
    ocm_addon_framework::client::client_for(config).map_err(|e| AgentError::BuildHubClient(e.to_string()))
}

/// Copies every key of the hub-kubeconfig secret into a file of the directory (0600, only when
/// the content differs). A missing secret copies nothing.
pub(crate) async fn sync_files_from_secret(
    spoke: &kube::Client,
    options: &AgentOptions,
) -> Result<(), AgentError> {
    let api: Api<Secret> = Api::namespaced(spoke.clone(), &options.component_namespace);
    let secret = api
        .get_opt(&options.hub_kubeconfig_secret)
        .await
        .map_err(|source| AgentError::WriteSecret {
            namespace: options.component_namespace.clone(),
            name: options.hub_kubeconfig_secret.clone(),
            source,
        })?;
    if let Some(data) = secret.and_then(|s| s.data) {
        write_files(&options.hub_kubeconfig_dir, &data)?;
    }
    Ok(())
}

/// Writes each entry as a file of `dir` (0600) unless the file already holds it.
pub(crate) fn write_files(dir: &Path, data: &BTreeMap<String, ByteString>) -> Result<(), AgentError> {
    let werr = |path: &Path, source| AgentError::WriteFile {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|e| werr(dir, e))?;
    for (key, value) in data {
        let path = dir.join(key);
        if std::fs::read(&path).is_ok_and(|old| old == value.0) {
            continue;
        }
        std::fs::write(&path, &value.0).map_err(|e| werr(&path, e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| werr(&path, e))?;
        }
    }
    Ok(())
}

/// The ManagedCluster the agent creates: annotations with the agent prefix and one client config
/// per external server URL with the spoke's CA.
pub(crate) fn desired_cluster(agent: &Agent, existing: Option<&ManagedCluster>) -> ManagedCluster {
    let mut cluster = existing.cloned().unwrap_or_else(|| {
        let annotations: BTreeMap<String, String> = agent
            .options
            .cluster_annotations
            .iter()
            .filter(|(k, _)| k.starts_with(CLUSTER_ANNOTATION_PREFIX))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        ManagedCluster {
            metadata: ObjectMeta {
                name: Some(agent.cluster.clone()),
                annotations: (!annotations.is_empty()).then_some(annotations),
                ..Default::default()
            },
            // Written out as upstream's agent does (the field is not optional there).
            spec: ManagedClusterSpec {
                hub_accepts_client: Some(false),
                ..ManagedClusterSpec::default()
            },
            status: None,
        }
    });
    let configs = cluster
        .spec
        .managed_cluster_client_configs
        .get_or_insert_with(Vec::new);
    for url in &agent.options.external_server_urls {
        if !configs.iter().any(|c| &c.url == url) {
            configs.push(ClientConfig {
                url: url.clone(),
                ca_bundle: agent.options.spoke_ca_bundle.clone().map(ByteString),
            });
        }
    }
    if configs.is_empty() {
        cluster.spec.managed_cluster_client_configs = None;
    }
    cluster
}

/// Creates the ManagedCluster if missing; updates it only when the number of client configs
/// changed. Unauthorized and Forbidden are ignored (bootstrap credentials may have expired).
pub(crate) async fn ensure_cluster(agent: &Agent, hub: &kube::Client) -> Result<(), AgentError> {
    let api: Api<ManagedCluster> = Api::all(hub.clone());
    let err = |source| AgentError::EnsureCluster {
        name: agent.cluster.clone(),
        source,
    };
    let forbidden = |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 401 || s.code == 403);
    let existing = match api.get_opt(&agent.cluster).await {
        Ok(c) => c,
        Err(e) if forbidden(&e) => return Ok(()),
        Err(e) => return Err(err(e)),
    };
    let desired = desired_cluster(agent, existing.as_ref());
    match existing {
        None => match api.create(&PostParams::default(), &desired).await {
            Ok(_) => {
                tracing::info!(cluster = %agent.cluster, "ManagedClusterCreated");
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(e) if forbidden(&e) => Ok(()),
            Err(e) => Err(err(e)),
        },
        Some(old) => {
            let count =
                |c: &ManagedCluster| c.spec.managed_cluster_client_configs.as_ref().map_or(0, Vec::len);
            if count(&old) == count(&desired) {
                return Ok(());
            }
            match api
                .replace(&agent.cluster, &PostParams::default(), &desired)
                .await
            {
                Ok(_) => Ok(()),
                Err(e) if forbidden(&e) => Ok(()),
                Err(e) => Err(err(e)),
            }
        }
    }
}

/// Writes the hub-kubeconfig secret (create or update) with the issued certificate and key, the
/// hub kubeconfig and the names, then its files.
pub(crate) async fn save_credentials(
    agent: &Agent,
    cert_pem: Vec<u8>,
    key_pem: String,
) -> Result<(), AgentError> {
    let options = &agent.options;
    let data = BTreeMap::from([
        (
            secrets::keys::KUBECONFIG.to_string(),
            ByteString(kubeconfig::hub_kubeconfig(&agent.bootstrap)?.into_bytes()),
        ),
        (secrets::keys::TLS_CERT.to_string(), ByteString(cert_pem)),
        (
            secrets::keys::TLS_KEY.to_string(),
            ByteString(key_pem.into_bytes()),
        ),
        (
            secrets::keys::CLUSTER_NAME.to_string(),
            ByteString(agent.cluster.clone().into_bytes()),
        ),
        (
            secrets::keys::AGENT_NAME.to_string(),
            ByteString(agent.agent.clone().into_bytes()),
        ),
    ]);
    let api: Api<Secret> = Api::namespaced(agent.spoke.clone(), &options.component_namespace);
    let err = |source| AgentError::WriteSecret {
        namespace: options.component_namespace.clone(),
        name: options.hub_kubeconfig_secret.clone(),
        source,
    };
    match api.get_opt(&options.hub_kubeconfig_secret).await.map_err(err)? {
        Some(mut secret) => {
            secret.data = Some(data.clone());
            api.replace(&options.hub_kubeconfig_secret, &PostParams::default(), &secret)
                .await
                .map_err(err)?;
        }
        None => {
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(options.hub_kubeconfig_secret.clone()),
                    namespace: Some(options.component_namespace.clone()),
                    ..Default::default()
                },
                data: Some(data.clone()),
                ..Default::default()
            };
            api.create(&PostParams::default(), &secret).await.map_err(err)?;
        }
    }
    tracing::info!(cluster = %agent.cluster, secret = %options.hub_kubeconfig_secret, "SecretSave");
    write_files(&options.hub_kubeconfig_dir, &data)
}

/// One CSR round: create a CSR (unless throttled) and wait for its certificate; returns the
/// certificate and key once issued and matching, `None` when throttled or denied.
pub(crate) async fn request_certificate(
    agent: &Agent,
    hub: &kube::Client,
) -> Result<Option<(Vec<u8>, String)>, AgentError> {
    let csrs: Api<CertificateSigningRequest> = Api::all(hub.clone());
    if csr::cluster_csr_count(&csrs, &agent.cluster).await? >= csr::MAX_CSRS {
        tracing::warn!(
            cluster = %agent.cluster,
            "ClientCertificateCreationHalted: Stop creating csr since there are too many csr created already on hub"
        );
        return Ok(None);
    }
    let (name, kr) = csr::create_cluster_csr(
        &csrs,
        &agent.cluster,
        &agent.agent,
        agent.options.client_cert_expiration_seconds,
    )
    .await?;
    tracing::info!(cluster = %agent.cluster, csr = %name, "CSRCreated");
    // Watch the CSR (as upstream's agent does with its CSR informer) instead of polling it: the
    // certificate is picked up as soon as it is issued, and a waiting agent costs the hub nothing.
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(watcher::watcher(csrs, config));
    let mut listed = false;
    while let Some(event) = events.next().await {
        let current = match event {
            Ok(watcher::Event::Apply(c) | watcher::Event::InitApply(c)) => {
                listed = true;
                c
            }
            // The CSR is gone (cleaned up on the hub): start over.
            Ok(watcher::Event::Delete(_)) => return Ok(None),
            Ok(watcher::Event::Init) => {
                listed = false;
                continue;
            }
            Ok(watcher::Event::InitDone) if !listed => return Ok(None),
            Ok(watcher::Event::InitDone) => continue,
            Err(source) => return Err(AgentError::WatchCsr { name, source }),
        };
        let denied = current
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Denied" || c.type_ == "Failed"));
        if denied {
            tracing::warn!(csr = %name, "CSR denied");
            return Ok(None);
        }
        if let Some(cert) = csr::issued_certificate(&current) {
            if csr::certificate_matches_key(&cert, &kr.key) {
                return Ok(Some((cert, csr::key_pem(&kr.key)?)));
            }
            tracing::warn!(csr = %name, "issued certificate does not match the request's key");
            return Ok(None);
        }
    }
    Ok(None)
}

/// Bootstraps: with the bootstrap kubeconfig, ensure the ManagedCluster and get a certificate
/// until the hub kubeconfig files are valid.
pub(crate) async fn bootstrap(agent: &Agent) -> Result<(), AgentError> {
    let hub = client_from_kubeconfig(agent.bootstrap.clone()).await?;
    loop {
        // A hub that cannot be reached (or a wrong bootstrap kubeconfig) is retried, not fatal.
        if let Err(e) = ensure_cluster(agent, &hub).await {
            tracing::warn!(cluster = %agent.cluster, error = %e, "ensuring the ManagedCluster failed");
            tokio::time::sleep(agent.options.poll_period).await;
            continue;
        }
        match request_certificate(agent, &hub).await {
            Ok(Some((cert, key))) => {
                save_credentials(agent, cert, key).await?;
                if agent.hub_kubeconfig_valid() {
                    tracing::info!(cluster = %agent.cluster, "HubClientConfigReady");
                    return Ok(());
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(cluster = %agent.cluster, error = %e, "bootstrap round failed"),
        }
        tokio::time::sleep(agent.options.poll_period).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_options_then_files_then_random() {
        let dir = tempfile::tempdir().unwrap();
        let mut options = AgentOptions::new(dir.path().join("b"), dir.path().to_path_buf());
        let (cluster, agent) = resolve_names(&options);
        assert_eq!(cluster.len(), 36);
        assert_eq!(agent.len(), 5);
        assert!(
            agent
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
        std::fs::write(dir.path().join("cluster-name"), "c-file\n").unwrap();
        std::fs::write(dir.path().join("agent-name"), "a-file").unwrap();
        assert_eq!(
            resolve_names(&options),
            ("c-file".to_string(), "a-file".to_string())
        );
        options.cluster_name = Some("c-opt".into());
        options.agent_name = Some("a-opt".into());
        assert_eq!(
            resolve_names(&options),
            ("c-opt".to_string(), "a-opt".to_string())
        );
    }

    #[test]
    fn files_are_written_private_and_only_when_changed() {
        let dir = tempfile::tempdir().unwrap();
        let data = BTreeMap::from([("tls.crt".to_string(), ByteString(b"x".to_vec()))]);
        write_files(dir.path(), &data).unwrap();
        let path = dir.path().join("tls.crt");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        let before = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        write_files(dir.path(), &data).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), before);
    }
}
