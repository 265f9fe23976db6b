//! The hosted pre-delete hook syncer (addon-framework.md §2.4): hook objects located `hosting`
//! run in the work `addon-<addon>-pre-delete-hosting-<cluster>` in the hosting cluster's
//! namespace, held by the finalizer `addon.open-cluster-management.io/hosting-addon-pre-delete`;
//! once `HookManifestCompleted` is True the work is deleted and never created again.

use kube::ResourceExt;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::names::conditions::addon::managed_cluster_addon as addon_conditions;
use ocm_api::names::finalizers;

use super::apply::{self, Index};
use super::works::{self, Target};
use super::{
    DeployContext, DeployError, SyncInput, add_finalizer, condition, deleting, has_finalizer,
    remove_finalizer,
};
use crate::agent::InstallMode;

/// Runs the hosting hooks of a Hosted add-on being deleted.
pub(super) async fn sync(input: &SyncInput<'_>, addon: &mut ManagedClusterAddOn) -> Result<(), DeployError> {
    if input.options.hosted_mode.is_none() {
        return Ok(());
    }
    let InstallMode::Hosted { hosting_cluster } = &input.mode else {
        return Ok(());
    };
    let hosting = input.ctx.cluster(hosting_cluster);
    if hosting.as_deref().is_none_or(deleting) {
        cleanup(input.ctx, addon).await?;
        remove_finalizer(addon, finalizers::ADDON_HOSTING_PRE_DELETE);
        return Ok(());
    }
    let name = addon.name_any();
    let cluster = addon.namespace().unwrap_or_default();
    let hook = match works::render(input, addon, addon_conditions::HOSTING_MANIFEST_APPLIED).await? {
        Some(objects) if !objects.is_empty() => works::hook_work_for(
            input,
            addon,
            Target::Hosting,
            hosting_cluster,
            works::hosting_hook_name(&name, &cluster),
            &objects,
            addon_conditions::HOSTING_MANIFEST_APPLIED,
        )?,
        _ => None,
    };
    let Some(hook) = hook else {
        remove_finalizer(addon, finalizers::ADDON_HOSTING_PRE_DELETE);
        return Ok(());
    };
    if !deleting(addon) {
        add_finalizer(addon, finalizers::ADDON_HOSTING_PRE_DELETE);
        return Ok(());
    }
    if !has_finalizer(addon, finalizers::ADDON_HOSTING_PRE_DELETE) {
        return Ok(());
    }
    if condition(addon, addon_conditions::HOOK_MANIFEST_COMPLETED)
        .is_some_and(|c| c.status() == Some(ocm_api::conditions::Status::True))
    {
        cleanup(input.ctx, addon).await?;
        remove_finalizer(addon, finalizers::ADDON_HOSTING_PRE_DELETE);
        return Ok(());
    }
    let result = apply::apply_work(input.ctx, hook).await;
    apply::set_applied_condition(addon, addon_conditions::HOSTING_MANIFEST_APPLIED, &result);
    super::hook::set_completion(addon, &result?);
    Ok(())
}

/// Deletes the hosting hook works, if the hook finalizer says there may be some.
async fn cleanup(ctx: &DeployContext, addon: &ManagedClusterAddOn) -> Result<(), DeployError> {
    if !has_finalizer(addon, finalizers::ADDON_HOSTING_PRE_DELETE) {
        return Ok(());
    }
    let cluster = addon.namespace().unwrap_or_default();
    let mut first_error = None;
    for work in apply::cached_works(ctx, Index::HostedHook, &cluster, &addon.name_any()) {
        let namespace = work.namespace().unwrap_or_default();
        if let Err(error) = apply::delete_work(ctx, &namespace, &work.name_any()).await {
            first_error.get_or_insert(error);
        }
    }
    first_error.map_or(Ok(()), Err)
}
