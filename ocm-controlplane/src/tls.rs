//! Certificates: a self-signed serving CA and client CA, the serving certificate and the admin
//! client certificate (CN=admin, O=system:masters), and the ECDSA P-256 key ServiceAccount tokens
//! are signed with ([`crate::rest::token_request`]); created on first start and kept in the data
//! dir (in memory without one, as for [`crate::TestEnv`]).

use std::path::Path;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

/// A failed certificate operation.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Generating a key or certificate failed.
    #[error("generating {what}: {source}")]
    Generate {
        /// What was generated.
        what: &'static str,
        /// The rcgen error.
        source: rcgen::Error,
    },
    /// Reading or writing a PEM file failed.
    #[error("file {path}: {source}")]
    File {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Building the rustls configuration failed.
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// PEM material of the control plane.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// Serving CA certificate (PEM): what clients trust.
    pub ca_pem: String,
    /// Client CA certificate (PEM).
    pub client_ca_pem: String,
    /// Client CA key (PEM), to sign client certificates (CSR signing later).
    pub client_ca_key_pem: String,
    /// Serving certificate (PEM).
    pub serving_cert_pem: String,
    /// Serving key (PEM).
    pub serving_key_pem: String,
    /// Admin client certificate (PEM).
    pub admin_cert_pem: String,
    /// Admin client key (PEM).
    pub admin_key_pem: String,
    /// The ServiceAccount token signing key (PKCS#8 PEM, ECDSA P-256).
    pub service_account_key_pem: String,
    /// Its public key (SubjectPublicKeyInfo PEM), which verifies the tokens.
    pub service_account_public_pem: String,
}

/// A new ECDSA P-256 key pair for signing ServiceAccount tokens: (private PKCS#8 PEM, public PEM).
fn service_account_key() -> Result<(String, String), TlsError> {
    let key = generated("service account key", KeyPair::generate())?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}

fn generated<T>(what: &'static str, r: Result<T, rcgen::Error>) -> Result<T, TlsError> {
    r.map_err(|source| TlsError::Generate { what, source })
}

fn ca(cn: &str) -> Result<(String, String), TlsError> {
    let mut params = generated("CA parameters", CertificateParams::new(Vec::<String>::new()))?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, cn);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_after = rcgen::date_time_ymd(2099, 1, 1);
    let key = generated("CA key", KeyPair::generate())?;
    let cert = generated("CA certificate", params.self_signed(&key))?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Signs a client certificate for `user` in `groups` with the given CA.
