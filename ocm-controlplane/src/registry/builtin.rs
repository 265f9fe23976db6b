//! The built-in types: discovery entries as kube-apiserver v1.36 lists them, and which are stored.
//!
//! `builtin_discovery.json` holds the `APIResource` entries of the built-in group-versions this server
//! announces (recorded facts: names, kinds, verbs, short names, categories, storage version hashes).
//! The private table `STORED` says which of them this server stores and how they behave; the others are announced
//! (so clients see the familiar API surface) but answer 404 when used.

use serde_json::Value;

use super::{Behavior, ResourceInfo, Special};

const DISCOVERY: &str = include_str!("builtin_discovery.json");

/// `(group, resource, has_status, tracks_generation, special)` of the stored built-in types.
const STORED: &[(&str, &str, bool, bool, Special)] = &[
    ("", "namespaces", true, false, Special::Namespace),
    ("", "configmaps", false, false, Special::ConfigMap),
    ("", "secrets", false, false, Special::Secret),
    ("", "serviceaccounts", false, false, Special::None),
    ("", "events", false, false, Special::CoreEvent),
    ("", "endpoints", false, false, Special::None),
    ("", "limitranges", false, false, Special::None),
    ("", "resourcequotas", true, false, Special::None),
    ("", "podtemplates", false, false, Special::None),
    ("", "pods", true, true, Special::None),
    ("", "services", true, false, Special::None),
    ("", "nodes", true, false, Special::None),
    ("", "persistentvolumes", true, false, Special::None),
    ("", "persistentvolumeclaims", true, false, Special::None),
    ("", "replicationcontrollers", true, true, Special::None),
    ("apps", "deployments", true, true, Special::Deployment),
    ("apps", "daemonsets", true, true, Special::None),
    ("apps", "statefulsets", true, true, Special::None),
    ("apps", "replicasets", true, true, Special::None),
    ("apps", "controllerrevisions", false, false, Special::None),
    ("batch", "jobs", true, true, Special::None),
    ("batch", "cronjobs", true, true, Special::None),
    ("coordination.k8s.io", "leases", false, false, Special::None),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        true,
        false,
        Special::Csr,
    ),
    ("rbac.authorization.k8s.io", "roles", false, false, Special::None),
    (
        "rbac.authorization.k8s.io",
        "rolebindings",
        false,
        false,
        Special::None,
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterroles",
        false,
        false,
        Special::None,
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        false,
        false,
        Special::None,
    ),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        true,
        true,
        Special::Crd,
    ),
    ("events.k8s.io", "events", false, false, Special::EventsEvent),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        false,
        true,
        Special::None,
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        false,
        true,
        Special::None,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        true,
        true,
        Special::None,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        false,
        true,
        Special::None,
    ),
];

fn str_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// Every built-in type with its discovery data.
pub fn resources() -> Vec<ResourceInfo> {
    let Ok(groups) = serde_json::from_str::<Vec<Value>>(DISCOVERY) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for gv in &groups {
        let group = gv.get("group").and_then(Value::as_str).unwrap_or_default();
        let version = gv.get("version").and_then(Value::as_str).unwrap_or_default();
        let entries = gv
            .get("resources")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for entry in entries.iter() {
            let Some(name) = entry.get("name").and_then(Value::as_str) else {
                continue;
            };
            if name.contains('/') {
                continue;
            }
            let prefix = format!("{name}/");
            let subresources: Vec<Value> = entries
                .iter()
                .filter(|e| {
                    e.get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| n.starts_with(&prefix))
                })
                .cloned()
                .collect();
            let behavior = STORED.iter().find(|(g, r, ..)| *g == group && *r == name).map(
                |(_, _, has_status, tracks_generation, special)| Behavior {
                    has_status: *has_status,
                    tracks_generation: *tracks_generation,
                    allow_unconditional_update: true,
                    special: *special,
                },
            );
            let (storage_group, storage_resource) = if group == "events.k8s.io" {
                (String::new(), "events".to_string())
            } else {
                (group.to_string(), name.to_string())
            };
            out.push(ResourceInfo {
                group: group.to_string(),
                version: version.to_string(),
                resource: name.to_string(),
                kind: entry
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                singular: entry
                    .get("singularName")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                namespaced: entry.get("namespaced").and_then(Value::as_bool).unwrap_or(false),
                short_names: str_list(entry.get("shortNames")),
                categories: str_list(entry.get("categories")),
                verbs: str_list(entry.get("verbs")),
                storage_version_hash: entry
                    .get("storageVersionHash")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                subresources,
                behavior,
                custom: None,
                storage_group,
                storage_resource,
            });
        }
    }
    out
}
