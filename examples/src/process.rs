//! What every example process does first and last: logging through `tracing` (filtered by
//! `RUST_LOG`, default `info`) and waiting for SIGTERM or Ctrl-C.

/// Sends `tracing` output to stderr, filtered by `RUST_LOG` (default `default_filter`). Calling it
/// twice keeps the first set-up.
pub fn init_tracing(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Resolves on the first SIGTERM or Ctrl-C (SIGINT); on platforms without SIGTERM, on Ctrl-C.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
                    _ = tokio::signal::ctrl_c() => tracing::info!("interrupt received, shutting down"),
                }
                return;
            }
            Err(error) => tracing::warn!(%error, "cannot listen for SIGTERM; Ctrl-C still stops"),
        }
    }
    let _ = tokio::signal::ctrl_c().await;
    tracing::info!("interrupt received, shutting down");
}
