//! The add-on factory (addon-framework.md §4.1, §4.2): an [`AgentAddon`] from Go
//! `text/template` files, one Kubernetes object per file, with upstream's built-in values.
//!
//! ```no_run
//! # use ocm_addon_framework::factory::AgentAddonFactory;
//! # use ocm_addon_framework::agent::HealthProber;
//! # fn f() -> Result<(), ocm_addon_framework::factory::FactoryError> {
//! let addon = AgentAddonFactory::new(
//!     "helloworld",
//!     [("serviceaccount.yaml", "kind: ServiceAccount\napiVersion: v1\nmetadata:\n  name: sa\n  namespace: {{ .AddonInstallNamespace }}\n")],
//! )
//! .with_agent_health_prober(HealthProber::Lease)
//! .build_template_agent_addon()?;
//! # Ok(()) }
//! ```
//!
//! Values, lowest priority first: the defaults (`HubKubeConfigSecret` =
//! `<addon>-hub-kubeconfig` when the add-on registers, else `""`; `ManagedKubeConfigSecret` =
//! `<addon>-managed-kubeconfig`), then every [`ValuesFn`] in order, then the built-ins
//! (`ClusterName`, `AddonInstallNamespace`, `InstallMode`), deep-merged with
//! [`merge_values`]. Templates are rendered by the `gotmpl` crate, a port of Go's
//! `text/template` (see docs/addons.md for why), so upstream's templates render unchanged.

mod deployment_config;
mod template;
mod values;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::names::annotations;
use ocm_api::work::v1::Manifest;
use serde_json::Value;

pub use deployment_config::{
    AgentImageValues, DeploymentConfigGetter, DeploymentConfigValues, InstallNamespaceFromDeploymentConfig,
    RegexResourceRequirements, ToValuesFn, addon_deployment_config_gvr, customized_variable_values,
    deployment_config_values, desired_deployment_config, image_override_values, node_placement_values,
    override_image, proxy_config_values, regex_resource_requirements, resource_requirements_values,
};
pub use values::{Values, ValuesFn, merge_values, values_from_addon_annotation};

use crate::agent::{
    AddonError, AgentAddon, AgentAddonOptions, ClusterFilter, ConfigGvr, HealthProber, HostedMode,
    HostedModeInfo, InstallMode, InstallNamespace, RegistrationOption,
};
use template::TemplateFile;

/// The install namespace when neither the add-on nor its options name one (upstream's
/// `AddonDefaultInstallNamespace`).
pub const ADDON_DEFAULT_INSTALL_NAMESPACE: &str = "open-cluster-management-agent-addon";

