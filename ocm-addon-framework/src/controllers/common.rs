//! What the registration, CSR and config controllers share: the ManagedClusterAddOn filter of
//! the manager, the ClusterManagementAddOn owner gate, status merge patches sent only on change,
//! and a per-object retry backoff.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::names::values;
use serde_json::{Map, Value};

use crate::manager::{AddonFilter, Context};

/// The add-on API group.
pub(crate) const ADDON_GROUP: &str = "addon.open-cluster-management.io";

/// Whether the manager's filter lets `addon` through (upstream's `FilterTemplateBasedAddOns`
/// in template mode: an `addontemplates` config reference with a desired spec hash).
pub(crate) fn accepted(filter: AddonFilter, addon: &ManagedClusterAddOn) -> bool {
    match filter {
        AddonFilter::All => true,
        AddonFilter::TemplateBased => addon
            .status
            .as_ref()
            .and_then(|s| s.config_references.as_deref())
            .unwrap_or_default()
            .iter()
            .any(|r| {
                r.group.as_deref() == Some(ADDON_GROUP)
                    && r.resource == values::addon::ADDON_TEMPLATES
                    && r.desired_config
                        .as_ref()
                        .and_then(|d| d.spec_hash.as_deref())
                        .is_some_and(|h| !h.is_empty())
            }),
    }
}

/// Whether `addon` has a ClusterManagementAddOn owner of its own name (upstream's
/// `IsOwnedByCMA`).
pub(crate) fn owned_by_cma(addon: &ManagedClusterAddOn) -> bool {
    let name = addon.metadata.name.as_deref().unwrap_or_default();
    addon
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|o| o.kind == "ClusterManagementAddOn" && o.name == name)
}

/// Waits until the shared caches of ManagedClusters, ManagedClusterAddOns,
/// ClusterManagementAddOns and CSRs have listed once (as upstream waits for its informers before
/// starting controllers): a controller that looked up an object of a cache not listed yet
/// would take it for missing and drop its key until the next event.
pub(crate) async fn wait_for_caches(ctx: &Context) {
    let waits = [
        ctx.clusters.wait_until_ready().await,
        ctx.managed_addons.wait_until_ready().await,
        ctx.cluster_management_addons.wait_until_ready().await,
        ctx.csrs.wait_until_ready().await,
    ];
    if waits.iter().any(Result::is_err) {
        tracing::warn!("a shared cache stopped before it was ready");
    }
}

/// Now, for condition transition times.
pub(crate) fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

/// The JSON merge patch turning status `old` into `new` (both JSON objects), with the object's
/// `uid` and `resourceVersion` for optimistic concurrency; `None` when nothing changed. Changed
/// top-level status fields are sent whole, removed ones as `null`.
pub(crate) fn status_patch(
    old: &Value,
    new: &Value,
    uid: Option<&str>,
    resource_version: Option<&str>,
) -> Option<Value> {
    let empty = Map::new();
    let old = old.as_object().unwrap_or(&empty);
    let new = new.as_object().unwrap_or(&empty);
    let mut status = Map::new();
    for (key, value) in new {
        if old.get(key) != Some(value) {
            status.insert(key.clone(), value.clone());
        }
    }
    for key in old.keys() {
        if !new.contains_key(key) {
            status.insert(key.clone(), Value::Null);
        }
    }
    if status.is_empty() {
        return None;
    }
    Some(serde_json::json!({
        "metadata": {"uid": uid, "resourceVersion": resource_version},
        "status": status,
    }))
}

