//! Cross-process locks for tests sharing one real hub (`OCM_TEST_HUB_KUBECONFIG`): nextest runs
//! every test in its own process, and some tests need what others change to hold still.
//!
//! - [`Lock::HubControllers`]: held shared by every test that runs the hub's registration
//!   controllers, exclusively by a test that checks what happens while they are down.
//! - [`Lock::DefaultSets`]: held shared by tests that read the `default` and `global`
//!   ManagedClusterSets, exclusively by the test that deletes and edits them.
//!
//! The locks are `flock`s on files in the temp directory, named after the hub's kubeconfig. On an
//! embedded hub (private to its test) they are no-ops. `ocm-testkit`'s fleets take
//! [`Lock::HubControllers`] shared by the same file name while their hub controllers run.

#![allow(clippy::unwrap_used, reason = "test helpers")]

use std::hash::{Hash, Hasher};

use ocm_controlplane::TestEnv;

/// What a lock protects.
#[derive(Clone, Copy, Debug)]
pub enum Lock {
    HubControllers,
    DefaultSets,
}

/// A held lock; released on drop.
#[derive(Debug)]
pub struct HubLock(#[allow(dead_code, reason = "held for its drop")] Option<std::fs::File>);

impl HubLock {
    /// Takes `lock` shared (many holders at once).
    pub async fn shared(hub: &TestEnv, lock: Lock) -> HubLock {
        Self::take(hub, lock, false).await
    }

    /// Takes `lock` exclusively (waits until no one else holds it).
    pub async fn exclusive(hub: &TestEnv, lock: Lock) -> HubLock {
        Self::take(hub, lock, true).await
    }

    async fn take(hub: &TestEnv, lock: Lock, exclusive: bool) -> HubLock {
        if hub.control_plane().is_some() {
            return HubLock(None);
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        hub.kubeconfig_path().hash(&mut hasher);
        let path =
            std::env::temp_dir().join(format!("ocm-core-tests-{:016x}-{lock:?}.lock", hasher.finish()));
        let file = tokio::task::spawn_blocking(move || {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .unwrap();
            if exclusive {
                file.lock().unwrap();
            } else {
                file.lock_shared().unwrap();
            }
            file
        })
        .await
        .unwrap();
        HubLock(Some(file))
    }
}
