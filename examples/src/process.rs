//! What every example process does first and last: logging through `tracing` (filtered by
//! `RUST_LOG`, default `info`), running its main future on a Tokio runtime and turning the outcome
//! into an exit code, and waiting for SIGTERM or Ctrl-C.

use std::process::ExitCode;

/// Sends `tracing` output to stderr, filtered by `RUST_LOG` (default `default_filter`). Calling it
/// twice keeps the first set-up.
pub fn init_tracing(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
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

/// Runs `main` on a multi-threaded Tokio runtime: exit code 0 when it succeeds, 1 (after printing
/// the error and its causes to stderr) when it fails or the runtime cannot start.
pub fn block_on<E: std::error::Error>(main: impl Future<Output = Result<(), E>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: starting the Tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(main) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            ExitCode::FAILURE
        }
    }
}

/// `error` and its sources, joined by `: ` (sources already in the message are not repeated).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
