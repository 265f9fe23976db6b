//! Values from AddOnDeploymentConfigs (addon-framework.md §4.4): the desired config of a
//! ManagedClusterAddOn, the to-values functions (template style and helm style), resource
//! requirements by container-ID regex, image override by registries, and the install
//! namespace an ADC asks for.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use kube::Api;
use ocm_api::addon::v1beta1::{
    AddOnDeploymentConfig, ContainerResourceRequirements, ImageMirror, ManagedClusterAddOn,
};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::annotations;
use serde_json::{Value, json};

use super::FactoryError;
use super::values::{Values, ValuesFn, merge_values, nested};
use crate::agent::{AddonError, ConfigGvr, InstallNamespace};

/// The API group of the add-on kinds.
const ADDON_GROUP: &str = "addon.open-cluster-management.io";
/// The resource of AddOnDeploymentConfigs.
const ADC_RESOURCE: &str = "addondeploymentconfigs";

/// `addon.open-cluster-management.io/v1beta1/addondeploymentconfigs` (upstream's
/// `AddOnDeploymentConfigGVR`).
#[must_use]
pub fn addon_deployment_config_gvr() -> ConfigGvr {
    ConfigGvr {
        group: ADDON_GROUP.to_string(),
        version: "v1beta1".to_string(),
        resource: ADC_RESOURCE.to_string(),
    }
}

/// Reads AddOnDeploymentConfigs (upstream's `AddOnDeploymentConfigGetter`). A `kube::Client`
/// is one: a live GET of the v1beta1 object.
#[async_trait]
pub trait DeploymentConfigGetter: Send + Sync {
    /// The AddOnDeploymentConfig `namespace/name`.
    ///
    /// # Errors
    ///
    /// The API error.
    async fn get(&self, namespace: &str, name: &str) -> Result<AddOnDeploymentConfig, kube::Error>;
}

#[async_trait]
impl DeploymentConfigGetter for kube::Client {
    async fn get(&self, namespace: &str, name: &str) -> Result<AddOnDeploymentConfig, kube::Error> {
        Api::<AddOnDeploymentConfig>::namespaced(self.clone(), namespace)
            .get(name)
            .await
    }
}

/// The AddOnDeploymentConfig the ManagedClusterAddOn should use (upstream's
/// `GetDesiredAddOnDeploymentConfig`): the first `status.configReferences` entry for
/// AddOnDeploymentConfigs; `None` when there is none.
///
/// # Errors
///
/// [`FactoryError::DesiredSpecHashEmpty`] while its desired spec hash is not yet recorded (this
/// holds rendering back until the config controller has run); [`FactoryError::GetDeploymentConfig`]
/// when the GET fails.
pub async fn desired_deployment_config(
    addon: &ManagedClusterAddOn,
    getter: &dyn DeploymentConfigGetter,
) -> Result<Option<AddOnDeploymentConfig>, FactoryError> {
    let Some(reference) = addon
        .status
        .as_ref()
        .and_then(|s| s.config_references.as_ref())
        .and_then(|refs| {
            refs.iter()
                .find(|r| r.group.as_deref() == Some(ADDON_GROUP) && r.resource == ADC_RESOURCE)
        })
    else {
        return Ok(None);
    };
    let addon_name = addon.metadata.name.clone().unwrap_or_default();
    let Some(desired) = reference
        .desired_config
        .as_ref()
        .filter(|d| d.spec_hash.as_deref().is_some_and(|h| !h.is_empty()))
    else {
        return Err(FactoryError::DesiredSpecHashEmpty { addon: addon_name });
    };
    let namespace = desired.namespace.clone().unwrap_or_default();
    getter
        .get(&namespace, &desired.name)
        .await
        .map(Some)
        .map_err(|source| FactoryError::GetDeploymentConfig {
            namespace,
            name: desired.name.clone(),
            source,
        })
}

/// Turns an AddOnDeploymentConfig into values (upstream's `AddOnDeploymentConfigToValuesFunc`).
pub type ToValuesFn = Arc<dyn Fn(&AddOnDeploymentConfig) -> Result<Values, FactoryError> + Send + Sync>;

