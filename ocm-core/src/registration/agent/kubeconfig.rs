//! The hub kubeconfig: building it from the bootstrap kubeconfig (ocm-core.md §1.6) and deciding
//! whether the one on disk is still valid (§1.3).

use std::path::Path;

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
        certificate_authority: cluster.certificate_authority,
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
    serde_json::to_string(&kc).map_err(|e| AgentError::SerializeKubeconfig(e.to_string()))
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
            kubeconfig: Kubeconfig::read_from(dir.join(secrets::keys::KUBECONFIG)).ok(),
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
        || hub_cluster.certificate_authority != boot_cluster.certificate_authority
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
}
