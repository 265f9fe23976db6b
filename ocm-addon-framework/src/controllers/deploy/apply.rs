//! Finding, applying and deleting the works of an add-on (addon-framework.md §2.3.3): the
//! cached works by add-on, create or merge-patch only what changed, the `ManifestApplied` /
//! `HostingManifestApplied` condition from a work, and whether a hook work completed.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::PoisonError;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::conditions::{ConditionList, Status};
use ocm_api::names::conditions::addon::managed_cluster_addon::reasons;
use ocm_api::names::conditions::work::manifest_work;
use ocm_api::names::labels;
use ocm_api::work::v1::{ManifestCondition, ManifestWork, ManifestWorkSpec, ResourceIdentifier};
use ocm_api::workbuilder::Works;
use serde_json::Value;

use super::works::hook_prefix;
use super::{DeployContext, DeployError, set_condition};

/// Which cached works of an add-on to find.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Index {
    /// Non-hook works in the add-on's own namespace (`manifestWorkByAddon`).
    Addon,
    /// Non-hook works of the add-on elsewhere, by `addon-namespace` label
    /// (`manifestWorkByHostedAddon`).
    HostedAddon,
    /// Hook works of the add-on elsewhere (`manifestWorkHookByHostedAddon`).
    HostedHook,
}

/// The cached works of `addon` (name) of cluster `cluster` in `index`, in name order (`-0`,
/// `-1`, … `-10`).
pub(crate) fn cached_works(
    ctx: &DeployContext,
    index: Index,
    cluster: &str,
    addon: &str,
) -> Vec<ManifestWork> {
    let hook = hook_prefix(addon);
    let mut works: Vec<ManifestWork> = ctx
        .ctx
        .works
        .state()
        .iter()
        .filter(|work| work.labels().get(labels::ADDON_NAME).map(String::as_str) == Some(addon))
        .filter(|work| {
            let is_hook = work.name_any().starts_with(&hook);
            match (index, work.labels().get(labels::ADDON_NAMESPACE)) {
                (Index::Addon, None) => !is_hook && work.namespace().as_deref() == Some(cluster),
                (Index::HostedAddon, Some(ns)) => !is_hook && ns == cluster,
                (Index::HostedHook, Some(ns)) => is_hook && ns == cluster,
                _ => false,
            }
        })
        .map(|work| work.as_ref().clone())
        .collect();
    works.sort_by(|a, b| {
        let (a, b) = (a.name_any(), b.name_any());
        (a.len(), a).cmp(&(b.len(), b))
    });
    works
}

/// The cached work `namespace/name`.
pub(crate) fn cached_work(ctx: &DeployContext, namespace: &str, name: &str) -> Option<ManifestWork> {
    ctx.ctx
        .works
        .get(&kube::runtime::reflector::ObjectRef::new(name).within(namespace))
        .map(|w| w.as_ref().clone())
}

/// Deletes a work; a missing one is fine.
pub(crate) async fn delete_work(ctx: &DeployContext, namespace: &str, name: &str) -> Result<(), DeployError> {
    match ctx
        .works_api(namespace)
        .delete(name, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(DeployError::DeleteWork {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        }),
    }
}

