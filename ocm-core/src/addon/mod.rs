//! The hub's general add-on manager (upstream's `addon-manager`, addon-framework.md §5–§6): the
//! controllers every hub runs for all add-ons, beside the add-ons' own `AddonManager`s.
//!
//! | module | what it does |
//! |---|---|
//! | [`owner`] | makes each ManagedClusterAddOn owned by its ClusterManagementAddOn (§5.5), which the add-on framework waits for before registering and deploying an add-on |
//!
//! Install strategies, config resolution and rollouts (§5.2, §6) are not here yet.

pub mod owner;

use ocm_api::addon::v1beta1::ClusterManagementAddOn;
use ocm_api::names::annotations::{ADDON_LIFECYCLE, ADDON_LIFECYCLE_ADDON_MANAGER};

/// Whether the general add-on manager handles this ClusterManagementAddOn (upstream's
/// `ManagedByAddonManager`): without the annotation `addon.open-cluster-management.io/lifecycle`,
/// or with the value `addon-manager`. Any other value (`self`, empty, a typo) opts out.
#[must_use]
pub fn managed_by_addon_manager(addon: &ClusterManagementAddOn) -> bool {
    addon
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ADDON_LIFECYCLE))
        .is_none_or(|value| value == ADDON_LIFECYCLE_ADDON_MANAGER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_lifecycle(value: Option<&str>) -> ClusterManagementAddOn {
        let mut addon = ClusterManagementAddOn::default();
        if let Some(value) = value {
            addon.metadata.annotations = Some([(ADDON_LIFECYCLE.to_string(), value.to_string())].into());
        }
        addon
    }

    #[test]
    fn absent_or_addon_manager_is_managed_anything_else_opts_out() {
        assert!(managed_by_addon_manager(&with_lifecycle(None)));
        assert!(managed_by_addon_manager(&with_lifecycle(Some("addon-manager"))));
        assert!(!managed_by_addon_manager(&with_lifecycle(Some("self"))));
        assert!(!managed_by_addon_manager(&with_lifecycle(Some(""))));
    }
}