/// A [`ValuesFn`] from the add-on's desired AddOnDeploymentConfig (upstream's
/// `GetAddOnDeploymentConfigValues`): the outputs of `to_values` merged in order; no values when
/// the add-on references no config.
#[derive(Clone)]
pub struct DeploymentConfigValues {
    getter: Arc<dyn DeploymentConfigGetter>,
    to_values: Vec<ToValuesFn>,
}

impl DeploymentConfigValues {
    /// Values from the configs `getter` reads, turned into values by `to_values` in order.
    #[must_use]
    pub fn new(getter: Arc<dyn DeploymentConfigGetter>, to_values: Vec<ToValuesFn>) -> Self {
        Self { getter, to_values }
    }
}

#[async_trait]
impl ValuesFn for DeploymentConfigValues {
    async fn values(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<Values, AddonError> {
        let wrap = |e: FactoryError| render_error(cluster, addon, e);
        let mut values = Values::new();
        let Some(config) = desired_deployment_config(addon, self.getter.as_ref())
            .await
            .map_err(wrap)?
        else {
            return Ok(values);
        };
        for to_values in &self.to_values {
            merge_values(&mut values, to_values(&config).map_err(wrap)?);
        }
        Ok(values)
    }
}

fn render_error(cluster: &ManagedCluster, addon: &ManagedClusterAddOn, e: FactoryError) -> AddonError {
    AddonError::RenderManifests {
        addon: addon.metadata.name.clone().unwrap_or_default(),
        cluster: cluster.metadata.name.clone().unwrap_or_default(),
        source: Box::new(e),
    }
}

/// `{<name>: <value>}` for every customized variable (upstream's
/// `ToAddOnCustomizedVariableValues`).
///
/// # Errors
///
/// None; the signature is the one of [`ToValuesFn`].
pub fn customized_variable_values(config: &AddOnDeploymentConfig) -> Result<Values, FactoryError> {
    Ok(config
        .spec
        .customized_variables
        .iter()
        .flatten()
        .map(|v| (v.name.clone(), Value::String(v.value.clone().unwrap_or_default())))
        .collect())
}

/// Template-style values (upstream's `ToAddOnDeploymentConfigValues`): the customized
/// variables, `NodeSelector` and `Tolerations` (when node placement is set; tolerations with
/// Go's field names `Key`, `Operator`, `Value`, `Effect`, `TolerationSeconds`), `HTTPProxy`,
/// `HTTPSProxy`, `NoProxy`, `ProxyCABundle` (when set) and `ResourceRequirements` (a list of
/// `{ContainerIDRegex, Resources: {Requests, Limits}}`, when any).
///
/// # Errors
///
/// [`FactoryError::InvalidContainerId`] for a container ID without exactly three parts.
pub fn deployment_config_values(config: &AddOnDeploymentConfig) -> Result<Values, FactoryError> {
    let mut values = customized_variable_values(config)?;
    if let Some(placement) = &config.spec.node_placement {
        values.insert("NodeSelector".into(), json!(placement.node_selector));
        let tolerations = placement.tolerations.as_ref().map(|ts| {
            ts.iter()
                .map(|t| {
                    json!({
                        "Key": t.key.clone().unwrap_or_default(),
                        "Operator": t.operator.clone().unwrap_or_default(),
                        "Value": t.value.clone().unwrap_or_default(),
                        "Effect": t.effect.clone().unwrap_or_default(),
                        "TolerationSeconds": t.toleration_seconds,
                    })
                })
                .collect::<Vec<_>>()
        });
        values.insert("Tolerations".into(), json!(tolerations));
    }
    if let Some(proxy) = &config.spec.proxy_config {
        for (key, field) in [
            ("HTTPProxy", &proxy.http_proxy),
            ("HTTPSProxy", &proxy.https_proxy),
            ("NoProxy", &proxy.no_proxy),
        ] {
            if let Some(v) = field.as_ref().filter(|v| !v.is_empty()) {
                values.insert(key.into(), json!(v));
            }
        }
        if let Some(ca) = proxy.ca_bundle.as_ref().filter(|ca| !ca.0.is_empty()) {
            values.insert("ProxyCABundle".into(), json!(String::from_utf8_lossy(&ca.0)));
        }
    }
    let requirements =
        regex_resource_requirements(config.spec.resource_requirements.as_deref().unwrap_or(&[]))?;
    if !requirements.is_empty() {
        let list: Vec<Value> = requirements
            .iter()
            .map(|r| {
                json!({
                    "ContainerIDRegex": r.container_id_regex,
                    "Resources": {"Requests": non_empty(&r.requests), "Limits": non_empty(&r.limits)},
                })
            })
            .collect();
        values.insert("ResourceRequirements".into(), Value::Array(list));
    }
    Ok(values)
}

/// Helm-style node placement (upstream's `ToAddOnNodePlacementValues`):
/// `{tolerations: [...], global: {nodeSelector: {...}}}`, nothing without node placement.
///
/// # Errors
///
/// None; the signature is the one of [`ToValuesFn`].
pub fn node_placement_values(config: &AddOnDeploymentConfig) -> Result<Values, FactoryError> {
    let Some(placement) = &config.spec.node_placement else {
        return Ok(Values::new());
    };
    Ok(object(json!({
        "tolerations": placement.tolerations,
        "global": {"nodeSelector": placement.node_selector},
    })))
}

/// Helm-style proxy settings (upstream's `ToAddOnProxyConfigValues`):
/// `{global: {proxyConfig: {HTTP_PROXY, HTTPS_PROXY, NO_PROXY, PROXY_CA_BUNDLE}}}`, only when an
/// HTTP or HTTPS proxy is set.
///
/// # Errors
///
/// None; the signature is the one of [`ToValuesFn`].
pub fn proxy_config_values(config: &AddOnDeploymentConfig) -> Result<Values, FactoryError> {
    let Some(proxy) = &config.spec.proxy_config else {
        return Ok(Values::new());
    };
    let mut settings = serde_json::Map::new();
    let set = |v: &Option<String>| v.as_ref().filter(|v| !v.is_empty()).cloned();
    if let Some(v) = set(&proxy.http_proxy) {
        settings.insert("HTTP_PROXY".into(), json!(v));
    }
    if let Some(v) = set(&proxy.https_proxy) {
        settings.insert("HTTPS_PROXY".into(), json!(v));
    }
    if settings.is_empty() {
        return Ok(Values::new());
    }
    if let Some(v) = set(&proxy.no_proxy) {
        settings.insert("NO_PROXY".into(), json!(v));
    }
    if let Some(ca) = proxy.ca_bundle.as_ref().filter(|ca| !ca.0.is_empty()) {
        settings.insert("PROXY_CA_BUNDLE".into(), json!(String::from_utf8_lossy(&ca.0)));
    }
    Ok(object(json!({"global": {"proxyConfig": settings}})))
}

/// Helm-style resource requirements (upstream's `ToAddOnResourceRequirementsValues`):
/// `{global: {resourceRequirements: [{containerIDRegex, resources: {limits, requests},
/// resourcesRaw}]}}`, nothing when the config has none.
///
/// # Errors
///
/// [`FactoryError::InvalidContainerId`] for a container ID without exactly three parts.
pub fn resource_requirements_values(config: &AddOnDeploymentConfig) -> Result<Values, FactoryError> {
    let Some(requirements) = &config.spec.resource_requirements else {
        return Ok(Values::new());
    };
    let list: Vec<Value> = regex_resource_requirements(requirements)?
        .into_iter()
        .map(|r| {
            let mut resources = serde_json::Map::new();
            if !r.limits.is_empty() {
                resources.insert("limits".into(), json!(r.limits));
            }
            if !r.requests.is_empty() {
                resources.insert("requests".into(), json!(r.requests));
            }
            json!({"containerIDRegex": r.container_id_regex, "resources": resources, "resourcesRaw": r.raw})
        })
        .collect();
    Ok(object(json!({"global": {"resourceRequirements": list}})))
}

/// A to-values function putting `image`, overridden by the config's `registries`, under the
/// dotted `image_key` (upstream's `ToImageOverrideValuesFunc`).
#[must_use]
pub fn image_override_values(image_key: &str, image: &str) -> ToValuesFn {
    let (image_key, image) = (image_key.to_string(), image.to_string());
    Arc::new(move |config: &AddOnDeploymentConfig| {
        image_values(&image_key, &image, config.spec.registries.as_deref()).map(|(v, _)| v)
    })
}

/// `image` under the dotted key, overridden by `registries` when given; whether it changed.
fn image_values(
    image_key: &str,
    image: &str,
    registries: Option<&[ImageMirror]>,
) -> Result<(Values, bool), FactoryError> {
    if image_key.is_empty() {
        return Err(FactoryError::ImageOverride {
            reason: "imageKey is empty",
        });
    }
    if image.is_empty() {
        return Err(FactoryError::ImageOverride {
            reason: "image is empty",
        });
    }
    let overridden = registries.map_or_else(|| image.to_string(), |r| override_image(r, image));
    let changed = overridden != image;
    Ok((nested(image_key, Value::String(overridden)), changed))
}

/// The image after the registry rules (upstream's `OverrideImage`): every rule is applied to
/// the original image in order and the last one that changes it wins. One rule: trailing `/`
/// trimmed from source and mirror; an empty source puts the image's last path segment under
/// the mirror (just the segment when the mirror is empty too); an image starting with the
/// source has that prefix replaced by the mirror; any other image is left alone.
#[must_use]
pub fn override_image(registries: &[ImageMirror], image: &str) -> String {
    let mut result = image.to_string();
    for registry in registries {
        let name = override_one(
            registry.source.as_deref().unwrap_or_default(),
            &registry.mirror,
            image,
        );
        if name != image {
            result = name;
        }
    }
    result
}

fn override_one(source: &str, mirror: &str, image: &str) -> String {
    let source = source.strip_suffix('/').unwrap_or(source);
    let mirror = mirror.strip_suffix('/').unwrap_or(mirror);
    let last_segment = image.rsplit('/').next().unwrap_or(image);
    if source.is_empty() {
        return if mirror.is_empty() {
            last_segment.to_string()
        } else {
            format!("{mirror}/{last_segment}")
        };
    }
    image
        .strip_prefix(source)
        .map_or_else(|| image.to_string(), |rest| format!("{mirror}{rest}"))
}

/// A [`ValuesFn`] for the agent image (upstream's `GetAgentImageValues`): the ADC's registries
/// when they change the image, else the ManagedCluster annotation
/// `open-cluster-management.io/image-registries`; the result under the dotted `image_key`.
#[derive(Clone)]
pub struct AgentImageValues {
    getter: Arc<dyn DeploymentConfigGetter>,
    image_key: String,
    image: String,
}

impl AgentImageValues {
    /// The image `image` under `image_key`, overridden as described.
    #[must_use]
    pub fn new(getter: Arc<dyn DeploymentConfigGetter>, image_key: &str, image: &str) -> Self {
        Self {
            getter,
            image_key: image_key.to_string(),
            image: image.to_string(),
        }
    }
}

#[async_trait]
impl ValuesFn for AgentImageValues {
    async fn values(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<Values, AddonError> {
        let wrap = |e: FactoryError| render_error(cluster, addon, e);
        if let Some(config) = desired_deployment_config(addon, self.getter.as_ref())
            .await
            .map_err(wrap)?
        {
            let (values, changed) =
                image_values(&self.image_key, &self.image, config.spec.registries.as_deref())
                    .map_err(wrap)?;
            if changed {
                return Ok(values);
            }
        }
        let registries = cluster_image_registries(cluster).map_err(wrap)?;
        image_values(&self.image_key, &self.image, registries.as_deref())
            .map(|(v, _)| v)
            .map_err(wrap)
    }
}

/// The registries of the ManagedCluster annotation `open-cluster-management.io/image-registries`
/// (`{"registries":[{"mirror":…,"source":…}]}`).
fn cluster_image_registries(cluster: &ManagedCluster) -> Result<Option<Vec<ImageMirror>>, FactoryError> {
    #[derive(serde::Deserialize)]
    struct ImageRegistries {
        #[serde(default)]
        registries: Option<Vec<ImageMirror>>,
    }
    let Some(text) = cluster
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::IMAGE_REGISTRIES))
        .filter(|t| !t.is_empty())
    else {
        return Ok(None);
    };
    serde_json::from_str::<ImageRegistries>(text)
        .map(|r| r.registries)
        .map_err(|source| FactoryError::DecodeImageRegistries { source })
}

