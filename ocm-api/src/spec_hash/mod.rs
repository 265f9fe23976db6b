//! The configuration spec hash OCM add-on managers compute, byte-compatible with upstream Go.
//!
//! ManagedClusterAddOn and ClusterManagementAddOn status record, for every configuration object
//! an add-on uses, a `specHash`. ManifestWorks carry the hashes they were built from (annotation
//! `open-cluster-management.io/config-spec-hash`), and rollouts compare both, so a Rust hub and a
//! Go hub must compute the same hash for the same object.
//!
//! The hash is the lower-case hex SHA-256 of the Go `encoding/json` text (see [`go_json`]) of a
//! JSON object holding every top-level field of the configuration object except `apiVersion`,
//! `kind`, `metadata` and `status`; for most configurations that is `{"spec":{...}}`.
//!
//! Hash the object **as the API server stores it**: with the CRD defaults applied, and with
//! every field a client wrote (for instance the empty `proxyConfig: {}` that Go clients of
//! AddOnDeploymentConfig send). Two objects that differ only in a defaulted field hash
//! differently.

pub mod go_json;

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Why a spec hash could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is not a JSON object.
    #[error("cannot hash a configuration that is not a JSON object")]
    HashNonObject,
    /// The configuration could not be turned into JSON.
    #[error("failed to serialize the configuration: {0}")]
    SerializeConfiguration(#[source] serde_json::Error),
}

/// The result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The top-level fields that do not count towards the hash.
const IGNORED_FIELDS: [&str; 4] = ["apiVersion", "kind", "metadata", "status"];

/// The spec hash of a configuration object given as JSON.
///
/// # Errors
///
/// [`Error::HashNonObject`] if `object` is not a JSON object.
pub fn spec_hash(object: &Value) -> Result<String> {
    let Value::Object(fields) = object else {
        return Err(Error::HashNonObject);
    };
    let hashed: Map<String, Value> = fields
        .iter()
        .filter(|(key, _)| !IGNORED_FIELDS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    Ok(sha256_hex(go_json::to_string(&Value::Object(hashed)).as_bytes()))
}

/// The spec hash of a typed configuration object (for instance an AddOnDeploymentConfig).
///
/// The object is serialized first, so it must already hold what the API server would store
/// (see the [module docs](self)).
///
/// # Errors
///
/// [`Error::SerializeConfiguration`] if the object cannot be serialized,
/// [`Error::HashNonObject`] if it does not serialize to a JSON object.
pub fn spec_hash_of<T: Serialize>(object: &T) -> Result<String> {
    let value = serde_json::to_value(object).map_err(Error::SerializeConfiguration)?;
    spec_hash(&value)
}

/// The hub hash an agent names hub-specific things with (AppliedManifestWork names, the
/// managed-namespace label): the lowercase hex SHA-256 of the hub API server URL, exactly as
/// written in the agent's bootstrap kubeconfig.
#[must_use]
pub fn hub_hash(server_url: &str) -> String {
    sha256_hex(server_url.as_bytes())
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut out, byte| {
            use std::fmt::Write as _;
            let _ = write!(out, "{byte:02x}");
            out
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// An AddOnDeploymentConfig as the API server stores it after a Go client created it with
    /// one customized variable.
    fn stored_adc(variable: &str) -> Value {
        json!({
            "apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "AddOnDeploymentConfig",
            "metadata": {"name": "default-config", "namespace": "cluster1", "generation": 1,
                "resourceVersion": "1234", "uid": "8a5f5b1e-0000-0000-0000-000000000000"},
            "spec": {
                "customizedVariables": [{"name": variable, "value": variable}],
                "proxyConfig": {},
                "agentInstallNamespace": "open-cluster-management-agent-addon"
            },
            "status": {"ignored": true}
        })
    }

    #[test]
    fn reproduces_the_upstream_test_vectors() {
        let vectors = [
            (
                "test",
                "ea4e6089e8b2f584c1cd8b86e16a15df3186b30744f433ede7436091c93a4cc7",
            ),
            (
                "test1",
                "b746cc98936955dd2168640f0011a14f2a74be306c747bc8ba829328cc772690",
            ),
            (
                "test2",
                "3e6348b0c0f0a341ce28d0a2f99bc41fc63fb17d947eb5a45284729fbeb63b32",
            ),
            (
                "test3",
                "9b3c6d09731ed254589fa4fc2936e6fb00537de92da5e035183da313eb98d27e",
            ),
        ];
        for (variable, want) in vectors {
            assert_eq!(
                spec_hash(&stored_adc(variable)).unwrap(),
                want,
                "variable {variable}"
            );
        }
    }

    #[test]
    fn only_non_meta_top_level_fields_count() {
        let a = stored_adc("test");
        let mut b = a.clone();
        b["metadata"]["generation"] = json!(7);
        b["status"] = json!({"other": 1});
        b["kind"] = json!("Other");
        assert_eq!(spec_hash(&a).unwrap(), spec_hash(&b).unwrap());
        b["data"] = json!({"k": "v"});
        assert_ne!(spec_hash(&a).unwrap(), spec_hash(&b).unwrap());
    }

    #[test]
    fn a_defaulted_field_changes_the_hash() {
        let mut without_default = stored_adc("test");
        without_default["spec"]
            .as_object_mut()
            .unwrap()
            .remove("agentInstallNamespace");
        assert_ne!(
            spec_hash(&without_default).unwrap(),
            spec_hash(&stored_adc("test")).unwrap()
        );
    }

    #[test]
    fn typed_objects_hash_through_their_json() {
        #[derive(Serialize)]
        struct Config {
            spec: Value,
        }
        let typed = Config {
            spec: stored_adc("test")["spec"].clone(),
        };
        assert_eq!(
            spec_hash_of(&typed).unwrap(),
            "ea4e6089e8b2f584c1cd8b86e16a15df3186b30744f433ede7436091c93a4cc7"
        );
    }

    #[test]
    fn non_objects_are_rejected() {
        assert!(matches!(spec_hash(&json!([1, 2])), Err(Error::HashNonObject)));
        assert!(matches!(spec_hash_of(&"text"), Err(Error::HashNonObject)));
    }

    #[test]
    fn html_in_values_is_hashed_escaped() {
        let object = json!({"spec": {"v": "a<b"}});
        let escaped = r#"{"spec":{"v":"a\u003cb"}}"#;
        assert_eq!(spec_hash(&object).unwrap(), sha256_hex(escaped.as_bytes()));
    }
}
