//! In-process conversion of custom resources between the versions a CRD serves.
//!
//! A CRD whose `spec.conversion.strategy` is `None` has its objects relabelled with the requested
//! `apiVersion` and otherwise left alone. For strategy `Webhook` kube-apiserver calls the CRD's
//! conversion webhook; this server never calls out: the embedding program registers a
//! [`Converter`] per group and kind instead, and the server calls it where kube-apiserver would
//! call the webhook (reading an object in another version than the stored one, and writing one).
//! [`Converters::ocm`] holds the converters of the OCM add-on kinds (`ClusterManagementAddOn`,
//! `ManagedClusterAddOn`, `AddOnDeploymentConfig`, `AddOnTemplate`: v1alpha1 ↔ v1beta1), which every
//! control plane has unless the builder is given another set.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

/// A conversion failed; the message is shown to the client as kube-apiserver shows a failed
/// webhook's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConvertError(pub String);

/// Converts objects of one kind between the versions of its CRD.
pub trait Converter: Send + Sync {
    /// Returns `object` (any served version, `apiVersion` set) converted to `desired_api_version`
    /// (`group/version`). An object already at that version comes back unchanged.
    ///
    /// # Errors
    /// When the object cannot be converted; the request that needed it fails.
    fn convert(&self, object: &Value, desired_api_version: &str) -> Result<Value, ConvertError>;
}

impl<F> Converter for F
where
    F: Fn(&Value, &str) -> Result<Value, ConvertError> + Send + Sync,
{
    fn convert(&self, object: &Value, desired_api_version: &str) -> Result<Value, ConvertError> {
        self(object, desired_api_version)
    }
}

/// The converters a control plane calls for CRDs with conversion strategy `Webhook`, by group and
/// kind.
#[derive(Clone, Default)]
pub struct Converters {
    by_kind: BTreeMap<(String, String), Arc<dyn Converter>>,
}

impl fmt::Debug for Converters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.by_kind.keys()).finish()
    }
}

/// The OCM add-on kinds whose CRDs upstream installs with a conversion webhook.
const OCM_ADDON_KINDS: &[&str] = &[
    "ClusterManagementAddOn",
    "ManagedClusterAddOn",
    "AddOnDeploymentConfig",
    "AddOnTemplate",
];

fn convert_ocm_addon(object: &Value, desired_api_version: &str) -> Result<Value, ConvertError> {
    ocm_api::addon::conversion::convert_object(object, desired_api_version)
        .map_err(|e| ConvertError(e.to_string()))
}

impl Converters {
    /// No converters.
    pub fn new() -> Self {
        Self::default()
    }

    /// The converters of the OCM add-on kinds (group `addon.open-cluster-management.io`).
    pub fn ocm() -> Self {
        let mut converters = Self::new();
        for kind in OCM_ADDON_KINDS {
            converters.register(ocm_api::addon::GROUP, *kind, convert_ocm_addon);
        }
        converters
    }

    /// Registers (or replaces) the converter of `group`/`kind`.
    pub fn register(
        &mut self,
        group: impl Into<String>,
        kind: impl Into<String>,
        converter: impl Converter + 'static,
    ) -> &mut Self {
        self.by_kind
            .insert((group.into(), kind.into()), Arc::new(converter));
        self
    }

    /// The converter of `group`/`kind`, if one is registered.
    pub fn get(&self, group: &str, kind: &str) -> Option<Arc<dyn Converter>> {
        self.by_kind.get(&(group.to_string(), kind.to_string())).cloned()
    }
}

/// Switches a CRD with more than one version to conversion strategy `Webhook` when `converters`
/// has a converter for its kind, so that a control plane converts its objects in-process. The
/// webhook named is the one upstream's hub installs for the add-on kinds (service
/// `cluster-manager-addon-webhook` in `open-cluster-management-hub`, path `/convert`); a control
/// plane never calls it. Returns whether the CRD changed.
pub fn use_in_process_conversion(crd: &mut Value, converters: &Converters) -> bool {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = crd
        .pointer("/spec/names/kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if versions < 2 || converters.get(group, kind).is_none() {
        return false;
    }
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return false;
    };
    spec.insert(
        "conversion".into(),
        serde_json::json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"name": "cluster-manager-addon-webhook",
                "namespace": "open-cluster-management-hub", "path": "/convert", "port": 9443}},
            "conversionReviewVersions": ["v1", "v1beta1"]}}),
    );
    true
}

