//! Health probers for add-on authors (addon-framework.md §1.4): Work-type probers on named or
//! all Deployments, and the workload availability checker they use.
//!
//! A Deployment is healthy when it asks for no replicas or at least one replica is ready (not all
//! of them); a DaemonSet when every scheduled pod is ready. A missing feedback value is an error,
//! so a prober reports the add-on unavailable until the work agent returns the values.

use std::sync::Arc;

use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::work::v1::{FeedbackRule, FeedbackType, ResourceIdentifier, StatusFeedbackResult};

use super::{AddonError, FieldResult, HealthChecker, HealthProber, ProbeField, WorkHealthProber};

/// The API group of Deployments and DaemonSets.
const APPS: &str = "apps";
/// The resource of Deployments.
const DEPLOYMENTS: &str = "deployments";
/// The resource of DaemonSets.
const DAEMONSETS: &str = "daemonsets";

/// A Work prober of the named Deployments (`(namespace, name)` pairs), each with a
/// WellKnownStatus feedback rule, checked by [`WorkloadAvailabilityChecker`] (upstream's
/// `NewDeploymentProber`).
#[must_use]
pub fn deployment_prober<N, S>(deployments: impl IntoIterator<Item = (N, S)>) -> HealthProber
where
    N: Into<String>,
    S: Into<String>,
{
    let probe_fields = deployments
        .into_iter()
        .map(|(namespace, name)| deployment_probe_field(namespace.into(), name.into()))
        .collect();
    HealthProber::Work(Some(WorkHealthProber {
        probe_fields,
        health_checker: Some(Arc::new(WorkloadAvailabilityChecker)),
    }))
}

/// A Work prober of every Deployment of the add-on (name and namespace `*`), checked by
/// [`WorkloadAvailabilityChecker`] (upstream's `NewAllDeploymentsProber`).
#[must_use]
pub fn all_deployments_prober() -> HealthProber {
    deployment_prober([("*", "*")])
}

/// The probe field of one Deployment: its identifier and a WellKnownStatus rule.
#[must_use]
pub fn deployment_probe_field(namespace: String, name: String) -> ProbeField {
    ProbeField {
        resource_identifier: ResourceIdentifier {
            group: Some(APPS.to_owned()),
            resource: DEPLOYMENTS.to_owned(),
            name,
            namespace: Some(namespace),
        },
        probe_rules: vec![well_known_status()],
    }
}

/// The probe field of one DaemonSet: its identifier and a WellKnownStatus rule.
#[must_use]
pub fn daemonset_probe_field(namespace: String, name: String) -> ProbeField {
    ProbeField {
        resource_identifier: ResourceIdentifier {
            group: Some(APPS.to_owned()),
            resource: DAEMONSETS.to_owned(),
            name,
            namespace: Some(namespace),
        },
        probe_rules: vec![well_known_status()],
    }
}

/// A feedback rule of type WellKnownStatus.
#[must_use]
pub fn well_known_status() -> FeedbackRule {
    FeedbackRule {
        type_: FeedbackType::WellKnownStatus,
        json_paths: None,
    }
}

/// The workload availability checker (upstream's `WorkloadAvailabilityHealthChecker`, also
/// named `DeploymentAvailabilityHealthChecker`): every result must be an `apps` Deployment or
/// DaemonSet, and each must be available.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkloadAvailabilityChecker;

impl HealthChecker for WorkloadAvailabilityChecker {
    fn check(
        &self,
        results: &[FieldResult],
        _cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
    ) -> Result<(), AddonError> {
        check_workloads(results)
    }
}

/// Checks every result as [`WorkloadAvailabilityChecker`] does.
///
/// # Errors
///
/// [`AddonError::Unhealthy`] naming the first unavailable workload, a workload without the
/// values, or a result that is not a Deployment or DaemonSet.
pub fn check_workloads(results: &[FieldResult]) -> Result<(), AddonError> {
    if results.is_empty() {
        return Err(AddonError::Unhealthy("no probe results".to_owned()));
    }
    for result in results {
        let id = &result.resource_identifier;
        if id.group.as_deref().unwrap_or_default() != APPS {
            return Err(AddonError::Unhealthy(format!(
                "unsupported resource {}.{} for workload availability",
                id.resource,
                id.group.as_deref().unwrap_or_default()
            )));
        }
        match id.resource.as_str() {
            DEPLOYMENTS => check_deployment(id, &result.feedback_result)?,
            DAEMONSETS => check_daemonset(id, &result.feedback_result)?,
            other => {
                return Err(AddonError::Unhealthy(format!(
                    "unsupported resource {other}.{APPS} for workload availability"
                )));
            }
        }
    }
    Ok(())
}

/// A Deployment is available with `Replicas` 0 or `ReadyReplicas` ≥ 1.
fn check_deployment(id: &ResourceIdentifier, feedback: &StatusFeedbackResult) -> Result<(), AddonError> {
    let (Some(replicas), Some(ready)) = (integer(feedback, "Replicas"), integer(feedback, "ReadyReplicas"))
    else {
        return Err(AddonError::Unhealthy(format!(
            "readyReplicas or replicas is not probed for deployment {}",
            describe(id)
        )));
    };
    if replicas == 0 || ready >= 1 {
        return Ok(());
    }
    Err(AddonError::Unhealthy(format!(
        "readyReplicas is {ready}, replicas is {replicas} for deployment {}",
        describe(id)
    )))
}