pub fn sign_client(
    ca_pem: &str,
    ca_key_pem: &str,
    user: &str,
    groups: &[&str],
) -> Result<(String, String), TlsError> {
    let ca_key = generated("CA key", KeyPair::from_pem(ca_key_pem))?;
    let issuer = generated("issuer", Issuer::from_ca_cert_pem(ca_pem, ca_key))?;
    let mut params = generated("client parameters", CertificateParams::new(Vec::<String>::new()))?;
    params.distinguished_name.push(DnType::CommonName, user);
    for g in groups {
        params.distinguished_name.push(DnType::OrganizationName, *g);
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.not_after = rcgen::date_time_ymd(2099, 1, 1);
    let key = generated("client key", KeyPair::generate())?;
    let cert = generated("client certificate", params.signed_by(&key, &issuer))?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn serving(ca_pem: &str, ca_key_pem: &str, hosts: &[String]) -> Result<(String, String), TlsError> {
    let ca_key = generated("CA key", KeyPair::from_pem(ca_key_pem))?;
    let issuer = generated("issuer", Issuer::from_ca_cert_pem(ca_pem, ca_key))?;
    let mut params = generated("serving parameters", CertificateParams::new(hosts.to_vec()))?;
    params
        .distinguished_name
        .push(DnType::CommonName, "ocm-controlplane");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_after = rcgen::date_time_ymd(2099, 1, 1);
    let key = generated("serving key", KeyPair::generate())?;
    let cert = generated("serving certificate", params.signed_by(&key, &issuer))?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Writes a file readable by its owner only (keys, kubeconfigs with credentials).
pub(crate) fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    std::io::Write::write_all(&mut file, contents.as_bytes())?;
    file.sync_all()
}

fn load_or(
    dir: Option<&Path>,
    names: [&str; 2],
    make: impl FnOnce() -> Result<(String, String), TlsError>,
) -> Result<(String, String), TlsError> {
    if let Some(dir) = dir {
        let (a, b) = (dir.join(names[0]), dir.join(names[1]));
        if let (Ok(x), Ok(y)) = (std::fs::read_to_string(&a), std::fs::read_to_string(&b)) {
            return Ok((x, y));
        }
        let (x, y) = make()?;
        std::fs::create_dir_all(dir).map_err(|source| TlsError::File {
            path: dir.display().to_string(),
            source,
        })?;
        for (p, c) in [(&a, &x), (&b, &y)] {
            write_private(p, c).map_err(|source| TlsError::File {
                path: p.display().to_string(),
                source,
            })?;
        }
        return Ok((x, y));
    }
    make()
}

impl Credentials {
    /// Loads the credentials from `dir` or creates (and, with a dir, stores) them.
    pub fn load_or_create(dir: Option<&Path>) -> Result<Self, TlsError> {
        let (ca_pem, ca_key) = load_or(dir, ["ca.crt", "ca.key"], || ca("ocm-controlplane-ca"))?;
        let (client_ca_pem, client_ca_key_pem) = load_or(dir, ["client-ca.crt", "client-ca.key"], || {
            ca("ocm-controlplane-client-ca")
        })?;
        let hosts = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".to_string(),
        ];
        let (serving_cert_pem, serving_key_pem) = load_or(dir, ["serving.crt", "serving.key"], || {
            serving(&ca_pem, &ca_key, &hosts)
        })?;
        let (admin_cert_pem, admin_key_pem) = load_or(dir, ["admin.crt", "admin.key"], || {
            sign_client(&client_ca_pem, &client_ca_key_pem, "admin", &["system:masters"])
        })?;
        let (service_account_key_pem, service_account_public_pem) =
            load_or(dir, ["sa.key", "sa.pub"], service_account_key)?;
        Ok(Self {
            ca_pem,
            client_ca_pem,
            client_ca_key_pem,
            serving_cert_pem,
            serving_key_pem,
            admin_cert_pem,
            admin_key_pem,
            service_account_key_pem,
            service_account_public_pem,
        })
    }

    /// Verification of client certificates against the client CA (see
    /// [`crate::auth::client_cert`]).
    pub fn client_certificates(&self) -> Result<crate::auth::client_cert::ClientCertificates, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(self.client_ca_pem.as_bytes()) {
            let c = c.map_err(|e| TlsError::Config(e.to_string()))?;
            roots.add(c).map_err(|e| TlsError::Config(e.to_string()))?;
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .allow_unauthenticated()
            .build()
            .map_err(|e| TlsError::Config(e.to_string()))?;
        Ok(crate::auth::client_cert::ClientCertificates::new(verifier))
    }

    /// The rustls server configuration: serving certificate, optional client certificates,
    /// verified per request against the client CA by `certificates` (requests without one are
    /// anonymous or use a bearer token).
    pub fn server_config(
        &self,
        certificates: &crate::auth::client_cert::ClientCertificates,
    ) -> Result<rustls::ServerConfig, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(self.serving_cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| TlsError::Config(e.to_string()))?;
        let key = PrivateKeyDer::from_pem_slice(self.serving_key_pem.as_bytes())
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_client_cert_verifier(certificates.handshake_verifier())
            .with_single_cert(certs, key)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(config)
    }

    /// A kubeconfig for the admin user against `server` (e.g. `https://127.0.0.1:6443`).
    pub fn admin_kubeconfig(&self, server: &str) -> String {
        use base64::Engine;
        let b = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: ocm-controlplane\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\nusers:\n- name: admin\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: admin\n  context:\n    cluster: ocm-controlplane\n    user: admin\ncurrent-context: admin\n",
            b(&self.ca_pem),
            b(&self.admin_cert_pem),
            b(&self.admin_key_pem)
        )
    }
}
