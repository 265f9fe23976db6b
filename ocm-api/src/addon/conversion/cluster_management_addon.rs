//! ClusterManagementAddOn between v1alpha1 and v1beta1.
//!
//! - `spec.supportedConfigs` (v1alpha1) ⇄ `spec.defaultConfigs` (v1beta1), entry by entry in the
//!   same order: a `defaultConfig` becomes the entry's `name`/`namespace`; an entry without one
//!   gets the name `__reserved_no_default__` ([`RESERVED_NO_DEFAULT_CONFIG_NAME`]) and no
//!   namespace. Back in v1alpha1, an entry named so (or with an empty name) has no
//!   `defaultConfig`.
//! - `spec.addOnMeta` and `spec.installStrategy` are the same in both versions.
//! - The deprecated v1alpha1 `spec.addOnConfiguration` has no v1beta1 form and is dropped.
//! - `status.defaultconfigReferences` (v1alpha1) ⇄ `status.defaultConfigReferences` (v1beta1);
//!   `status.installProgressions` is the same.

use crate::{
    addon::{
        v1alpha1::{self, AddOnConfig, ConfigMeta, ConfigReferent},
        v1beta1,
    },
    names::values::addon::RESERVED_NO_DEFAULT_CONFIG_NAME,
};

impl From<ConfigMeta> for AddOnConfig {
    /// A v1alpha1 supported config as a v1beta1 default config.
    fn from(config: ConfigMeta) -> Self {
        let ConfigReferent { name, namespace } = config.default_config.unwrap_or_else(|| ConfigReferent {
            name: RESERVED_NO_DEFAULT_CONFIG_NAME.to_owned(),
            namespace: None,
        });
        Self {
            group: config.group,
            name,
            namespace,
            resource: config.resource,
        }
    }
}

impl From<AddOnConfig> for ConfigMeta {
    /// A v1beta1 default config as a v1alpha1 supported config.
    fn from(config: AddOnConfig) -> Self {
        let has_default = !config.name.is_empty() && config.name != RESERVED_NO_DEFAULT_CONFIG_NAME;
        Self {
            default_config: has_default.then_some(ConfigReferent {
                name: config.name,
                namespace: config.namespace,
            }),
            group: config.group,
            resource: config.resource,
        }
    }
}

impl From<v1alpha1::ClusterManagementAddOn> for v1beta1::ClusterManagementAddOn {
    fn from(addon: v1alpha1::ClusterManagementAddOn) -> Self {
        let spec = addon.spec;
        Self {
            metadata: addon.metadata,
            spec: v1beta1::ClusterManagementAddOnSpec {
                add_on_meta: spec.add_on_meta,
                default_configs: spec
                    .supported_configs
                    .map(|configs| configs.into_iter().map(AddOnConfig::from).collect()),
                install_strategy: spec.install_strategy,
            },
            status: addon.status.map(|status| v1beta1::ClusterManagementAddOnStatus {
                default_config_references: status.default_config_references,
                install_progressions: status.install_progressions,
            }),
        }
    }
}