/// A DaemonSet is available with `NumberReady` equal to `DesiredNumberScheduled`.
fn check_daemonset(id: &ResourceIdentifier, feedback: &StatusFeedbackResult) -> Result<(), AddonError> {
    let (Some(desired), Some(ready)) = (
        integer(feedback, "DesiredNumberScheduled"),
        integer(feedback, "NumberReady"),
    ) else {
        return Err(AddonError::Unhealthy(format!(
            "numberReady or desiredNumberScheduled is not probed for daemonset {}",
            describe(id)
        )));
    };
    if desired == ready {
        return Ok(());
    }
    Err(AddonError::Unhealthy(format!(
        "numberReady is {ready}, desiredNumberScheduled is {desired} for daemonset {}",
        describe(id)
    )))
}

/// The integer feedback value `name`, if reported.
fn integer(feedback: &StatusFeedbackResult, name: &str) -> Option<i64> {
    feedback
        .values
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|value| value.name == name)
        .and_then(|value| value.field_value.integer)
}

/// `namespace/name` of an identifier.
fn describe(id: &ResourceIdentifier) -> String {
    format!("{}/{}", id.namespace.as_deref().unwrap_or_default(), id.name)
}

#[cfg(test)]
mod tests {
    use ocm_api::work::v1::{FeedbackValue, FieldValue, ValueType};

    use super::*;

    fn result(resource: &str, values: &[(&str, i64)]) -> FieldResult {
        FieldResult {
            resource_identifier: ResourceIdentifier {
                group: Some(APPS.into()),
                resource: resource.into(),
                name: "agent".into(),
                namespace: Some("ns".into()),
            },
            feedback_result: StatusFeedbackResult {
                values: Some(
                    values
                        .iter()
                        .map(|(name, value)| FeedbackValue {
                            name: (*name).into(),
                            field_value: FieldValue {
                                type_: ValueType::Integer,
                                integer: Some(*value),
                                ..Default::default()
                            },
                        })
                        .collect(),
                ),
            },
        }
    }

    #[test]
    fn deployment_needs_one_ready_replica_or_none_wanted() {
        assert!(check_workloads(&[result(DEPLOYMENTS, &[("Replicas", 3), ("ReadyReplicas", 1)])]).is_ok());
        assert!(check_workloads(&[result(DEPLOYMENTS, &[("Replicas", 0), ("ReadyReplicas", 0)])]).is_ok());
        let error = check_workloads(&[result(DEPLOYMENTS, &[("Replicas", 1), ("ReadyReplicas", 0)])])
            .unwrap_err()
            .to_string();
        assert_eq!(error, "readyReplicas is 0, replicas is 1 for deployment ns/agent");
    }

    #[test]
    fn a_missing_value_is_an_error() {
        let error = check_workloads(&[result(DEPLOYMENTS, &[("Replicas", 1)])])
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "readyReplicas or replicas is not probed for deployment ns/agent"
        );
        assert!(check_workloads(&[result(DAEMONSETS, &[("NumberReady", 1)])]).is_err());
        assert!(check_workloads(&[]).is_err());
    }

    #[test]
    fn daemonset_needs_every_scheduled_pod_ready() {
        assert!(
            check_workloads(&[result(
                DAEMONSETS,
                &[("NumberReady", 2), ("DesiredNumberScheduled", 2)]
            )])
            .is_ok()
        );
        assert!(
            check_workloads(&[result(
                DAEMONSETS,
                &[("NumberReady", 1), ("DesiredNumberScheduled", 2)]
            )])
            .is_err()
        );
    }

    #[test]
    fn other_resources_are_refused() {
        let mut other = result(DEPLOYMENTS, &[("Replicas", 1), ("ReadyReplicas", 1)]);
        other.resource_identifier.resource = "statefulsets".into();
        assert!(check_workloads(&[other]).is_err());
        let mut core = result(DEPLOYMENTS, &[("Replicas", 1), ("ReadyReplicas", 1)]);
        core.resource_identifier.group = None;
        assert!(check_workloads(&[core]).is_err());
    }

    #[test]
    fn probers_name_their_deployments() {
        let HealthProber::Work(Some(prober)) = deployment_prober([("default", "nginx")]) else {
            panic!("not a work prober");
        };
        assert_eq!(prober.probe_fields.len(), 1);
        assert_eq!(prober.probe_fields[0].resource_identifier.name, "nginx");
        assert_eq!(prober.probe_fields[0].probe_rules, vec![well_known_status()]);
        assert!(prober.health_checker.is_some());
        let HealthProber::Work(Some(all)) = all_deployments_prober() else {
            panic!("not a work prober");
        };
        assert_eq!(
            all.probe_fields[0].resource_identifier.namespace.as_deref(),
            Some("*")
        );
        assert_eq!(all.probe_fields[0].resource_identifier.name, "*");
    }
}