/// Applies `works` and deletes `stale`, setting `applied_type` on the add-on after each apply as
/// §2.3.3's table says; the first error is returned after trying every work.
pub(crate) async fn apply_and_delete(
    ctx: &DeployContext,
    addon: &mut ManagedClusterAddOn,
    works: Works,
    applied_type: &str,
) -> Result<(), DeployError> {
    let mut first_error = None;
    for stale in &works.delete {
        let namespace = stale.namespace().unwrap_or_default();
        if let Err(error) = delete_work(ctx, &namespace, &stale.name_any()).await {
            first_error.get_or_insert(error);
        }
    }
    for work in works.apply {
        let result = apply_work(ctx, work).await;
        set_applied_condition(addon, applied_type, &result);
        if let Err(error) = result {
            first_error.get_or_insert(error);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Sets `applied_type` from the result of applying a work.
pub(crate) fn set_applied_condition(
    addon: &mut ManagedClusterAddOn,
    applied_type: &str,
    result: &Result<ManifestWork, DeployError>,
) {
    match result {
        Err(error) => set_condition(
            addon,
            applied_type,
            false,
            reasons::MANIFEST_APPLIED_WORK_APPLY_FAILED,
            &format!("failed to apply manifestWork: {error}"),
        ),
        Ok(work) => {
            let conditions = work.status.as_ref().map(|s| &s.conditions);
            match conditions
                .and_then(|c| c.find_condition(manifest_work::APPLIED))
                .and_then(|c| c.status())
            {
                None => {
                    let status = addon.status.get_or_insert_with(Default::default);
                    if status.conditions.is_condition_false(applied_type) {
                        status.conditions.remove_condition(applied_type);
                    }
                }
                Some(Status::True) => set_condition(
                    addon,
                    applied_type,
                    true,
                    reasons::MANIFEST_APPLIED,
                    "manifests of addon are applied successfully",
                ),
                Some(_) => set_condition(
                    addon,
                    applied_type,
                    false,
                    reasons::MANIFEST_APPLIED_FAILED,
                    "failed to apply the manifests of addon",
                ),
            }
        }
    }
}

/// A hash of what the controller asks a work to be.
fn required_hash(work: &ManifestWork) -> u64 {
    let mut hasher = DefaultHasher::new();
    serde_json::to_string(&(
        &work.metadata.labels,
        &work.metadata.annotations,
        &work.metadata.owner_references,
        &work.spec,
    ))
    .unwrap_or_default()
    .hash(&mut hasher);
    hasher.finish()
}

/// The spec as compared: without `creationTimestamp` in the manifests' metadata and templates.
fn comparable_spec(spec: &ManifestWorkSpec) -> Value {
    let mut value = serde_json::to_value(spec).unwrap_or_default();
    if let Some(manifests) = value
        .pointer_mut("/workload/manifests")
        .and_then(Value::as_array_mut)
    {
        for manifest in manifests {
            if let Some(meta) = manifest.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("creationTimestamp");
            }
            if let Some(meta) = manifest
                .pointer_mut("/spec/template/metadata")
                .and_then(Value::as_object_mut)
            {
                meta.remove("creationTimestamp");
            }
        }
    }
    value
}

/// A merge-patch map turning `existing` into `required` (absent keys become null).
fn map_patch(
    existing: Option<&BTreeMap<String, String>>,
    required: Option<&BTreeMap<String, String>>,
) -> Value {
    let mut patch = serde_json::Map::new();
    for key in existing.into_iter().flatten().map(|(k, _)| k) {
        if !required.is_some_and(|r| r.contains_key(key)) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    for (key, value) in required.into_iter().flatten() {
        patch.insert(key.clone(), Value::String(value.clone()));
    }
    Value::Object(patch)
}

/// Whether two owner lists are the same (ignoring an absent vs empty list).
fn same_owners(a: Option<&Vec<OwnerReference>>, b: Option<&Vec<OwnerReference>>) -> bool {
    a.map_or(&[][..], Vec::as_slice) == b.map_or(&[][..], Vec::as_slice)
}

/// Creates `required` or merge-patches the cached work when its labels, annotations, owners or
/// spec differ (with uid and resourceVersion); unchanged works are not sent.
///
/// # Errors
///
/// [`DeployError::ApplyWork`] with what the hub said.
pub(crate) async fn apply_work(
    ctx: &DeployContext,
    required: ManifestWork,
) -> Result<ManifestWork, DeployError> {
    let namespace = required.namespace().unwrap_or_default();
    let name = required.name_any();
    let key = format!("{namespace}/{name}");
    let api = ctx.works_api(&namespace);
    let hash = required_hash(&required);
    let error = |source| DeployError::ApplyWork {
        namespace: namespace.clone(),
        name: name.clone(),
        source,
    };
    let Some(existing) = cached_work(ctx, &namespace, &name) else {
        return match api.create(&PostParams::default(), &required).await {
            Ok(created) => {
                remember(ctx, key, hash, &created);
                Ok(created)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(required),
            Err(source) => Err(error(source)),
        };
    };
    let remembered = ctx
        .applied
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
        .copied();
    if remembered == Some((hash, existing.metadata.generation)) {
        return Ok(existing);
    }
    let same = comparable_spec(&existing.spec) == comparable_spec(&required.spec)
        && existing.metadata.labels.clone().unwrap_or_default()
            == required.metadata.labels.clone().unwrap_or_default()
        && existing.metadata.annotations.clone().unwrap_or_default()
            == required.metadata.annotations.clone().unwrap_or_default()
        && same_owners(
            existing.metadata.owner_references.as_ref(),
            required.metadata.owner_references.as_ref(),
        );
    if same {
        remember(ctx, key, hash, &existing);
        return Ok(existing);
    }
    let patch = serde_json::json!({
        "metadata": {
            "uid": existing.metadata.uid,
            "resourceVersion": existing.metadata.resource_version,
            "labels": map_patch(existing.metadata.labels.as_ref(), required.metadata.labels.as_ref()),
            "annotations": map_patch(existing.metadata.annotations.as_ref(), required.metadata.annotations.as_ref()),
            "ownerReferences": required.metadata.owner_references.clone().unwrap_or_default(),
        },
        "spec": required.spec,
    });
    let patched = api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(error)?;
    remember(ctx, key, hash, &patched);
    Ok(patched)
}

/// Remembers that `work` is what `hash` asked for.
fn remember(ctx: &DeployContext, key: String, hash: u64, work: &ManifestWork) {
    ctx.applied
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key, (hash, work.metadata.generation));
}

/// Whether a hook work is complete: `Available` True and every hook done (a Job's `JobComplete`
/// feedback is `"True"`, a Pod's `PodPhase` is `"Succeeded"`).
pub(crate) fn hook_completed(work: &ManifestWork) -> bool {
    let conditions = work.status.as_ref().map(|s| &s.conditions);
    if !conditions.is_some_and(|c| c.is_condition_true(manifest_work::AVAILABLE)) {
        return false;
    }
    let configs = work.spec.manifest_configs.as_deref().unwrap_or_default();
    if configs.is_empty() {
        return false;
    }
    let manifests = work
        .status
        .as_ref()
        .and_then(|s| s.resource_status.as_ref())
        .and_then(|r| r.manifests.as_deref())
        .unwrap_or_default();
    configs.iter().all(|config| {
        let (value, expected) = match config.resource_identifier.resource.as_str() {
            "jobs" => ("JobComplete", "True"),
            "pods" => ("PodPhase", "Succeeded"),
            _ => return false,
        };
        feedback_string(manifests, &config.resource_identifier, value).as_deref() == Some(expected)
    })
}

/// The string feedback value `name` of the object `id` in a work's resource status.
fn feedback_string(manifests: &[ManifestCondition], id: &ResourceIdentifier, name: &str) -> Option<String> {
    manifests
        .iter()
        .find(|m| {
            let meta = &m.resource_meta;
            meta.group.as_deref().unwrap_or_default() == id.group.as_deref().unwrap_or_default()
                && meta.resource.as_deref().unwrap_or_default() == id.resource
                && meta.name.as_deref().unwrap_or_default() == id.name
                && meta.namespace.as_deref().unwrap_or_default()
                    == id.namespace.as_deref().unwrap_or_default()
        })?
        .status_feedback
        .as_ref()?
        .values
        .as_deref()?
        .iter()
        .find(|v| v.name == name)?
        .field_value
        .string
        .clone()
}

#[cfg(test)]
mod tests {
    use ocm_api::work::v1::{ManifestWorkStatus, ManifestsTemplate};
    use serde_json::json;

    use super::*;

    fn manifest(value: serde_json::Value) -> ocm_api::work::v1::Manifest {
        ocm_api::work::v1::Manifest::try_from(value).unwrap()
    }

    fn work_with(
        conditions: &[(&str, &str)],
        manifests: serde_json::Value,
        configs: serde_json::Value,
    ) -> ManifestWork {
        let conditions: Vec<_> = conditions
            .iter()
            .map(|(t, s)| {
                json!({"type": t, "status": s, "reason": "R", "message": "m",
                                 "lastTransitionTime": "2026-01-01T00:00:00Z"})
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "work.open-cluster-management.io/v1",
            "kind": "ManifestWork",
            "metadata": {"name": "addon-test-pre-delete", "namespace": "cluster1"},
            "spec": {"manifestConfigs": configs},
            "status": {"conditions": conditions, "resourceStatus": {"manifests": manifests}}
        }))
        .unwrap()
    }

    fn status_of(group: &str, resource: &str, name: &str, value: (&str, &str)) -> serde_json::Value {
        json!({"resourceMeta": {"group": group, "resource": resource, "name": name, "namespace": "default", "ordinal": 0},
               "conditions": [],
               "statusFeedback": {"values": [{"name": value.0, "fieldValue": {"type": "String", "string": value.1}}]}})
    }

    fn config(group: &str, resource: &str, name: &str) -> serde_json::Value {
        json!({"resourceIdentifier": {"group": group, "resource": resource, "name": name, "namespace": "default"},
               "feedbackRules": [{"type": "WellKnownStatus"}]})
    }

    #[test]
    fn hooks_complete_when_available_and_done() {
        let job_done = status_of("batch", "jobs", "test", ("JobComplete", "True"));
        let pod_done = status_of("", "pods", "p", ("PodPhase", "Succeeded"));
        let configs = json!([config("batch", "jobs", "test"), config("", "pods", "p")]);
        assert!(hook_completed(&work_with(
            &[("Available", "True")],
            json!([job_done, pod_done]),
            configs.clone()
        )));
        assert!(!hook_completed(&work_with(
            &[("Available", "False")],
            json!([job_done, pod_done]),
            configs.clone()
        )));
        let job_running = status_of("batch", "jobs", "test", ("JobComplete", "False"));
        assert!(!hook_completed(&work_with(
            &[("Available", "True")],
            json!([job_running, pod_done]),
            configs
        )));
        assert!(!hook_completed(&work_with(
            &[("Available", "True")],
            json!([job_done]),
            json!([])
        )));
        let other = json!([config("apps", "deployments", "test")]);
        assert!(!hook_completed(&work_with(
            &[("Available", "True")],
            json!([job_done]),
            other
        )));
    }

    #[test]
    fn applied_conditions_follow_the_work() {
        let mut addon = ManagedClusterAddOn::default();
        let applied = |status: &str| {
            let mut work = work_with(&[], json!([]), json!([]));
            work.status = Some(ManifestWorkStatus {
                conditions: Some(vec![ocm_api::meta::Condition::new(
                    "Applied",
                    Status::parse(status).unwrap(),
                    "R",
                    "m",
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
                )]),
                resource_status: None,
            });
            Ok(work)
        };
        let current = |addon: &ManagedClusterAddOn| {
            addon
                .status
                .as_ref()
                .and_then(|s| s.conditions.find_condition("ManifestApplied"))
                .map(|c| (c.status.clone(), c.reason.clone()))
        };
        set_applied_condition(&mut addon, "ManifestApplied", &applied("False"));
        assert_eq!(
            current(&addon),
            Some(("False".into(), reasons::MANIFEST_APPLIED_FAILED.into()))
        );
        // A work without Applied drops a stale False…
        set_applied_condition(
            &mut addon,
            "ManifestApplied",
            &Ok(work_with(&[], json!([]), json!([]))),
        );
        assert_eq!(current(&addon), None);
        set_applied_condition(&mut addon, "ManifestApplied", &applied("True"));
        assert_eq!(
            current(&addon),
            Some(("True".into(), reasons::MANIFEST_APPLIED.into()))
        );
        // …and keeps a True one.
        set_applied_condition(
            &mut addon,
            "ManifestApplied",
            &Ok(work_with(&[], json!([]), json!([]))),
        );
        assert_eq!(
            current(&addon),
            Some(("True".into(), reasons::MANIFEST_APPLIED.into()))
        );
        let failed = Err(DeployError::GetManifests(crate::agent::AddonError::Unhealthy(
            "boom".into(),
        )));
        set_applied_condition(&mut addon, "ManifestApplied", &failed);
        assert_eq!(
            current(&addon),
            Some(("False".into(), reasons::MANIFEST_APPLIED_WORK_APPLY_FAILED.into()))
        );
    }

    #[test]
    fn creation_timestamps_are_ignored_when_comparing() {
        let spec = |extra: bool| {
            let mut object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": {"template": {"metadata": {}}}});
            if extra {
                object["metadata"]["creationTimestamp"] = Value::Null;
                object["spec"]["template"]["metadata"]["creationTimestamp"] = Value::Null;
            }
            ManifestWorkSpec {
                workload: Some(ManifestsTemplate {
                    manifests: Some(vec![manifest(object)]),
                }),
                ..Default::default()
            }
        };
        assert_eq!(comparable_spec(&spec(true)), comparable_spec(&spec(false)));
    }
}