/// Resource requirements for the containers whose ID matches a regex (upstream's
/// `RegexResourceRequirements`).
#[derive(Clone, Debug, PartialEq)]
pub struct RegexResourceRequirements {
    /// `^kind:name:container$` with each `*` part as `.+`.
    pub container_id_regex: String,
    /// The requests, quantities as text.
    pub requests: BTreeMap<String, String>,
    /// The limits, quantities as text.
    pub limits: BTreeMap<String, String>,
    /// The requirements as the config holds them.
    pub raw: ocm_api::meta::ResourceRequirements,
}

/// The container-ID regexes of `requirements` (upstream's `GetRegexResourceRequirements`): the
/// ID split on `:` into exactly three parts, each `*` becomes `.+`, the result is `^a:b:c$`
/// (other regex characters are kept as they are, as upstream).
///
/// # Errors
///
/// [`FactoryError::InvalidContainerId`] for an ID without exactly three parts.
pub fn regex_resource_requirements(
    requirements: &[ContainerResourceRequirements],
) -> Result<Vec<RegexResourceRequirements>, FactoryError> {
    requirements
        .iter()
        .map(|item| {
            let parts: Vec<&str> = item.container_id.split(':').collect();
            if parts.len() != 3 {
                return Err(FactoryError::InvalidContainerId {
                    container_id: item.container_id.clone(),
                });
            }
            let parts: Vec<&str> = parts
                .into_iter()
                .map(|p| if p == "*" { ".+" } else { p })
                .collect();
            let text =
                |list: &Option<BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
                    list.iter()
                        .flatten()
                        .map(|(k, v)| (k.clone(), v.0.clone()))
                        .collect::<BTreeMap<_, _>>()
                };
            Ok(RegexResourceRequirements {
                container_id_regex: format!("^{}:{}:{}$", parts[0], parts[1], parts[2]),
                requests: text(&item.resources.requests),
                limits: text(&item.resources.limits),
                raw: item.resources.clone(),
            })
        })
        .collect()
}

