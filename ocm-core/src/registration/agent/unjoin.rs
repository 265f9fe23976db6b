//! Unjoin: removing from the managed cluster what the registration agent wrote there.
//!
//! The agent writes three kinds of things on the managed cluster: the secret
//! `hub-kubeconfig-secret` in its component namespace, the files of the hub-kubeconfig directory
//! (copies of that secret's keys), and one secret per add-on registration in the add-on's install
//! namespace (labelled with the cluster and add-on names). [`unjoin()`] deletes all of them and
//! nothing else. Like upstream's agent it never deletes the ManagedCluster on the hub (that is the
//! hub administrator's `kubectl delete managedcluster <c>`), nor namespaces, which the klusterlet's
//! installer owns.

use std::path::PathBuf;

use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams};
use ocm_api::names::{labels, secrets};

use super::{AgentError, AgentOptions};

/// The keys of `hub-kubeconfig-secret` the agent copies into the hub-kubeconfig directory.
const HUB_KUBECONFIG_FILES: [&str; 5] = [
    secrets::keys::KUBECONFIG,
    secrets::keys::TLS_CERT,
    secrets::keys::TLS_KEY,
    secrets::keys::CLUSTER_NAME,
    secrets::keys::AGENT_NAME,
];

/// What [`unjoin()`] removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Unjoined {
    /// The cluster whose credentials were removed, when its name was known.
    pub cluster: Option<String>,
    /// The secrets deleted, as `namespace/name`.
    pub secrets: Vec<String>,
    /// The files deleted from the hub-kubeconfig directory.
    pub files: Vec<PathBuf>,
}

/// Removes the hub credentials and add-on secrets the agent wrote on the managed cluster, and the
/// files of its hub-kubeconfig directory. Safe to repeat: what is already gone is skipped.
///
/// The cluster's name comes from [`AgentOptions::cluster_name`], else the `cluster-name` file of
/// the hub-kubeconfig directory, else the `cluster-name` key of the hub-kubeconfig secret; when
/// none is known, the add-on secrets cannot be told apart and are left alone.
///
/// # Errors
/// [`AgentError::WriteSecret`] when reading or deleting a secret fails,
/// [`AgentError::ListAddonSecrets`] when listing the add-on secrets fails,
/// [`AgentError::RemoveFile`] when a file cannot be removed.
pub async fn unjoin(spoke: kube::Client, options: &AgentOptions) -> Result<Unjoined, AgentError> {
    let mut unjoined = Unjoined::default();
    let hub_secrets: Api<Secret> = Api::namespaced(spoke.clone(), &options.component_namespace);
    let secret_error = |source| AgentError::WriteSecret {
        namespace: options.component_namespace.clone(),
        name: options.hub_kubeconfig_secret.clone(),
        source,
    };
    let hub_secret = hub_secrets
        .get_opt(&options.hub_kubeconfig_secret)
        .await
        .map_err(secret_error)?;
    unjoined.cluster = options
        .cluster_name
        .clone()
        .or_else(|| {
            std::fs::read_to_string(options.hub_kubeconfig_dir.join(secrets::keys::CLUSTER_NAME))
                .ok()
                .map(|name| name.trim().to_string())
                .filter(|name| !name.is_empty())
        })
        .or_else(|| {
            hub_secret
                .as_ref()
                .and_then(|secret| secret.data.as_ref())
                .and_then(|data| data.get(secrets::keys::CLUSTER_NAME))
                .and_then(|value| String::from_utf8(value.0.clone()).ok())
                .filter(|name| !name.is_empty())
        });

    if let Some(cluster) = &unjoined.cluster {
        let selector = format!("{}={cluster},{}", labels::CLUSTER_NAME, labels::ADDON_NAME);
        let all: Api<Secret> = Api::all(spoke.clone());
        let addon_secrets = all
            .list_metadata(&ListParams::default().labels(&selector))
            .await
            .map_err(AgentError::ListAddonSecrets)?;
        for secret in addon_secrets {
            let namespace = secret.namespace().unwrap_or_default();
            let name = secret.name_any();
            let api: Api<Secret> = Api::namespaced(spoke.clone(), &namespace);
            if delete_secret(&api, &namespace, &name).await? {
                unjoined.secrets.push(format!("{namespace}/{name}"));
            }
        }
    }

    if hub_secret.is_some()
        && delete_secret(
            &hub_secrets,
            &options.component_namespace,
            &options.hub_kubeconfig_secret,
        )
        .await?
    {
        unjoined.secrets.push(format!(
            "{}/{}",
            options.component_namespace, options.hub_kubeconfig_secret
        ));
    }

    for key in HUB_KUBECONFIG_FILES {
        let path = options.hub_kubeconfig_dir.join(key);
        match std::fs::remove_file(&path) {
            Ok(()) => unjoined.files.push(path),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(AgentError::RemoveFile { path, source }),
        }
    }
    tracing::info!(
        cluster = unjoined.cluster.as_deref().unwrap_or("<unknown>"),
        secrets = unjoined.secrets.len(),
        files = unjoined.files.len(),
        "unjoined"
    );
    Ok(unjoined)
}

/// Deletes one secret; tells whether it existed.
async fn delete_secret(api: &Api<Secret>, namespace: &str, name: &str) -> Result<bool, AgentError> {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(source) => Err(AgentError::WriteSecret {
            namespace: namespace.to_string(),
            name: name.to_string(),
            source,
        }),
    }
}
