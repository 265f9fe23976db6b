//! The HTTP endpoints of an example process: `/healthz` (the process runs), `/readyz` (its
//! controllers have started) and `/metrics` (Prometheus text format of a `prometheus_client`
//! registry).
//!
//! ```no_run
//! # async fn demo() -> Result<(), ocm_examples::serving::ServeError> {
//! let registry = prometheus_client::registry::Registry::default();
//! let health = ocm_examples::serving::Health::default();
//! let server = ocm_examples::serving::serve("127.0.0.1:8080", registry, health.clone()).await?;
//! health.set_ready();
//! server.shutdown().await;
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A failure to serve the endpoints.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound.
    #[error("binding the health and metrics address {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Whether the process is ready (its controllers started); shared with the server.
#[derive(Debug, Clone, Default)]
pub struct Health {
    ready: Arc<AtomicBool>,
}

impl Health {
    /// Marks the process ready: `/readyz` answers 200 from now on.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::SeqCst);
    }

    /// Whether [`Health::set_ready`] was called.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
}

#[derive(Clone)]
struct AppState {
    registry: Arc<Registry>,
    health: Health,
}

/// The running endpoints.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Server {
    /// The bound address (useful with port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving and waits for the server task to end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.task.await;
    }
}

/// Serves `/healthz`, `/readyz` and `/metrics` on `addr` until [`Server::shutdown`].
///
/// # Errors
/// The address cannot be bound.
pub async fn serve(addr: &str, registry: Registry, health: Health) -> Result<Server, ServeError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: addr.to_string(),
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: addr.to_string(),
        source,
    })?;
    let state = AppState {
        registry: Arc::new(registry),
        health,
    };
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let result = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
        if let Err(error) = result {
            tracing::warn!(%error, "the health and metrics server stopped");
        }
    });
    tracing::info!(addr = %bound, "serving /healthz, /readyz and /metrics");
    Ok(Server {
        addr: bound,
        stop: Some(stop),
        task,
    })
}

async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    if state.health.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "controllers not started")
    }
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &state.registry) {
        Ok(()) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        ),
        Err(error) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("encoding metrics: {error}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn http_get(addr: SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn endpoints_answer_health_readiness_and_metrics() {
        let mut registry = Registry::default();
        let metrics = ocm_core::metrics::ControllerMetrics::default();
        metrics.register(&mut registry);
        metrics.reconciled("test", false);
        let health = Health::default();
        let server = serve("127.0.0.1:0", registry, health.clone()).await.unwrap();
        let addr = server.addr();
        assert!(http_get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        assert!(http_get(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
        health.set_ready();
        assert!(http_get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
        let text = http_get(addr, "/metrics").await;
        assert!(
            text.contains(r#"ocm_controller_reconcile_total{controller="test",result="error"} 1"#),
            "{text}"
        );
        server.shutdown().await;
        assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    }
}
