//! Property test of RBAC rule matching against a reference model: a rule is expanded into the
//! set of every (verb, group, resource, subresource, name) or (verb, path) it grants over a small
//! finite universe, and [`Rule::allows`] must agree with membership in that set for every
//! request of the universe.

use std::collections::HashSet;

use proptest::prelude::*;

use super::rbac::Rule;
use super::{Attributes, Target};

const VERBS: [&str; 4] = ["get", "list", "create", "delete"];
const GROUPS: [&str; 3] = ["", "apps", "rbac.authorization.k8s.io"];
const RESOURCES: [&str; 3] = ["configmaps", "pods", "deployments"];
const SUBRESOURCES: [&str; 3] = ["", "status", "scale"];
const NAMES: [&str; 3] = ["", "a", "b"];
const PATHS: [&str; 5] = ["/api", "/apis", "/apis/apps", "/healthz", "/healthz/etcd"];

type Atom = (String, String, String, String, String);

/// Every request of the universe the rule grants, by enumeration of what each list means.
fn expand(rule: &Rule) -> (HashSet<Atom>, HashSet<(String, String)>) {
    let verbs: Vec<&str> = VERBS
        .iter()
        .copied()
        .filter(|v| rule.verbs.iter().any(|r| r == "*" || r == v))
        .collect();
    let mut resources = HashSet::new();
    for group in GROUPS
        .iter()
        .filter(|g| rule.api_groups.iter().any(|r| r == "*" || r == *g))
    {
        for resource in RESOURCES {
            for sub in SUBRESOURCES {
                let listed = rule.resources.iter().any(|r| {
                    if r == "*" {
                        return true;
                    }
                    match r.split_once('/') {
                        None => sub.is_empty() && r == resource,
                        Some(("*", s)) => s == sub,
                        Some((res, s)) => res == resource && s == sub,
                    }
                });
                if !listed {
                    continue;
                }
                for name in NAMES {
                    let named = if rule.resource_names.is_empty() {
                        true
                    } else {
                        rule.resource_names.iter().any(|n| n == name)
                    };
                    if named {
                        for verb in &verbs {
                            resources.insert((
                                verb.to_string(),
                                group.to_string(),
                                resource.to_string(),
                                sub.to_string(),
                                name.to_string(),
                            ));
                        }
                    }
                }
            }
        }
    }
    let mut paths = HashSet::new();
    for path in PATHS {
        let listed = rule.non_resource_urls.iter().any(|u| match u.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => u == path,
        });
        if listed {
            for verb in &verbs {
                paths.insert((verb.to_string(), path.to_string()));
            }
        }
    }
    (resources, paths)
}

fn pick(from: &'static [&'static str]) -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(proptest::sample::select(from), 0..3)
        .prop_map(|v| v.into_iter().map(str::to_string).collect())
}

fn rule() -> impl Strategy<Value = Rule> {
    const VERB_CHOICES: &[&str] = &["get", "list", "create", "delete", "*"];
    const GROUP_CHOICES: &[&str] = &["", "apps", "rbac.authorization.k8s.io", "*"];
    const RESOURCE_CHOICES: &[&str] = &[
        "configmaps",
        "pods",
        "deployments",
        "pods/status",
        "deployments/scale",
        "*/status",
        "*/scale",
        "*",
    ];
    const NAME_CHOICES: &[&str] = &["a", "b"];
    const URL_CHOICES: &[&str] = &["/api", "/apis/*", "/healthz", "/healthz/*", "*"];
    (
        pick(VERB_CHOICES),
        pick(GROUP_CHOICES),
        pick(RESOURCE_CHOICES),
        pick(NAME_CHOICES),
        pick(URL_CHOICES),
    )
        .prop_map(
            |(verbs, api_groups, resources, resource_names, non_resource_urls)| Rule {
                verbs,
                api_groups,
                resources,
                resource_names,
                non_resource_urls,
            },
        )
}

proptest! {
    #[test]
    fn rule_matching_agrees_with_the_expanded_model(rule in rule()) {
        let (resources, paths) = expand(&rule);
        for verb in VERBS {
            for group in GROUPS {
                for resource in RESOURCES {
                    for sub in SUBRESOURCES {
                        for name in NAMES {
                            let attributes = Attributes {
                                verb: verb.into(),
                                target: Target::Resource {
                                    namespace: Some("ns".into()),
                                    group: group.into(),
                                    resource: resource.into(),
                                    subresource: sub.into(),
                                    name: name.into(),
                                },
                            };
                            let model = resources.contains(&(verb.into(), group.into(), resource.into(), sub.into(), name.into()));
                            prop_assert_eq!(rule.allows(&attributes), model, "{:?} {:?}", rule, attributes);
                        }
                    }
                }
            }
            for path in PATHS {
                let attributes = Attributes { verb: verb.into(), target: Target::NonResource { path: path.into() } };
                let model = paths.contains(&(verb.to_string(), path.to_string()));
                prop_assert_eq!(rule.allows(&attributes), model, "{:?} {:?}", rule, attributes);
            }
        }
    }
}
