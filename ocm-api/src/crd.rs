//! The CustomResourceDefinitions of every kind in this crate, generated from its types.
//!
//! Each kind's CRD comes from its [`custom_resource!`-defined](crate::resource) root type (names, scope,
//! short names, printer columns, subresources) and the structural schema of [`crate::schema`]. [`all`] lists every CRD with where upstream installs it; the `crdgen` binary
//! writes them to `ocm-api/crds/`, and a test fails when the committed files are stale.

use k8s_openapi::{
    apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionNames,
        CustomResourceDefinitionSpec, CustomResourceDefinitionVersion, CustomResourceSubresourceStatus,
        CustomResourceSubresources, CustomResourceValidation, JSONSchemaProps,
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use serde_json::Value;

/// Errors of building a CustomResourceDefinition from our types.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The generated schema did not convert into a `JSONSchemaProps`.
    #[error("the generated schema of {crd} is not a valid JSONSchemaProps")]
    ConvertSchema {
        /// The CRD whose schema failed.
        crd: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// Several versions of one kind could not be merged into one CRD.
    #[error("the versions of {crd} could not be merged")]
    MergeVersions {
        /// The CRD whose versions failed to merge.
        crd: String,
        /// What kube said.
        #[source]
        source: kube::core::crd::MergeError,
    },
}

/// The result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where upstream OCM installs a CRD.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InstallTarget {
    /// On the hub cluster, by the cluster-manager operator.
    Hub,
    /// On every managed cluster, by the klusterlet operator.
    Managed,
    /// With the operators themselves (the ClusterManager and Klusterlet kinds).
    Operator,
}

impl InstallTarget {
    /// The directory name used for this target under `ocm-api/crds/`.
    #[must_use]
    pub const fn dir_name(self) -> &'static str {
        match self {
            Self::Hub => "hub",
            Self::Managed => "managed",
            Self::Operator => "operator",
        }
    }
}

/// One generated CRD and where it belongs.
#[derive(Clone, Debug)]
pub struct GeneratedCrd {
    /// Where upstream installs it.
    pub target: InstallTarget,
    /// The CustomResourceDefinition itself.
    pub crd: CustomResourceDefinition,
}

impl GeneratedCrd {
    /// The CRD's name, `<plural>.<group>`.
    #[must_use]
    pub fn name(&self) -> &str {
        self.crd.metadata.name.as_deref().unwrap_or_default()
    }

    /// The file this CRD is written to, relative to `ocm-api/crds/`.
    #[must_use]
    pub fn relative_path(&self) -> String {
        format!("{}/{}.yaml", self.target.dir_name(), self.name())
    }
}

/// A kind at one version whose CRD this crate generates.
pub trait VersionedCrd {
    /// The single-version CRD of this kind at this version, with its structural schema.
    ///
    /// # Errors
    /// [`Error::ConvertSchema`] when the generated schema is not a valid `JSONSchemaProps`, which
    /// a unit test rules out for every kind of this crate.
    fn versioned_crd() -> Result<CustomResourceDefinition>;
}

/// Merges the single-version CRDs of one kind into one CRD that serves them all.
///
/// # Errors
/// [`Error::MergeVersions`] when the CRDs are not versions of the same kind.
pub fn merge_versions(
    crds: Vec<CustomResourceDefinition>,
    storage_version: &str,
) -> Result<CustomResourceDefinition> {
    let crd_name = crds
        .first()
        .and_then(|c| c.metadata.name.clone())
        .unwrap_or_default();
    kube::core::crd::merge_crds(crds, storage_version).map_err(|source| Error::MergeVersions {
        crd: crd_name,
        source,
    })
}

/// What a CRD says about a kind at one version, besides its schema.
#[derive(Clone, Debug)]
pub struct KindInfo<'a> {
    /// The API group.
    pub group: &'a str,
    /// The version name.
    pub version: &'a str,
    /// The kind, in CamelCase.
    pub kind: &'a str,
    /// The plural resource name.
    pub plural: &'a str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names `kubectl` accepts.
    pub short_names: &'a [&'a str],
    /// `kubectl get` columns: name, type and JSONPath.
    pub printer_columns: &'a [(&'a str, &'a str, &'a str)],
    /// Whether `status` is a subresource.
    pub has_status_subresource: bool,
    /// The `openAPIV3Schema`.
    pub schema: Value,
}

