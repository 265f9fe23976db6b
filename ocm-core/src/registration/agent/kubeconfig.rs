//! The hub kubeconfig: building it from the bootstrap kubeconfig (ocm-core.md §1.6), reading it
//! back from the hub-kubeconfig directory, and deciding whether the one on disk is still valid
//! (§1.3).
//!
//! The kubeconfig names its certificate and key by paths relative to its directory (`tls.crt`,
//! `tls.key`), as upstream's does; [`read_hub_kubeconfig`] resolves them exactly once, against the
//! directory made absolute, so a relative `--hub-kubeconfig-dir` works from any working directory.
//!
//! It is written as YAML the way client-go's `clientcmd.Write` writes it (keys sorted, lists not
//! indented under their key, empty fields left out); the readers also accept the JSON form our
//! earlier versions wrote.

use std::path::{Path, PathBuf};

use kube::config::{AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};
use ocm_api::names::{secrets, subjects};
use x509_parser::prelude::{FromDer, X509Certificate};

use super::AgentError;

/// The cluster entry of a kubeconfig's current context, with the entry's name.
pub(crate) fn current_cluster(kc: &Kubeconfig) -> Option<(String, Cluster)> {
    let current = kc.current_context.as_deref()?;
    let ctx = kc.contexts.iter().find(|c| c.name == current)?.context.as_ref()?;
    let cluster = kc
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)?
        .cluster
        .clone()?;
    Some((ctx.cluster.clone(), cluster))
}

/// The hub kubeconfig written into the secret: the bootstrap context's cluster (server, CA, proxy)
/// under the same name, context `default-context`, user `default-auth` with relative certificate
/// paths, namespace `configuration`.
pub(crate) fn hub_kubeconfig(bootstrap: &Kubeconfig) -> Result<String, AgentError> {
    let (name, cluster) = current_cluster(bootstrap).ok_or(AgentError::BootstrapKubeconfigNoContext)?;
    let cluster = Cluster {
        server: cluster.server,
        insecure_skip_tls_verify: Some(false),
        // Absolute, since the file is read from another directory than the bootstrap kubeconfig.
        certificate_authority: cluster
            .certificate_authority
            .map(|path| absolute(Path::new(&path)).to_string_lossy().into_owned()),
        certificate_authority_data: cluster.certificate_authority_data,
        proxy_url: cluster.proxy_url,
        ..Default::default()
    };
    let kc = Kubeconfig {
        clusters: vec![NamedCluster {
            name: name.clone(),
            cluster: Some(cluster),
            other: Default::default(),
        }],
        auth_infos: vec![NamedAuthInfo {
            name: secrets::kubeconfig::USER.into(),
            auth_info: Some(AuthInfo {
                client_certificate: Some(secrets::keys::TLS_CERT.into()),
                client_key: Some(secrets::keys::TLS_KEY.into()),
                ..Default::default()
            }),
            other: Default::default(),
        }],
        contexts: vec![NamedContext {
            name: secrets::kubeconfig::CONTEXT.into(),
            context: Some(Context {
                cluster: name,
                user: Some(secrets::kubeconfig::USER.into()),
                namespace: Some(secrets::kubeconfig::NAMESPACE.into()),
                ..Default::default()
            }),
            other: Default::default(),
        }],
        current_context: Some(secrets::kubeconfig::CONTEXT.into()),
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        ..Default::default()
    };
    write_yaml(&kc)
}

/// The fields of a client-certificate kubeconfig, in the order `clientcmd.Write` puts them
/// (alphabetical; unset ones left out).
#[derive(serde::Serialize)]
struct YamlConfig<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    clusters: Vec<YamlNamedCluster<'a>>,
    contexts: Vec<YamlNamedContext<'a>>,
    #[serde(rename = "current-context")]
    current_context: &'a str,
    kind: &'a str,
    users: Vec<YamlNamedUser<'a>>,
}

