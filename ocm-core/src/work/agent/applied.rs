//! The AppliedManifestWork of a ManifestWork (ocm-core.md §3.2, §3.3 step 8, §3.8): ensuring it
//! exists (labels the work gains later are added to it: upstream's integration tests expect
//! that, though its code copies them only at creation), recording what the work applied in `status.appliedResources`, and deleting what the
//! work no longer holds — only resources still owned by this AppliedManifestWork with the UID
//! recorded when they were applied, so nothing the work did not create is ever deleted.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions,
    PropagationPolicy,
};
use kube::{Api, ResourceExt};
use ocm_api::names::finalizers;
use ocm_api::work::v1::{
    AppliedManifestResourceMeta, AppliedManifestWork, AppliedManifestWorkSpec, ManifestWork,
};
use serde_json::json;

use super::{Context, is_status, patch};

/// The apiVersion of AppliedManifestWork owner references.
pub(crate) const OWNER_API_VERSION: &str = "work.open-cluster-management.io/v1";
/// The kind of AppliedManifestWork owner references.
pub(crate) const OWNER_KIND: &str = "AppliedManifestWork";

/// What failed while ensuring an AppliedManifestWork or deleting what it applied.
#[derive(Debug, thiserror::Error)]
pub enum DeleteResourcesError {
    /// Reading a resource failed.
    #[error("failed to get resource {resource} with key {namespace}/{name}: {source}")]
    Get {
        /// group/version/resource.
        resource: String,
        /// The namespace ("" for cluster-scoped).
        namespace: String,
        /// The name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Removing this AppliedManifestWork's owner reference from a shared resource failed.
    #[error("failed to remove owner from resource {resource} with key {namespace}/{name}: {source}")]
    RemoveOwner {
        /// group/version/resource.
        resource: String,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Deleting a resource failed.
    #[error("failed to delete resource {resource} with key {namespace}/{name}: {source}")]
    Delete {
        /// group/version/resource.
        resource: String,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Several of the above.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<DeleteResourcesError>),
}

impl DeleteResourcesError {
    /// One error for a list of them, or `None` for none.
    pub(crate) fn aggregate(mut errors: Vec<Self>) -> Option<Self> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(Self::Several(errors)),
        }
    }
}

