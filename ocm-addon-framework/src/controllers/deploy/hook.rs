//! The default pre-delete hook syncer (addon-framework.md §2.3.6): Jobs and Pods annotated
//! `addon.open-cluster-management.io/addon-pre-delete` run in the work `addon-<addon>-pre-delete`
//! only once the ManagedClusterAddOn is being deleted; its finalizer holds the add-on until they
//! complete (`HookManifestCompleted`).

use kube::ResourceExt;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::names::conditions::addon::managed_cluster_addon::{self as addon_conditions, reasons};
use ocm_api::names::finalizers;

use super::apply;
use super::works::{self, Target};
use super::{DeployError, SyncInput, add_finalizer, deleting, remove_finalizer, set_condition};

/// Adds the hook finalizer while the add-on has hooks, applies the hook work during deletion,
/// and removes the finalizer once the hooks completed.
pub(super) async fn sync(input: &SyncInput<'_>, addon: &mut ManagedClusterAddOn) -> Result<(), DeployError> {
    let name = addon.name_any();
    let namespace = addon.namespace().unwrap_or_default();
    let hook = match works::render(input, addon, addon_conditions::MANIFEST_APPLIED).await? {
        Some(objects) if !objects.is_empty() => works::hook_work_for(
            input,
            addon,
            Target::Managed,
            &namespace,
            works::hook_prefix(&name),
            &objects,
            addon_conditions::MANIFEST_APPLIED,
        )?,
        _ => None,
    };
    let Some(hook) = hook else {
        remove_finalizer(addon, finalizers::ADDON_PRE_DELETE);
        return Ok(());
    };
    if add_finalizer(addon, finalizers::ADDON_PRE_DELETE) || !deleting(addon) {
        return Ok(());
    }
    let result = apply::apply_work(input.ctx, hook).await;
    apply::set_applied_condition(addon, addon_conditions::MANIFEST_APPLIED, &result);
    let applied = result?;
    set_completion(addon, &applied);
    if apply::hook_completed(&applied) {
        remove_finalizer(addon, finalizers::ADDON_PRE_DELETE);
    }
    Ok(())
}

/// Sets `HookManifestCompleted` from the hook work.
pub(super) fn set_completion(addon: &mut ManagedClusterAddOn, work: &ocm_api::work::v1::ManifestWork) {
    let name = work.name_any();
    if apply::hook_completed(work) {
        set_condition(
            addon,
            addon_conditions::HOOK_MANIFEST_COMPLETED,
            true,
            reasons::HOOK_MANIFEST_IS_COMPLETED,
            &format!("hook manifestWork {name} is completed."),
        );
    } else {
        set_condition(
            addon,
            addon_conditions::HOOK_MANIFEST_COMPLETED,
            false,
            reasons::HOOK_MANIFEST_IS_NOT_COMPLETED,
            &format!("hook manifestWork {name} is not completed."),
        );
    }
}
