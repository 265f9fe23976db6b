//! Locating and reading `../shared` (or `$OCM_SHARED_DIR`).

use std::path::{Path, PathBuf};

/// The shared directory, or `None` (after saying so) when it is absent.
pub fn dir(test: &str) -> Option<PathBuf> {
    let candidate = std::env::var_os("OCM_SHARED_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
        PathBuf::from,
    );
    if candidate.is_dir() {
        Some(candidate)
    } else {
        eprintln!(
            "skipping {test}: {} not found (set OCM_SHARED_DIR to run it)",
            candidate.display()
        );
        None
    }
}

/// Every `*.yaml` file directly in `dir`, sorted.
pub fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// Parses a one-document YAML file into JSON.
pub fn read_yaml(path: &Path) -> serde_json::Value {
    let mut documents = read_yaml_documents(path);
    assert_eq!(
        documents.len(),
        1,
        "{} holds {} documents",
        path.display(),
        documents.len()
    );
    documents.remove(0)
}

/// Parses every document of a YAML file into JSON, substituting the Go-template placeholders of
/// the hub addon CRDs.
pub fn read_yaml_documents(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let text = text
        .replace("{{ .AddonAPIServiceCABundle }}", "Cg==")
        .replace("{{ .ClusterManagerNamespace }}", "open-cluster-management-hub");
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}