#[derive(serde::Serialize)]
struct YamlNamedCluster<'a> {
    cluster: YamlCluster<'a>,
    name: &'a str,
}

#[derive(serde::Serialize)]
struct YamlCluster<'a> {
    #[serde(rename = "certificate-authority", skip_serializing_if = "Option::is_none")]
    certificate_authority: Option<&'a str>,
    #[serde(
        rename = "certificate-authority-data",
        skip_serializing_if = "Option::is_none"
    )]
    certificate_authority_data: Option<&'a str>,
    #[serde(rename = "insecure-skip-tls-verify", skip_serializing_if = "Option::is_none")]
    insecure_skip_tls_verify: Option<bool>,
    #[serde(rename = "proxy-url", skip_serializing_if = "Option::is_none")]
    proxy_url: Option<&'a str>,
    server: &'a str,
    #[serde(rename = "tls-server-name", skip_serializing_if = "Option::is_none")]
    tls_server_name: Option<&'a str>,
}

#[derive(serde::Serialize)]
struct YamlNamedContext<'a> {
    context: YamlContext<'a>,
    name: &'a str,
}

#[derive(serde::Serialize)]
struct YamlContext<'a> {
    cluster: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    user: &'a str,
}

#[derive(serde::Serialize)]
struct YamlNamedUser<'a> {
    name: &'a str,
    user: YamlUser<'a>,
}

#[derive(serde::Serialize)]
struct YamlUser<'a> {
    #[serde(rename = "client-certificate", skip_serializing_if = "Option::is_none")]
    client_certificate: Option<&'a str>,
    #[serde(rename = "client-key", skip_serializing_if = "Option::is_none")]
    client_key: Option<&'a str>,
}

/// `kc` (clusters, contexts and client-certificate users) as YAML in `clientcmd.Write`'s layout.
/// Fields this writer does not know (tokens, exec plugins, extensions) are not written.
pub(crate) fn write_yaml(kc: &Kubeconfig) -> Result<String, AgentError> {
    fn non_empty(s: &Option<String>) -> Option<&str> {
        s.as_deref().filter(|s| !s.is_empty())
    }
    let config = YamlConfig {
        api_version: kc.api_version.as_deref().unwrap_or("v1"),
        clusters: kc
            .clusters
            .iter()
            .filter_map(|named| {
                let c = named.cluster.as_ref()?;
                Some(YamlNamedCluster {
                    cluster: YamlCluster {
                        certificate_authority: non_empty(&c.certificate_authority),
                        certificate_authority_data: non_empty(&c.certificate_authority_data),
                        // Go's bool is left out when false.
                        insecure_skip_tls_verify: c.insecure_skip_tls_verify.filter(|v| *v),
                        proxy_url: non_empty(&c.proxy_url),
                        server: c.server.as_deref().unwrap_or_default(),
                        tls_server_name: non_empty(&c.tls_server_name),
                    },
                    name: &named.name,
                })
            })
            .collect(),
        contexts: kc
            .contexts
            .iter()
            .filter_map(|named| {
                let c = named.context.as_ref()?;
                Some(YamlNamedContext {
                    context: YamlContext {
                        cluster: &c.cluster,
                        namespace: non_empty(&c.namespace),
                        user: c.user.as_deref().unwrap_or_default(),
                    },
                    name: &named.name,
                })
            })
            .collect(),
        current_context: kc.current_context.as_deref().unwrap_or_default(),
        kind: kc.kind.as_deref().unwrap_or("Config"),
        users: kc
            .auth_infos
            .iter()
            .map(|named| {
                let user = named.auth_info.as_ref();
                YamlNamedUser {
                    name: &named.name,
                    user: YamlUser {
                        client_certificate: user.and_then(|u| non_empty(&u.client_certificate)),
                        client_key: user.and_then(|u| non_empty(&u.client_key)),
                    },
                }
            })
            .collect(),
    };
    // Long values (the CA data) stay plain one-line scalars, as Go's writer leaves them.
    let mut options = serde_saphyr::SerializerOptions::default();
    options.prefer_block_scalars = false;
    serde_saphyr::to_string_with_options(&config, options)
        .map_err(|e| AgentError::SerializeKubeconfig(e.to_string()))
}

