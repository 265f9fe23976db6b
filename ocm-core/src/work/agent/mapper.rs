//! The discovery-based resource mapper of the work agent: which resource (plural) and scope a
//! manifest's `apiVersion` and `kind` have on the managed cluster.
//!
//! Upstream uses controller-runtime's dynamic REST mapper, which asks discovery again when a
//! kind is unknown (a CRD applied by the same work becomes usable once it is Established). This
//! mapper asks discovery for the one group-version of the kind (`GET /apis/<group>/<version>`)
//! and caches what it found for [`CACHE_TTL`]; a kind that was not found is never cached, so the
//! next reconcile asks again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::api::GroupVersionKind;
use kube::discovery::Scope;

/// How long a found mapping is reused before discovery is asked again.
pub const CACHE_TTL: Duration = Duration::from_secs(600);

/// What discovery says about one kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// The API group (empty for the core group).
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind.
    pub kind: String,
    /// The plural resource name, e.g. `configmaps`.
    pub resource: String,
    /// Whether objects of the kind live in namespaces.
    pub namespaced: bool,
}

impl Mapping {
    /// The `apiVersion` of the kind: `version` for the core group, else `group/version`.
    #[must_use]
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kube `ApiResource` of the kind, for a dynamic `Api`.
    #[must_use]
    pub fn api_resource(&self) -> kube::api::ApiResource {
        kube::api::ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: self.api_version(),
            kind: self.kind.clone(),
            plural: self.resource.clone(),
        }
    }
}

/// Why a kind could not be mapped.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MapperError {
    /// Discovery does not know the kind (upstream's message, which ends up in the manifest's
    /// Applied condition).
    #[error("the server doesn't have a resource type \"{kind}\"")]
    UnknownKind {
        /// The kind of the manifest.
        kind: String,
    },
}

/// Maps kinds to resources through discovery, with a cache.
pub struct ResourceMapper {
    client: kube::Client,
    cache: Mutex<HashMap<(String, String, String), (Mapping, Instant)>>,
}

impl std::fmt::Debug for ResourceMapper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceMapper").finish_non_exhaustive()
    }
}

impl ResourceMapper {
    /// A mapper asking the API server of `client`.
    #[must_use]
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The mapping of `group`/`version`/`kind`.
    ///
    /// # Errors
    /// [`MapperError::UnknownKind`] when discovery does not list the kind in that group-version
    /// (or discovery failed: upstream reports both the same way).
    pub async fn map(&self, group: &str, version: &str, kind: &str) -> Result<Mapping, MapperError> {
        let key = (group.to_string(), version.to_string(), kind.to_string());
        if let Some((mapping, at)) = self.lock().get(&key)
            && at.elapsed() < CACHE_TTL
        {
            return Ok(mapping.clone());
        }
        let gvk = GroupVersionKind::gvk(group, version, kind);
        match kube::discovery::pinned_kind(&self.client, &gvk).await {
            Ok((resource, capabilities)) => {
                let mapping = Mapping {
                    group: resource.group,
                    version: resource.version,
                    kind: resource.kind,
                    resource: resource.plural,
                    namespaced: capabilities.scope == Scope::Namespaced,
                };
                self.lock().insert(key, (mapping.clone(), Instant::now()));
                Ok(mapping)
            }
            Err(error) => {
                tracing::debug!(group, version, kind, %error, "discovery did not find the kind");
                self.lock().remove(&key);
                Err(MapperError::UnknownKind {
                    kind: kind.to_string(),
                })
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String, String), (Mapping, Instant)>> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_version_of_core_and_named_groups() {
        let mut mapping = Mapping {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            resource: "configmaps".into(),
            namespaced: true,
        };
        assert_eq!(mapping.api_version(), "v1");
        mapping.group = "apps".into();
        assert_eq!(mapping.api_version(), "apps/v1");
        assert_eq!(mapping.api_resource().plural, "configmaps");
        assert_eq!(mapping.api_resource().api_version, "apps/v1");
    }

    #[test]
    fn unknown_kind_message_is_upstreams() {
        let error = MapperError::UnknownKind { kind: "Foo".into() };
        assert_eq!(
            error.to_string(),
            "the server doesn't have a resource type \"Foo\""
        );
    }
}
