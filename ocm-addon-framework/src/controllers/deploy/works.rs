//! The ManifestWorks of an add-on (addon-framework.md §2.3.3, §2.3.6, §2.4): which objects go
//! where, the works' names, labels, owners, annotations and delete options, finding the existing
//! works in the cache, and applying and deleting them.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::PoisonError;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::conditions::{ConditionList, Status};
use ocm_api::names::conditions::addon::managed_cluster_addon::{self as addon_conditions, reasons};
use ocm_api::names::conditions::work::manifest_work;
use ocm_api::names::{annotations, labels};
use ocm_api::work::v1::{
    DeleteOption, DeletePropagationPolicy, Manifest, ManifestCondition, ManifestConfigOption, ManifestWork,
    ManifestWorkSpec, ManifestsTemplate, OrphaningRule, ResourceIdentifier, SelectivelyOrphan,
};
use ocm_api::workbuilder::{WorkBuilder, WorkOptions, Works};
use serde_json::Value;

use super::manifest_configs::manifest_configs;
use super::{DeployContext, DeployError, SyncInput, set_condition};
use crate::agent::InstallMode;
use crate::agent::probers::well_known_status;

/// The name prefix of the deploy works of `addon`.
pub(crate) fn deploy_prefix(addon: &str) -> String {
    format!("addon-{addon}-deploy")
}

/// The name prefix of the deploy works of `addon` on the hosting cluster of `cluster`.
pub(crate) fn hosting_deploy_prefix(addon: &str, cluster: &str) -> String {
    format!("addon-{addon}-deploy-hosting-{cluster}")
}

/// The name (and prefix) of the pre-delete hook work of `addon`.
pub(crate) fn hook_prefix(addon: &str) -> String {
    format!("addon-{addon}-pre-delete")
}

/// The name of the pre-delete hook work of `addon` on the hosting cluster of `cluster`.
pub(crate) fn hosting_hook_name(addon: &str, cluster: &str) -> String {
    format!("addon-{addon}-pre-delete-hosting-{cluster}")
}

/// Where an object goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// The managed cluster.
    Managed,
    /// The hosting cluster.
    Hosting,
}

/// Whether `manifest` is deployed to `target` (§2.4's table).
///
/// # Errors
///
/// [`DeployError::CheckManifestLocation`] for a location other than `managed`, `hosting` or
/// `none` when hosted mode is enabled.
pub(crate) fn deployable(
    hosted_enabled: bool,
    hosted: bool,
    manifest: &Manifest,
    target: Target,
) -> Result<bool, DeployError> {
    if !hosted_enabled {
        return Ok(target == Target::Managed);
    }
    let location = metadata_map(manifest, "annotations")
        .and_then(|a| a.get(annotations::HOSTED_MANIFEST_LOCATION))
        .or_else(|| {
            metadata_map(manifest, "labels").and_then(|l| l.get(labels::HOSTED_MANIFEST_LOCATION_DEPRECATED))
        })
        .map(|v| v.as_str().unwrap_or_default().to_owned());
    let location = match location.as_deref() {
        None | Some(annotations::HOSTED_MANIFEST_LOCATION_MANAGED) => Target::Managed,
        Some(annotations::HOSTED_MANIFEST_LOCATION_HOSTING) => Target::Hosting,
        Some(annotations::HOSTED_MANIFEST_LOCATION_NONE) => return Ok(false),
        Some(other) => {
            return Err(DeployError::CheckManifestLocation {
                object: describe(manifest),
                location: other.to_owned(),
            });
        }
    };
    if !hosted {
        return Ok(target == Target::Managed);
    }
    Ok(location == target)
}

/// Whether `manifest` is a pre-delete hook: a Job or Pod carrying the pre-delete annotation or
/// label.
pub(crate) fn is_hook(manifest: &Manifest) -> bool {
    if !matches!(manifest.kind(), Some("Job" | "Pod")) {
        return false;
    }
    let has = |field: &str, key: &str| metadata_map(manifest, field).is_some_and(|m| m.contains_key(key));
    has("annotations", annotations::ADDON_PRE_DELETE) || has("labels", annotations::ADDON_PRE_DELETE)
}

/// `metadata.<field>` of a manifest as a map.
fn metadata_map<'a>(manifest: &'a Manifest, field: &str) -> Option<&'a serde_json::Map<String, Value>> {
    manifest.as_object().get("metadata")?.get(field)?.as_object()
}

/// `Kind namespace/name` of a manifest, for messages.
fn describe(manifest: &Manifest) -> String {
    format!(
        "{} {}/{}",
        manifest.kind().unwrap_or_default(),
        manifest.namespace().unwrap_or_default(),
        manifest.name().unwrap_or_default()
    )
}

