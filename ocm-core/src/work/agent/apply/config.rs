//! Whether the work owns a manifest's resource under its `deleteOption` (ocm-core.md §3.7).
//! (Which `manifestConfigs` entry applies to a manifest is `super::super::manifest_config`.)

use ocm_api::work::v1::{DeleteOption, DeletePropagationPolicy};

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
    use ocm_api::work::v1::{OrphaningRule, SelectivelyOrphan};

    use super::*;

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
