//! The health check syncer (addon-framework.md §2.5): `status.healthCheck.mode` from the add-on's
//! prober, and for the Work, DeploymentAvailability and WorkloadAvailability probers the
//! `Available` condition from the deploy works' conditions and status feedback.

use std::sync::Arc;

use kube::ResourceExt;
use ocm_api::addon::v1beta1::{HealthCheck, HealthCheckMode, ManagedClusterAddOn};
use ocm_api::conditions::{ConditionList, Status};
use ocm_api::names::conditions::addon::managed_cluster_addon::{self as addon_conditions, reasons};
use ocm_api::names::conditions::cluster::managed_cluster as cluster_conditions;
use ocm_api::names::conditions::work::manifest_work;
use ocm_api::work::v1::{ManifestCondition, ManifestResourceMeta, ManifestWork, ResourceIdentifier};

use super::apply::{self, Index};
use super::manifest_configs::is_apps;
use super::works;
use super::{DeployError, SyncInput, condition, set_condition, set_condition_status};
use crate::agent::probers::{WorkloadAvailabilityChecker, daemonset_probe_field, deployment_probe_field};
use crate::agent::{FieldResult, HealthChecker, HealthProber, ProbeField};

/// Sets the health check mode and, for the work-based probers, `Available`.
pub(super) async fn sync(input: &SyncInput<'_>, addon: &mut ManagedClusterAddOn) -> Result<(), DeployError> {
    let Some(prober) = &input.options.health_prober else {
        return Ok(());
    };
    let mode = match prober {
        HealthProber::Lease => HealthCheckMode::Lease,
        _ => HealthCheckMode::Customized,
    };
    let status = addon.status.get_or_insert_with(Default::default);
    if status.health_check.as_ref().and_then(|h| h.mode) != Some(mode) {
        status.health_check = Some(HealthCheck { mode: Some(mode) });
    }
    let (fields, checker): (Vec<ProbeField>, Option<Arc<dyn HealthChecker>>) = match prober {
        HealthProber::None | HealthProber::Lease => return Ok(()),
        HealthProber::Work(None) => {
            set_condition(
                addon,
                addon_conditions::AVAILABLE,
                true,
                reasons::AVAILABLE_WORK_APPLIED,
                "Addon manifestWork is applied",
            );
            return Ok(());
        }
        HealthProber::Work(Some(work)) => {
            if condition(addon, addon_conditions::MANIFEST_APPLIED).is_none() {
                return Ok(());
            }
            (work.probe_fields.clone(), work.health_checker.clone())
        }
        HealthProber::DeploymentAvailability | HealthProber::WorkloadAvailability => {
            if condition(addon, addon_conditions::MANIFEST_APPLIED).is_none() {
                return Ok(());
            }
            let manifests = input
                .agent
                .manifests(input.cluster, addon)
                .await
                .map_err(DeployError::GetManifests)?;
            let daemonsets = matches!(prober, HealthProber::WorkloadAvailability);
            let fields = workload_fields(&manifests, daemonsets);
            let checker: Arc<dyn HealthChecker> = Arc::new(WorkloadAvailabilityChecker);
            (fields, Some(checker))
        }
    };
    probe(input, addon, &fields, checker.as_deref());
    Ok(())
}

/// The probe fields of the availability probers: every Deployment that asks for replicas (none
/// given counts as one), and with `daemonsets` every DaemonSet.
fn workload_fields(manifests: &[ocm_api::work::v1::Manifest], daemonsets: bool) -> Vec<ProbeField> {
    let mut fields = Vec::new();
    for manifest in manifests {
        let namespace = manifest.namespace().unwrap_or_default().to_owned();
        let name = manifest.name().unwrap_or_default().to_owned();
        if is_apps(manifest, "Deployment") {
            let replicas = manifest
                .as_object()
                .get("spec")
                .and_then(|s| s.get("replicas"))
                .and_then(serde_json::Value::as_i64);
            if replicas != Some(0) {
                fields.push(deployment_probe_field(namespace, name));
            }
        } else if daemonsets && is_apps(manifest, "DaemonSet") {
            fields.push(daemonset_probe_field(namespace, name));
        }
    }
    fields
}

