//! Add-on health on the hub (ocm-core.md §2.10).
//!
//! - Health check: while a cluster's `ManagedClusterConditionAvailable` is `Unknown`, every
//!   ManagedClusterAddOn in the cluster namespace gets `Available` with the cluster condition's
//!   status, reason and message (event `ManagedClusterAddOnStatusUpdated`). `True` and `False`
//!   cluster states are left to the add-ons.
//! - Feature discovery: a cluster that has an Available condition and is not being deleted carries
//!   `feature.open-cluster-management.io/addon-<name>` for each of its add-ons: `available` when the
//!   add-on's `Available` is `True`, `unhealthy` when `False`, `unreachable` when missing or
//!   `Unknown`; labels of add-ons that are gone or being deleted are removed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::events::EventRecorder;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Resource, ResourceExt};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::conditions::{ConditionList, Status};
use ocm_api::meta::Condition;
use ocm_api::names::conditions::addon::managed_cluster_addon;
use ocm_api::names::conditions::cluster::managed_cluster;
use ocm_api::names::labels::{
    ADDON_FEATURE_AVAILABLE, ADDON_FEATURE_PREFIX, ADDON_FEATURE_UNHEALTHY, ADDON_FEATURE_UNREACHABLE,
    addon_feature,
};
use serde_json::json;

use super::informers::{HubInformers, run_alone};
use super::own_writes::OwnWrites;
use crate::metrics::ControllerMetrics;

const CONTROLLER: &str = "addon-status";

/// How the add-on status controller behaves.
#[derive(Debug, Clone)]
pub struct AddonStatusOptions {
    /// How long a failed reconciliation waits before the next try.
    pub retry: Duration,
}

impl Default for AddonStatusOptions {
    fn default() -> Self {
        Self {
            retry: Duration::from_secs(5),
        }
    }
}

/// What failed while updating add-on health.
#[derive(Debug, thiserror::Error)]
pub enum AddonStatusError {
    /// Writing an add-on's `Available` condition failed.
    #[error("patching the status of add-on {cluster}/{addon}: {source}")]
    PatchAddonStatus {
        /// The cluster (namespace).
        cluster: String,
        /// The add-on.
        addon: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing the feature labels of a cluster failed.
    #[error("patching the feature labels of cluster {cluster}: {source}")]
    PatchLabels {
        /// The cluster.
        cluster: String,
        /// The API error.
        source: kube::Error,
    },
    /// The controller stream ended.
    #[error("the add-on status controller stopped")]
    Stopped,
}

/// The feature label value for an add-on whose `Available` status is `available`.
#[must_use]
pub fn feature_value(available: Option<Status>) -> &'static str {
    match available {
        Some(Status::True) => ADDON_FEATURE_AVAILABLE,
        Some(Status::False) => ADDON_FEATURE_UNHEALTHY,
        None | Some(Status::Unknown) => ADDON_FEATURE_UNREACHABLE,
    }
}

/// The label changes (`None` = remove) that bring a cluster's feature labels in line with its
/// add-ons, given as `(name, Available status, deleting)`; empty when nothing changes.
#[must_use]
pub fn feature_label_changes(
    labels: &BTreeMap<String, String>,
    addons: &[(String, Option<Status>, bool)],
) -> BTreeMap<String, Option<String>> {
    let wanted: BTreeMap<String, &str> = addons
        .iter()
        .filter(|(_, _, deleting)| !deleting)
        .map(|(name, available, _)| (addon_feature(name), feature_value(*available)))
        .collect();
    let mut changes = BTreeMap::new();
    for (key, value) in &wanted {
        if labels.get(key).map(String::as_str) != Some(*value) {
            changes.insert(key.clone(), Some((*value).to_string()));
        }
    }
    for key in labels.keys() {
        if key.starts_with(ADDON_FEATURE_PREFIX) && !wanted.contains_key(key) {
            changes.insert(key.clone(), None);
        }
    }
    changes
}

struct Context {
    client: kube::Client,
    options: AddonStatusOptions,
    recorder: EventRecorder,
    metrics: ControllerMetrics,
    /// Every ManagedClusterAddOn (the shared informer's store).
    addons: Store<ManagedClusterAddOn>,
    /// The hub controllers' writes of ManagedClusters the shared store has yet to show.
    own_writes: Arc<OwnWrites>,
}

/// Runs the add-on status controller until it stops.
///
/// # Errors
/// [`AddonStatusError::Stopped`] when the controller stream ends.
pub async fn run(
    client: kube::Client,
    options: AddonStatusOptions,
    metrics: ControllerMetrics,
) -> Result<(), AddonStatusError> {
    let informers = HubInformers::new(&client);
    let controller = controller(client, options, metrics, &informers);
    run_alone(informers, controller, |_| AddonStatusError::Stopped).await
}

/// The add-on status controller over the shared informers: clusters, and the
/// ManagedClusterAddOns whose changes reconcile the cluster of their namespace and whose store
/// answers the reconcile's listing of a cluster's add-ons.
pub(crate) fn controller(
    client: kube::Client,
    options: AddonStatusOptions,
    metrics: ControllerMetrics,
    informers: &HubInformers,
) -> impl Future<Output = Result<(), AddonStatusError>> + Send + 'static {
    let ctx = Arc::new(Context {
        recorder: EventRecorder::new(
            client.clone(),
            Reporter {
                controller: "registration-controller".to_string(),
                instance: None,
            },
        ),
        client,
        options,
        metrics,
        addons: informers.addons.store(),
        own_writes: informers.clusters.own_writes(),
    });
    let controller = Controller::for_shared_stream(informers.clusters.applied(), informers.clusters.store())
        .watches_shared_stream(informers.addons.touched(), |addon: Arc<ManagedClusterAddOn>| {
            addon.namespace().map(|ns| ObjectRef::<ManagedCluster>::new(&ns))
        });
    async move {
        controller
            .run(reconcile, error_policy, ctx)
            .for_each(|_| futures::future::ready(()))
            .await;
        Err(AddonStatusError::Stopped)
    }
}

