//! Kubernetes clients that speak HTTP/2 where the server offers it, as client-go does.
//!
//! `kube::Client::try_from(config)` speaks HTTP/1.1 only, so every request or watch in flight
//! holds a TLS connection of its own, and the connection pool keeps every connection it ever
//! opened: a hub controller process with a few dozen concurrent reconciles and watches opened
//! about 7 600 connections to its hub while 1 000 clusters joined (docs/performance.md), each
//! costing a TLS handshake and buffers on both ends. Go's agents and controllers multiplex all of
//! a client's requests and watches over one HTTP/2 connection.
//!
//! [`client_for`] builds the same service stack as kube's (base URI, retry of 429/503/504,
//! authentication, extra headers, connect/read/write timeouts, the kubeconfig's TLS settings)
//! over a connector that offers `h2` and `http/1.1` by ALPN: against kube-apiserver, and against
//! `ocm-controlplane`, the client then holds one connection for everything. A server that only
//! speaks HTTP/1.1 gets HTTP/1.1. Configurations this builder does not cover (a proxy, plain
//! `http`) get kube's own client.

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use kube::client::retry::RetryPolicy;
use tower::{BoxError, ServiceBuilder};

/// A client that could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The configuration's TLS settings, authentication or headers are unusable.
    #[error("building a client for {server}: {source}")]
    BuildClient {
        /// The server's URL.
        server: String,
        /// What kube reported.
        #[source]
        source: kube::Error,
    },
    /// `tls-server-name` is not a valid DNS name or IP address.
    #[error("building a client for {server}: invalid tls-server-name {name:?}")]
    InvalidServerName {
        /// The server's URL.
        server: String,
        /// The name given.
        name: String,
    },
}

/// A client for `config`, multiplexing its requests and watches over one HTTP/2 connection where
/// the server offers HTTP/2 (see the module docs).
///
/// # Errors
///
/// [`ClientError::BuildClient`] when kube cannot use the configuration's TLS material,
/// authentication or headers; [`ClientError::InvalidServerName`] for a bad `tls-server-name`.
pub fn client_for(config: kube::Config) -> Result<kube::Client, ClientError> {
    let server = config.cluster_url.to_string();
    let failed = |source| ClientError::BuildClient {
        server: server.clone(),
        source,
    };
    if config.proxy_url.is_some() || config.cluster_url.scheme_str() != Some("https") {
        return kube::Client::try_from(config).map_err(failed);
    }
    let tls = config.rustls_client_config().map_err(failed)?;
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    let mut builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only();
    if let Some(name) = &config.tls_server_name {
        let fixed = rustls::pki_types::ServerName::try_from(name.clone()).map_err(|_| {
            ClientError::InvalidServerName {
                server: server.clone(),
                name: name.clone(),
            }
        })?;
        builder = builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(fixed));
    }
    let https = builder.enable_http1().enable_http2().wrap_connector(tcp);
    let mut connector = hyper_timeout::TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    let http: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| tower::retry::RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer().map_err(failed)?)
        .layer(config.extra_headers_layer().map_err(failed)?)
        .map_err(BoxError::from)
        .service(http);
    Ok(kube::client::ClientBuilder::new(service, config.default_namespace).build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn plain_http_and_proxied_configurations_get_kubes_client() {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        assert!(client_for(config).is_ok());
    }

    #[tokio::test]
    async fn https_configurations_get_the_http2_capable_client() {
        let mut config = kube::Config::new("https://127.0.0.1:9".parse().unwrap());
        config.accept_invalid_certs = true;
        let client = client_for(config).unwrap();
        // Nothing listens on port 9: the request fails at connecting, through our stack.
        let error = client.apiserver_version().await.unwrap_err();
        assert!(error.to_string().contains("onnect"), "{error}");
    }

    #[tokio::test]
    async fn a_bad_tls_server_name_is_reported() {
        let mut config = kube::Config::new("https://127.0.0.1:9".parse().unwrap());
        config.tls_server_name = Some("not a name".into());
        let Err(error) = client_for(config) else {
            panic!("a client for an invalid tls-server-name");
        };
        assert!(matches!(error, ClientError::InvalidServerName { .. }), "{error}");
    }
}
