//! RBAC escalation prevention: a user may create or update a Role or ClusterRole only with
//! rules they already hold (or with the `escalate` verb on it), and a binding only to a role
//! whose rules they hold (or with the `bind` verb on it), as kube-apiserver's RBAC storage checks.
//!
//! Coverage is checked rule by rule after breaking the requested rules down into one verb, group,
//! resource (and name) or URL each; a held rule covers such an atom when each of its lists holds
//! `*` or the atom's value (`*/sub` covers any resource's `sub`, a URL ending in `*` covers by
//! prefix, and a rule without `resourceNames` covers every name).

use super::rbac::Rule;
use crate::auth::UserInfo;

/// One verb on one group/resource/name, or on one URL.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    Resource {
        group: String,
        resource: String,
        name: Option<String>,
        verb: String,
    },
    Url {
        url: String,
        verb: String,
    },
}

fn contains(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

fn covers(held: &Rule, atom: &Atom) -> bool {
    match atom {
        Atom::Resource {
            group,
            resource,
            name,
            verb,
        } => {
            let resource_ok = held.resources.iter().any(|r| {
                r == "*"
                    || r == resource
                    || r.strip_prefix("*/")
                        .is_some_and(|sub| resource.split_once('/').is_some_and(|(_, s)| s == sub))
            });
            contains(&held.verbs, verb)
                && contains(&held.api_groups, group)
                && resource_ok
                && (held.resource_names.is_empty()
                    || name.as_ref().is_some_and(|n| held.resource_names.contains(n)))
        }
        Atom::Url { url, verb } => {
            contains(&held.verbs, verb)
                && held
                    .non_resource_urls
                    .iter()
                    .any(|u| u == url || u.strip_suffix('*').is_some_and(|prefix| url.starts_with(prefix)))
        }
    }
}

fn atoms(rule: &Rule) -> Vec<Atom> {
    let mut out = Vec::new();
    for verb in &rule.verbs {
        for group in &rule.api_groups {
            for resource in &rule.resources {
                if rule.resource_names.is_empty() {
                    out.push(Atom::Resource {
                        group: group.clone(),
                        resource: resource.clone(),
                        name: None,
                        verb: verb.clone(),
                    });
                }
                for name in &rule.resource_names {
                    out.push(Atom::Resource {
                        group: group.clone(),
                        resource: resource.clone(),
                        name: Some(name.clone()),
                        verb: verb.clone(),
                    });
                }
            }
        }
        for url in &rule.non_resource_urls {
            out.push(Atom::Url {
                url: url.clone(),
                verb: verb.clone(),
            });
        }
    }
    out
}

/// The requested rules not covered by `held`, compacted and formatted as kube-apiserver lists
/// them (`{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`), sorted.
pub fn missing(held: &[Rule], requested: &[Rule]) -> Vec<String> {
    let mut uncovered: Vec<Atom> = requested
        .iter()
        .flat_map(atoms)
        .filter(|atom| !held.iter().any(|h| covers(h, atom)))
        .collect();
    uncovered.sort();
    uncovered.dedup();
    // One line per group/resource/name (or URL) with its verbs.
    let mut lines: Vec<(String, Vec<String>)> = Vec::new();
    for atom in uncovered {
        let (key, verb) = match atom {
            Atom::Resource {
                group,
                resource,
                name,
                verb,
            } => {
                let names = name
                    .map(|n| format!(", ResourceNames:[{n:?}]"))
                    .unwrap_or_default();
                (
                    format!("APIGroups:[{group:?}], Resources:[{resource:?}]{names}"),
                    verb,
                )
            }
            Atom::Url { url, verb } => (format!("NonResourceURLs:[{url:?}]"), verb),
        };
        match lines.iter_mut().find(|(k, _)| *k == key) {
            Some((_, verbs)) => verbs.push(verb),
            None => lines.push((key, vec![verb])),
        }
    }
    let mut out: Vec<String> = lines
        .into_iter()
        .map(|(key, verbs)| {
            let verbs: Vec<String> = verbs.iter().map(|v| format!("{v:?}")).collect();
            format!("{{{key}, Verbs:[{}]}}", verbs.join(" "))
        })
        .collect();
    out.sort();
    out
}

/// kube-apiserver's message for an attempted escalation (after `<object> is forbidden: `).
pub fn message(user: &UserInfo, missing: &[String]) -> String {
    let groups: Vec<String> = user.groups.iter().map(|g| format!("{g:?}")).collect();
    format!(
        "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        groups.join(" "),
        missing.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> Rule {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Rule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: v(names),
            non_resource_urls: Vec::new(),
        }
    }

    #[test]
    fn held_rules_cover_what_they_grant() {
        let held = [rule(&["get", "list"], &[""], &["configmaps"], &[])];
        assert!(missing(&held, &[rule(&["get"], &[""], &["configmaps"], &["x"])]).is_empty());
        assert_eq!(
            missing(
                &held,
                &[rule(&["get", "delete"], &[""], &["configmaps", "secrets"], &[])]
            ),
            [
                r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["delete" "get"]}"#,
            ]
        );
        let star = [rule(&["*"], &["*"], &["*"], &[])];
        assert!(missing(&star, &[rule(&["*"], &["*"], &["*"], &[])]).is_empty());
        // A named rule does not cover every name, nor a wildcard.
        let named = [rule(&["get"], &[""], &["configmaps"], &["x"])];
        assert_eq!(
            missing(&named, &[rule(&["get"], &[""], &["configmaps"], &[])]).len(),
            1
        );
        assert_eq!(
            missing(&held, &[rule(&["*"], &[""], &["configmaps"], &[])]).len(),
            1
        );
    }

    #[test]
    fn urls_are_covered_by_prefix() {
        let held = [Rule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz/*".into()],
            ..Rule::default()
        }];
        let want = |url: &str| Rule {
            verbs: vec!["get".into()],
            non_resource_urls: vec![url.into()],
            ..Rule::default()
        };
        assert!(missing(&held, &[want("/healthz/etcd")]).is_empty());
        assert_eq!(
            missing(&held, &[want("/metrics")]),
            [r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#]
        );
    }

    #[test]
    fn the_message_names_user_groups_and_rules() {
        let user = UserInfo {
            name: "alice".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
        };
        assert_eq!(
            message(&user, &["{X}".into()]),
            "user \"alice\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{X}"
        );
    }
}