/// Builds the single-version CRD of a kind.
///
/// # Errors
/// [`Error::ConvertSchema`] when the schema is not a valid `JSONSchemaProps`.
pub fn build(info: &KindInfo<'_>) -> Result<CustomResourceDefinition> {
    let plural = info.plural;
    let name = format!("{plural}.{}", info.group);
    let schema: JSONSchemaProps =
        serde_json::from_value(info.schema.clone()).map_err(|source| Error::ConvertSchema {
            crd: name.clone(),
            source,
        })?;
    let owned = |items: &[&str]| (!items.is_empty()).then(|| items.iter().map(|s| (*s).to_owned()).collect());
    Ok(CustomResourceDefinition {
        metadata: ObjectMeta {
            name: Some(name),
            ..ObjectMeta::default()
        },
        spec: CustomResourceDefinitionSpec {
            group: info.group.to_owned(),
            names: CustomResourceDefinitionNames {
                kind: info.kind.to_owned(),
                list_kind: Some(format!("{}List", info.kind)),
                plural: plural.to_owned(),
                singular: Some(info.kind.to_lowercase()),
                short_names: owned(info.short_names),
                categories: None,
            },
            scope: if info.namespaced { "Namespaced" } else { "Cluster" }.to_owned(),
            versions: vec![CustomResourceDefinitionVersion {
                name: info.version.to_owned(),
                served: true,
                storage: true,
                schema: Some(CustomResourceValidation {
                    open_api_v3_schema: Some(schema),
                }),
                subresources: info.has_status_subresource.then(|| CustomResourceSubresources {
                    status: Some(CustomResourceSubresourceStatus(serde_json::json!({}))),
                    scale: None,
                }),
                additional_printer_columns: (!info.printer_columns.is_empty()).then(|| {
                    info.printer_columns
                        .iter()
                        .map(|(name, type_, json_path)| CustomResourceColumnDefinition {
                            name: (*name).to_owned(),
                            type_: (*type_).to_owned(),
                            json_path: (*json_path).to_owned(),
                            ..CustomResourceColumnDefinition::default()
                        })
                        .collect()
                }),
                ..CustomResourceDefinitionVersion::default()
            }],
            ..CustomResourceDefinitionSpec::default()
        },
        status: None,
    })
}

/// Every CRD of this crate, with where upstream installs it, in a stable order.
///
/// # Errors
/// The first error of building any of them; a unit test makes sure there is none.
pub fn all() -> Result<Vec<GeneratedCrd>> {
    let mut crds = Vec::new();
    crds.extend(crate::cluster::crds()?);
    crds.extend(crate::multicluster::crds()?);
    crds.extend(crate::about::crds()?);
    crds.extend(crate::work::crds()?);
    crds.extend(crate::operator::crds()?);
    crds.extend(crate::addon::crds()?);
    crds.sort_by_key(GeneratedCrd::relative_path);
    Ok(crds)
}

/// The API group of the add-on kinds, whose CRDs serve v1alpha1 and v1beta1.
const ADDON_GROUP: &str = "addon.open-cluster-management.io";

/// Makes v1beta1 the storage version of a two-version add-on CRD (group
/// `addon.open-cluster-management.io`, serving v1alpha1 and v1beta1); returns whether `crd` is one.
///
/// Upstream stores the add-on kinds as v1alpha1 and serves v1beta1 through its conversion
/// webhook. On a cluster where no webhook converts (strategy `None`: kube-apiserver only
/// relabels and prunes), v1beta1 clients — every controller of this workspace, as upstream's —
/// keep what they write only when v1beta1 is stored; and a hub whose webhook comes and goes
/// leaves the objects readable in the version its clients use. Other CRDs are left as they are.
pub fn store_addon_kinds_as_v1beta1(crd: &mut CustomResourceDefinition) -> bool {
    let versions = &mut crd.spec.versions;
    let two_versions = versions.len() >= 2 && versions.iter().any(|v| v.name == "v1beta1");
    if crd.spec.group != ADDON_GROUP || !two_versions {
        return false;
    }
    for version in versions.iter_mut() {
        version.storage = version.name == "v1beta1";
    }
    true
}

/// Serializes a CRD as the YAML document `crdgen` writes.
///
/// # Errors
/// The serializer's error, which does not happen for CRDs built by this crate.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_saphyr::SerializeError> {
    serde_saphyr::to_string(crd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addon_kinds_switch_storage_to_v1beta1_other_kinds_stay() {
        let crds = all().unwrap();
        let mut switched = Vec::new();
        for generated in crds {
            let name = generated.name().to_string();
            let mut crd = generated.crd;
            if store_addon_kinds_as_v1beta1(&mut crd) {
                let stored: Vec<_> = crd.spec.versions.iter().filter(|v| v.storage).collect();
                assert_eq!(stored.len(), 1, "{name}");
                assert_eq!(stored[0].name, "v1beta1");
                switched.push(name);
            } else {
                assert!(
                    crd.spec.group != ADDON_GROUP || crd.spec.versions.len() == 1,
                    "{name}"
                );
            }
        }
        switched.sort();
        assert_eq!(
            switched,
            [
                "addondeploymentconfigs.addon.open-cluster-management.io",
                "addontemplates.addon.open-cluster-management.io",
                "clustermanagementaddons.addon.open-cluster-management.io",
                "managedclusteraddons.addon.open-cluster-management.io",
            ]
        );
    }

    #[test]
    fn every_crd_builds_with_a_schema() {
        let crds = all().unwrap();
        assert!(!crds.is_empty());
        for generated in &crds {
            for version in &generated.crd.spec.versions {
                let schema = version
                    .schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref());
                assert!(
                    schema.is_some(),
                    "{} {} has no schema",
                    generated.name(),
                    version.name
                );
            }
        }
    }

    #[test]
    fn paths_are_unique() {
        let crds = all().unwrap();
        let mut paths: Vec<_> = crds.iter().map(GeneratedCrd::relative_path).collect();
        paths.dedup();
        assert_eq!(paths.len(), crds.len());
    }
}
