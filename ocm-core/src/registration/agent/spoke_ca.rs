//! The managed cluster's CA bundle for `spec.managedClusterClientConfigs[].caBundle`, taken from
//! the kubeconfig the agent reaches the managed cluster with, as upstream's agent takes it from
//! its client configuration: the current context's inline `certificate-authority-data`, else the
//! content of its `certificate-authority` file (a relative path is relative to the kubeconfig),
//! else, in a pod, the ServiceAccount's `ca.crt`.
//!
//! Upstream reads it only when external server URLs are given (there is nothing to send it
//! with otherwise); callers do the same.

use std::path::{Path, PathBuf};

use base64::Engine;
use kube::config::Kubeconfig;

use super::kubeconfig::current_cluster;

/// The CA file of the in-cluster configuration.
pub const IN_CLUSTER_CA_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";

/// Reading the managed cluster's CA bundle failed.
#[derive(Debug, thiserror::Error)]
pub enum SpokeCaError {
    /// The kubeconfig could not be read.
    #[error("reading the managed cluster's kubeconfig {path}: {message}")]
    ReadKubeconfig {
        /// The file (`<inferred>` for KUBECONFIG / ~/.kube/config).
        path: String,
        /// Why.
        message: String,
    },
    /// The inline `certificate-authority-data` is not base64.
    #[error("decoding certificate-authority-data of cluster {cluster}: {source}")]
    DecodeCaData {
        /// The cluster entry's name.
        cluster: String,
        /// Why.
        source: base64::DecodeError,
    },
    /// The `certificate-authority` file could not be read.
    #[error("reading the managed cluster's CA file {path}: {source}")]
    ReadCaFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The CA bundle of `kubeconfig`'s current cluster: the decoded `certificate-authority-data`,
/// else the content of the `certificate-authority` file; `None` when it names neither (or has no
/// current context).
///
/// # Errors
/// The data is not base64, or the file cannot be read.
pub fn from_kubeconfig(kubeconfig: &Kubeconfig) -> Result<Option<Vec<u8>>, SpokeCaError> {
    let Some((name, cluster)) = current_cluster(kubeconfig) else {
        return Ok(None);
    };
    if let Some(data) = cluster
        .certificate_authority_data
        .as_deref()
        .filter(|d| !d.is_empty())
    {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|source| SpokeCaError::DecodeCaData {
                cluster: name,
                source,
            })?;
        return Ok(Some(decoded));
    }
    match cluster.certificate_authority.as_deref().filter(|p| !p.is_empty()) {
        Some(path) => read_file(Path::new(path)).map(Some),
        None => Ok(None),
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, SpokeCaError> {
    std::fs::read(path).map_err(|source| SpokeCaError::ReadCaFile {
        path: path.to_path_buf(),
        source,
    })
}

/// The CA bundle of the managed cluster reached with the kubeconfig at `path`, or, when `None`,
/// with the one the client infers (`KUBECONFIG`, `~/.kube/config`, else the in-cluster
/// ServiceAccount's CA file).
///
/// # Errors
/// The kubeconfig or its CA cannot be read.
pub fn from_kubeconfig_file(path: Option<&Path>) -> Result<Option<Vec<u8>>, SpokeCaError> {
    let kubeconfig = match path {
        Some(path) => Kubeconfig::read_from(path).map_err(|e| SpokeCaError::ReadKubeconfig {
            path: path.display().to_string(),
            message: e.to_string(),
        })?,
        None => match Kubeconfig::read() {
            Ok(kubeconfig) => kubeconfig,
            // No kubeconfig: the client runs in a pod.
            Err(_) if Path::new(IN_CLUSTER_CA_FILE).is_file() => {
                return read_file(Path::new(IN_CLUSTER_CA_FILE)).map(Some);
            }
            Err(e) => {
                return Err(SpokeCaError::ReadKubeconfig {
                    path: "<inferred>".into(),
                    message: e.to_string(),
                });
            }
        },
    };
    from_kubeconfig(&kubeconfig)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    fn kubeconfig(cluster: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: spoke\n  cluster:\n    server: https://spoke:6443\n{cluster}contexts:\n- name: admin\n  context:\n    cluster: spoke\n    user: admin\ncurrent-context: admin\nusers:\n- name: admin\n  user:\n    token: x\n"
        )
    }

    #[test]
    fn inline_certificate_authority_data_is_decoded() {
        let data = base64::engine::general_purpose::STANDARD.encode(PEM);
        let kc =
            Kubeconfig::from_yaml(&kubeconfig(&format!("    certificate-authority-data: {data}\n"))).unwrap();
        assert_eq!(from_kubeconfig(&kc).unwrap().as_deref(), Some(PEM.as_bytes()));
    }

    #[test]
    fn a_certificate_authority_file_is_read_relative_to_the_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pki")).unwrap();
        std::fs::write(dir.path().join("pki/ca.crt"), PEM).unwrap();
        let path = dir.path().join("admin.kubeconfig");
        std::fs::write(&path, kubeconfig("    certificate-authority: pki/ca.crt\n")).unwrap();
        assert_eq!(
            from_kubeconfig_file(Some(&path)).unwrap().as_deref(),
            Some(PEM.as_bytes())
        );
        // Inline data wins over the file.
        let data = base64::engine::general_purpose::STANDARD.encode("inline");
        std::fs::write(
            &path,
            kubeconfig(&format!(
                "    certificate-authority: pki/ca.crt\n    certificate-authority-data: {data}\n"
            )),
        )
        .unwrap();
        assert_eq!(
            from_kubeconfig_file(Some(&path)).unwrap().as_deref(),
            Some(&b"inline"[..])
        );
    }

    #[test]
    fn no_ca_is_none_and_a_missing_file_an_error() {
        let kc = Kubeconfig::from_yaml(&kubeconfig("    insecure-skip-tls-verify: true\n")).unwrap();
        assert_eq!(from_kubeconfig(&kc).unwrap(), None);
        let kc =
            Kubeconfig::from_yaml(&kubeconfig("    certificate-authority: /nonexistent/ca.crt\n")).unwrap();
        assert!(matches!(
            from_kubeconfig(&kc),
            Err(SpokeCaError::ReadCaFile { .. })
        ));
        assert!(matches!(
            from_kubeconfig_file(Some(Path::new("/nonexistent/kubeconfig"))),
            Err(SpokeCaError::ReadKubeconfig { .. })
        ));
    }
}
