//! Reading OCM objects from JSON or YAML with errors that name the offending field.
//!
//! `serde_json` reports where in the text a value was wrong (line and column), which says little
//! about an object built in code or converted from YAML. These functions report the field path
//! instead — `spec.taints[0].effect: unknown variant `NoRun`, expected one of …` — which is what a
//! user needs to fix the object.
//!
//! ```
//! use ocm_api::{cluster::v1::ManagedCluster, decode};
//!
//! let err = decode::from_json_str::<ManagedCluster>(
//!     r#"{"metadata": {"name": "c1"}, "spec": {"leaseDurationSeconds": "soon"}}"#,
//! )
//! .unwrap_err();
//! assert_eq!(err.path(), "spec.leaseDurationSeconds");
//! ```

use serde::de::DeserializeOwned;

/// Why an object could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The text is not JSON, or a field holds the wrong kind of value.
    #[error("{path}: {source}")]
    DecodeJson {
        /// The path of the field that failed (`.` when the document itself is wrong).
        path: String,
        /// What serde_json said.
        #[source]
        source: serde_json::Error,
    },
    /// The text is not YAML.
    #[error("the document is not valid YAML")]
    ParseYaml {
        /// What the YAML parser said.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
}

impl Error {
    /// The path of the field that failed, such as `spec.taints[0].effect`; for malformed text, the
    /// field being read when the text went wrong, or `.` for the document.
    #[must_use]
    pub fn path(&self) -> &str {
        match self {
            Self::DecodeJson { path, .. } => path,
            Self::ParseYaml { .. } => ".",
        }
    }
}

/// The result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Reads `T` from a JSON value.
///
/// # Errors
/// [`Error::DecodeJson`] naming the first field that does not fit `T`.
pub fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(path_error)
}

/// Reads `T` from JSON text.
///
/// # Errors
/// [`Error::DecodeJson`] for malformed JSON or the first field that does not fit `T`.
pub fn from_json_str<T: DeserializeOwned>(text: &str) -> Result<T> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(path_error)?;
    deserializer.end().map_err(|source| Error::DecodeJson {
        path: ".".to_owned(),
        source,
    })?;
    Ok(value)
}

/// Reads `T` from a YAML document.
///
/// # Errors
/// [`Error::ParseYaml`] for malformed YAML, [`Error::DecodeJson`] naming the first field that
/// does not fit `T`.
pub fn from_yaml_str<T: DeserializeOwned>(text: &str) -> Result<T> {
    let value: serde_json::Value = serde_saphyr::from_str(text).map_err(|source| Error::ParseYaml {
        source: Box::new(source),
    })?;
    from_value(value)
}

fn path_error(error: serde_path_to_error::Error<serde_json::Error>) -> Error {
    let path = error.path().to_string();
    Error::DecodeJson {
        path,
        source: error.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{cluster::v1::ManagedCluster, work::v1::ManifestWork};

    #[test]
    fn unknown_enum_value_names_the_field() {
        let err = from_yaml_str::<ManagedCluster>(
            "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: c1\n\
             spec:\n  taints:\n  - key: gpu\n    effect: NoRun\n",
        )
        .unwrap_err();
        assert_eq!(err.path(), "spec.taints[0].effect");
        let message = err.to_string();
        assert!(message.contains("unknown variant `NoRun`"), "{message}");
        assert!(
            message.contains("NoSelectIfNew"),
            "lists the allowed values: {message}"
        );
    }

    #[test]
    fn wrong_type_names_the_field() {
        let value = serde_json::json!({
            "metadata": {"name": "w", "namespace": "cluster1"},
            "spec": {"workload": {"manifests": "not-a-list"}}
        });
        let err = from_value::<ManifestWork>(value).unwrap_err();
        assert_eq!(err.path(), "spec.workload.manifests");
        assert!(err.to_string().contains("expected a sequence"), "{err}");
    }

    #[test]
    fn malformed_text_is_an_error_of_the_document() {
        let truncated = from_json_str::<ManagedCluster>("{\"metadata\": ").unwrap_err();
        assert_eq!(
            truncated.path(),
            "metadata",
            "the field being read when the text ended"
        );
        assert!(truncated.to_string().contains("EOF"), "{truncated}");
        assert!(matches!(
            from_yaml_str::<ManagedCluster>("a: [b"),
            Err(Error::ParseYaml { .. })
        ));
        assert!(from_json_str::<ManagedCluster>("{} trailing").is_err());
    }

    #[test]
    fn a_valid_object_reads() {
        let cluster: ManagedCluster =
            from_json_str(r#"{"metadata": {"name": "c1"}, "spec": {"hubAcceptsClient": true}}"#).unwrap();
        assert_eq!(cluster.spec.hub_accepts_client, Some(true));
    }
}