/// What ensuring the AppliedManifestWork failed at.
#[derive(Debug, thiserror::Error)]
pub enum EnsureAppliedError {
    /// Creating it failed.
    #[error("creating AppliedManifestWork {name}: {source}")]
    Create {
        /// The AppliedManifestWork.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Patching its spec or labels failed.
    #[error("patching the spec or labels of AppliedManifestWork {name}: {source}")]
    PatchSpec {
        /// The AppliedManifestWork.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

/// The owner reference of `amw` written on resources it owns (not a controller reference, so
/// that several works may own one resource).
pub(crate) fn owner_ref(amw: &AppliedManifestWork) -> OwnerReference {
    OwnerReference {
        api_version: OWNER_API_VERSION.to_string(),
        kind: OWNER_KIND.to_string(),
        name: amw.name_any(),
        uid: amw.metadata.uid.clone().unwrap_or_default(),
        ..OwnerReference::default()
    }
}

/// Ensures the AppliedManifestWork of `work` exists with upstream's name, labels (copied at
/// creation only), finalizer and spec; an existing one gets its spec patched if it differs.
pub(crate) async fn ensure(
    ctx: &Context,
    work: &ManifestWork,
) -> Result<AppliedManifestWork, EnsureAppliedError> {
    let name = ctx.applied_name(&work.name_any());
    let spec = AppliedManifestWorkSpec {
        agent_id: Some(ctx.agent_id.clone()),
        hub_hash: ctx.hub_hash.clone(),
        manifest_work_name: work.name_any(),
    };
    let api = ctx.applied_api();
    let existing = match ctx.applied.get(&kube::runtime::reflector::ObjectRef::new(&name)) {
        Some(existing) => Some((*existing).clone()),
        // The store may not have seen one this agent created a moment ago.
        None => api
            .get_opt(&name)
            .await
            .map_err(|source| EnsureAppliedError::Create {
                name: name.clone(),
                source,
            })?,
    };
    let Some(existing) = existing else {
        let mut required = AppliedManifestWork::new(&name, spec);
        required.metadata.labels = work.metadata.labels.clone().filter(|l| !l.is_empty());
        required.metadata.finalizers = Some(vec![finalizers::APPLIED_MANIFEST_WORK_CLEANUP.to_string()]);
        return match api.create(&PostParams::default(), &required).await {
            Ok(created) => Ok(created),
            Err(error) if is_status(&error, 409) => {
                api.get(&name).await.map_err(|source| EnsureAppliedError::Create {
                    name: name.clone(),
                    source,
                })
            }
            Err(source) => Err(EnsureAppliedError::Create { name, source }),
        };
    };
    patch::patch_spec(&api, &existing, &existing.spec, &spec)
        .await
        .map_err(|source| EnsureAppliedError::PatchSpec {
            name: name.clone(),
            source,
        })?;
    // Labels the work gained or changed since are added (none are removed: others may label it).
    let missing: BTreeMap<&String, &String> = work
        .labels()
        .iter()
        .filter(|(key, value)| existing.labels().get(*key) != Some(*value))
        .collect();
    let mut updated = existing;
    if !missing.is_empty() {
        let patch = json!({"metadata": {"labels": missing}});
        updated = api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| EnsureAppliedError::PatchSpec {
                name: name.clone(),
                source,
            })?;
    }
    updated.spec = spec;
    Ok(updated)
}

/// The outcome of deleting applied resources: those still going away, and what failed.
#[derive(Debug, Default)]
pub(crate) struct Deletion {
    /// Resources deleted (or already being deleted) that still exist.
    pub(crate) pending: Vec<AppliedManifestResourceMeta>,
    /// What failed, if anything.
    pub(crate) error: Option<DeleteResourcesError>,
}

/// The dynamic API of a recorded resource.
pub(crate) fn resource_api(ctx: &Context, resource: &AppliedManifestResourceMeta) -> Api<DynamicObject> {
    let group = resource.group.clone().unwrap_or_default();
    let api_resource = ApiResource {
        api_version: if group.is_empty() {
            resource.version.clone()
        } else {
            format!("{group}/{}", resource.version)
        },
        group,
        version: resource.version.clone(),
        kind: String::new(),
        plural: resource.resource.clone(),
    };
    match resource.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        Some(namespace) => Api::namespaced_with(ctx.spoke.clone(), namespace, &api_resource),
        None => Api::all_with(ctx.spoke.clone(), &api_resource),
    }
}

fn gvr_string(resource: &AppliedManifestResourceMeta) -> String {
    let group = resource.group.as_deref().unwrap_or_default();
    if group.is_empty() {
        format!("/{}, Resource={}", resource.version, resource.resource)
    } else {
        format!("{group}/{}, Resource={}", resource.version, resource.resource)
    }
}

/// Deletes `resources` on behalf of `amw` (upstream `DeleteAppliedResources`): a resource that
/// is gone is done; one not owned by `amw` is forgotten; one also owned by another
/// AppliedManifestWork only loses `amw`'s owner reference; one whose UID differs from the
/// recorded one is forgotten; one already being deleted is pending; anything else is deleted
/// (UID precondition, background propagation) and pending.
pub(crate) async fn delete_applied_resources(
    ctx: &Context,
    amw: &AppliedManifestWork,
    resources: &[AppliedManifestResourceMeta],
) -> Deletion {
    let owner = owner_ref(amw);
    let mut deletion = Deletion::default();
    let mut errors = Vec::new();
    for resource in resources {
        let api = resource_api(ctx, resource);
        let namespace = resource.namespace.clone().unwrap_or_default();
        let live = match api.get_opt(&resource.name).await {
            Ok(Some(live)) => live,
            Ok(None) => {
                tracing::info!(resource = %gvr_string(resource), namespace, name = %resource.name, "resource is removed");
                continue;
            }
            Err(source) => {
                errors.push(DeleteResourcesError::Get {
                    resource: gvr_string(resource),
                    namespace,
                    name: resource.name.clone(),
                    source,
                });
                continue;
            }
        };
        let owners = live.metadata.owner_references.clone().unwrap_or_default();
        if !owners.iter().any(|o| o.uid == owner.uid) {
            continue;
        }
        if owners
            .iter()
            .any(|o| o.api_version == OWNER_API_VERSION && o.kind == OWNER_KIND && o.uid != owner.uid)
        {
            let remaining: Vec<&OwnerReference> = owners.iter().filter(|o| o.uid != owner.uid).collect();
            let patch = json!({"metadata": {
                "uid": live.metadata.uid,
                "resourceVersion": live.metadata.resource_version,
                "ownerReferences": remaining,
            }});
            if let Err(source) = api
                .patch(
                    &resource.name,
                    &PatchParams {
                        field_manager: Some(super::FIELD_MANAGER.to_string()),
                        ..PatchParams::default()
                    },
                    &Patch::Merge(&patch),
                )
                .await
            {
                errors.push(DeleteResourcesError::RemoveOwner {
                    resource: gvr_string(resource),
                    namespace,
                    name: resource.name.clone(),
                    source,
                });
            }
            continue;
        }
        if resource.uid.as_deref() != live.metadata.uid.as_deref() {
            continue;
        }
        if live.metadata.deletion_timestamp.is_some() {
            deletion.pending.push(resource.clone());
            continue;
        }
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Some(Preconditions {
                uid: resource.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&resource.name, &params).await {
            Ok(_) => {
                tracing::info!(resource = %gvr_string(resource), namespace, name = %resource.name, applied = %amw.name_any(), "deleted resource");
                deletion.pending.push(resource.clone());
            }
            Err(error) if is_status(&error, 404) || is_status(&error, 409) => {}
            Err(source) => errors.push(DeleteResourcesError::Delete {
                resource: gvr_string(resource),
                namespace,
                name: resource.name.clone(),
                source,
            }),
        }
    }
    deletion.error = DeleteResourcesError::aggregate(errors);
    deletion
}

/// The identity of a recorded resource, version ignored (upstream `ResourceIdentifier`).
fn identity(resource: &AppliedManifestResourceMeta) -> (String, String, String, String) {
    (
        resource.group.clone().unwrap_or_default(),
        resource.resource.clone(),
        resource.namespace.clone().unwrap_or_default(),
        resource.name.clone(),
    )
}

/// The recorded resources no longer in `current` (compared without version).
pub(crate) fn untracked(
    recorded: &[AppliedManifestResourceMeta],
    current: &[AppliedManifestResourceMeta],
) -> Vec<AppliedManifestResourceMeta> {
    let current: HashSet<_> = current.iter().map(identity).collect();
    recorded
        .iter()
        .filter(|r| !current.contains(&identity(r)))
        .cloned()
        .collect()
}

/// Sorts applied resources by group, version, resource, namespace, name (upstream's order).
pub(crate) fn sort(resources: &mut [AppliedManifestResourceMeta]) {
    resources.sort_by(|a, b| {
        let key = |r: &AppliedManifestResourceMeta| {
            (
                r.group.clone().unwrap_or_default(),
                r.version.clone(),
                r.resource.clone(),
                r.namespace.clone().unwrap_or_default(),
                r.name.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(group: &str, version: &str, resource: &str, ns: &str, name: &str) -> AppliedManifestResourceMeta {
        AppliedManifestResourceMeta {
            group: Some(group.to_string()).filter(|g| !g.is_empty()),
            version: version.into(),
            resource: resource.into(),
            namespace: Some(ns.to_string()).filter(|n| !n.is_empty()),
            name: name.into(),
            uid: Some(format!("uid-{name}")),
        }
    }

    #[test]
    fn untracked_ignores_the_version() {
        let recorded = vec![
            meta("apps", "v1", "deployments", "ns", "d"),
            meta("", "v1", "configmaps", "ns", "gone"),
        ];
        let current = vec![meta("apps", "v1beta1", "deployments", "ns", "d")];
        let left = untracked(&recorded, &current);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].name, "gone");
    }

    #[test]
    fn sorted_by_group_version_resource_namespace_name() {
        let mut resources = vec![
            meta("rbac.authorization.k8s.io", "v1", "roles", "ns", "r"),
            meta("", "v1", "configmaps", "b", "c"),
            meta("", "v1", "configmaps", "a", "z"),
            meta("apps", "v1", "deployments", "ns", "d"),
        ];
        sort(&mut resources);
        let names: Vec<_> = resources.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["z", "c", "d", "r"]);
    }

    #[test]
    fn errors_aggregate() {
        assert!(DeleteResourcesError::aggregate(Vec::new()).is_none());
    }
}
