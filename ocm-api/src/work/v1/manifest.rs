//! [`Manifest`]: one Kubernetes object of a ManifestWork, kept as the raw JSON the user wrote.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Errors of turning objects into manifests.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The object could not be serialized to JSON.
    #[error("the object could not be serialized into a manifest")]
    SerializeManifest {
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// The JSON value is not an object, so it cannot be a Kubernetes resource.
    #[error("a manifest must be a JSON object, not {found}")]
    WrapManifest {
        /// The kind of JSON value that was given instead (`array`, `string`, …).
        found: &'static str,
    },
}

/// The result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One complete Kubernetes object (`apiVersion`, `kind`, `metadata`, …) that a ManifestWork asks
/// the work agent to apply.
///
/// The object is kept exactly as written: every field, including ones unknown to this crate,
/// survives deserializing and serializing again, in its original key order. The accessors read
/// the identifying fields without interpreting anything else.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Manifest(pub Map<String, Value>);

impl Manifest {
    /// A manifest holding this JSON object.
    #[must_use]
    pub const fn new(object: Map<String, Value>) -> Self {
        Self(object)
    }

    /// Serializes any object (a `k8s_openapi` type, one of this crate's kinds, …) into a
    /// manifest.
    ///
    /// # Errors
    /// [`Error::SerializeManifest`] when serializing fails, [`Error::WrapManifest`] when the
    /// object does not serialize to a JSON object.
    pub fn from_resource<T: Serialize>(resource: &T) -> Result<Self> {
        let value = serde_json::to_value(resource).map_err(|source| Error::SerializeManifest { source })?;
        Self::try_from(value)
    }

    /// The `apiVersion` of the object, `group/version` or just `version` for the core group.
    #[must_use]
    pub fn api_version(&self) -> Option<&str> {
        self.0.get("apiVersion").and_then(Value::as_str)
    }

    /// The `kind` of the object.
    #[must_use]
    pub fn kind(&self) -> Option<&str> {
        self.0.get("kind").and_then(Value::as_str)
    }

    /// The API group of the object: the part of `apiVersion` before `/`, or `""` for the core
    /// group (an `apiVersion` without `/`).
    #[must_use]
    pub fn group(&self) -> Option<&str> {
        self.api_version()
            .map(|api_version| api_version.rsplit_once('/').map_or("", |(group, _)| group))
    }

    /// The API version of the object without its group: the part of `apiVersion` after `/`.
    #[must_use]
    pub fn version(&self) -> Option<&str> {
        self.api_version().map(|api_version| {
            api_version
                .rsplit_once('/')
                .map_or(api_version, |(_, version)| version)
        })
    }

    /// `metadata.name` of the object.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.metadata_str("name")
    }

    /// `metadata.namespace` of the object; `None` for cluster-scoped objects and for objects
    /// that leave the namespace to the defaults of the cluster they are applied to.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        self.metadata_str("namespace")
    }

    /// The JSON object itself.
    #[must_use]
    pub const fn as_object(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The JSON object itself, to change it.
    pub const fn as_object_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.0
    }

    /// The JSON object, giving up the wrapper.
    #[must_use]
    pub fn into_object(self) -> Map<String, Value> {
        self.0
    }

    /// A string field of `metadata`.
    fn metadata_str(&self, field: &str) -> Option<&str> {
        self.0.get("metadata")?.get(field)?.as_str()
    }
}

impl From<Map<String, Value>> for Manifest {
    fn from(object: Map<String, Value>) -> Self {
        Self(object)
    }
}

impl From<Manifest> for Value {
    fn from(manifest: Manifest) -> Self {
        Self::Object(manifest.0)
    }
}

impl TryFrom<Value> for Manifest {
    type Error = Error;

    fn try_from(value: Value) -> Result<Self> {
        match value {
            Value::Object(object) => Ok(Self(object)),
            Value::Null => Err(Error::WrapManifest { found: "null" }),
            Value::Bool(_) => Err(Error::WrapManifest { found: "a boolean" }),
            Value::Number(_) => Err(Error::WrapManifest { found: "a number" }),
            Value::String(_) => Err(Error::WrapManifest { found: "a string" }),
            Value::Array(_) => Err(Error::WrapManifest { found: "an array" }),
        }
    }
}

impl JsonSchema for Manifest {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Manifest".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        crate::schema::embedded_resource_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural_schema;

    fn deployment() -> Manifest {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "hello", "namespace": "default"},
            "spec": {"replicas": 3},
        }))
        .unwrap()
    }

    #[test]
    fn accessors_read_identifying_fields() {
        let manifest = deployment();
        assert_eq!(manifest.api_version(), Some("apps/v1"));
        assert_eq!(manifest.group(), Some("apps"));
        assert_eq!(manifest.version(), Some("v1"));
        assert_eq!(manifest.kind(), Some("Deployment"));
        assert_eq!(manifest.name(), Some("hello"));
        assert_eq!(manifest.namespace(), Some("default"));
    }

    #[test]
    fn core_group_and_missing_fields() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ocm-ns"}
        }))
        .unwrap();
        assert_eq!(manifest.group(), Some(""));
        assert_eq!(manifest.version(), Some("v1"));
        assert_eq!(manifest.namespace(), None);
        let empty = Manifest::default();
        assert_eq!(empty.api_version(), None);
        assert_eq!(empty.group(), None);
        assert_eq!(empty.kind(), None);
        assert_eq!(empty.name(), None);
        let odd: Manifest = serde_json::from_value(serde_json::json!({"kind": 7, "metadata": "x"})).unwrap();
        assert_eq!(odd.kind(), None);
        assert_eq!(odd.name(), None);
    }

    #[test]
    fn keeps_every_field_in_order() {
        let text = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","x-unknown":[1,2.5,null]},"data":{"b":"1","a":"2"}}"#;
        let manifest: Manifest = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&manifest).unwrap(), text);
    }

    #[test]
    fn only_objects_are_manifests() {
        assert!(serde_json::from_value::<Manifest>(serde_json::json!([1])).is_err());
        assert!(matches!(
            Manifest::try_from(serde_json::json!("x")),
            Err(Error::WrapManifest { found: "a string" })
        ));
        assert!(matches!(
            Manifest::from_resource(&5),
            Err(Error::WrapManifest { found: "a number" })
        ));
    }

    #[test]
    fn from_resource_serializes_typed_objects() {
        let namespace = k8s_openapi::api::core::v1::Namespace {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("ocm-ns".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let manifest = Manifest::from_resource(&namespace).unwrap();
        assert_eq!(manifest.api_version(), Some("v1"));
        assert_eq!(manifest.kind(), Some("Namespace"));
        assert_eq!(manifest.name(), Some("ocm-ns"));
        assert_eq!(Value::from(manifest.clone())["kind"], "Namespace");
        assert_eq!(Manifest::from(manifest.clone().into_object()), manifest);
    }

    #[test]
    fn schema_is_an_embedded_resource() {
        let schema = structural_schema::<Vec<Manifest>>();
        assert_eq!(
            schema["items"],
            serde_json::json!({
                "type": "object",
                "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true,
            })
        );
    }
}
