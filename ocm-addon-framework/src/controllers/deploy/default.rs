//! The default syncer (addon-framework.md §2.3.5): the deploy works in the cluster namespace,
//! owned by the ManagedClusterAddOn, and `ManifestApplied`.

use kube::ResourceExt;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::names::conditions::addon::managed_cluster_addon as addon_conditions;
use ocm_api::names::finalizers;

use super::apply::{self, Index};
use super::works::{self, Target};
use super::{DeployError, SyncInput, deleting, has_finalizer};

/// Keeps the deploy works of the managed cluster. Without a pre-delete hook finalizer nothing is
/// done while the add-on or the cluster is being deleted (the works go with the add-on through
/// their owner reference, and stay while the cluster goes); with it, the works stay applied so
/// the agent runs while the hook cleans up.
pub(super) async fn sync(input: &SyncInput<'_>, addon: &mut ManagedClusterAddOn) -> Result<(), DeployError> {
    if !has_finalizer(addon, finalizers::ADDON_PRE_DELETE) && (deleting(addon) || deleting(input.cluster)) {
        return Ok(());
    }
    let name = addon.name_any();
    let namespace = addon.namespace().unwrap_or_default();
    let existing = apply::cached_works(input.ctx, Index::Addon, &namespace, &name);
    let Some(objects) = works::render(input, addon, addon_conditions::MANIFEST_APPLIED).await? else {
        return Ok(());
    };
    let built = works::deploy_works_for(
        input,
        addon,
        Target::Managed,
        &namespace,
        &works::deploy_prefix(&name),
        &objects,
        existing,
        addon_conditions::MANIFEST_APPLIED,
    )?;
    apply::apply_and_delete(input.ctx, addon, built, addon_conditions::MANIFEST_APPLIED).await
}