/// The plural resource of a kind as Kubernetes guesses it (lower case, `s`→`ses`, `y`→`ies`,
/// else `+s`).
pub(crate) fn guess_resource(kind: &str) -> String {
    let singular = kind.to_lowercase();
    if singular.ends_with('s') {
        format!("{singular}es")
    } else if let Some(stem) = singular.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{singular}s")
    }
}

/// The delete option of the deploy works: SelectivelyOrphan with a rule per object annotated
/// `deletion-orphan`, or none.
pub(crate) fn delete_option(manifests: &[Manifest]) -> Option<DeleteOption> {
    let rules: Vec<OrphaningRule> = manifests
        .iter()
        .filter(|m| {
            metadata_map(m, "annotations").is_some_and(|a| a.contains_key(annotations::DELETION_ORPHAN))
        })
        .map(|m| OrphaningRule {
            group: Some(m.group().unwrap_or_default().to_owned()),
            resource: guess_resource(m.kind().unwrap_or_default()),
            namespace: Some(m.namespace().unwrap_or_default().to_owned()),
            name: m.name().unwrap_or_default().to_owned(),
        })
        .collect();
    if rules.is_empty() {
        return None;
    }
    Some(DeleteOption {
        propagation_policy: Some(DeletePropagationPolicy::SelectivelyOrphan),
        selectively_orphans: Some(SelectivelyOrphan {
            orphaning_rules: Some(rules),
        }),
        ttl_seconds_after_finished: None,
    })
}

/// The metadata of a work of `addon` named `name` in `namespace`: the add-on label, and an owner
/// reference to the add-on in its own namespace or the `addon-namespace` label elsewhere.
pub(crate) fn work_metadata(addon: &ManagedClusterAddOn, namespace: &str, name: String) -> ObjectMeta {
    let addon_namespace = addon.namespace().unwrap_or_default();
    let mut work_labels = BTreeMap::from([(labels::ADDON_NAME.to_owned(), addon.name_any())]);
    let mut owners = None;
    if namespace == addon_namespace {
        owners = addon.controller_owner_ref(&()).map(|owner| {
            vec![OwnerReference {
                block_owner_deletion: Some(true),
                ..owner
            }]
        });
    } else {
        work_labels.insert(labels::ADDON_NAMESPACE.to_owned(), addon_namespace);
    }
    ObjectMeta {
        name: Some(name),
        namespace: Some(namespace.to_owned()),
        labels: Some(work_labels),
        owner_references: owners,
        ..Default::default()
    }
}

/// Builds the deploy works of `addon` holding `manifests` in `namespace`, named
/// `<prefix>-<i>`, keeping objects in the `existing` works where they are.
///
/// # Errors
///
/// [`DeployError::BuildWorks`] if an object lacks its kind or version.
pub(crate) fn build_deploy_works(
    addon: &ManagedClusterAddOn,
    namespace: &str,
    prefix: &str,
    manifests: &[Manifest],
    manifest_configs: Vec<ManifestConfigOption>,
    existing: Vec<ManifestWork>,
) -> Result<Works, DeployError> {
    let annotations = super::config_spec_hashes(addon).map(|hashes| {
        BTreeMap::from([(
            annotations::CONFIG_SPEC_HASH.to_owned(),
            serde_json::to_string(&hashes).unwrap_or_default(),
        )])
    });
    let options = WorkOptions {
        existing_works: existing,
        delete_option: delete_option(manifests),
        manifest_configs: (!manifest_configs.is_empty()).then_some(manifest_configs),
        executor: None,
        annotations,
    };
    WorkBuilder::for_addons()
        .build(
            manifests,
            |index| work_metadata(addon, namespace, format!("{prefix}-{index}")),
            &options,
        )
        .map_err(DeployError::BuildWorks)
}

/// The hook work of `addon` named `name` in `namespace` holding the `hooks`, with a
/// WellKnownStatus feedback rule on each.
pub(crate) fn build_hook_work(
    addon: &ManagedClusterAddOn,
    namespace: &str,
    name: String,
    hooks: Vec<Manifest>,
) -> ManifestWork {
    let configs = hooks
        .iter()
        .map(|hook| ManifestConfigOption {
            resource_identifier: ResourceIdentifier {
                group: Some(hook.group().unwrap_or_default().to_owned()),
                resource: guess_resource(hook.kind().unwrap_or_default()),
                name: hook.name().unwrap_or_default().to_owned(),
                namespace: Some(hook.namespace().unwrap_or_default().to_owned()),
            },
            feedback_rules: Some(vec![well_known_status()]),
            ..Default::default()
        })
        .collect();
    ManifestWork {
        metadata: work_metadata(addon, namespace, name),
        spec: ManifestWorkSpec {
            workload: Some(ManifestsTemplate {
                manifests: Some(hooks),
            }),
            manifest_configs: Some(configs),
            ..Default::default()
        },
        status: None,
    }
}

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

