//! Discovery documents: /version, /api, /api/v1, /apis, /apis/G, /apis/G/V and the aggregated
//! `apidiscovery.k8s.io/v2` lists kubectl asks for.

use serde_json::{Value, json};

use crate::registry::Registry;

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1", "minor": "36",
        "emulationMajor": "1", "emulationMinor": "36",
        "minCompatibilityMajor": "1", "minCompatibilityMinor": "35",
        "gitVersion": "v1.36.2-ocm-controlplane", "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean", "buildDate": "2026-11-22T00:00:00Z",
        "goVersion": format!("rust{}", env!("CARGO_PKG_RUST_VERSION")),
        "compiler": "rustc", "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH)
    })
}

/// `/api`.
pub fn api(server_address: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]})
}

fn group_version(group: &str, version: &str) -> Value {
    json!({"groupVersion": format!("{group}/{version}"), "version": version})
}

/// `/apis/G` (None when the group is unknown).
pub fn api_group(registry: &Registry, group: &str) -> Option<Value> {
    let versions = registry.versions(group);
    let first = versions.first()?;
    Some(json!({"kind": "APIGroup", "apiVersion": "v1", "name": group,
        "versions": versions.iter().map(|v| group_version(group, v)).collect::<Vec<_>>(),
        "preferredVersion": group_version(group, first)}))
}

/// Whether a group is served only by CustomResourceDefinitions.
fn is_custom_group(registry: &Registry, group: &str) -> bool {
    registry
        .versions(group)
        .iter()
        .flat_map(|v| registry.resources_of(group, v))
        .all(|info| info.is_custom())
}

/// The groups of `/apis`: built-in groups in their priority order, then the groups of custom
/// resources. kube-apiserver's aggregator sorts APIServices by priority and, at equal priority
/// (every CRD group-version has 1000), by APIService name `version.group`, then lists each group
/// where its first version appears: `v1.cluster…`, `v1.work…`, `v1alpha1.about…` put groups with a
/// `v1` before the others.
fn legacy_group_order(registry: &Registry) -> Vec<String> {
    let groups = registry.groups();
    let (custom, builtin): (Vec<String>, Vec<String>) =
        groups.into_iter().partition(|g| is_custom_group(registry, g));
    let mut services: Vec<(String, String)> = custom
        .iter()
        .flat_map(|g| {
            registry
                .versions(g)
                .into_iter()
                .map(move |v| (format!("{v}.{g}"), g.clone()))
        })
        .collect();
    services.sort();
    let mut out = builtin;
    for (_, group) in services {
        if !out.contains(&group) {
            out.push(group);
        }
    }
    out
}

/// The groups of aggregated discovery: built-in groups in their priority order, then custom
/// resource groups by name (equal priorities break ties by name).
fn aggregated_group_order(registry: &Registry) -> Vec<String> {
    let groups = registry.groups();
    let (mut custom, mut out): (Vec<String>, Vec<String>) =
        groups.into_iter().partition(|g| is_custom_group(registry, g));
    custom.sort();
    out.extend(custom);
    out
}

