//! What every harness binary does the same way: logging set up from `RUST_LOG` (errors only by
//! default) onto standard error, and the hub-controllers child mode of `join-load` and `fleet-sim`.

use std::path::Path;
use std::process::ExitCode;

/// Logs to standard error, filtered by `RUST_LOG` (default: errors only), so that reports on
/// standard output stay clean.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// The hub-controllers child mode (`--hub-controllers <kubeconfig>`): every hub registration
/// controller until standard input closes; errors are printed prefixed with `program`.
#[must_use]
pub fn run_hub_controllers(program: &str, kubeconfig: &Path, auto_approve_users: Vec<String>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{program} --hub-controllers: starting a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(crate::join::controllers::run_child(
        kubeconfig,
        auto_approve_users,
    )) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program} --hub-controllers: {e}");
            ExitCode::FAILURE
        }
    }
}
