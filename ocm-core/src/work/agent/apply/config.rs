//! Which `manifestConfigs` entry applies to a manifest (ocm-core.md §3.4; upstream
//! `FindManifestConfiguration`), and whether the work owns a manifest's resource under its
//! `deleteOption` (§3.7).

use ocm_api::work::v1::{
    DeleteOption, DeletePropagationPolicy, ManifestConfigOption, ManifestResourceMeta, ResourceIdentifier,
};

/// Whether `value` matches `pattern`, where `*` stands for any run of characters.
pub(crate) fn wildcard_match(value: &str, pattern: &str) -> bool {
    if value == pattern || pattern == "*" {
        return true;
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return false;
    }
    let (first, rest) = (parts[0], &parts[1..]);
    let Some(mut remaining) = value.strip_prefix(first) else {
        return false;
    };
    let last = rest.len() - 1;
    for (i, part) in rest.iter().enumerate() {
        if i == last {
            return remaining.len() >= part.len() && remaining.ends_with(part);
        }
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    true
}

fn matches(meta: &ManifestResourceMeta, id: &ResourceIdentifier) -> bool {
    meta.group.as_deref().unwrap_or_default() == id.group.as_deref().unwrap_or_default()
        && meta.resource.as_deref().unwrap_or_default() == id.resource
        && wildcard_match(
            meta.namespace.as_deref().unwrap_or_default(),
            id.namespace.as_deref().unwrap_or_default(),
        )
        && wildcard_match(meta.name.as_deref().unwrap_or_default(), &id.name)
}

/// The configuration of the manifest of `meta`: of all matching entries, the first non-empty
/// condition rules, the first non-empty feedback rules, the first update strategy, and the
/// feedback scrape type of the last; `None` when nothing matched with any of those.
pub(crate) fn find(
    meta: &ManifestResourceMeta,
    configs: &[ManifestConfigOption],
) -> Option<ManifestConfigOption> {
    let mut found = ManifestConfigOption {
        resource_identifier: ResourceIdentifier {
            group: meta.group.clone(),
            resource: meta.resource.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone(),
        },
        ..ManifestConfigOption::default()
    };
    for config in configs.iter().filter(|c| matches(meta, &c.resource_identifier)) {
        if found.condition_rules.as_ref().is_none_or(Vec::is_empty)
            && config.condition_rules.as_ref().is_some_and(|r| !r.is_empty())
        {
            found.condition_rules.clone_from(&config.condition_rules);
        }
        if found.feedback_rules.as_ref().is_none_or(Vec::is_empty)
            && config.feedback_rules.as_ref().is_some_and(|r| !r.is_empty())
        {
            found.feedback_rules.clone_from(&config.feedback_rules);
        }
        if found.update_strategy.is_none() && config.update_strategy.is_some() {
            found.update_strategy.clone_from(&config.update_strategy);
        }
        found.feedback_scrape_type = config.feedback_scrape_type;
    }
    if found.condition_rules.is_none() && found.feedback_rules.is_none() && found.update_strategy.is_none() {
        return None;
    }
    Some(found)
}

/// Whether the work owns the resource (group/resource/namespace/name) under `delete_option`:
/// Foreground (or none) owns, Orphan does not, SelectivelyOrphan owns unless an orphaning rule
/// names the resource exactly.
pub(crate) fn owned_by_work(
    group: &str,
    resource: &str,
    namespace: &str,
    name: &str,
    delete_option: Option<&DeleteOption>,
) -> bool {
    let Some(option) = delete_option else {
        return true;
    };
    match option.propagation_policy {
        None | Some(DeletePropagationPolicy::Foreground) => true,
        Some(DeletePropagationPolicy::Orphan) => false,
        Some(DeletePropagationPolicy::SelectivelyOrphan) => {
            let Some(selectively) = &option.selectively_orphans else {
                return true;
            };
            !selectively.orphaning_rules.iter().flatten().any(|rule| {
                rule.group.as_deref().unwrap_or_default() == group
                    && rule.resource == resource
                    && rule.name == name
                    && rule.namespace.as_deref().unwrap_or_default() == namespace
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use ocm_api::work::v1::{OrphaningRule, SelectivelyOrphan, UpdateStrategy, UpdateStrategyType};

    use super::*;

    #[test]
    fn wildcards() {
        assert!(wildcard_match("deploy1", "deploy*"));
        assert!(wildcard_match("anything", "*"));
        assert!(wildcard_match("a-b-c", "a*c"));
        assert!(wildcard_match("abc", "*b*"));
        assert!(!wildcard_match("deploy1", "job*"));
        assert!(!wildcard_match("ab", "a*b*c"));
        assert!(!wildcard_match("a.c", "abc"));
        assert!(wildcard_match("", ""));
        assert!(!wildcard_match("x", ""));
    }

    fn meta(name: &str) -> ManifestResourceMeta {
        ManifestResourceMeta {
            group: Some("apps".into()),
            resource: Some("deployments".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            ..ManifestResourceMeta::default()
        }
    }

    fn config(name: &str, strategy: Option<UpdateStrategyType>) -> ManifestConfigOption {
        ManifestConfigOption {
            resource_identifier: ResourceIdentifier {
                group: Some("apps".into()),
                resource: "deployments".into(),
                namespace: Some("ns".into()),
                name: name.into(),
            },
            update_strategy: strategy.map(|t| UpdateStrategy {
                type_: Some(t),
                server_side_apply: None,
            }),
            ..ManifestConfigOption::default()
        }
    }

    #[test]
    fn first_matching_strategy_wins() {
        let configs = vec![
            config("other", Some(UpdateStrategyType::ReadOnly)),
            config("deploy*", Some(UpdateStrategyType::CreateOnly)),
            config("deploy1", Some(UpdateStrategyType::ServerSideApply)),
        ];
        let found = find(&meta("deploy1"), &configs).unwrap();
        assert_eq!(
            found.update_strategy.unwrap().type_,
            Some(UpdateStrategyType::CreateOnly)
        );
        assert!(find(&meta("x"), &configs).is_none());
        assert!(find(&meta("deploy1"), &[config("deploy1", None)]).is_none());
    }

    #[test]
    fn ownership_by_delete_option() {
        assert!(owned_by_work("", "configmaps", "ns", "a", None));
        let mut option = DeleteOption {
            propagation_policy: Some(DeletePropagationPolicy::Orphan),
            ..DeleteOption::default()
        };
        assert!(!owned_by_work("", "configmaps", "ns", "a", Some(&option)));
        option.propagation_policy = Some(DeletePropagationPolicy::SelectivelyOrphan);
        assert!(owned_by_work("", "configmaps", "ns", "a", Some(&option)));
        option.selectively_orphans = Some(SelectivelyOrphan {
            orphaning_rules: Some(vec![OrphaningRule {
                group: None,
                resource: "configmaps".into(),
                namespace: Some("ns".into()),
                name: "a".into(),
            }]),
        });
        assert!(!owned_by_work("", "configmaps", "ns", "a", Some(&option)));
        assert!(owned_by_work("", "configmaps", "ns", "b", Some(&option)));
    }
}