/// The add-on's manifests, or `None` while the add-on waits for its `Configured` condition
/// (`config_check_enabled`). A failure sets `applied_type` False.
///
/// # Errors
///
/// [`DeployError::GetManifests`] with the add-on's error.
pub(crate) async fn render(
    input: &SyncInput<'_>,
    addon: &mut ManagedClusterAddOn,
    applied_type: &str,
) -> Result<Option<Vec<Manifest>>, DeployError> {
    if input.options.config_check_enabled
        && !super::condition(addon, addon_conditions::CONFIGURED)
            .is_some_and(|c| c.status() == Some(Status::True))
    {
        tracing::info!("the add-on's Configured condition is not True yet");
        return Ok(None);
    }
    match input.agent.manifests(input.cluster, addon).await {
        Ok(manifests) => Ok(Some(manifests)),
        Err(error) => {
            set_condition(
                addon,
                applied_type,
                false,
                reasons::MANIFEST_APPLIED_WORK_APPLY_FAILED,
                &format!("failed to get manifest from agent interface: {error}"),
            );
            Err(DeployError::GetManifests(error))
        }
    }
}

/// Sets `applied_type` False for a build failure and passes the error on.
fn build_failed(addon: &mut ManagedClusterAddOn, applied_type: &str, error: DeployError) -> DeployError {
    set_condition(
        addon,
        applied_type,
        false,
        reasons::MANIFEST_APPLIED_WORK_APPLY_FAILED,
        &format!("failed to build manifestwork: {error}"),
    );
    error
}

/// The deploy works for `target` in `namespace`, named `<prefix>-<i>`: the deployable objects
/// that are not hooks, with the manifest configs, delete option and spec-hash annotation. With
/// no such object nothing is applied or deleted and `applied_type` is True ("no manifest need
/// to apply").
///
/// # Errors
///
/// An invalid hosted location or an object without kind or version; `applied_type` is False.
#[expect(
    clippy::too_many_arguments,
    reason = "the parts of one build, named at the call"
)]
pub(crate) fn deploy_works_for(
    input: &SyncInput<'_>,
    addon: &mut ManagedClusterAddOn,
    target: Target,
    namespace: &str,
    prefix: &str,
    objects: &[Manifest],
    existing: Vec<ManifestWork>,
    applied_type: &str,
) -> Result<Works, DeployError> {
    let hosted = matches!(input.mode, InstallMode::Hosted { .. });
    let mut selected = Vec::new();
    for object in objects {
        match deployable(input.options.hosted_mode.is_some(), hosted, object, target) {
            Ok(true) if !is_hook(object) => selected.push(object.clone()),
            Ok(_) => {}
            Err(error) => return Err(build_failed(addon, applied_type, error)),
        }
    }
    if selected.is_empty() {
        set_condition(
            addon,
            applied_type,
            true,
            reasons::MANIFEST_APPLIED,
            "no manifest need to apply",
        );
        return Ok(Works::default());
    }
    let configs = manifest_configs(input.options, objects);
    match build_deploy_works(addon, namespace, prefix, &selected, configs, existing) {
        Ok(works) => Ok(works),
        Err(error) => Err(build_failed(addon, applied_type, error)),
    }
}

