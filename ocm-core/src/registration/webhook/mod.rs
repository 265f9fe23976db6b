//! The hub's admission and conversion webhooks for a real kube-apiserver (ocm-core.md §2.7, §2.8,
//! §3.11: cluster, cluster-set binding and ManifestWork validation; the add-on kinds' v1alpha1 ⇄
//! v1beta1 conversion): an HTTPS server answering AdmissionReviews and ConversionReviews at
//! upstream's paths with the rules of
//! [`ocm_api::admission`] (the same rules the embedded control plane runs in-process), and the
//! webhook configurations that point kube-apiserver at it.
//!
//! | module | what it holds |
//! |---|---|
//! | [`review`] | one AdmissionReview: rules, SubjectAccessReviews for the requester, the answer |
//! | [`configuration`] | the Mutating/ValidatingWebhookConfigurations, by URL or by Service, with their `caBundle` |
//! | [`conversion`] | the add-on conversion webhook (v1alpha1 ⇄ v1beta1) and the CRD settings that use it |
//!
//! [`WebhookServer::start`] makes its own CA and serving certificate (for the given host names
//! and addresses) and serves until dropped.

pub mod configuration;
pub mod conversion;
pub mod review;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::post;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use ocm_api::admission::{
    CLUSTER_SET_BINDING_VALIDATOR, MANAGED_CLUSTER_MUTATOR, MANAGED_CLUSTER_VALIDATOR,
    MANIFEST_WORK_VALIDATOR, managed_cluster,
};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;
use tokio::net::TcpListener;

pub use configuration::{Endpoint, Registration};
pub use review::{Reviewer, Rules};

/// What failed in the webhook server.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// Generating the CA or serving certificate failed.
    #[error("generating the webhook {what}: {source}")]
    GenerateCertificate {
        /// Which part.
        what: &'static str,
        /// The rcgen error.
        source: rcgen::Error,
    },
    /// Building the TLS configuration failed.
    #[error("configuring TLS for the webhook server: {0}")]
    ConfigureTls(String),
    /// Binding the listening address failed.
    #[error("binding the webhook server to {address}: {source}")]
    Bind {
        /// The address.
        address: String,
        /// Why.
        source: std::io::Error,
    },
    /// Registering a webhook configuration failed.
    #[error("registering webhook configuration {name}: {source}")]
    Register {
        /// The configuration.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Deleting a webhook configuration failed.
    #[error("deleting webhook configuration {name}: {source}")]
    Unregister {
        /// The configuration.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

/// A running webhook server; stops when dropped.
#[derive(Debug)]
pub struct WebhookServer {
    address: SocketAddr,
    ca_pem: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WebhookServer {
    /// Listens on `bind` (`HOST:PORT`, port 0 picks a free one) with a new CA and a serving
    /// certificate for `hosts` (DNS names and IP addresses, e.g. `127.0.0.1` or
    /// `svc.ns.svc`), answering with `reviewer`.
    ///
    /// # Errors
    /// The certificate or TLS configuration could not be made, or the address not bound.
    pub async fn start(bind: &str, hosts: &[String], reviewer: Reviewer) -> Result<Self, WebhookError> {
        let (ca_pem, cert_pem, key_pem) = certificates(hosts)?;
        let tls = tls_config(&cert_pem, &key_pem)?;
        let listener = TcpListener::bind(bind)
            .await
            .map_err(|source| WebhookError::Bind {
                address: bind.to_string(),
                source,
            })?;
        let address = listener.local_addr().map_err(|source| WebhookError::Bind {
            address: bind.to_string(),
            source,
        })?;
        let router = router(reviewer);
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let task = tokio::spawn(serve(listener, acceptor, router));
        tracing::info!(%address, "admission webhooks serving");
        Ok(Self {
            address,
            ca_pem,
            task,
        })
    }

    /// The address the server listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The CA (PEM) of the serving certificate: the webhook configurations' `caBundle`.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// `https://HOST:PORT` of the server as kube-apiserver on the same host reaches it (an
    /// unspecified bind address is reached on loopback).
    pub fn url(&self) -> String {
        let ip = match self.address.ip() {
            ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_string(),
            ip if ip.is_unspecified() => "[::1]".to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            std::net::IpAddr::V4(ip) => ip.to_string(),
        };
        format!("https://{ip}:{}", self.address.port())
    }
}

/// The server's mutating options from the hub's gate DefaultClusterSet.
pub fn mutate_options(default_cluster_set: bool) -> managed_cluster::MutateOptions {
    managed_cluster::MutateOptions { default_cluster_set }
}

fn router(reviewer: Reviewer) -> Router {
    let route = |rules: Rules| {
        post(
            move |State(reviewer): State<Reviewer>, Json(review): Json<Value>| async move {
                Json(reviewer.review(rules, &review).await)
            },
        )
    };
    Router::new()
        .route(MANAGED_CLUSTER_MUTATOR.path, route(Rules::MutateCluster))
        .route(MANAGED_CLUSTER_VALIDATOR.path, route(Rules::ValidateCluster))
        .route(CLUSTER_SET_BINDING_VALIDATOR.path, route(Rules::ValidateBinding))
        .route(MANIFEST_WORK_VALIDATOR.path, route(Rules::ValidateWork))
        .route(
            conversion::CONVERSION_PATH,
            post(|Json(review): Json<Value>| async move { Json(conversion::review(&review)) }),
        )
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .with_state(reviewer)
}

async fn serve(listener: TcpListener, acceptor: tokio_rustls::TlsAcceptor, router: Router) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let Ok((tcp, _)) = accepted else { continue };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(router.clone());
        connections.spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            if let Err(error) = builder.serve_connection(TokioIo::new(tls), service).await {
                tracing::debug!(%error, "webhook connection ended");
            }
        });
    }
}

