//! The `spec.manifestConfigs` of the deploy works (addon-framework.md §2.3.4): the probe fields
//! of the health prober first, then the add-on's own `manifest_configs` merged in.

use ocm_api::work::v1::{FeedbackType, Manifest, ManifestConfigOption, ResourceIdentifier};

use crate::agent::probers::{daemonset_probe_field, deployment_probe_field};
use crate::agent::{AgentAddonOptions, HealthProber, ProbeField};

/// Whether a manifest is an `apps/v1`-group object of `kind`.
pub(super) fn is_apps(manifest: &Manifest, kind: &str) -> bool {
    manifest.group() == Some("apps") && manifest.kind() == Some(kind)
}

/// The probe fields the prober asks the work agent to report, from the manifests for the
/// DeploymentAvailability and WorkloadAvailability probers (every Deployment, even one with 0
/// replicas; plus every DaemonSet for the latter).
fn feedback_fields(prober: Option<&HealthProber>, manifests: &[Manifest]) -> Vec<ProbeField> {
    let of_kind = |kind: &str| -> Vec<ProbeField> {
        manifests
            .iter()
            .filter(|m| is_apps(m, kind))
            .map(|m| {
                let namespace = m.namespace().unwrap_or_default().to_owned();
                let name = m.name().unwrap_or_default().to_owned();
                if kind == "Deployment" {
                    deployment_probe_field(namespace, name)
                } else {
                    daemonset_probe_field(namespace, name)
                }
            })
            .collect()
    };
    match prober {
        Some(HealthProber::Work(Some(work))) => work.probe_fields.clone(),
        Some(HealthProber::DeploymentAvailability) => of_kind("Deployment"),
        Some(HealthProber::WorkloadAvailability) => {
            let mut fields = of_kind("Deployment");
            fields.extend(of_kind("DaemonSet"));
            fields
        }
        _ => Vec::new(),
    }
}

/// The manifest configs of the deploy works of an add-on whose manifests are `manifests`.
pub(crate) fn manifest_configs(
    options: &AgentAddonOptions,
    manifests: &[Manifest],
) -> Vec<ManifestConfigOption> {
    let mut configs: Vec<ManifestConfigOption> = feedback_fields(options.health_prober.as_ref(), manifests)
        .into_iter()
        .map(|field| ManifestConfigOption {
            resource_identifier: field.resource_identifier,
            feedback_rules: Some(field.probe_rules),
            ..Default::default()
        })
        .collect();
    for user in &options.manifest_configs {
        match configs
            .iter_mut()
            .find(|c| same_identifier(&c.resource_identifier, &user.resource_identifier))
        {
            Some(existing) => merge(existing, user),
            None => configs.push(user.clone()),
        }
    }
    configs
}

/// Whether two identifiers name the same object (an absent group or namespace is empty).
fn same_identifier(a: &ResourceIdentifier, b: &ResourceIdentifier) -> bool {
    a.group.as_deref().unwrap_or_default() == b.group.as_deref().unwrap_or_default()
        && a.resource == b.resource
        && a.name == b.name
        && a.namespace.as_deref().unwrap_or_default() == b.namespace.as_deref().unwrap_or_default()
}

