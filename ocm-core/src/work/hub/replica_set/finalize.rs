//! The finalizer `work.open-cluster-management.io/manifest-work-cleanup` of a
//! ManifestWorkReplicaSet, and its cleanup.
//!
//! Every replica set not being deleted gets the finalizer. When one is deleted its works are
//! deleted; with `cascadeDeletionPolicy: Background` (the default) the finalizer goes at once,
//! with `Foreground` only once none of its works is left (their deletion events bring the
//! replica set back here).

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use ocm_api::names::finalizers::MANIFEST_WORK_REPLICA_SET_CLEANUP;
use ocm_api::work::v1alpha1::{CascadeDeletionPolicy, ManifestWorkReplicaSet};
use serde_json::json;

use super::deploy::delete_work;
use super::works::ReplicaSetWorks;
use super::{Context, ReplicaSetError};

/// Writes `finalizers` on `set` (with its resourceVersion, so that a stale copy is refused).
async fn patch_finalizers(
    ctx: &Context,
    set: &ManifestWorkReplicaSet,
    finalizers: &[String],
) -> Result<(), ReplicaSetError> {
    let namespace = set.namespace().unwrap_or_default();
    let patch = json!({"metadata": {"uid": set.uid(), "resourceVersion": set.resource_version(),
        "finalizers": finalizers}});
    Api::<ManifestWorkReplicaSet>::namespaced(ctx.client.clone(), &namespace)
        .patch(&set.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| ReplicaSetError::PatchFinalizers {
            replica_set: format!("{namespace}/{}", set.name_any()),
            source,
        })?;
    Ok(())
}

/// Adds the finalizer when it is missing; tells whether it did (the reconcile then ends: the
/// update brings the replica set back).
pub(super) async fn ensure_finalizer(
    ctx: &Context,
    set: &ManifestWorkReplicaSet,
) -> Result<bool, ReplicaSetError> {
    if set
        .finalizers()
        .iter()
        .any(|f| f == MANIFEST_WORK_REPLICA_SET_CLEANUP)
    {
        return Ok(false);
    }
    let mut finalizers = set.finalizers().to_vec();
    finalizers.push(MANIFEST_WORK_REPLICA_SET_CLEANUP.to_owned());
    patch_finalizers(ctx, set, &finalizers).await?;
    Ok(true)
}

/// Cleans up after a deleted replica set: deletes its works, then removes the finalizer
/// (under `Foreground`, once no work is left).
pub(super) async fn finalize(
    ctx: &Context,
    set: &ManifestWorkReplicaSet,
    works: &ReplicaSetWorks,
) -> Result<(), ReplicaSetError> {
    if !set
        .finalizers()
        .iter()
        .any(|f| f == MANIFEST_WORK_REPLICA_SET_CLEANUP)
    {
        return Ok(());
    }
    let mut errors = Vec::new();
    for work in works.all() {
        if let Err(error) = delete_work(ctx, work).await {
            errors.push(error);
        }
    }
    if !errors.is_empty() {
        return Err(ReplicaSetError::several(errors));
    }
    let foreground = set.spec.cascade_deletion_policy == Some(CascadeDeletionPolicy::Foreground);
    if foreground && !works.all().is_empty() {
        tracing::debug!(
            works = works.all().len(),
            "waiting for the works to be deleted (Foreground)"
        );
        return Ok(());
    }
    let remaining: Vec<String> = set
        .finalizers()
        .iter()
        .filter(|f| *f != MANIFEST_WORK_REPLICA_SET_CLEANUP)
        .cloned()
        .collect();
    patch_finalizers(ctx, set, &remaining).await
}