fn generated<T>(what: &'static str, r: Result<T, rcgen::Error>) -> Result<T, WebhookError> {
    r.map_err(|source| WebhookError::GenerateCertificate { what, source })
}

/// A new CA and a serving certificate it signs for `hosts`: (CA PEM, certificate PEM, key PEM).
fn certificates(hosts: &[String]) -> Result<(String, String, String), WebhookError> {
    let mut ca = generated("CA parameters", CertificateParams::new(Vec::<String>::new()))?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "cluster-manager-registration-webhook-ca");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca.not_after = rcgen::date_time_ymd(2099, 1, 1);
    let ca_key = generated("CA key", KeyPair::generate())?;
    let ca_cert = generated("CA certificate", ca.self_signed(&ca_key))?;
    let ca_pem = ca_cert.pem();
    let issuer = Issuer::new(ca, ca_key);
    let mut serving = generated("serving parameters", CertificateParams::new(hosts.to_vec()))?;
    serving
        .distinguished_name
        .push(DnType::CommonName, "cluster-manager-registration-webhook");
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    serving.not_after = rcgen::date_time_ymd(2099, 1, 1);
    let key = generated("serving key", KeyPair::generate())?;
    let cert = generated("serving certificate", serving.signed_by(&key, &issuer))?;
    Ok((ca_pem, cert.pem(), key.serialize_pem()))
}

fn tls_config(cert_pem: &str, key_pem: &str) -> Result<rustls::ServerConfig, WebhookError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| WebhookError::ConfigureTls(e.to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| WebhookError::ConfigureTls(e.to_string()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| WebhookError::ConfigureTls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| WebhookError::ConfigureTls(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serving_certificate_names_the_hosts_and_is_signed_by_the_ca() {
        let (ca, cert, key) = certificates(&["127.0.0.1".into(), "svc.ns.svc".into()]).unwrap();
        assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"));
        let der = CertificateDer::from_pem_slice(cert.as_bytes()).unwrap();
        let (_, parsed) = x509_parser::parse_x509_certificate(&der).unwrap();
        let sans = parsed
            .subject_alternative_name()
            .unwrap()
            .unwrap()
            .value
            .general_names
            .len();
        assert_eq!(sans, 2);
        assert!(tls_config(&cert, &key).is_ok());
    }
}