/// The hook work for `target` in `namespace` named `name`, or `None` without hook objects.
///
/// # Errors
///
/// An invalid hosted location; `applied_type` is False.
pub(crate) fn hook_work_for(
    input: &SyncInput<'_>,
    addon: &mut ManagedClusterAddOn,
    target: Target,
    namespace: &str,
    name: String,
    objects: &[Manifest],
    applied_type: &str,
) -> Result<Option<ManifestWork>, DeployError> {
    let hosted = matches!(input.mode, InstallMode::Hosted { .. });
    let mut hooks = Vec::new();
    for object in objects {
        match deployable(input.options.hosted_mode.is_some(), hosted, object, target) {
            Ok(true) if is_hook(object) => hooks.push(object.clone()),
            Ok(_) => {}
            Err(error) => return Err(build_failed(addon, applied_type, error)),
        }
    }
    if hooks.is_empty() {
        return Ok(None);
    }
    Ok(Some(build_hook_work(addon, namespace, name, hooks)))
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

/// The kind and API version the works' owner reference names (v1beta1 add-ons).
#[cfg(test)]
fn owner_kind() -> (String, String) {
    (
        ManagedClusterAddOn::api_version(&()).into_owned(),
        ManagedClusterAddOn::kind(&()).into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn manifest(value: serde_json::Value) -> Manifest {
        Manifest::try_from(value).unwrap()
    }

    #[test]
    fn resources_are_guessed_from_kinds() {
        assert_eq!(guess_resource("MultiClusterHub"), "multiclusterhubs");
        assert_eq!(guess_resource("Policy"), "policies");
        assert_eq!(guess_resource("Ingress"), "ingresses");
    }

    #[test]
    fn orphan_annotations_give_selective_orphaning() {
        let kept = manifest(
            json!({"apiVersion": "operator.open-cluster-management.io/v1", "kind": "MultiClusterHub",
            "metadata": {"name": "multiclusterhub", "namespace": "open-cluster-management",
                         "annotations": {annotations::DELETION_ORPHAN: ""}}}),
        );
        let plain =
            manifest(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}));
        assert_eq!(delete_option(std::slice::from_ref(&plain)), None);
        let option = delete_option(&[plain, kept]).unwrap();
        assert_eq!(
            option.propagation_policy,
            Some(DeletePropagationPolicy::SelectivelyOrphan)
        );
        let rules = option.selectively_orphans.unwrap().orphaning_rules.unwrap();
        assert_eq!(
            rules,
            vec![OrphaningRule {
                group: Some("operator.open-cluster-management.io".into()),
                resource: "multiclusterhubs".into(),
                namespace: Some("open-cluster-management".into()),
                name: "multiclusterhub".into(),
            }]
        );
    }

    #[test]
    fn hooks_are_annotated_jobs_and_pods() {
        let job = manifest(json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "annotations": {annotations::ADDON_PRE_DELETE: ""}}}));
        let labelled_pod = manifest(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {annotations::ADDON_PRE_DELETE: ""}}}));
        let deployment = manifest(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "annotations": {annotations::ADDON_PRE_DELETE: ""}}}));
        assert!(is_hook(&job));
        assert!(is_hook(&labelled_pod));
        assert!(!is_hook(&deployment));
    }

    #[test]
    fn locations_follow_the_hosted_table() {
        let at = |location: Option<&str>| {
            let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
            if let Some(location) = location {
                object["metadata"]["annotations"] = json!({annotations::HOSTED_MANIFEST_LOCATION: location});
            }
            manifest(object)
        };
        let none = at(None);
        let hosting = at(Some("hosting"));
        let nowhere = at(Some("none"));
        let invalid = at(Some("elsewhere"));
        // Hosted mode disabled: everything goes to the managed cluster.
        assert!(deployable(false, true, &hosting, Target::Managed).unwrap());
        assert!(!deployable(false, true, &hosting, Target::Hosting).unwrap());
        // Enabled, Default mode: managed only, invalid locations still fail.
        assert!(deployable(true, false, &hosting, Target::Managed).unwrap());
        assert!(deployable(true, false, &invalid, Target::Managed).is_err());
        // Enabled, Hosted.
        assert!(deployable(true, true, &none, Target::Managed).unwrap());
        assert!(!deployable(true, true, &none, Target::Hosting).unwrap());
        assert!(deployable(true, true, &hosting, Target::Hosting).unwrap());
        assert!(!deployable(true, true, &hosting, Target::Managed).unwrap());
        assert!(!deployable(true, true, &nowhere, Target::Managed).unwrap());
        assert!(!deployable(true, true, &nowhere, Target::Hosting).unwrap());
    }

    #[test]
    fn works_are_owned_in_the_addon_namespace_and_labelled_elsewhere() {
        let mut addon = ManagedClusterAddOn::default();
        addon.metadata.name = Some("test".into());
        addon.metadata.namespace = Some("cluster1".into());
        addon.metadata.uid = Some("uid-1".into());
        let own = work_metadata(&addon, "cluster1", "addon-test-deploy-0".into());
        let owner = &own.owner_references.unwrap()[0];
        let (api_version, kind) = owner_kind();
        assert_eq!(
            (owner.api_version.clone(), owner.kind.clone()),
            (api_version, kind)
        );
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
        assert!(!own.labels.unwrap().contains_key(labels::ADDON_NAMESPACE));
        let hosting = work_metadata(&addon, "hosting", "addon-test-deploy-hosting-cluster1-0".into());
        assert!(hosting.owner_references.is_none());
        assert_eq!(hosting.labels.unwrap()[labels::ADDON_NAMESPACE], "cluster1");
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