/// `/apis`.
pub fn api_group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = legacy_group_order(registry)
        .iter()
        .filter_map(|g| api_group(registry, g))
        .map(|mut g| {
            if let Some(m) = g.as_object_mut() {
                m.remove("kind");
                m.remove("apiVersion");
            }
            g
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/api/v1` or `/apis/G/V` (None when unknown).
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let infos = registry.resources_of(group, version);
    if infos.is_empty() {
        return None;
    }
    let mut resources: Vec<Value> = infos.iter().flat_map(|i| i.discovery_entries()).collect();
    resources.sort_by(|a, b| {
        a.get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .cmp(b.get("name").and_then(Value::as_str).unwrap_or_default())
    });
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let mut doc = json!({"kind": "APIResourceList", "groupVersion": gv, "resources": resources});
    if !group.is_empty()
        && let Some(m) = doc.as_object_mut()
    {
        m.insert("apiVersion".into(), json!("v1"));
    }
    Some(doc)
}

/// The aggregated discovery list (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) of the core
/// group (`legacy = true`) or of all groups.
pub fn aggregated(registry: &Registry, legacy: bool) -> Value {
    let groups: Vec<String> = if legacy {
        vec![String::new()]
    } else {
        aggregated_group_order(registry)
    };
    let mut items = Vec::new();
    for group in groups {
        let versions: Vec<String> = if legacy {
            vec!["v1".into()]
        } else {
            registry.versions(&group)
        };
        let mut vs = Vec::new();
        for version in versions {
            let mut resources = Vec::new();
            for info in registry.resources_of(&group, &version) {
                // kube-apiserver's built-in kinds name no group or version in their response
                // kinds (only subresources of another kind, such as `scale`, do); the CRD
                // discovery controller names them.
                let (own_group, own_version) = if info.is_custom() {
                    (group.as_str(), version.as_str())
                } else {
                    ("", "")
                };
                let mut r = serde_json::Map::new();
                r.insert("resource".into(), json!(info.resource));
                r.insert(
                    "responseKind".into(),
                    json!({"group": own_group, "version": own_version, "kind": info.kind}),
                );
                r.insert(
                    "scope".into(),
                    json!(if info.namespaced { "Namespaced" } else { "Cluster" }),
                );
                r.insert("singularResource".into(), json!(info.singular));
                r.insert("verbs".into(), json!(info.verbs));
                if !info.short_names.is_empty() {
                    r.insert("shortNames".into(), json!(info.short_names));
                }
                if !info.categories.is_empty() {
                    r.insert("categories".into(), json!(info.categories));
                }
                let subs: Vec<Value> = info
                    .subresources
                    .iter()
                    .map(|s| {
                        let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
                        let sub = name.split_once('/').map(|(_, s)| s).unwrap_or_default();
                        json!({"subresource": sub,
                            "responseKind": {"group": s.get("group").cloned().unwrap_or(json!(own_group)),
                                "version": s.get("version").cloned().unwrap_or(json!(own_version)),
                                "kind": s.get("kind").cloned().unwrap_or(json!(""))},
                            "verbs": s.get("verbs").cloned().unwrap_or(json!([]))})
                    })
                    .collect();
                if !subs.is_empty() {
                    r.insert("subresources".into(), json!(subs));
                }
                resources.push(Value::Object(r));
            }
            resources.sort_by(|a, b| a["resource"].as_str().cmp(&b["resource"].as_str()));
            vs.push(json!({"version": version, "resources": resources, "freshness": "Current"}));
        }
        let metadata = if group.is_empty() {
            json!({})
        } else {
            json!({"name": group})
        };
        items.push(json!({"metadata": metadata, "versions": vs}));
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(group: &str, plural: &str, kind: &str, versions: &[&str]) -> Value {
        let versions: Vec<Value> = versions
            .iter()
            .enumerate()
            .map(|(i, v)| json!({"name": v, "served": true, "storage": i == 0}))
            .collect();
        json!({"metadata": {"name": format!("{plural}.{group}")}, "spec": {"group": group, "scope": "Cluster",
            "names": {"plural": plural, "kind": kind}, "versions": versions}})
    }

    #[test]
    fn custom_groups_follow_the_aggregator_order() {
        let registry = Registry::with_builtins();
        for c in [
            crd("addon.example.io", "addons", "Addon", &["v1alpha1"]),
            crd("work.example.io", "works", "Work", &["v1"]),
            crd("about.k8s.io", "props", "Prop", &["v1alpha1"]),
        ] {
            crate::crd::register(&registry, &c);
        }
        let legacy = legacy_group_order(&registry);
        let custom: Vec<&str> = legacy[legacy.len() - 3..].iter().map(String::as_str).collect();
        assert_eq!(custom, ["work.example.io", "about.k8s.io", "addon.example.io"]);
        assert_eq!(legacy[0], "apps");
        let aggregated = aggregated_group_order(&registry);
        let custom: Vec<&str> = aggregated[aggregated.len() - 3..]
            .iter()
            .map(String::as_str)
            .collect();
        assert_eq!(custom, ["about.k8s.io", "addon.example.io", "work.example.io"]);
    }
}
