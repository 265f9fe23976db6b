//! Conversion of every add-on kind between v1alpha1 (the stored version) and v1beta1, following
//! the rules of upstream OCM's conversion webhook.
//!
//! Each kind converts with `From`/`TryFrom` between its two root types:
//!
//! | kind | v1alpha1 → v1beta1 | v1beta1 → v1alpha1 |
//! |---|---|---|
//! | AddOnDeploymentConfig, AddOnTemplate | `From` (same spec) | `From` (same spec) |
//! | ClusterManagementAddOn | `From` | `From` |
//! | ManagedClusterAddOn | `From` | `TryFrom`, [`Error::ConvertRegistration`] |
//!
//! and [`convert_object`] converts any of them as JSON, for a server that serves both versions.
//!
//! The rules (details in the submodules):
//!
//! - ClusterManagementAddOn: v1alpha1 `spec.supportedConfigs[{group, resource, defaultConfig}]`
//!   is v1beta1 `spec.defaultConfigs[{group, resource, name, namespace}]`; a kind without a
//!   default gets the name [`__reserved_no_default__`](crate::names::values::addon::RESERVED_NO_DEFAULT_CONFIG_NAME).
//!   `status.defaultconfigReferences` is `status.defaultConfigReferences`.
//! - ManagedClusterAddOn: v1alpha1 `spec.installNamespace` travels in the annotation
//!   [`addon.open-cluster-management.io/v1alpha1-install-namespace`](crate::names::annotations::V1ALPHA1_INSTALL_NAMESPACE);
//!   `status.registrations[{signerName, subject}]` are `kubeClient` registrations for the signer
//!   [`kubernetes.io/kube-apiserver-client`](crate::names::subjects::KUBE_APISERVER_CLIENT_SIGNER)
//!   and `customSigner` ones otherwise; `status.kubeClientDriver` is the `driver` of the
//!   `kubeClient` registrations; the deprecated `name`/`namespace` of `status.configReferences[]`
//!   are those of its `desiredConfig`.
//!
//! As upstream, v1beta1 cannot hold (and so a v1alpha1 → v1beta1 → v1alpha1 trip loses) the
//! deprecated `addOnConfiguration` of both kinds, the organizational units of a `kubeClient`
//! registration's subject, a `kubeClientDriver` without any `kubeClient` registration, and
//! `configReferences[]` `name`/`namespace` that differ from their `desiredConfig`. Everything
//! else, including every upstream example, survives the trip.

mod cluster_management_addon;
mod managed_cluster_addon;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use super::{GROUP, STORAGE_VERSION, v1alpha1, v1beta1};

/// Errors of converting add-on objects between versions.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A v1beta1 ManagedClusterAddOn registration has type `customSigner` but no `customSigner`
    /// settings, so it has no signer name to become a v1alpha1 registration with.
    #[error(
        "status.registrations[{index}] has type customSigner but no customSigner settings, which v1alpha1 cannot express"
    )]
    ConvertRegistration {
        /// The position of the registration in `status.registrations`.
        index: usize,
    },
    /// The object is not an add-on kind, or a version this module does not convert from or to.
    #[error("cannot convert {api_version} {kind} to {desired_api_version}")]
    ResolveKind {
        /// The `apiVersion` of the object.
        api_version: String,
        /// The `kind` of the object.
        kind: String,
        /// The `apiVersion` asked for.
        desired_api_version: String,
    },
    /// The object does not deserialize as its kind.
    #[error("reading {api_version} {kind} failed")]
    ReadObject {
        /// The `apiVersion` of the object.
        api_version: String,
        /// The `kind` of the object.
        kind: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// The converted object does not serialize.
    #[error("writing the converted {kind} failed")]
    WriteObject {
        /// The `kind` of the object.
        kind: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
}

/// The result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<v1alpha1::AddOnDeploymentConfig> for v1beta1::AddOnDeploymentConfig {
    fn from(config: v1alpha1::AddOnDeploymentConfig) -> Self {
        Self {
            metadata: config.metadata,
            spec: config.spec,
        }
    }
}

