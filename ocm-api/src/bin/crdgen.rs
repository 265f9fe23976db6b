//! Writes the CustomResourceDefinition of every OCM kind to a directory (default `ocm-api/crds`).
//!
//! `cargo run -p ocm-api --bin crdgen [-- DIR]`; the files are committed, and a test fails when
//! they are stale.

use std::{path::PathBuf, process::ExitCode};

fn main() -> ExitCode {
    let dir = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crds"),
        PathBuf::from,
    );
    match write_all(&dir) {
        Ok(count) => {
            println!("wrote {count} CRDs to {}", dir.display());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("crdgen: {message}");
            ExitCode::FAILURE
        }
    }
}

fn write_all(dir: &std::path::Path) -> Result<usize, String> {
    let crds = ocm_api::crd::all().map_err(|e| format!("building the CRDs failed: {e}"))?;
    for generated in &crds {
        let path = dir.join(generated.relative_path());
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        let yaml = ocm_api::crd::to_yaml(&generated.crd)
            .map_err(|e| format!("serializing {}: {e}", generated.name()))?;
        std::fs::write(&path, yaml).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(crds.len())
}
