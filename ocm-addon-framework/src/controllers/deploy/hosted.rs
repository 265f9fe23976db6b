//! The hosted syncer (addon-framework.md §2.4): in Hosted mode the objects located `hosting` go
//! to the hosting cluster's namespace as works `addon-<addon>-deploy-hosting-<cluster>-<i>`,
//! labelled with the add-on's namespace and cleaned up through the finalizer
//! `addon.open-cluster-management.io/hosting-manifests-cleanup` (an owner reference cannot cross
//! namespaces).

use kube::ResourceExt;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::names::conditions::addon::managed_cluster_addon::{self as addon_conditions, reasons};
use ocm_api::names::finalizers;

use super::apply::{self, Index};
use super::works::{self, Target};
use super::{
    DeployContext, DeployError, SyncInput, add_finalizer, deleting, has_finalizer, remove_finalizer,
    set_condition,
};
use crate::agent::InstallMode;

/// Keeps the hosting works of a Hosted add-on, and removes them when the add-on leaves Hosted
/// mode, its hosting cluster is gone or being deleted, or the add-on is being deleted.
pub(super) async fn sync(input: &SyncInput<'_>, addon: &mut ManagedClusterAddOn) -> Result<(), DeployError> {
    if input.options.hosted_mode.is_none() {
        return Ok(());
    }
    let InstallMode::Hosted { hosting_cluster } = &input.mode else {
        cleanup(input.ctx, addon).await?;
        remove_finalizer(addon, finalizers::ADDON_HOSTING_MANIFESTS_CLEANUP);
        return Ok(());
    };
    let Some(hosting) = input.ctx.cluster(hosting_cluster) else {
        cleanup(input.ctx, addon).await?;
        set_condition(
            addon,
            addon_conditions::HOSTING_CLUSTER_VALIDITY,
            false,
            reasons::HOSTING_CLUSTER_INVALID,
            &format!("hosting cluster {hosting_cluster} is not a managed cluster of the hub"),
        );
        remove_finalizer(addon, finalizers::ADDON_HOSTING_MANIFESTS_CLEANUP);
        return Ok(());
    };
    set_condition(
        addon,
        addon_conditions::HOSTING_CLUSTER_VALIDITY,
        true,
        reasons::HOSTING_CLUSTER_VALID,
        &format!("hosting cluster {hosting_cluster} is a managed cluster of the hub"),
    );
    if !has_finalizer(addon, finalizers::ADDON_HOSTING_PRE_DELETE) {
        if deleting(hosting.as_ref()) || deleting(addon) {
            cleanup(input.ctx, addon).await?;
            remove_finalizer(addon, finalizers::ADDON_HOSTING_MANIFESTS_CLEANUP);
            return Ok(());
        }
        if deleting(input.cluster) {
            return Ok(());
        }
    }
    if add_finalizer(addon, finalizers::ADDON_HOSTING_MANIFESTS_CLEANUP) {
        return Ok(());
    }
    let name = addon.name_any();
    let cluster = addon.namespace().unwrap_or_default();
    let existing = apply::cached_works(input.ctx, Index::HostedAddon, &cluster, &name);
    let Some(objects) = works::render(input, addon, addon_conditions::HOSTING_MANIFEST_APPLIED).await? else {
        return Ok(());
    };
    let built = works::deploy_works_for(
        input,
        addon,
        Target::Hosting,
        hosting_cluster,
        &works::hosting_deploy_prefix(&name, &cluster),
        &objects,
        existing,
        addon_conditions::HOSTING_MANIFEST_APPLIED,
    )?;
    apply::apply_and_delete(
        input.ctx,
        addon,
        built,
        addon_conditions::HOSTING_MANIFEST_APPLIED,
    )
    .await
}

/// Deletes the hosting deploy works, if the cleanup finalizer says there may be some.
async fn cleanup(ctx: &DeployContext, addon: &ManagedClusterAddOn) -> Result<(), DeployError> {
    if !has_finalizer(addon, finalizers::ADDON_HOSTING_MANIFESTS_CLEANUP) {
        return Ok(());
    }
    let cluster = addon.namespace().unwrap_or_default();
    let mut first_error = None;
    for work in apply::cached_works(ctx, Index::HostedAddon, &cluster, &addon.name_any()) {
        let namespace = work.namespace().unwrap_or_default();
        if let Err(error) = apply::delete_work(ctx, &namespace, &work.name_any()).await {
            first_error.get_or_insert(error);
        }
    }
    first_error.map_or(Ok(()), Err)
}