impl From<v1beta1::AddOnDeploymentConfig> for v1alpha1::AddOnDeploymentConfig {
    fn from(config: v1beta1::AddOnDeploymentConfig) -> Self {
        Self {
            metadata: config.metadata,
            spec: config.spec,
        }
    }
}

impl From<v1alpha1::AddOnTemplate> for v1beta1::AddOnTemplate {
    fn from(template: v1alpha1::AddOnTemplate) -> Self {
        Self {
            metadata: template.metadata,
            spec: template.spec,
        }
    }
}

impl From<v1beta1::AddOnTemplate> for v1alpha1::AddOnTemplate {
    fn from(template: v1beta1::AddOnTemplate) -> Self {
        Self {
            metadata: template.metadata,
            spec: template.spec,
        }
    }
}

/// The kinds this module converts.
const KINDS: [&str; 4] = [
    "ClusterManagementAddOn",
    "ManagedClusterAddOn",
    "AddOnDeploymentConfig",
    "AddOnTemplate",
];

/// The version of an add-on `apiVersion`, if it is one of ours.
fn version_of(api_version: &str) -> Option<&str> {
    let (group, version) = api_version.split_once('/')?;
    (group == GROUP && [STORAGE_VERSION, "v1beta1"].contains(&version)).then_some(version)
}

/// Reads `object` as `A`, converts it with `convert` and writes the result as JSON.
fn via<A, B>(
    object: &Value,
    api_version: &str,
    kind: &str,
    convert: impl FnOnce(A) -> Result<B>,
) -> Result<Value>
where
    A: DeserializeOwned,
    B: Serialize,
{
    let typed: A = serde_json::from_value(object.clone()).map_err(|source| Error::ReadObject {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        source,
    })?;
    serde_json::to_value(convert(typed)?).map_err(|source| Error::WriteObject {
        kind: kind.to_owned(),
        source,
    })
}

/// Converts an add-on object given as JSON to `desired_api_version` (e.g.
/// `addon.open-cluster-management.io/v1beta1`) with the rules of this module. An object already
/// at that version comes back unchanged.
///
/// The object passes through the typed form of its kind, so fields that its schema does not
/// have are dropped, as a structural CRD schema drops them.
///
/// # Errors
/// [`Error::ResolveKind`] for anything but the four add-on kinds at v1alpha1 or v1beta1,
/// [`Error::ReadObject`] when the object does not deserialize as its kind,
/// [`Error::WriteObject`] when the result does not serialize, and the errors of the conversion
/// itself ([`Error::ConvertRegistration`]).
pub fn convert_object(object: &Value, desired_api_version: &str) -> Result<Value> {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
    let resolve_error = || Error::ResolveKind {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        desired_api_version: desired_api_version.to_owned(),
    };
    let (Some(from), Some(to)) = (version_of(api_version), version_of(desired_api_version)) else {
        return Err(resolve_error());
    };
    if !KINDS.contains(&kind) {
        return Err(resolve_error());
    }
    if from == to {
        return Ok(object.clone());
    }
    let forward = from == STORAGE_VERSION;
    match kind {
        "ClusterManagementAddOn" if forward => via(
            object,
            api_version,
            kind,
            |o: v1alpha1::ClusterManagementAddOn| Ok(v1beta1::ClusterManagementAddOn::from(o)),
        ),
        "ClusterManagementAddOn" => via(object, api_version, kind, |o: v1beta1::ClusterManagementAddOn| {
            Ok(v1alpha1::ClusterManagementAddOn::from(o))
        }),
        "ManagedClusterAddOn" if forward => {
            via(object, api_version, kind, |o: v1alpha1::ManagedClusterAddOn| {
                Ok(v1beta1::ManagedClusterAddOn::from(o))
            })
        }
        "ManagedClusterAddOn" => via(object, api_version, kind, |o: v1beta1::ManagedClusterAddOn| {
            v1alpha1::ManagedClusterAddOn::try_from(o)
        }),
        "AddOnDeploymentConfig" if forward => {
            via(object, api_version, kind, |o: v1alpha1::AddOnDeploymentConfig| {
                Ok(v1beta1::AddOnDeploymentConfig::from(o))
            })
        }
        "AddOnDeploymentConfig" => via(object, api_version, kind, |o: v1beta1::AddOnDeploymentConfig| {
            Ok(v1alpha1::AddOnDeploymentConfig::from(o))
        }),
        "AddOnTemplate" if forward => via(object, api_version, kind, |o: v1alpha1::AddOnTemplate| {
            Ok(v1beta1::AddOnTemplate::from(o))
        }),
        _ => via(object, api_version, kind, |o: v1beta1::AddOnTemplate| {
            Ok(v1alpha1::AddOnTemplate::from(o))
        }),
    }
}