/// `path` made absolute against the working directory (unchanged when that fails).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Whether two optional file paths of kubeconfigs name the same file (compared absolute).
fn same_file(a: Option<&String>, b: Option<&String>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => absolute(Path::new(a)) == absolute(Path::new(b)),
        (a, b) => a == b,
    }
}

/// Reads `<dir>/kubeconfig` with its relative file paths (certificate, key, CA) resolved against
/// `dir` made absolute: `tls.crt` becomes `/abs/dir/tls.crt`, never `dir/dir/tls.crt`.
///
/// # Errors
/// [`AgentError::BuildHubClient`] when the file cannot be read or parsed.
pub fn read_hub_kubeconfig(dir: &Path) -> Result<Kubeconfig, AgentError> {
    let path = absolute(dir).join(secrets::keys::KUBECONFIG);
    Kubeconfig::read_from(&path)
        .map_err(|e| AgentError::BuildHubClient(format!("reading {}: {e}", path.display())))
}

/// What the validity check reads from the hub-kubeconfig directory.
#[derive(Debug, Default)]
pub struct HubKubeconfigFiles {
    /// The parsed `<dir>/kubeconfig`, if it exists and loads.
    pub kubeconfig: Option<Kubeconfig>,
    /// Whether `<dir>/tls.key` exists.
    pub has_key: bool,
    /// The content of `<dir>/tls.crt`, if it exists.
    pub cert_pem: Option<Vec<u8>>,
}

impl HubKubeconfigFiles {
    /// Reads the files of `dir`; missing or unreadable files are `None`/false.
    pub fn read(dir: &Path) -> Self {
        Self {
            kubeconfig: read_hub_kubeconfig(dir).ok(),
            has_key: dir.join(secrets::keys::TLS_KEY).is_file(),
            cert_pem: std::fs::read(dir.join(secrets::keys::TLS_CERT)).ok(),
        }
    }
}

/// The certificates of a PEM bundle, as DER.
pub(crate) fn pem_certificates(pem: &[u8]) -> Vec<Vec<u8>> {
    x509_parser::pem::Pem::iter_from_buffer(pem)
        .filter_map(Result::ok)
        .filter(|p| p.label == "CERTIFICATE")
        .map(|p| p.contents)
        .collect()
}

/// When the first certificate of a PEM bundle expires (Unix seconds); `None` when none parses.
pub(crate) fn earliest_not_after(pem: &[u8]) -> Option<i64> {
    pem_certificates(pem)
        .iter()
        .filter_map(|der| X509Certificate::from_der(der).ok())
        .map(|(_, cert)| cert.validity().not_after.timestamp())
        .min()
}

