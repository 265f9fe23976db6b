//! The ManifestWorks of an add-on (addon-framework.md §2.3.3, §2.3.6, §2.4): which objects go
//! where (hosted locations, pre-delete hooks), the works' names, labels, owners, annotations,
//! manifest configs and delete options, and the add-on's manifests they are built from.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::conditions::Status;
use ocm_api::names::conditions::addon::managed_cluster_addon::{self as addon_conditions, reasons};
use ocm_api::names::{annotations, labels};
use ocm_api::work::v1::{
    DeleteOption, DeletePropagationPolicy, Manifest, ManifestConfigOption, ManifestWork, ManifestWorkSpec,
    ManifestsTemplate, OrphaningRule, ResourceIdentifier, SelectivelyOrphan,
};
use ocm_api::workbuilder::{WorkBuilder, WorkOptions, Works};
use serde_json::Value;

use super::manifest_configs::manifest_configs;
use super::{DeployError, SyncInput, set_condition};
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
}