/// The install namespace from the add-on's desired AddOnDeploymentConfig (upstream's
/// `AgentInstallNamespaceFromDeploymentConfigFunc`): its `spec.agentInstallNamespace`; empty
/// (no opinion) when the add-on references no config.
#[derive(Clone)]
pub struct InstallNamespaceFromDeploymentConfig {
    getter: Arc<dyn DeploymentConfigGetter>,
}

impl InstallNamespaceFromDeploymentConfig {
    /// Reads the configs through `getter`.
    #[must_use]
    pub fn new(getter: Arc<dyn DeploymentConfigGetter>) -> Self {
        Self { getter }
    }
}

#[async_trait]
impl InstallNamespace for InstallNamespaceFromDeploymentConfig {
    async fn install_namespace(&self, addon: &ManagedClusterAddOn) -> Result<String, AddonError> {
        let config = desired_deployment_config(addon, self.getter.as_ref())
            .await
            .map_err(|e| AddonError::InstallNamespace {
                addon: addon.metadata.name.clone().unwrap_or_default(),
                source: Box::new(e),
            })?;
        Ok(config
            .and_then(|c| c.spec.agent_install_namespace)
            .unwrap_or_default())
    }
}

fn non_empty(map: &BTreeMap<String, String>) -> Value {
    if map.is_empty() { Value::Null } else { json!(map) }
}

fn object(value: Value) -> Values {
    match value {
        Value::Object(map) => map,
        _ => Values::new(),
    }
}

#[cfg(test)]
#[path = "deployment_config_tests.rs"]
mod tests;