/// Sets `Available` from the deploy works and the probe results.
fn probe(
    input: &SyncInput<'_>,
    addon: &mut ManagedClusterAddOn,
    fields: &[ProbeField],
    checker: Option<&dyn HealthChecker>,
) {
    let cluster_available = input
        .cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.find_condition(cluster_conditions::AVAILABLE))
        .and_then(|c| c.status());
    if cluster_available == Some(Status::Unknown) {
        return;
    }
    let name = addon.name_any();
    let namespace = addon.namespace().unwrap_or_default();
    let index = match input.mode {
        crate::agent::InstallMode::Hosted { .. } => Index::HostedAddon,
        crate::agent::InstallMode::Default => Index::Addon,
    };
    let deploy_works = apply::cached_works(input.ctx, index, &namespace, &name);
    if deploy_works.is_empty() {
        set_condition_status(
            addon,
            addon_conditions::AVAILABLE,
            Status::Unknown,
            reasons::AVAILABLE_WORK_NOT_FOUND,
            "Addon manifestWork is not found",
        );
        return;
    }
    let prefix = works::deploy_prefix(&name);
    let mut manifests: Vec<ManifestCondition> = Vec::new();
    for work in deploy_works.iter().filter(|w| w.name_any().starts_with(&prefix)) {
        match work_available(work) {
            None => {
                set_condition_status(
                    addon,
                    addon_conditions::AVAILABLE,
                    Status::Unknown,
                    reasons::AVAILABLE_WORK_NOT_APPLIED,
                    "Addon manifestWork is not applied yet",
                );
                return;
            }
            Some((Status::False, message)) => {
                set_condition(
                    addon,
                    addon_conditions::AVAILABLE,
                    false,
                    reasons::AVAILABLE_WORK_NOT_APPLIED,
                    &message,
                );
                return;
            }
            Some(_) => manifests.extend(
                work.status
                    .as_ref()
                    .and_then(|s| s.resource_status.as_ref())
                    .and_then(|r| r.manifests.clone())
                    .unwrap_or_default(),
            ),
        }
    }
    let results: Vec<FieldResult> = fields
        .iter()
        .flat_map(|field| results_for(&field.resource_identifier, &manifests))
        .collect();
    if !fields.is_empty() && results.is_empty() {
        set_condition_status(
            addon,
            addon_conditions::AVAILABLE,
            Status::Unknown,
            reasons::AVAILABLE_NO_PROBE_RESULT,
            "Probe results are not returned",
        );
        return;
    }
    if let Some(checker) = checker
        && let Err(error) = checker.check(&results, input.cluster, addon)
    {
        set_condition(
            addon,
            addon_conditions::AVAILABLE,
            false,
            reasons::AVAILABLE_PROBE_UNAVAILABLE,
            &format!("Probe addon unavailable with err {error}"),
        );
        return;
    }
    set_condition(
        addon,
        addon_conditions::AVAILABLE,
        true,
        reasons::AVAILABLE_PROBE_AVAILABLE,
        &format!("{name} add-on is available."),
    );
}

/// The status and message of a work's `Available` condition, if it has one.
fn work_available(work: &ManifestWork) -> Option<(Status, String)> {
    let condition = work
        .status
        .as_ref()?
        .conditions
        .find_condition(manifest_work::AVAILABLE)?;
    Some((
        condition.status().unwrap_or(Status::Unknown),
        condition.message.clone(),
    ))
}

/// The results of the objects `id` names (with `*` wildcards in name and namespace) that have
/// feedback values.
fn results_for(id: &ResourceIdentifier, manifests: &[ManifestCondition]) -> Vec<FieldResult> {
    manifests
        .iter()
        .filter(|m| {
            resource_match(&m.resource_meta, id)
                && m.status_feedback
                    .as_ref()
                    .and_then(|f| f.values.as_ref())
                    .is_some_and(|v| !v.is_empty())
        })
        .map(|m| FieldResult {
            resource_identifier: ResourceIdentifier {
                group: m.resource_meta.group.clone(),
                resource: m.resource_meta.resource.clone().unwrap_or_default(),
                name: m.resource_meta.name.clone().unwrap_or_default(),
                namespace: m.resource_meta.namespace.clone(),
            },
            feedback_result: m.status_feedback.clone().unwrap_or_default(),
        })
        .collect()
}

/// Whether the resource meta of a work's manifest is the object `id` names.
fn resource_match(meta: &ManifestResourceMeta, id: &ResourceIdentifier) -> bool {
    meta.group.as_deref().unwrap_or_default() == id.group.as_deref().unwrap_or_default()
        && meta.resource.as_deref().unwrap_or_default() == id.resource
        && wildcard_match(
            meta.namespace.as_deref().unwrap_or_default(),
            id.namespace.as_deref().unwrap_or_default(),
        )
        && wildcard_match(meta.name.as_deref().unwrap_or_default(), &id.name)
}

/// Whether `value` matches `pattern`, in which each `*` stands for any text (the whole value
/// must match).
fn wildcard_match(value: &str, pattern: &str) -> bool {
    if value == pattern || pattern == "*" {
        return true;
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return false;
    };
    if parts.len() == 1 {
        return false;
    }
    let Some(mut rest) = value.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_whole_values() {
        assert!(wildcard_match("ns1", "*"));
        assert!(wildcard_match("ns1", "ns1"));
        assert!(wildcard_match("deployment1", "deploy*"));
        assert!(wildcard_match("deployment1", "*ment1"));
        assert!(wildcard_match("deployment1", "d*p*t1"));
        assert!(!wildcard_match("deployment1", "deploy"));
        assert!(!wildcard_match("deployment1", "*ment"));
        assert!(!wildcard_match("ab", "a*b*c"));
        assert!(wildcard_match("a.b", "a.b"));
        assert!(!wildcard_match("axb", "a.b"));
    }

    #[test]
    fn availability_probers_skip_zero_replica_deployments() {
        let manifest = |value: serde_json::Value| ocm_api::work::v1::Manifest::try_from(value).unwrap();
        let manifests = [
            manifest(serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "a", "namespace": "ns"}})),
            manifest(serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "zero", "namespace": "ns"}, "spec": {"replicas": 0}})),
            manifest(serde_json::json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "ds", "namespace": "ns"}})),
        ];
        assert_eq!(workload_fields(&manifests, false).len(), 1);
        let fields = workload_fields(&manifests, true);
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[1].resource_identifier.resource, "daemonsets");
    }
}
