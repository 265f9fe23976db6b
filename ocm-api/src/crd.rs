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