/// Whether the hub kubeconfig in `files` is valid (ocm-core.md §1.3): it matches the bootstrap
/// kubeconfig's current context (server, proxy, CA path and data, cluster entry name), the key
/// exists and the certificate parses, the certificate's `<cluster>:<agent>` matches the known names
/// and no certificate of the chain is expired at `now` (Unix seconds).
pub fn hub_kubeconfig_valid(
    files: &HubKubeconfigFiles,
    bootstrap: &Kubeconfig,
    cluster: Option<&str>,
    agent: Option<&str>,
    now: i64,
) -> bool {
    let Some(hub) = &files.kubeconfig else {
        return false;
    };
    let (Some((hub_name, hub_cluster)), Some((boot_name, boot_cluster))) =
        (current_cluster(hub), current_cluster(bootstrap))
    else {
        return false;
    };
    if hub_cluster.server != boot_cluster.server
        || hub_cluster.proxy_url != boot_cluster.proxy_url
        || !same_file(
            hub_cluster.certificate_authority.as_ref(),
            boot_cluster.certificate_authority.as_ref(),
        )
        || hub_cluster.certificate_authority_data != boot_cluster.certificate_authority_data
        || hub_name != boot_name
    {
        return false;
    }
    if !files.has_key {
        return false;
    }
    let Some(pem) = &files.cert_pem else { return false };
    let ders = pem_certificates(pem);
    let mut certs = Vec::new();
    for der in &ders {
        match X509Certificate::from_der(der) {
            Ok((_, cert)) => certs.push(cert),
            Err(_) => return false,
        }
    }
    if certs.is_empty() {
        return false;
    }
    if let (Some(cluster), Some(agent)) = (cluster, agent) {
        let names = certs.iter().find_map(|c| {
            let cn = c.subject().iter_common_name().next()?.as_str().ok()?;
            let rest = cn.strip_prefix(subjects::SUBJECT_PREFIX)?;
            let parts: Vec<&str> = rest.split(':').collect();
            (parts.len() == 2).then(|| (parts[0].to_string(), parts[1].to_string()))
        });
        if let Some((c, a)) = names
            && (c != cluster || a != agent)
        {
            return false;
        }
    }
    certs.iter().all(|c| c.validity().not_after.timestamp() > now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bootstrap() -> Kubeconfig {
        Kubeconfig::from_yaml(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: hub\n  cluster:\n    server: https://hub:6443\n    certificate-authority-data: Q0E=\ncontexts:\n- name: b\n  context:\n    cluster: hub\n    user: b\ncurrent-context: b\nusers:\n- name: b\n  user:\n    token: x\n",
        )
        .unwrap()
    }

    /// 2025-06-01 and 2031-01-01 as Unix seconds; the test certificates live 2020..2030.
    const NOW: i64 = 1_748_736_000;
    const LATER: i64 = 1_924_992_000;

    fn cert(cn: &str) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, cn);
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2030, 1, 1);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem().into_bytes()
    }

    fn files(cn: &str) -> HubKubeconfigFiles {
        let kc = Kubeconfig::from_yaml(&hub_kubeconfig(&bootstrap()).unwrap()).unwrap();
        HubKubeconfigFiles {
            kubeconfig: Some(kc),
            has_key: true,
            cert_pem: Some(cert(cn)),
        }
    }

    fn now() -> i64 {
        NOW
    }

    #[test]
    fn the_first_expiry_of_a_bundle_is_found() {
        let pem = cert("system:open-cluster-management:c1:a1");
        let expiry = earliest_not_after(&pem).unwrap();
        assert!(NOW < expiry && expiry < LATER);
        assert_eq!(earliest_not_after(b"not a certificate"), None);
    }

    #[test]
    fn written_as_clientcmd_writes_it() {
        let text = hub_kubeconfig(&bootstrap()).unwrap();
        assert_eq!(
            text,
            "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: Q0E=\n    server: https://hub:6443\n  name: hub\ncontexts:\n- context:\n    cluster: hub\n    namespace: configuration\n    user: default-auth\n  name: default-context\ncurrent-context: default-context\nkind: Config\nusers:\n- name: default-auth\n  user:\n    client-certificate: tls.crt\n    client-key: tls.key\n"
        );
        let mut with_file = bootstrap();
        let cluster = with_file.clusters[0].cluster.as_mut().unwrap();
        cluster.certificate_authority_data = None;
        cluster.certificate_authority = Some("/etc/hub/ca.crt".into());
        cluster.proxy_url = Some("http://proxy:3128".into());
        let text = hub_kubeconfig(&with_file).unwrap();
        assert!(
            text.contains("- cluster:\n    certificate-authority: /etc/hub/ca.crt\n    proxy-url: http://proxy:3128\n    server: https://hub:6443\n  name: hub\n"),
            "{text}"
        );
        // A real CA stays one plain line, as Go's YAML writer leaves it.
        let mut long = bootstrap();
        let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [7u8; 1200]);
        long.clusters[0]
            .cluster
            .as_mut()
            .unwrap()
            .certificate_authority_data = Some(data.clone());
        let text = hub_kubeconfig(&long).unwrap();
        assert!(
            text.contains(&format!("\n    certificate-authority-data: {data}\n")),
            "{text}"
        );
    }

    #[test]
    fn the_yaml_kubeconfig_round_trips() {
        let text = hub_kubeconfig(&bootstrap()).unwrap();
        let kc = Kubeconfig::from_yaml(&text).unwrap();
        assert_eq!(write_yaml(&kc).unwrap(), text);
        let (name, cluster) = current_cluster(&kc).unwrap();
        assert_eq!(name, "hub");
        assert_eq!(cluster.server.as_deref(), Some("https://hub:6443"));
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("Q0E="));
    }

    #[test]
    fn the_json_kubeconfig_of_earlier_versions_is_still_read_and_valid() {
        let tmp = tempfile::tempdir().unwrap();
        let json = r#"{"apiVersion":"v1","clusters":[{"cluster":{"certificate-authority-data":"Q0E=","insecure-skip-tls-verify":false,"server":"https://hub:6443"},"name":"hub"}],"contexts":[{"context":{"cluster":"hub","namespace":"configuration","user":"default-auth"},"name":"default-context"}],"current-context":"default-context","kind":"Config","users":[{"name":"default-auth","user":{"client-certificate":"tls.crt","client-key":"tls.key"}}]}"#;
        std::fs::write(tmp.path().join("kubeconfig"), json).unwrap();
        std::fs::write(
            tmp.path().join("tls.crt"),
            cert("system:open-cluster-management:c1:a1"),
        )
        .unwrap();
        std::fs::write(tmp.path().join("tls.key"), "key").unwrap();
        assert!(hub_kubeconfig_valid(
            &HubKubeconfigFiles::read(tmp.path()),
            &bootstrap(),
            Some("c1"),
            Some("a1"),
            now()
        ));
    }

    #[test]
    fn generated_kubeconfig_is_valid_for_its_bootstrap() {
        let f = files("system:open-cluster-management:c1:a1");
        assert!(hub_kubeconfig_valid(
            &f,
            &bootstrap(),
            Some("c1"),
            Some("a1"),
            now()
        ));
        let kc = f.kubeconfig.unwrap();
        let user = kc.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(user.client_certificate.as_deref(), Some("tls.crt"));
        assert_eq!(
            kc.contexts[0].context.as_ref().unwrap().namespace.as_deref(),
            Some("configuration")
        );
    }

    #[test]
    fn other_names_server_or_cluster_entry_make_it_invalid() {
        let f = files("system:open-cluster-management:c1:a1");
        assert!(!hub_kubeconfig_valid(
            &f,
            &bootstrap(),
            Some("c2"),
            Some("a1"),
            now()
        ));
        assert!(!hub_kubeconfig_valid(
            &f,
            &bootstrap(),
            Some("c1"),
            Some("a2"),
            now()
        ));
        // Unknown names skip the name check.
        assert!(hub_kubeconfig_valid(&f, &bootstrap(), None, Some("a2"), now()));
        let mut other = bootstrap();
        other.clusters[0].cluster.as_mut().unwrap().server = Some("https://other:6443".into());
        assert!(!hub_kubeconfig_valid(&f, &other, Some("c1"), Some("a1"), now()));
        let mut renamed = bootstrap();
        renamed.clusters[0].name = "hub2".into();
        renamed.contexts[0].context.as_mut().unwrap().cluster = "hub2".into();
        assert!(!hub_kubeconfig_valid(&f, &renamed, Some("c1"), Some("a1"), now()));
    }

    #[test]
    fn missing_key_missing_cert_or_expired_cert_make_it_invalid() {
        let mut f = files("system:open-cluster-management:c1:a1");
        f.has_key = false;
        assert!(!hub_kubeconfig_valid(
            &f,
            &bootstrap(),
            Some("c1"),
            Some("a1"),
            now()
        ));
        let mut f = files("system:open-cluster-management:c1:a1");
        f.cert_pem = Some(b"garbage".to_vec());
        assert!(!hub_kubeconfig_valid(
            &f,
            &bootstrap(),
            Some("c1"),
            Some("a1"),
            now()
        ));
        let f = files("system:open-cluster-management:c1:a1");
        assert!(!hub_kubeconfig_valid(
            &f,
            &bootstrap(),
            Some("c1"),
            Some("a1"),
            LATER
        ));
        assert!(!hub_kubeconfig_valid(
            &HubKubeconfigFiles::default(),
            &bootstrap(),
            None,
            None,
            now()
        ));
    }

    /// `path` (absolute) as a path relative to the working directory.
    fn relative_to_cwd(path: &Path) -> PathBuf {
        let cwd = std::env::current_dir().unwrap();
        let mut relative = PathBuf::new();
        for _ in cwd.components().skip(1) {
            relative.push("..");
        }
        relative.join(path.strip_prefix("/").unwrap())
    }

    #[test]
    fn a_relative_hub_kubeconfig_dir_resolves_the_certificate_paths_once() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = relative_to_cwd(tmp.path());
        assert!(dir.is_relative());
        std::fs::write(dir.join("kubeconfig"), hub_kubeconfig(&bootstrap()).unwrap()).unwrap();
        std::fs::write(dir.join("tls.crt"), cert("system:open-cluster-management:c1:a1")).unwrap();
        std::fs::write(dir.join("tls.key"), "key").unwrap();
        let kc = read_hub_kubeconfig(&dir).unwrap();
        let user = kc.auth_infos[0].auth_info.as_ref().unwrap();
        let cert_path = PathBuf::from(user.client_certificate.as_deref().unwrap());
        assert_eq!(cert_path, std::path::absolute(&dir).unwrap().join("tls.crt"));
        assert!(cert_path.is_file(), "{}", cert_path.display());
        let key_path = PathBuf::from(user.client_key.as_deref().unwrap());
        assert!(key_path.is_file(), "{}", key_path.display());
        assert!(hub_kubeconfig_valid(
            &HubKubeconfigFiles::read(&dir),
            &bootstrap(),
            Some("c1"),
            Some("a1"),
            now()
        ));
    }

    #[test]
    fn a_relative_bootstrap_ca_file_stays_valid_from_the_hub_kubeconfig_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let root = relative_to_cwd(tmp.path());
        std::fs::create_dir_all(root.join("boot")).unwrap();
        std::fs::create_dir_all(root.join("hub")).unwrap();
        std::fs::write(root.join("boot/ca.crt"), cert("ca")).unwrap();
        std::fs::write(
            root.join("boot/bootstrap.kubeconfig"),
            "apiVersion: v1\nkind: Config\nclusters:\n- name: hub\n  cluster:\n    server: https://hub:6443\n    certificate-authority: ca.crt\ncontexts:\n- name: b\n  context:\n    cluster: hub\n    user: b\ncurrent-context: b\nusers:\n- name: b\n  user:\n    token: x\n",
        )
        .unwrap();
        let boot = Kubeconfig::read_from(root.join("boot/bootstrap.kubeconfig")).unwrap();
        let hub_dir = root.join("hub");
        std::fs::write(hub_dir.join("kubeconfig"), hub_kubeconfig(&boot).unwrap()).unwrap();
        std::fs::write(
            hub_dir.join("tls.crt"),
            cert("system:open-cluster-management:c1:a1"),
        )
        .unwrap();
        std::fs::write(hub_dir.join("tls.key"), "key").unwrap();
        let files = HubKubeconfigFiles::read(&hub_dir);
        let (_, cluster) = current_cluster(files.kubeconfig.as_ref().unwrap()).unwrap();
        assert!(Path::new(cluster.certificate_authority.as_deref().unwrap()).is_file());
        assert!(hub_kubeconfig_valid(&files, &boot, Some("c1"), Some("a1"), now()));
    }
}