/// Merges the add-on's entry `user` into the prober's `existing` one: a WellKnownStatus rule is
/// kept once, JSONPaths rules add the paths whose names are new, and the add-on's update
/// strategy wins when it sets one.
fn merge(existing: &mut ManifestConfigOption, user: &ManifestConfigOption) {
    let rules = existing.feedback_rules.get_or_insert_with(Vec::new);
    for rule in user.feedback_rules.as_deref().unwrap_or_default() {
        match rule.type_ {
            FeedbackType::WellKnownStatus => {
                if !rules.iter().any(|r| r.type_ == FeedbackType::WellKnownStatus) {
                    rules.push(rule.clone());
                }
            }
            FeedbackType::JsonPaths => {
                let mut known: Vec<String> = rules
                    .iter()
                    .filter(|r| r.type_ == FeedbackType::JsonPaths)
                    .flat_map(|r| r.json_paths.iter().flatten().map(|p| p.name.clone()))
                    .collect();
                let mut added = rule.clone();
                added.json_paths = Some(
                    rule.json_paths
                        .iter()
                        .flatten()
                        .filter(|path| {
                            let new = !known.contains(&path.name);
                            if new {
                                known.push(path.name.clone());
                            }
                            new
                        })
                        .cloned()
                        .collect(),
                );
                if added.json_paths.as_ref().is_some_and(|p| !p.is_empty()) {
                    rules.push(added);
                }
            }
        }
    }
    if user.update_strategy.is_some() {
        existing.update_strategy.clone_from(&user.update_strategy);
    }
}

#[cfg(test)]
mod tests {
    use ocm_api::work::v1::{FeedbackRule, JsonPath, UpdateStrategy, UpdateStrategyType};
    use serde_json::json;

    use super::*;

    fn manifest(value: serde_json::Value) -> Manifest {
        Manifest::try_from(value).unwrap()
    }

    fn deployment(name: &str, replicas: i64) -> Manifest {
        manifest(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "ns"}, "spec": {"replicas": replicas}}))
    }

    #[test]
    fn deployment_availability_probes_every_deployment() {
        let options = AgentAddonOptions {
            health_prober: Some(HealthProber::DeploymentAvailability),
            ..Default::default()
        };
        let manifests = [
            deployment("a", 1),
            deployment("zero", 0),
            manifest(
                json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds", "namespace": "ns"}}),
            ),
        ];
        let configs = manifest_configs(&options, &manifests);
        assert_eq!(configs.len(), 2);
        assert_eq!(configs[1].resource_identifier.name, "zero");
        let options = AgentAddonOptions {
            health_prober: Some(HealthProber::WorkloadAvailability),
            ..Default::default()
        };
        let configs = manifest_configs(&options, &manifests);
        assert_eq!(configs.len(), 3);
        assert_eq!(configs[2].resource_identifier.resource, "daemonsets");
    }

    #[test]
    fn user_configs_merge_into_the_probers() {
        let path = |name: &str| JsonPath {
            name: name.into(),
            path: ".status".into(),
            version: None,
        };
        let user = ManifestConfigOption {
            resource_identifier: ResourceIdentifier {
                group: Some("apps".into()),
                resource: "deployments".into(),
                name: "a".into(),
                namespace: Some("ns".into()),
            },
            feedback_rules: Some(vec![
                FeedbackRule {
                    type_: FeedbackType::WellKnownStatus,
                    json_paths: None,
                },
                FeedbackRule {
                    type_: FeedbackType::JsonPaths,
                    json_paths: Some(vec![path("x"), path("x"), path("y")]),
                },
            ]),
            update_strategy: Some(UpdateStrategy {
                type_: Some(UpdateStrategyType::ServerSideApply),
                server_side_apply: None,
            }),
            ..Default::default()
        };
        let other = ManifestConfigOption {
            resource_identifier: ResourceIdentifier {
                resource: "configmaps".into(),
                name: "c".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        let options = AgentAddonOptions {
            health_prober: Some(HealthProber::DeploymentAvailability),
            manifest_configs: vec![user, other],
            ..Default::default()
        };
        let configs = manifest_configs(&options, &[deployment("a", 1)]);
        assert_eq!(configs.len(), 2);
        let rules = configs[0].feedback_rules.as_ref().unwrap();
        assert_eq!(rules.len(), 2);
        let names: Vec<_> = rules[1]
            .json_paths
            .iter()
            .flatten()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names, ["x", "y"]);
        assert_eq!(
            configs[0].update_strategy.as_ref().and_then(|s| s.type_),
            Some(UpdateStrategyType::ServerSideApply)
        );
        assert_eq!(configs[1].resource_identifier.resource, "configmaps");
    }
}
