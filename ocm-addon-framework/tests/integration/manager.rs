//! The `AddonManager` itself: which add-ons it takes (addon-framework.md §2.1).

#![allow(clippy::unwrap_used, reason = "test")]

use ocm_addon_framework::{AddonManager, ManagerError};

use crate::support::{TestAddon, hub};

#[tokio::test]
async fn manager_refuses_an_addon_added_twice() {
    let hub = hub().await;
    let mut manager = AddonManager::new(hub.client.clone());
    manager.add_agent(TestAddon::named("dup").shared()).unwrap();
    let second = manager.add_agent(TestAddon::named("dup").shared());
    assert!(matches!(second, Err(ManagerError::AddAgentTwice(name)) if name == "dup"));
    assert_eq!(manager.addon_names().collect::<Vec<_>>(), vec!["dup"]);
}

#[tokio::test]
async fn manager_refuses_an_addon_without_name() {
    let hub = hub().await;
    let mut manager = AddonManager::new(hub.client.clone());
    let empty = manager.add_agent(TestAddon::named("").shared());
    assert!(matches!(empty, Err(ManagerError::AddAgentWithoutName)));
    assert_eq!(manager.addon_names().count(), 0);
    assert!(matches!(manager.run().await, Err(ManagerError::RunWithoutAddons)));
}
