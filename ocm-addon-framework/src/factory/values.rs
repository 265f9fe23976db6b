//! Template values (addon-framework.md §4.2): the [`Values`] map, upstream's deep merge, the
//! [`ValuesFn`] callbacks an add-on hands to the factory, and the values read from the
//! ManagedClusterAddOn's `addon.open-cluster-management.io/values` annotation.

use async_trait::async_trait;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::annotations;
use serde_json::{Map, Value};

use super::FactoryError;
use crate::agent::AddonError;

/// The values a template is rendered with: a JSON object whose keys the templates read as
/// `{{ .Key }}` (upstream's `addonfactory.Values`). Keys are UpperCamelCase as upstream's, because
/// upstream builds them from Go field names.
pub type Values = Map<String, Value>;

/// Merges `overrides` into `base` as upstream's `MergeValues` does: a key missing in `base` is
/// added; where both hold a JSON object the objects are merged recursively; anything else
/// (strings, lists, numbers, `null`) is replaced.
pub fn merge_values(base: &mut Values, overrides: Values) {
    for (key, value) in overrides {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(incoming)) => {
                merge_values(existing, incoming);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// A source of template values for one cluster and add-on (upstream's `GetValuesFunc`). Later
/// sources override earlier ones; the built-in values override them all.
///
/// Plain closures `Fn(&ManagedCluster, &ManagedClusterAddOn) -> Result<Values, AddonError>`
/// implement it; implement the trait directly for sources that call the hub.
#[async_trait]
pub trait ValuesFn: Send + Sync {
    /// The values for `addon` on `cluster`.
    ///
    /// # Errors
    ///
    /// Any error aborts rendering; the deploy controller reports it.
    async fn values(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<Values, AddonError>;
}

#[async_trait]
impl<F> ValuesFn for F
where
    F: Fn(&ManagedCluster, &ManagedClusterAddOn) -> Result<Values, AddonError> + Send + Sync,
{
    async fn values(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<Values, AddonError> {
        self(cluster, addon)
    }
}

/// Values from the JSON object in the ManagedClusterAddOn annotation
/// `addon.open-cluster-management.io/values` (upstream's `GetValuesFromAddonAnnotation`), e.g.
/// `{"NodeSelector":{"host":"ssd"},"Image":"quay.io/x/y:v1"}`; no annotation: no values.
///
/// # Errors
///
/// [`AddonError::RenderManifests`] when the annotation is not a JSON object.
pub fn values_from_addon_annotation(
    cluster: &ManagedCluster,
    addon: &ManagedClusterAddOn,
) -> Result<Values, AddonError> {
    let Some(text) = addon
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::ADDON_VALUES))
    else {
        return Ok(Values::new());
    };
    serde_json::from_str::<Values>(text).map_err(|source| AddonError::RenderManifests {
        addon: addon.metadata.name.clone().unwrap_or_default(),
        cluster: cluster.metadata.name.clone().unwrap_or_default(),
        source: Box::new(FactoryError::DecodeValuesAnnotation { source }),
    })
}

/// Nests `value` under a dotted key: `a.b.c` becomes `{"a":{"b":{"c":value}}}`.
pub(crate) fn nested(dotted_key: &str, value: Value) -> Values {
    let mut parts: Vec<&str> = dotted_key.split('.').collect();
    let last = parts.pop().unwrap_or_default();
    let mut current = Values::new();
    current.insert(last.to_string(), value);
    while let Some(part) = parts.pop() {
        let mut outer = Values::new();
        outer.insert(part.to_string(), Value::Object(current));
        current = outer;
    }
    current
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> Values {
        match v {
            Value::Object(m) => m,
            _ => Values::new(),
        }
    }

    #[test]
    fn merge_is_deep_for_objects_and_replaces_everything_else() {
        let mut base = obj(json!({
            "global": {"nodeSelector": {"a": "1"}, "image": "x"},
            "List": [1, 2],
            "Keep": "k",
        }));
        merge_values(
            &mut base,
            obj(json!({
                "global": {"nodeSelector": {"b": "2"}, "image": "y"},
                "List": [3],
                "New": null,
            })),
        );
        assert_eq!(
            Value::Object(base),
            json!({
                "global": {"nodeSelector": {"a": "1", "b": "2"}, "image": "y"},
                "List": [3],
                "Keep": "k",
                "New": null,
            })
        );
    }

    #[test]
    fn an_object_replaces_a_scalar_and_a_scalar_replaces_an_object() {
        let mut base = obj(json!({"a": "text", "b": {"c": 1}}));
        merge_values(&mut base, obj(json!({"a": {"x": 1}, "b": "now text"})));
        assert_eq!(Value::Object(base), json!({"a": {"x": 1}, "b": "now text"}));
    }

    #[test]
    fn nested_builds_maps_from_a_dotted_key() {
        assert_eq!(
            Value::Object(nested("global.imageOverrides.helloWorld", json!("img"))),
            json!({"global": {"imageOverrides": {"helloWorld": "img"}}})
        );
        assert_eq!(
            Value::Object(nested("Image", json!("img"))),
            json!({"Image": "img"})
        );
    }

    #[test]
    fn annotation_values_are_read_and_bad_json_is_an_error() {
        let cluster = ManagedCluster::default();
        let mut addon = ManagedClusterAddOn::default();
        assert!(values_from_addon_annotation(&cluster, &addon).unwrap().is_empty());
        addon.metadata.annotations = Some(
            [(
                annotations::ADDON_VALUES.to_string(),
                r#"{"NodeSelector":{"host":"ssd"},"Image":"quay.io/x/y:v1"}"#.to_string(),
            )]
            .into(),
        );
        let values = values_from_addon_annotation(&cluster, &addon).unwrap();
        assert_eq!(values["NodeSelector"], json!({"host": "ssd"}));
        assert_eq!(values["Image"], json!("quay.io/x/y:v1"));
        addon.metadata.annotations =
            Some([(annotations::ADDON_VALUES.to_string(), "[1]".to_string())].into());
        assert!(values_from_addon_annotation(&cluster, &addon).is_err());
    }
}
