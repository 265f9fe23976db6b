//! The control plane: `ControlPlane::builder()...start().await` gives a running HTTPS server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::http::{self, AppState};
use crate::metrics::{self, Metrics};
use crate::registry::Registry;
use crate::rest::Api;
use crate::rest::token_request::TokenIssuer;
use crate::storage::{MemoryStorage, MemoryStorageOptions, Storage};
use crate::tls::Credentials;
use rustls::pki_types::CertificateDer;

/// A failed start of the control plane.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Opening the storage failed.
    #[error("opening storage: {0}")]
    Storage(#[from] crate::storage::StorageError),
    /// Creating or loading certificates failed.
    #[error("certificates: {0}")]
    Tls(#[from] crate::tls::TlsError),
    /// Binding the listener failed.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Creating the built-in namespaces failed.
    #[error("creating the built-in namespaces: {0}")]
    Bootstrap(crate::status::ApiError),
    /// Opening the audit log failed.
    #[error("opening the audit log {path}: {source}")]
    OpenAuditLog {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Loading the ServiceAccount token key failed.
    #[error("service account tokens: {0}")]
    Tokens(#[from] crate::rest::token_request::TokenError),
    /// Writing the kubeconfig failed.
    #[error("writing {path}: {source}")]
    WriteKubeconfig {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Configures a control plane.
#[derive(Debug, Clone)]
pub struct ControlPlaneBuilder {
    data_dir: Option<PathBuf>,
    bind: String,
    port: u16,
    history: usize,
    compaction: Option<std::time::Duration>,
    converters: crate::conversion::Converters,
    anonymous_auth: bool,
    audit_log: Option<PathBuf>,
    cluster_admission: Option<crate::admission::ClusterAdmission>,
}

/// How often the history is compacted by default (kube-apiserver's `--etcd-compaction-interval`).
pub const DEFAULT_COMPACTION_INTERVAL: std::time::Duration = std::time::Duration::from_secs(300);

/// The entry point: `ControlPlane::builder()`.
#[derive(Debug)]
pub struct ControlPlane;

impl ControlPlane {
    /// A builder with defaults: in memory, 127.0.0.1, a random port.
    pub fn builder() -> ControlPlaneBuilder {
        ControlPlaneBuilder {
            data_dir: None,
            bind: "127.0.0.1".into(),
            port: 0,
            history: 20_000,
            compaction: Some(DEFAULT_COMPACTION_INTERVAL),
            converters: crate::conversion::Converters::ocm(),
            anonymous_auth: true,
            audit_log: None,
            cluster_admission: None,
        }
    }
}

impl ControlPlaneBuilder {
    /// Persists objects, certificates and `admin.kubeconfig` in `dir`.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// The address to listen on (default 127.0.0.1).
    pub fn bind(mut self, addr: impl Into<String>) -> Self {
        self.bind = addr.into();
        self
    }

    /// The port (0 = any free port).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// How many changes the watch history keeps.
    pub fn history_capacity(mut self, n: usize) -> Self {
        self.history = n;
        self
    }

    /// How often the watch history is compacted, as kube-apiserver has etcd compact it: each
    /// time, history up to the revision of the previous compaction round is dropped, so watches
    /// and `continue` tokens from before then get `410 Expired`. `None` never compacts (the
    /// history is still bounded by [`history_capacity`](Self::history_capacity)). Default: 5 min.
    pub fn compaction_interval(mut self, interval: Option<std::time::Duration>) -> Self {
        self.compaction = interval.filter(|i| !i.is_zero());
        self
    }

    /// The converters called for CRDs with conversion strategy `Webhook` (default:
    /// [`Converters::ocm`](crate::conversion::Converters::ocm), the OCM add-on kinds).
    pub fn converters(mut self, converters: crate::conversion::Converters) -> Self {
        self.converters = converters;
        self
    }

    /// Whether requests without credentials are served as `system:anonymous` (kube-apiserver's
    /// `--anonymous-auth`, default true; RBAC then grants them only what `system:unauthenticated`
    /// is granted). When false, they get `401 Unauthorized`.
    pub fn anonymous_auth(mut self, enabled: bool) -> Self {
        self.anonymous_auth = enabled;
        self
    }

    /// Writes one JSON line per request to this file (kube-apiserver's `--audit-log-path`; see
    /// [`crate::http::audit`]).
    pub fn audit_log(mut self, path: Option<PathBuf>) -> Self {
        self.audit_log = path;
        self
    }

    /// Serve as an OCM hub: admit ManagedClusters and ManagedClusterSetBindings as upstream's
    /// cluster-manager webhooks do ([`crate::admission`]); `None` (the default) admits them as a
    /// kube-apiserver without those webhooks.
    pub fn cluster_admission(mut self, admission: Option<crate::admission::ClusterAdmission>) -> Self {
        self.cluster_admission = admission;
        self
    }

    /// Starts serving.
    pub async fn start(self) -> Result<ControlPlaneHandle, StartError> {
        let storage = MemoryStorage::open(MemoryStorageOptions {
            history_capacity: self.history,
            database: self.data_dir.as_ref().map(|d| d.join("state.redb")),
        })?;
        let storage: Arc<dyn Storage> = Arc::new(storage);
        let credentials = Credentials::load_or_create(self.data_dir.as_deref())?;
        let addr = format!("{}:{}", self.bind, self.port);
        let listener = TcpListener::bind(&addr)
            .await
            .map_err(|source| StartError::Bind {
                addr: addr.clone(),
                source,
            })?;
        let local = listener.local_addr().map_err(|source| StartError::Bind {
            addr: addr.clone(),
            source,
        })?;
        let host = if local.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            local.ip().to_string()
        };
        let url = if local.is_ipv6() {
            format!("https://[{host}]:{}", local.port())
        } else {
            format!("https://{host}:{}", local.port())
        };
        let registry = Arc::new(Registry::with_builtins_and_converters(self.converters.clone()));
        let mut api = Api::new(storage.clone(), registry).with_root_ca(&credentials.ca_pem);
        crate::controllers::bootstrap(&api)
            .await
            .map_err(StartError::Bootstrap)?;
        let kubeconfig = credentials.admin_kubeconfig(&url);
        if let Some(dir) = &self.data_dir {
            let path = dir.join("admin.kubeconfig");
            crate::tls::write_private(&path, &kubeconfig).map_err(|source| StartError::WriteKubeconfig {
                path: path.display().to_string(),
                source,
            })?;
        }
        crate::authorization::bootstrap_policy::ensure(&api)
            .await
            .map_err(StartError::Bootstrap)?;
        crate::controllers::authentication_trust::sync(&api, &credentials.client_ca_pem)
            .await
            .map_err(StartError::Bootstrap)?;
        let authorizer = Arc::new(crate::authorization::Authorizer::new());
        let rbac_rv = authorizer.load(storage.as_ref()).await?;
        api.admission = self
            .cluster_admission
            .map(|options| Arc::new(crate::admission::Admission::new(options, authorizer.clone())));
        let certificates = Arc::new(credentials.client_certificates()?);
        let tokens = Arc::new(TokenIssuer::from_credentials(&credentials)?);
        let security = http::access::Security {
            authenticator: crate::auth::Authenticator::new(
                storage.clone(),
                certificates.clone(),
                self.anonymous_auth,
            )
            .with_service_account_tokens(tokens.clone()),
            authorizer: authorizer.clone(),
        };
        let tls = credentials.server_config(&certificates)?;
        let audit = match &self.audit_log {
            Some(path) => Some(Arc::new(http::audit::AuditLog::open(path).map_err(|source| {
                StartError::OpenAuditLog {
                    path: path.display().to_string(),
                    source,
                }
            })?)),
            None => None,
        };
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let metrics = Arc::new(Metrics::new(storage.clone()));
        let state = Arc::new(AppState {
            api: api.clone(),
            address: format!("{host}:{}", local.port()),
            metrics,
            security,
            audit,
            tokens: tokens.clone(),
            mutating: Arc::new(tokio::sync::Semaphore::new(http::MAX_MUTATING_REQUESTS_IN_FLIGHT)),
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        let tasks = vec![
            tokio::spawn(crate::crd::run_controller(api.clone())),
            tokio::spawn(crate::controllers::namespace_defaults::run(api.clone())),
            tokio::spawn(crate::controllers::leader_lease::run(api.clone())),
            tokio::spawn(authorizer.run(storage.clone(), rbac_rv)),
            tokio::spawn(crate::controllers::csr_signing::run(
                api.clone(),
                crate::controllers::csr_signing::SigningCa {
                    cert_pem: credentials.client_ca_pem.clone(),
                    key_pem: credentials.client_ca_key_pem.clone(),
                },
            )),
            tokio::spawn(crate::controllers::csr_signing::run_cleaner(api.clone())),
            tokio::spawn(crate::controllers::garbage_collector::run(api.clone())),
            tokio::spawn(crate::controllers::namespace_lifecycle::run(api.clone())),
            tokio::spawn(crate::controllers::clusterrole_aggregation::run(api.clone())),
            tokio::spawn(crate::controllers::authentication_trust::run(
                api.clone(),
                credentials.client_ca_pem.clone(),
            )),
            tokio::spawn(crate::controllers::crd_deletion::run(api.clone())),
        ];
        let mut tasks = tasks;
        if let Some(interval) = self.compaction {
            tasks.push(tokio::spawn(compact_periodically(storage.clone(), interval)));
        }
        let server = Some(tokio::spawn(serve(listener, acceptor, state, stop_rx)));
        tracing::info!(address = %url, "control plane serving");
        Ok(ControlPlaneHandle {
            url,
            addr: local,
            credentials,
            kubeconfig,
            api,
            tokens,
            stop: stop_tx,
            server,
            tasks,
        })
    }
}

/// Every `interval`, compacts reads up to the revision seen one round before (watches keep being
/// served from the history, as kube-apiserver's watch cache serves them).
async fn compact_periodically(storage: Arc<dyn Storage>, interval: std::time::Duration) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    let mut previous = storage.current_rv();
    loop {
        ticker.tick().await;
        storage.compact_reads(previous);
        previous = storage.current_rv();
    }
}

/// Resolves when the stop signal is set (or its sender is gone).
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Accepts connections until stopped, then waits for the open ones to finish their requests.
/// Aborting this task drops the `JoinSet` and with it every connection.
async fn serve(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    state: Arc<AppState>,
    stop: watch::Receiver<bool>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            _ = stopped(stop.clone()) => break,
        };
        let Ok((tcp, _peer)) = accepted else { continue };
        connections.spawn(serve_connection(
            tcp,
            acceptor.clone(),
            state.clone(),
            stop.clone(),
        ));
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Concurrent HTTP/2 streams (requests and watches) a client may have on one connection:
/// kube-apiserver's default (`--http2-max-streams-per-connection`, 1 000 in its recommended
/// options), not hyper's 200 — a client multiplexing a few hundred watches over one connection
/// (the fleet simulator's store clients, a controller process with many informers) would wait
/// for a stream here where kube-apiserver serves it.
pub const HTTP2_MAX_STREAMS_PER_CONNECTION: u32 = 1000;

/// Response bytes an HTTP/2 stream may have queued in the connection, waiting for the socket or
/// the client's flow-control window, before its body is asked for more: 64 KiB (one chunk of a
/// streamed LIST), not hyper's 400 KiB. A watch's events and a LIST's chunks are made from the
/// shared storage as the client takes them, so a smaller queue costs no throughput; with 400 KiB,
/// a hub whose thousand agents were slow to read held up to 20 MiB more in these queues.
pub const HTTP2_MAX_SEND_BUFFER_PER_STREAM: usize = 64 * 1024;

/// Drives a boxed connection (hyper's HTTP/2 or auto-detecting one) until it ends or `stop` is
/// set; on stop, shuts it down gracefully (in-flight requests finish) and drives it to its end.
macro_rules! serve_until_stopped {
    ($conn:expr, $stop:expr) => {{
        let mut conn = $conn;
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = stopped($stop) => {}
        }
        conn.as_mut().graceful_shutdown();
        let _ = conn.await;
    }};
}

/// One TLS connection: HTTP/1.1 or HTTP/2; on stop, in-flight requests finish and watches end.
///
/// The connection's task stays small for as long as the connection lives (a hub holds one per
/// agent): the TLS handshake and the HTTP connection are boxed, each the size of what it is, and
/// a connection that negotiated `h2` by ALPN is served by hyper's HTTP/2 connection alone rather
/// than by the auto-detecting one, which is sized for HTTP/1.1 as well.
async fn serve_connection(
    tcp: tokio::net::TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    state: Arc<AppState>,
    stop: watch::Receiver<bool>,
) {
    let tls = tokio::select! {
        tls = Box::pin(acceptor.accept(tcp)) => tls,
        _ = stopped(stop.clone()) => return,
    };
    let Ok(tls) = tls else { return };
    let (chain, negotiated_h2) = {
        let session = tls.get_ref().1;
        let chain: Option<Arc<Vec<CertificateDer<'static>>>> = session
            .peer_certificates()
            .map(|certs| Arc::new(certs.iter().map(|c| c.clone().into_owned()).collect()));
        (chain, session.alpn_protocol() == Some(b"h2".as_slice()))
    };
    let service_stop = stop.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let state = state.clone();
        let chain = chain.clone();
        let stop = service_stop.clone();
        let http2 = req.version() == hyper::Version::HTTP_2;
        async move {
            // Boxed: hyper runs each HTTP/2 stream as a task sized for this future, and the
            // handler's state is kilobytes; boxed, a watch's task holds it only while the handler
            // runs, not for as long as the watch streams.
            let mut resp = Box::pin(respond(state, chain, stop, req)).await;
            if http2 {
                insert_unindexed_date(resp.headers_mut());
            }
            Ok::<_, std::convert::Infallible>(resp)
        }
    });
    let io = TokioIo::new(tls);
    if negotiated_h2 {
        let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        builder
            .max_concurrent_streams(HTTP2_MAX_STREAMS_PER_CONNECTION)
            .max_send_buf_size(HTTP2_MAX_SEND_BUFFER_PER_STREAM)
            .auto_date_header(false);
        let conn = Box::pin(builder.serve_connection(io, service));
        serve_until_stopped!(conn, stop);
    } else {
        let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
        builder
            .http2()
            .max_concurrent_streams(HTTP2_MAX_STREAMS_PER_CONNECTION)
            .max_send_buf_size(HTTP2_MAX_SEND_BUFFER_PER_STREAM)
            .auto_date_header(false);
        let conn = Box::pin(builder.serve_connection(io, service));
        serve_until_stopped!(conn, stop);
    }
}

/// Sets the `Date` header of an HTTP/2 response as a never-indexed HPACK literal (HTTP/1.1
/// responses get hyper's). The value changes every second: indexed, as hyper's own header is,
/// each new second's date entered every long-lived connection's HPACK table, until the table
/// (4 KiB) held dozens of them — about 4 MiB of a hub with a thousand agents connected, for a
/// header no client reads back.
fn insert_unindexed_date(headers: &mut hyper::HeaderMap) {
    if let Ok(mut date) =
        hyper::header::HeaderValue::from_str(&httpdate::fmt_http_date(std::time::SystemTime::now()))
    {
        date.set_sensitive(true);
        headers.insert(hyper::header::DATE, date);
    }
}

/// Reads the body (up to the limit), handles the request and records its metrics.
async fn respond(
    state: Arc<AppState>,
    chain: Option<Arc<Vec<CertificateDer<'static>>>>,
    stop: watch::Receiver<bool>,
    req: hyper::Request<Incoming>,
) -> hyper::Response<Body> {
    let started = std::time::Instant::now();
    let (parts, body) = req.into_parts();
    let mut labels = metrics::classify(
        parts.method.as_str(),
        parts.uri.path(),
        parts.uri.query(),
        &state.api.registry,
    );
    metrics::apply_verb(
        &mut labels,
        parts
            .headers
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    );
    let mut audited: Option<Option<crate::auth::Identity>> = None;
    // Held until the response is made (a mutating request's response is one small document).
    let _place = if http::is_mutating(&parts.method, parts.uri.path()) {
        state.mutating.acquire().await.ok()
    } else {
        None
    };
    let resp = match axum::body::to_bytes(Body::new(body), http::MAX_BODY + 1).await {
        Ok(bytes) => match state
            .security
            .authenticator
            .authenticate(chain.as_deref().map(Vec::as_slice), &parts.headers)
            .await
        {
            Err(error) => {
                tracing::debug!(%error, uri = %parts.uri, "unauthenticated request");
                audited = Some(None);
                http::unauthorized_response()
            }
            Ok(identity) => {
                audited = Some(Some(identity.clone()));
                http::handle(
                    state.clone(),
                    identity,
                    parts.method.clone(),
                    parts.uri.clone(),
                    parts.headers,
                    bytes,
                )
                .await
            }
        },
        Err(_) => {
            let e = crate::status::ApiError::new(
                413,
                "RequestEntityTooLarge",
                "Request entity too large: limit is 3145728",
            );
            let mut r = hyper::Response::new(Body::from(e.to_status().to_string()));
            *r.status_mut() = hyper::StatusCode::PAYLOAD_TOO_LARGE;
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            r
        }
    };
    let code = resp.status().as_u16();
    state.metrics.observe(&labels, code, started.elapsed());
    if let (Some(audit), Some(identity)) = (&state.audit, &audited) {
        let query = http::query_map(&parts.uri);
        let attributes =
            crate::authorization::request::attributes(parts.method.as_str(), parts.uri.path(), &query);
        audit.record(
            identity.as_ref(),
            parts.method.as_str(),
            parts.uri.path(),
            &attributes,
            code,
            started.elapsed(),
        );
    }
    tracing::debug!(
        method = %parts.method,
        uri = %parts.uri,
        status = code,
        elapsed_us = started.elapsed().as_micros() as u64,
        "request"
    );
    // A streamed body (a watch) is counted while open and ends when the server stops.
    if hyper::body::Body::size_hint(resp.body()).exact().is_some() {
        return resp;
    }
    let guard = (labels.verb == "WATCH").then(|| state.metrics.watch_opened(&labels));
    let (parts, body) = resp.into_parts();
    let stream = futures::StreamExt::map(
        futures::StreamExt::take_until(body.into_data_stream(), stopped(stop)),
        move |chunk| {
            let _open = &guard;
            chunk
        },
    );
    hyper::Response::from_parts(parts, Body::from_stream(stream))
}

/// A running control plane; stops when [`ControlPlaneHandle::shutdown`] is called or it is dropped.
pub struct ControlPlaneHandle {
    url: String,
    addr: SocketAddr,
    credentials: Credentials,
    kubeconfig: String,
    api: Api,
    tokens: Arc<TokenIssuer>,
    stop: watch::Sender<bool>,
    server: Option<tokio::task::JoinHandle<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for ControlPlaneHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlaneHandle")
            .field("url", &self.url)
            .finish()
    }
}

impl ControlPlaneHandle {
    /// `https://host:port`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Certificates and keys.
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// The admin kubeconfig (YAML).
    pub fn admin_kubeconfig(&self) -> &str {
        &self.kubeconfig
    }

    /// A kubeconfig for `user` in `groups`, with a certificate from the client CA valid for
    /// `validity`.
    ///
    /// # Errors
    /// Creating the certificate failed.
    pub fn kubeconfig_for(
        &self,
        user: &str,
        groups: &[&str],
        validity: std::time::Duration,
    ) -> Result<String, crate::controllers::csr_signing::SignError> {
        let (cert, key) =
            crate::auth::kubeconfig::issue_client_certificate(&self.credentials, user, groups, validity)?;
        Ok(crate::auth::kubeconfig::with_certificate(
            &self.url,
            &self.credentials.ca_pem,
            user,
            &cert,
            &key,
        ))
    }

    /// A kubeconfig with a new bootstrap token valid for `ttl`, whose user may do what an OCM hub
    /// grants joining clusters (see [`crate::auth::kubeconfig`]).
    ///
    /// # Errors
    /// Creating the RBAC objects or the token Secret failed.
    pub async fn bootstrap_kubeconfig(
        &self,
        ttl: std::time::Duration,
    ) -> Result<String, crate::status::ApiError> {
        let token = crate::auth::kubeconfig::create_bootstrap_token(&self.api, ttl).await?;
        Ok(crate::auth::kubeconfig::with_token(
            &self.url,
            &self.credentials.ca_pem,
            "bootstrap",
            &token,
        ))
    }

    /// The REST layer (for in-process controllers and tests).
    pub fn api(&self) -> &Api {
        &self.api
    }

    /// Signs and verifies the ServiceAccount tokens this server issues.
    pub fn token_issuer(&self) -> &TokenIssuer {
        &self.tokens
    }

    /// Drops watch history up to the current revision, as etcd compaction does.
    pub fn compact(&self) {
        let rv = self.api.storage.current_rv();
        self.api.storage.compact(rv);
    }

    /// Stops serving at once: open connections and watches are dropped.
    pub fn shutdown(&self) {
        let _ = self.stop.send(true);
        if let Some(server) = &self.server {
            server.abort();
        }
        for t in &self.tasks {
            t.abort();
        }
    }

    /// Stops gracefully: no new connections are accepted, watches end, and requests in flight are
    /// answered; connections still open after `grace` are dropped. Returns once every task of the
    /// control plane has ended. Every acknowledged write is already durable (see [`crate::storage`]), so nothing else needs flushing.
    pub async fn shutdown_gracefully(mut self, grace: std::time::Duration) {
        let _ = self.stop.send(true);
        // The server task, unless it ended within the grace period (a finished JoinHandle must
        // not be awaited again).
        let mut server = self.server.take();
        if let Some(running) = server.as_mut() {
            if tokio::time::timeout(grace, running).await.is_ok() {
                server = None;
            } else {
                tracing::warn!(
                    grace_ms = grace.as_millis() as u64,
                    "connections still open after the grace period; dropping them"
                );
            }
        }
        self.shutdown();
        // Wait for the aborted tasks to end, so that what they hold (the storage among it) is
        // released when this returns: the data directory can be opened again at once.
        if let Some(server) = server {
            server.abort();
            let _ = server.await;
        }
        for task in std::mem::take(&mut self.tasks) {
            let _ = task.await;
        }
    }
}

impl Drop for ControlPlaneHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}