impl From<v1beta1::ClusterManagementAddOn> for v1alpha1::ClusterManagementAddOn {
    fn from(addon: v1beta1::ClusterManagementAddOn) -> Self {
        let spec = addon.spec;
        Self {
            metadata: addon.metadata,
            spec: v1alpha1::ClusterManagementAddOnSpec {
                add_on_configuration: None,
                add_on_meta: spec.add_on_meta,
                install_strategy: spec.install_strategy,
                supported_configs: spec
                    .default_configs
                    .map(|configs| configs.into_iter().map(ConfigMeta::from).collect()),
            },
            status: addon.status.map(|status| v1alpha1::ClusterManagementAddOnStatus {
                default_config_references: status.default_config_references,
                install_progressions: status.install_progressions,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config_meta(resource: &str, default: Option<(&str, Option<&str>)>) -> ConfigMeta {
        ConfigMeta {
            default_config: default.map(|(name, namespace)| ConfigReferent {
                name: name.into(),
                namespace: namespace.map(Into::into),
            }),
            group: Some("addon.open-cluster-management.io".into()),
            resource: resource.into(),
        }
    }

    #[test]
    fn supported_config_with_default_becomes_named_default_config() {
        let config = AddOnConfig::from(config_meta(
            "addondeploymentconfigs",
            Some(("global", Some("ocm"))),
        ));
        assert_eq!(
            config,
            AddOnConfig {
                group: Some("addon.open-cluster-management.io".into()),
                name: "global".into(),
                namespace: Some("ocm".into()),
                resource: "addondeploymentconfigs".into(),
            }
        );
        assert_eq!(
            ConfigMeta::from(config),
            config_meta("addondeploymentconfigs", Some(("global", Some("ocm"))))
        );
    }

    #[test]
    fn supported_config_without_default_uses_the_reserved_name() {
        let config = AddOnConfig::from(config_meta("addontemplates", None));
        assert_eq!(config.name, RESERVED_NO_DEFAULT_CONFIG_NAME);
        assert_eq!(config.namespace, None);
        assert_eq!(ConfigMeta::from(config), config_meta("addontemplates", None));
    }

    #[test]
    fn default_config_with_empty_or_reserved_name_has_no_default() {
        for name in ["", RESERVED_NO_DEFAULT_CONFIG_NAME] {
            let meta = ConfigMeta::from(AddOnConfig {
                group: None,
                name: name.into(),
                namespace: Some("ignored".into()),
                resource: "addontemplates".into(),
            });
            assert_eq!(meta.default_config, None, "{name:?}");
            assert_eq!(meta.group, None);
        }
    }

    #[test]
    fn spec_and_status_map_field_by_field() {
        let alpha: v1alpha1::ClusterManagementAddOn = serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "ClusterManagementAddOn",
            "metadata": {"name": "helloworld", "annotations": {"addon.open-cluster-management.io/lifecycle": "addon-manager"}},
            "spec": {
                "addOnMeta": {"displayName": "helloworld"},
                "supportedConfigs": [
                    {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                     "defaultConfig": {"name": "global", "namespace": "ocm"}},
                    {"group": "addon.open-cluster-management.io", "resource": "addontemplates"}
                ],
                "installStrategy": {"type": "Placements", "placements": [{"name": "all", "namespace": "default"}]}
            },
            "status": {"defaultconfigReferences": [{"group": "addon.open-cluster-management.io",
                "resource": "addondeploymentconfigs", "desiredConfig": {"name": "global", "namespace": "ocm", "specHash": "h"}}]}
        }))
        .unwrap();
        let beta = v1beta1::ClusterManagementAddOn::from(alpha.clone());
        assert_eq!(
            serde_json::to_value(&beta).unwrap(),
            json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ClusterManagementAddOn",
                "metadata": {"name": "helloworld", "annotations": {"addon.open-cluster-management.io/lifecycle": "addon-manager"}},
                "spec": {
                    "addOnMeta": {"displayName": "helloworld"},
                    "defaultConfigs": [
                        {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                         "name": "global", "namespace": "ocm"},
                        {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                         "name": "__reserved_no_default__"}
                    ],
                    "installStrategy": {"type": "Placements", "placements": [{"name": "all", "namespace": "default"}]}
                },
                "status": {"defaultConfigReferences": [{"group": "addon.open-cluster-management.io",
                    "resource": "addondeploymentconfigs", "desiredConfig": {"name": "global", "namespace": "ocm", "specHash": "h"}}]}
            })
        );
        assert_eq!(v1alpha1::ClusterManagementAddOn::from(beta), alpha);
    }

    #[test]
    fn deprecated_add_on_configuration_is_dropped() {
        let mut alpha =
            v1alpha1::ClusterManagementAddOn::new("a", v1alpha1::ClusterManagementAddOnSpec::default());
        alpha.spec.add_on_configuration = Some(v1alpha1::AddOnConfiguration {
            crd_name: Some("configs.example.com".into()),
            ..Default::default()
        });
        let back = v1alpha1::ClusterManagementAddOn::from(v1beta1::ClusterManagementAddOn::from(alpha));
        assert_eq!(back.spec.add_on_configuration, None);
    }
}