fn error_policy(cluster: Arc<ManagedCluster>, error: &AddonStatusError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled(CONTROLLER, false);
    super::log_failure(&cluster.name_any(), error, "updating add-on health failed");
    Action::requeue(ctx.options.retry)
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

fn addon_available(addon: &ManagedClusterAddOn) -> Option<Status> {
    addon
        .status
        .as_ref()
        .and_then(|s| s.conditions.find_condition(managed_cluster_addon::AVAILABLE))
        .and_then(Condition::status)
}

#[tracing::instrument(skip_all, fields(cluster = %cluster.name_any()))]
async fn reconcile(cluster: Arc<ManagedCluster>, ctx: Arc<Context>) -> Result<Action, AddonStatusError> {
    if ctx.own_writes.behind(cluster.as_ref()) {
        return Ok(Action::await_change());
    }
    let name = cluster.name_any();
    let available = cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.find_condition(managed_cluster::AVAILABLE))
        .cloned();
    let Some(available) = available else {
        ctx.metrics.reconciled(CONTROLLER, true);
        return Ok(Action::await_change());
    };
    let addons_api: Api<ManagedClusterAddOn> = Api::namespaced(ctx.client.clone(), &name);
    // The store is complete before the first reconcile (the controller waits for its own store;
    // this one is waited for here) and takes an add-on's change before the reconcile it triggers.
    if ctx.addons.wait_until_ready().await.is_err() {
        return Err(AddonStatusError::Stopped);
    }
    let mut addons: Vec<ManagedClusterAddOn> = ctx
        .addons
        .state_filter(|addon| addon.metadata.namespace.as_deref() == Some(name.as_str()))
        .into_iter()
        .map(|addon| addon.as_ref().clone())
        .collect();

    if available.status() == Some(Status::Unknown) {
        for addon in &mut addons {
            let condition = Condition::new(
                managed_cluster_addon::AVAILABLE,
                Status::Unknown,
                &available.reason,
                &available.message,
                now(),
            );
            let addon_name = addon.name_any();
            let status = addon.status.get_or_insert_with(Default::default);
            if !status.conditions.set_condition(condition) {
                continue;
            }
            addons_api
                .patch_status(
                    &addon_name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"status": {"conditions": &status.conditions}})),
                )
                .await
                .map_err(|source| AddonStatusError::PatchAddonStatus {
                    cluster: name.clone(),
                    addon: addon_name.clone(),
                    source,
                })?;
            let event = Event {
                type_: EventType::Normal,
                reason: "ManagedClusterAddOnStatusUpdated".to_string(),
                note: Some(format!(
                    "update addon {addon_name} status to unknown on managed cluster {name}"
                )),
                action: "ManagedClusterAddOnStatusUpdated".to_string(),
                secondary: None,
            };
            if let Err(error) = ctx.recorder.publish(&event, &addon.object_ref(&())).await {
                tracing::debug!(%error, "publishing an event failed");
            }
        }
    }

    if cluster.metadata.deletion_timestamp.is_none() {
        let states: Vec<_> = addons
            .iter()
            .map(|a| {
                (
                    a.name_any(),
                    addon_available(a),
                    a.metadata.deletion_timestamp.is_some(),
                )
            })
            .collect();
        let changes = feature_label_changes(cluster.labels(), &states);
        if !changes.is_empty() {
            let patch = json!({"metadata": {"labels": changes}});
            ctx.own_writes
                .noting(Api::<ManagedCluster>::all(ctx.client.clone()).patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                ))
                .await
                .map_err(|source| AddonStatusError::PatchLabels {
                    cluster: name.clone(),
                    source,
                })?;
        }
    }
    ctx.metrics.reconciled(CONTROLLER, true);
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn feature_values_follow_available() {
        assert_eq!(feature_value(Some(Status::True)), "available");
        assert_eq!(feature_value(Some(Status::False)), "unhealthy");
        assert_eq!(feature_value(Some(Status::Unknown)), "unreachable");
        assert_eq!(feature_value(None), "unreachable");
    }

    #[test]
    fn labels_added_changed_and_removed() {
        let current = labels(&[
            ("feature.open-cluster-management.io/addon-a", "unreachable"),
            ("feature.open-cluster-management.io/addon-gone", "available"),
            ("feature.open-cluster-management.io/addon-dying", "available"),
            ("vendor", "OpenShift"),
        ]);
        let addons = vec![
            ("a".to_string(), Some(Status::True), false),
            ("b".to_string(), Some(Status::False), false),
            ("dying".to_string(), Some(Status::True), true),
        ];
        let changes = feature_label_changes(&current, &addons);
        let expected: BTreeMap<String, Option<String>> = [
            ("feature.open-cluster-management.io/addon-a", Some("available")),
            ("feature.open-cluster-management.io/addon-b", Some("unhealthy")),
            ("feature.open-cluster-management.io/addon-dying", None),
            ("feature.open-cluster-management.io/addon-gone", None),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
        .collect();
        assert_eq!(changes, expected);
        let settled = labels(&[("feature.open-cluster-management.io/addon-a", "available")]);
        assert!(feature_label_changes(&settled, &addons[..1]).is_empty());
    }
}