/// Errors of building and rendering factory add-ons.
#[derive(Debug, thiserror::Error)]
pub enum FactoryError {
    /// The factory was given no template files.
    #[error("add-on {addon} has no template files")]
    NoTemplateFiles {
        /// The add-on.
        addon: String,
    },
    /// Reading the template directory failed.
    #[error("read the template files under {}: {source}", path.display())]
    ReadTemplateDir {
        /// The file or directory.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// A config GVR is empty, incomplete or given twice.
    #[error("invalid config type {gvr:?}: {reason}")]
    InvalidConfigGvr {
        /// The config type.
        gvr: ConfigGvr,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A template does not parse.
    #[error("parse template {file}: {source}")]
    ParseTemplate {
        /// The template file.
        file: String,
        /// The parser's error.
        #[source]
        source: gotmpl::TemplateError,
    },
    /// Executing a template failed.
    #[error("render template {file}: {source}")]
    ExecuteTemplate {
        /// The template file.
        file: String,
        /// The executor's error.
        #[source]
        source: gotmpl::TemplateError,
    },
    /// The rendered text is not one YAML object.
    #[error("decode the object rendered from {file}: {message}")]
    DecodeManifest {
        /// The template file.
        file: String,
        /// What the decoder said.
        message: String,
    },
    /// The values annotation is not a JSON object.
    #[error("decode the annotation {}: {source}", annotations::ADDON_VALUES)]
    DecodeValuesAnnotation {
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// The image-registries annotation of the ManagedCluster is not valid.
    #[error("decode the annotation {}: {source}", annotations::IMAGE_REGISTRIES)]
    DecodeImageRegistries {
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// The add-on's desired AddOnDeploymentConfig has no spec hash yet.
    #[error("the desired AddOnDeploymentConfig of add-on {addon} has an empty desired spec hash")]
    DesiredSpecHashEmpty {
        /// The add-on.
        addon: String,
    },
    /// Getting the AddOnDeploymentConfig failed.
    #[error("get AddOnDeploymentConfig {namespace}/{name}: {source}")]
    GetDeploymentConfig {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A resource requirement's container ID is not `kind:name:container`.
    #[error("invalid ContainerID: {container_id}")]
    InvalidContainerId {
        /// The ID.
        container_id: String,
    },
    /// The image override got an empty key or image.
    #[error("override the image: {reason}")]
    ImageOverride {
        /// What is missing.
        reason: &'static str,
    },
}

/// Upstream's default hosted-mode rule (`GetHostedModeInfo`): Hosted when the
/// ManagedClusterAddOn's annotation `addon.open-cluster-management.io/hosting-cluster-name` is
/// non-empty, with that cluster as the hosting cluster.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnnotationHostedModeInfo;

impl HostedModeInfo for AnnotationHostedModeInfo {
    fn mode(&self, addon: &ManagedClusterAddOn, _cluster: &ManagedCluster) -> InstallMode {
        match addon
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotations::HOSTING_CLUSTER_NAME))
            .filter(|h| !h.is_empty())
        {
            Some(hosting) => InstallMode::Hosted {
                hosting_cluster: hosting.clone(),
            },
            None => InstallMode::Default,
        }
    }
}

/// Every file below `dir` as `(path relative to dir, content)`, in path order: what upstream
/// reads from its `embed.FS` directory.
///
/// # Errors
///
/// [`FactoryError::ReadTemplateDir`] when a directory or file cannot be read.
pub fn files_in_dir(dir: &Path) -> Result<Vec<(String, String)>, FactoryError> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> Result<(), FactoryError> {
        let read_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| FactoryError::ReadTemplateDir { path, source }
        };
        for entry in std::fs::read_dir(dir).map_err(read_err(dir))? {
            let path = entry.map_err(read_err(dir))?.path();
            if path.is_dir() {
                walk(root, &path, out)?;
            } else {
                let content = std::fs::read_to_string(&path).map_err(read_err(&path))?;
                let name = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                out.push((name, content));
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    files.sort();
    Ok(files)
}

/// Builds a template [`AgentAddon`] (upstream's `AgentAddonFactory`).
pub struct AgentAddonFactory {
    files: Vec<(String, String)>,
    values_fns: Vec<Arc<dyn ValuesFn>>,
    options: AgentAddonOptions,
    hosted_mode_enabled: bool,
    hosted_mode_info: Arc<dyn HostedModeInfo>,
    trim_crd_description: bool,
}

impl AgentAddonFactory {
    /// A factory for add-on `addon_name` rendering `files` (`(name, content)` pairs, e.g.
    /// `include_str!`s or [`files_in_dir`]); files are rendered in name order.
    #[must_use]
    pub fn new<N, C>(addon_name: &str, files: impl IntoIterator<Item = (N, C)>) -> Self
    where
        N: Into<String>,
        C: Into<String>,
    {
        let mut files: Vec<(String, String)> = files.into_iter().map(|(n, c)| (n.into(), c.into())).collect();
        files.sort();
        Self {
            files,
            values_fns: Vec::new(),
            options: AgentAddonOptions {
                addon_name: addon_name.to_string(),
                ..AgentAddonOptions::default()
            },
            hosted_mode_enabled: false,
            hosted_mode_info: Arc::new(AnnotationHostedModeInfo),
            trim_crd_description: false,
        }
    }

    /// The value sources, replacing earlier ones; later sources override earlier ones
    /// (upstream's `WithGetValuesFuncs`).
    #[must_use]
    pub fn with_values_fns(mut self, fns: Vec<Arc<dyn ValuesFn>>) -> Self {
        self.values_fns = fns;
        self
    }

    /// The hub registration (upstream's `WithAgentRegistrationOption`); it also sets the
    /// `HubKubeConfigSecret` default.
    #[must_use]
    pub fn with_agent_registration_option(mut self, registration: RegistrationOption) -> Self {
        self.options.registration = Some(registration);
        self
    }

    /// The health prober (upstream's `WithAgentHealthProber`).
    #[must_use]
    pub fn with_agent_health_prober(mut self, prober: HealthProber) -> Self {
        self.options.health_prober = Some(prober);
        self
    }

    /// Turns hosted mode on or off (upstream's `WithAgentHostedModeEnabledOption`).
    #[must_use]
    pub const fn with_agent_hosted_mode_enabled(mut self, enabled: bool) -> Self {
        self.hosted_mode_enabled = enabled;
        self
    }

    /// How the mode of an add-on is found (upstream's `WithAgentHostedInfoFn`); default
    /// [`AnnotationHostedModeInfo`]. It also gives the `InstallMode` value.
    #[must_use]
    pub fn with_agent_hosted_info_fn(mut self, info: Arc<dyn HostedModeInfo>) -> Self {
        self.hosted_mode_info = info;
        self
    }

    /// Render nothing until the add-on's `Configured` condition is True (upstream's
    /// `WithConfigCheckEnabledOption`).
    #[must_use]
    pub const fn with_config_check_enabled(mut self, enabled: bool) -> Self {
        self.options.config_check_enabled = enabled;
        self
    }

    /// Blank every `description` of CustomResourceDefinition schemas (upstream's
    /// `WithTrimCRDDescription`), to keep the deploy works small.
    #[must_use]
    pub const fn with_trim_crd_description(mut self) -> Self {
        self.trim_crd_description = true;
        self
    }

    /// Adds supported config types (upstream's `WithConfigGVRs`; validated on build).
    #[must_use]
    pub fn with_config_gvrs(mut self, gvrs: impl IntoIterator<Item = ConfigGvr>) -> Self {
        self.options.supported_configs.extend(gvrs);
        self
    }

    /// Redeploy on ManagedCluster updates passing `filter` (upstream's
    /// `WithAgentDeployTriggerClusterFilter`).
    #[must_use]
    pub fn with_agent_deploy_trigger_cluster_filter(mut self, filter: Arc<dyn ClusterFilter>) -> Self {
        self.options.deploy_trigger_cluster_filter = Some(filter);
        self
    }

    /// The agent's install namespace (upstream's `WithAgentInstallNamespace`).
    #[must_use]
    pub fn with_agent_install_namespace(mut self, namespace: Arc<dyn InstallNamespace>) -> Self {
        self.options.install_namespace = Some(namespace);
        self
    }

    /// The add-on (upstream's `BuildTemplateAgentAddon`): every template parsed now.
    ///
    /// # Errors
    ///
    /// [`FactoryError::InvalidConfigGvr`] for an empty, incomplete or repeated config type,
    /// [`FactoryError::NoTemplateFiles`] without files, [`FactoryError::ParseTemplate`] for a
    /// template that does not parse.
    pub fn build_template_agent_addon(mut self) -> Result<TemplateAgentAddon, FactoryError> {
        validate_config_gvrs(&self.options.supported_configs)?;
        if self.files.is_empty() {
            return Err(FactoryError::NoTemplateFiles {
                addon: self.options.addon_name.clone(),
            });
        }
        let templates = self
            .files
            .iter()
            .map(|(name, content)| TemplateFile::parse(name, content))
            .collect::<Result<Vec<_>, _>>()?;
        if self.hosted_mode_enabled {
            self.options.hosted_mode = Some(HostedMode {
                info: self.hosted_mode_info.clone(),
            });
        }
        Ok(TemplateAgentAddon {
            templates,
            values_fns: self.values_fns,
            options: self.options,
            hosted_mode_info: self.hosted_mode_info,
            trim_crd_description: self.trim_crd_description,
        })
    }
}

fn validate_config_gvrs(gvrs: &[ConfigGvr]) -> Result<(), FactoryError> {
    let mut seen = std::collections::BTreeSet::new();
    for gvr in gvrs {
        let reason = if *gvr == ConfigGvr::default() {
            Some("config type must be specified")
        } else if gvr.version.is_empty() {
            Some("config version must be specified")
        } else if gvr.resource.is_empty() {
            Some("config resource must be specified")
        } else if !seen.insert(gvr.clone()) {
            Some("config type is duplicated")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(FactoryError::InvalidConfigGvr {
                gvr: gvr.clone(),
                reason,
            });
        }
    }
    Ok(())
}

/// An add-on rendered from templates (upstream's `TemplateAgentAddon`).
pub struct TemplateAgentAddon {
    templates: Vec<TemplateFile>,
    values_fns: Vec<Arc<dyn ValuesFn>>,
    options: AgentAddonOptions,
    hosted_mode_info: Arc<dyn HostedModeInfo>,
    trim_crd_description: bool,
}

impl TemplateAgentAddon {
    /// The values the templates see for `addon` on `cluster`: defaults, then the value
    /// sources, then the built-ins.
    ///
    /// # Errors
    ///
    /// The first error of a value source or of the install-namespace option.
    pub async fn values(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<Values, AddonError> {
        let name = &self.options.addon_name;
        let mut values = Values::new();
        let hub_secret = if self.options.registration.is_some() {
            format!("{name}-hub-kubeconfig")
        } else {
            String::new()
        };
        values.insert("HubKubeConfigSecret".into(), Value::String(hub_secret));
        values.insert(
            "ManagedKubeConfigSecret".into(),
            Value::String(format!("{name}-managed-kubeconfig")),
        );
        for source in &self.values_fns {
            merge_values(&mut values, source.values(cluster, addon).await?);
        }
        let mut install_namespace = addon
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotations::V1ALPHA1_INSTALL_NAMESPACE))
            .filter(|ns| !ns.is_empty())
            .cloned()
            .unwrap_or_else(|| ADDON_DEFAULT_INSTALL_NAMESPACE.to_string());
        if let Some(option) = &self.options.install_namespace {
            let ns = option.install_namespace(addon).await?;
            if !ns.is_empty() {
                install_namespace = ns;
            }
        }
        let mode = match self.hosted_mode_info.mode(addon, cluster) {
            InstallMode::Default => "Default",
            InstallMode::Hosted { .. } => "Hosted",
        };
        let mut builtins = Values::new();
        builtins.insert(
            "ClusterName".into(),
            Value::String(cluster.metadata.name.clone().unwrap_or_default()),
        );
        builtins.insert("AddonInstallNamespace".into(), Value::String(install_namespace));
        builtins.insert("InstallMode".into(), Value::String(mode.into()));
        merge_values(&mut values, builtins);
        Ok(values)
    }
}

#[async_trait]
impl AgentAddon for TemplateAgentAddon {
    async fn manifests(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
    ) -> Result<Vec<Manifest>, AddonError> {
        let values = self.values(cluster, addon).await?;
        let mut manifests = Vec::new();
        for template in &self.templates {
            let rendered = template
                .render(&values)
                .map_err(|e| AddonError::RenderManifests {
                    addon: self.options.addon_name.clone(),
                    cluster: cluster.metadata.name.clone().unwrap_or_default(),
                    source: Box::new(e),
                })?;
            if let Some(mut manifest) = rendered {
                if self.trim_crd_description {
                    trim_crd_description(&mut manifest);
                }
                manifests.push(manifest);
            }
        }
        Ok(manifests)
    }

    fn options(&self) -> AgentAddonOptions {
        self.options.clone()
    }
}

/// Removes every `description` from the schemas of an `apiextensions.k8s.io/v1`
/// CustomResourceDefinition (properties named `description` stay).
fn trim_crd_description(manifest: &mut Manifest) {
    if manifest.kind() != Some("CustomResourceDefinition")
        || manifest.api_version() != Some("apiextensions.k8s.io/v1")
    {
        return;
    }
    let Some(Value::Array(versions)) = manifest
        .as_object_mut()
        .get_mut("spec")
        .and_then(|s| s.get_mut("versions"))
    else {
        return;
    };
    for version in versions {
        if let Some(schema) = version
            .get_mut("schema")
            .and_then(|s| s.get_mut("openAPIV3Schema"))
        {
            trim_schema(schema);
        }
    }
}

fn trim_schema(schema: &mut Value) {
    let Value::Object(node) = schema else { return };
    node.remove("description");
    for key in ["properties", "patternProperties", "definitions", "dependencies"] {
        if let Some(Value::Object(children)) = node.get_mut(key) {
            children.values_mut().for_each(trim_schema);
        }
    }
    for key in ["items", "additionalProperties", "additionalItems", "not"] {
        match node.get_mut(key) {
            Some(Value::Array(list)) => list.iter_mut().for_each(trim_schema),
            Some(child @ Value::Object(_)) => trim_schema(child),
            _ => {}
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = node.get_mut(key) {
            list.iter_mut().for_each(trim_schema);
        }
    }
}

#[cfg(test)]
#[path = "factory_tests.rs"]
mod tests;
