//! The managed side: one in-process embedded control plane (on the servers' runtime) shared by
//! every agent — the store of the fleet simulator ([`ocm_testkit::sim`]), which gives each
//! simulated cluster a namespace of its own there. An agent needs of its spoke only that
//! namespace, `/livez`, `/version`, the Nodes and ClusterClaims, so one spoke is enough; each
//! agent still runs its full bootstrap, lease, status, rotation and add-on loops.

use ocm_testkit::sim::StoreClients;

use super::JoinError;
use crate::load::target::Target;

/// The cluster-name prefix of a run: `join-cluster` on a hub of its own, else `join-<hex>` from
/// the clock and the process id, so that runs sharing a hub do not meet.
pub fn run_prefix(own_hub: bool) -> String {
    named_run_prefix("join", own_hub)
}

/// [`run_prefix`] with `base` for `join`.
pub fn named_run_prefix(base: &str, own_hub: bool) -> String {
    if own_hub {
        return format!("{base}-cluster");
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let id = (nanos as u64 ^ (u64::from(std::process::id()) << 40)) & 0xff_ffff_ffff;
    format!("{base}-{id:x}")
}

/// Where kubelet keeps a pod's mounted Secret volumes, and so a real agent its hub-kubeconfig
/// files: a tmpfs. `/dev/shm` is one on Linux.
const TMPFS: &str = "/dev/shm";

/// A fresh directory for the agents' hub-kubeconfig files (named `prefix…`): under `chosen`, else
/// on a tmpfs (`/dev/shm`) when there is one, else in the system's temporary directory. On a
/// disk, creating a thousand agents' files at once made the kernel's inode allocation a third of
/// the harness's CPU (`perf`, ext4), which no real agent pays for its Secret volume.
///
/// # Errors
/// [`JoinError::File`] when the directory cannot be created.
pub fn agent_files_dir(
    chosen: Option<&std::path::Path>,
    prefix: &str,
) -> Result<tempfile::TempDir, JoinError> {
    let tmpfs = std::path::Path::new(TMPFS);
    let parent = chosen.or_else(|| tmpfs.is_dir().then_some(tmpfs));
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    match parent {
        Some(parent) => builder.tempdir_in(parent),
        None => builder.tempdir(),
    }
    .map_err(|source| JoinError::File {
        what: "creating the agents' directory in",
        path: parent.map_or_else(|| "the temporary directory".into(), |p| p.display().to_string()),
        source,
    })
}

/// The shared spoke.
pub struct Spoke {
    /// Keeps the server running.
    pub target: Target,
    /// Admin clients shared by the agents: HTTP/2, one connection per
    /// [`ocm_testkit::sim::CLUSTERS_PER_CONNECTION`] clusters.
    pub clients: StoreClients,
}

impl Spoke {
    /// Starts the spoke (in memory) on `server_runtime`, with clients for `clusters` clusters.
    pub async fn start(server_runtime: &tokio::runtime::Handle, clusters: usize) -> Result<Self, JoinError> {
        let target = Target::embedded(server_runtime, None).await?;
        let clients = StoreClients::connect(&target.config, clusters)
            .map_err(|e| JoinError::PrepareHub(format!("spoke clients: {e}")))?;
        Ok(Self { target, clients })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_on_a_shared_hub_have_prefixes_of_their_own() {
        assert_eq!(run_prefix(true), "join-cluster");
        let external = run_prefix(false);
        assert!(external.starts_with("join-") && external != "join-cluster");
        let options = ocm_testkit::sim::SimOptions::new(4, external.clone(), "/b".into(), "/d".into());
        assert!(super::super::cleanup::is_run_cluster(
            &external,
            &options.cluster_name(3)
        ));
    }
}