/// Removes the annotation `key` from `metadata` and returns its value; an annotation map left
/// empty is removed too, so that an object that had none gets none back.
fn take_annotation(metadata: &mut ObjectMeta, key: &str) -> Option<String> {
    let annotations = metadata.annotations.as_mut()?;
    let value = annotations.remove(key);
    if annotations.is_empty() {
        metadata.annotations = None;
    }
    value
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn deployment_configs_and_templates_keep_their_spec() {
        let config = v1alpha1::AddOnDeploymentConfig::new(
            "deploy-config",
            v1alpha1::AddOnDeploymentConfigSpec {
                agent_install_namespace: Some("agents".into()),
                ..Default::default()
            },
        );
        let beta = v1beta1::AddOnDeploymentConfig::from(config.clone());
        assert_eq!(beta.spec, config.spec);
        assert_eq!(v1alpha1::AddOnDeploymentConfig::from(beta), config);

        let template = v1alpha1::AddOnTemplate::new(
            "hello-template",
            v1alpha1::AddOnTemplateSpec {
                addon_name: "hello".into(),
                ..Default::default()
            },
        );
        let beta = v1beta1::AddOnTemplate::from(template.clone());
        assert_eq!(beta.spec, template.spec);
        assert_eq!(v1alpha1::AddOnTemplate::from(beta), template);
    }

    #[test]
    fn convert_object_switches_api_version_and_applies_the_rules() {
        let alpha = json!({
            "apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": "helloworld", "namespace": "cluster1"},
            "spec": {"installNamespace": "agents"},
        });
        let beta = convert_object(&alpha, "addon.open-cluster-management.io/v1beta1").unwrap();
        assert_eq!(
            beta,
            json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ManagedClusterAddOn",
                "metadata": {"name": "helloworld", "namespace": "cluster1", "annotations": {
                    "addon.open-cluster-management.io/v1alpha1-install-namespace": "agents"}},
                "spec": {},
            })
        );
        assert_eq!(
            convert_object(&beta, "addon.open-cluster-management.io/v1alpha1").unwrap(),
            alpha
        );
        assert_eq!(
            convert_object(&alpha, "addon.open-cluster-management.io/v1alpha1").unwrap(),
            alpha
        );
    }

    #[test]
    fn convert_object_rejects_other_kinds_and_versions() {
        let cluster =
            json!({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster"});
        assert!(matches!(
            convert_object(&cluster, "addon.open-cluster-management.io/v1beta1"),
            Err(Error::ResolveKind { .. })
        ));
        let addon = json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ClusterManagementAddOn",
            "metadata": {"name": "a"}, "spec": {}});
        assert!(matches!(
            convert_object(&addon, "addon.open-cluster-management.io/v2"),
            Err(Error::ResolveKind { .. })
        ));
        let bad = json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ClusterManagementAddOn",
            "metadata": {"name": "a"}, "spec": {"supportedConfigs": "not a list"}});
        assert!(matches!(
            convert_object(&bad, "addon.open-cluster-management.io/v1beta1"),
            Err(Error::ReadObject { .. })
        ));
    }

    #[test]
    fn taking_the_last_annotation_removes_the_map() {
        let mut metadata = ObjectMeta {
            annotations: Some([("a".to_owned(), "1".to_owned()), ("b".to_owned(), "2".to_owned())].into()),
            ..ObjectMeta::default()
        };
        assert_eq!(take_annotation(&mut metadata, "a").as_deref(), Some("1"));
        assert_eq!(take_annotation(&mut metadata, "a"), None);
        assert!(metadata.annotations.is_some());
        assert_eq!(take_annotation(&mut metadata, "b").as_deref(), Some("2"));
        assert_eq!(metadata.annotations, None);
    }
}