/// How objects of one served CRD version are converted.
#[derive(Clone)]
pub enum Conversion {
    /// Strategy `None`: only `apiVersion` changes.
    Relabel,
    /// Strategy `Webhook` with a registered converter.
    Convert(Arc<dyn Converter>),
    /// Strategy `Webhook` without a registered converter: every conversion between different
    /// versions fails, as a call to an unreachable webhook does.
    Unavailable,
}

impl fmt::Debug for Conversion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Conversion::Relabel => "Relabel",
            Conversion::Convert(_) => "Convert",
            Conversion::Unavailable => "Unavailable",
        })
    }
}

impl Conversion {
    /// `object` at `desired_api_version`.
    ///
    /// # Errors
    /// The converter's error, or [`ConvertError`] saying no converter is registered.
    pub fn apply(&self, object: &Value, desired_api_version: &str) -> Result<Value, ConvertError> {
        let current = object.get("apiVersion").and_then(Value::as_str);
        if current == Some(desired_api_version) {
            return Ok(object.clone());
        }
        let relabelled = || {
            let mut o = object.clone();
            if let Some(m) = o.as_object_mut() {
                m.insert("apiVersion".into(), Value::String(desired_api_version.into()));
            }
            o
        };
        match self {
            Conversion::Relabel => Ok(relabelled()),
            Conversion::Convert(converter) => {
                let converted = converter.convert(object, desired_api_version)?;
                let got = converted.get("apiVersion").and_then(Value::as_str);
                if got != Some(desired_api_version) {
                    return Err(ConvertError(format!(
                        "conversion returned apiVersion {:?}, expected {desired_api_version}",
                        got.unwrap_or_default()
                    )));
                }
                Ok(converted)
            }
            Conversion::Unavailable => Err(ConvertError(
                "no in-process converter is registered for this kind (the control plane never calls conversion webhooks)"
                    .into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn relabel_changes_only_the_api_version() {
        let o = json!({"apiVersion": "g/v1", "kind": "K", "spec": {"a": 1}});
        let out = Conversion::Relabel.apply(&o, "g/v2").unwrap();
        assert_eq!(out, json!({"apiVersion": "g/v2", "kind": "K", "spec": {"a": 1}}));
    }

    #[test]
    fn ocm_addons_convert_between_versions() {
        let converters = Converters::ocm();
        let converter = converters
            .get("addon.open-cluster-management.io", "ClusterManagementAddOn")
            .expect("registered");
        let alpha = json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "ClusterManagementAddOn", "metadata": {"name": "hello"},
            "spec": {"installStrategy": {"type": "Manual"}}});
        let beta = Conversion::Convert(converter.clone())
            .apply(&alpha, "addon.open-cluster-management.io/v1beta1")
            .unwrap();
        assert_eq!(beta["apiVersion"], "addon.open-cluster-management.io/v1beta1");
        let back = Conversion::Convert(converter)
            .apply(&beta, "addon.open-cluster-management.io/v1alpha1")
            .unwrap();
        assert_eq!(back["spec"], alpha["spec"]);
        assert!(
            converters
                .get("addon.open-cluster-management.io", "Other")
                .is_none()
        );
    }

    #[test]
    fn crds_with_a_converter_switch_to_webhook() {
        let mut crd = json!({"spec": {"group": "addon.open-cluster-management.io",
            "names": {"kind": "ClusterManagementAddOn"}, "versions": [{"name": "v1alpha1"}, {"name": "v1beta1"}]}});
        assert!(use_in_process_conversion(&mut crd, &Converters::ocm()));
        assert_eq!(crd.pointer("/spec/conversion/strategy"), Some(&json!("Webhook")));
        let mut single = json!({"spec": {"group": "addon.open-cluster-management.io",
            "names": {"kind": "ClusterManagementAddOn"}, "versions": [{"name": "v1alpha1"}]}});
        assert!(!use_in_process_conversion(&mut single, &Converters::ocm()));
        assert!(!use_in_process_conversion(&mut crd, &Converters::new()));
    }

    #[test]
    fn unavailable_and_misbehaving_converters_fail() {
        let o = json!({"apiVersion": "g/v1", "kind": "K"});
        assert!(Conversion::Unavailable.apply(&o, "g/v2").is_err());
        assert_eq!(Conversion::Unavailable.apply(&o, "g/v1").unwrap(), o);
        let mut converters = Converters::new();
        converters.register("g", "K", |o: &Value, _: &str| Ok(o.clone()));
        let wrong = Conversion::Convert(converters.get("g", "K").unwrap());
        assert!(wrong.apply(&o, "g/v2").is_err());
    }
}
