//! Choosing the `manifestConfigs` entry settings of one manifest (ocm-core.md §3.4; upstream
//! `FindManifestConfiguration`), for the apply path (update strategy) and the status controller
//! (feedback and condition rules), as upstream does: entries
//! match by exact group and resource and by namespace and name with `*` wildcards; of the
//! matching entries the first non-empty `conditionRules`, the first non-empty `feedbackRules`
//! and the first `updateStrategy` win, while `feedbackScrapeType` comes from the last match.

use ocm_api::work::v1::{ManifestConfigOption, ManifestResourceMeta, ResourceIdentifier};

/// Whether `value` matches `pattern`, in which `*` stands for any run of characters.
#[must_use]
pub fn wildcard_match(value: &str, pattern: &str) -> bool {
    if pattern == "*" || value == pattern {
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
    let (last, middle) = rest.split_last().unwrap_or((&"", &[]));
    for part in middle {
        match remaining.find(part) {
            Some(i) => remaining = &remaining[i + part.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last)
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

/// The settings that apply to the manifest `meta`, or `None` when no entry gives it rules or
/// an update strategy.
#[must_use]
pub fn find_manifest_config(
    meta: &ManifestResourceMeta,
    configs: &[ManifestConfigOption],
) -> Option<ManifestConfigOption> {
    let mut found = ManifestConfigOption {
        resource_identifier: ResourceIdentifier {
            group: meta.group.clone(),
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone(),
            resource: meta.resource.clone().unwrap_or_default(),
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
    let empty = found.condition_rules.as_ref().is_none_or(Vec::is_empty)
        && found.feedback_rules.as_ref().is_none_or(Vec::is_empty)
        && found.update_strategy.is_none();
    (!empty).then_some(found)
}

#[cfg(test)]
mod tests {
    use ocm_api::work::v1::{
        FeedbackRule, FeedbackScrapeType, FeedbackType, UpdateStrategy, UpdateStrategyType,
    };

    use super::*;

    #[test]
    fn wildcards() {
        assert!(wildcard_match("deploy1", "deploy*"));
        assert!(wildcard_match("anything", "*"));
        assert!(wildcard_match("", "*"));
        assert!(wildcard_match("a-b-c", "a*c"));
        assert!(wildcard_match("a-b-c", "*b*"));
        assert!(wildcard_match("abc", "a*b*c"));
        assert!(!wildcard_match("ac", "a*b*c"));
        assert!(!wildcard_match("ab", "ab*b"));
        assert!(!wildcard_match("xdeploy", "deploy*"));
        assert!(!wildcard_match("deploy", "deploy1"));
        assert!(wildcard_match("a.b", "a.b"));
        assert!(!wildcard_match("axb", "a.b"));
    }

    fn meta(name: &str) -> ManifestResourceMeta {
        ManifestResourceMeta {
            group: Some("apps".into()),
            resource: Some("deployments".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            version: Some("v1".into()),
            kind: Some("Deployment".into()),
            ordinal: 0,
        }
    }

    fn config(
        name: &str,
        feedback: Option<FeedbackType>,
        scrape: Option<FeedbackScrapeType>,
    ) -> ManifestConfigOption {
        ManifestConfigOption {
            resource_identifier: ResourceIdentifier {
                group: Some("apps".into()),
                resource: "deployments".into(),
                namespace: Some("ns".into()),
                name: name.into(),
            },
            feedback_rules: feedback.map(|type_| {
                vec![FeedbackRule {
                    type_,
                    json_paths: None,
                }]
            }),
            feedback_scrape_type: scrape,
            ..ManifestConfigOption::default()
        }
    }

    #[test]
    fn first_rules_last_scrape_type() {
        let configs = vec![
            config(
                "deploy*",
                Some(FeedbackType::WellKnownStatus),
                Some(FeedbackScrapeType::Poll),
            ),
            config(
                "deploy1",
                Some(FeedbackType::JsonPaths),
                Some(FeedbackScrapeType::Watch),
            ),
        ];
        let found = find_manifest_config(&meta("deploy1"), &configs).unwrap();
        assert_eq!(
            found.feedback_rules.unwrap()[0].type_,
            FeedbackType::WellKnownStatus
        );
        assert_eq!(found.feedback_scrape_type, Some(FeedbackScrapeType::Watch));
        let found = find_manifest_config(&meta("deploy2"), &configs).unwrap();
        assert_eq!(found.feedback_scrape_type, Some(FeedbackScrapeType::Poll));
        assert!(find_manifest_config(&meta("other"), &configs).is_none());
    }

    #[test]
    fn configs_without_rules_or_strategy_give_nothing() {
        let configs = vec![config("deploy1", None, Some(FeedbackScrapeType::Watch))];
        assert!(find_manifest_config(&meta("deploy1"), &configs).is_none());
        let mut with_strategy = configs.clone();
        with_strategy[0].update_strategy = Some(UpdateStrategy::default());
        assert!(find_manifest_config(&meta("deploy1"), &with_strategy).is_some());
        let mut other_group = configs;
        other_group[0].update_strategy = Some(UpdateStrategy::default());
        other_group[0].resource_identifier.group = None;
        assert!(find_manifest_config(&meta("deploy1"), &other_group).is_none());
    }

    #[test]
    fn first_matching_strategy_wins() {
        let strategy = |name: &str, t: Option<UpdateStrategyType>| ManifestConfigOption {
            update_strategy: t.map(|t| UpdateStrategy {
                type_: Some(t),
                server_side_apply: None,
            }),
            ..config(name, None, None)
        };
        let configs = vec![
            strategy("other", Some(UpdateStrategyType::ReadOnly)),
            strategy("deploy*", Some(UpdateStrategyType::CreateOnly)),
            strategy("deploy1", Some(UpdateStrategyType::ServerSideApply)),
        ];
        let found = find_manifest_config(&meta("deploy1"), &configs).unwrap();
        assert_eq!(
            found.update_strategy.unwrap().type_,
            Some(UpdateStrategyType::CreateOnly)
        );
        assert!(find_manifest_config(&meta("x"), &configs).is_none());
        assert!(find_manifest_config(&meta("deploy1"), &[strategy("deploy1", None)]).is_none());
    }
}