/// A per-object exponential retry delay: 5 ms doubling to 1000 s, reset on success.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    /// The delay before retrying `key` after one more failure.
    pub(crate) fn failed(&self, key: &str) -> Duration {
        let mut failures = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = failures.entry(key.to_string()).or_insert(0);
        *n = n.saturating_add(1);
        let millis = 5u64.saturating_mul(1u64 << (*n - 1).min(20));
        Duration::from_millis(millis).min(Duration::from_secs(1000))
    }

    /// Forgets the failures of `key`.
    pub(crate) fn succeeded(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use super::*;
    use serde_json::json;

    #[test]
    fn status_patch_sends_changed_and_removed_fields_only() {
        let old = json!({"namespace": "a", "registrations": [1], "conditions": [2]});
        let new = json!({"namespace": "b", "conditions": [2]});
        let patch = status_patch(&old, &new, Some("u"), Some("7")).unwrap();
        assert_eq!(
            patch,
            json!({"metadata": {"uid": "u", "resourceVersion": "7"},
                   "status": {"namespace": "b", "registrations": null}})
        );
        assert_eq!(status_patch(&new, &new, None, None), None);
    }

    #[test]
    fn backoff_doubles_and_resets() {
        let b = Backoff::default();
        assert_eq!(b.failed("k"), Duration::from_millis(5));
        assert_eq!(b.failed("k"), Duration::from_millis(10));
        b.succeeded("k");
        assert_eq!(b.failed("k"), Duration::from_millis(5));
        for _ in 0..40 {
            b.failed("x");
        }
        assert_eq!(b.failed("x"), Duration::from_secs(1000));
    }

    #[test]
    fn template_filter_needs_an_addon_template_with_a_hash() {
        let with = |refs: serde_json::Value| -> ManagedClusterAddOn {
            serde_json::from_value(json!({"metadata": {"name": "a", "namespace": "c"}, "spec": {},
                "status": {"configReferences": refs}}))
            .unwrap()
        };
        let hashed = with(json!([{"group": ADDON_GROUP, "resource": "addontemplates",
            "desiredConfig": {"name": "t", "specHash": "abc"}}]));
        let unhashed = with(json!([{"group": ADDON_GROUP, "resource": "addontemplates",
            "desiredConfig": {"name": "t", "specHash": ""}}]));
        let other = with(
            json!([{"group": ADDON_GROUP, "resource": "addondeploymentconfigs",
            "desiredConfig": {"name": "t", "specHash": "abc"}}]),
        );
        assert!(accepted(AddonFilter::TemplateBased, &hashed));
        assert!(!accepted(AddonFilter::TemplateBased, &unhashed));
        assert!(!accepted(AddonFilter::TemplateBased, &other));
        assert!(accepted(AddonFilter::All, &other));
    }

    #[test]
    fn owner_gate_needs_a_cma_of_the_same_name() {
        let mut addon: ManagedClusterAddOn = serde_json::from_value(json!({
            "metadata": {"name": "a", "namespace": "c",
                "ownerReferences": [{"apiVersion": "v1", "kind": "ClusterManagementAddOn", "name": "b", "uid": "1"}]},
            "spec": {}})).unwrap();
        assert!(!owned_by_cma(&addon));
        addon.metadata.owner_references.as_mut().unwrap()[0].name = "a".into();
        assert!(owned_by_cma(&addon));
    }
}

/// Whether `error` or one of its sources is an API conflict (409): another writer changed the
/// object first, the reconcile runs again on a fresh read — expected, not worth a warning.
pub(crate) fn is_conflict(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(kube::Error::Api(status)) = error.downcast_ref::<kube::Error>()
            && status.code == 409
        {
            return true;
        }
        current = error.source();
    }
    false
}

/// Logs a failed reconcile of `object`: a warning, or at debug level for a conflict.
pub(crate) fn log_failure(error: &(dyn std::error::Error + 'static), object: &str, what: &str) {
    if is_conflict(error) {
        tracing::debug!(%error, object, "{what} (conflict, retried)");
    } else {
        tracing::warn!(%error, object, "{what}");
    }
}

#[cfg(test)]
mod conflict_tests {
    use super::is_conflict;

    #[derive(Debug, thiserror::Error)]
    #[error("patch failed")]
    struct Wrapped(#[source] kube::Error);

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            ..kube::core::Status::default()
        }))
    }

    #[test]
    fn conflicts_are_found_through_the_source_chain() {
        assert!(is_conflict(&Wrapped(api_error(409))));
        assert!(!is_conflict(&Wrapped(api_error(500))));
        assert!(!is_conflict(&std::io::Error::other("x")));
    }
}
