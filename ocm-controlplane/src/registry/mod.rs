//! The resource type registry: every group/version/resource the server knows and how it behaves.
//!
//! Built-in types come from a static table ([`builtin`]): their discovery entries (as kube-apiserver
//! v1.36 lists them) and, for the types the server stores, a [`Behavior`] (status subresource,
//! generation tracking, kind-specific defaulting and validation). Custom resources are added and
//! removed at runtime when CustomResourceDefinitions are established or deleted.

pub mod builtin;
pub mod shapes;
pub mod structure;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::{Value, json};

use crate::status::Subject;

/// Kind-specific hooks of a built-in type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// Nothing beyond the generic rules.
    None,
    /// Namespace: name is a DNS label, `kubernetes.io/metadata.name` label, finalizers, phase.
    Namespace,
    /// ConfigMap: key validation, immutability.
    ConfigMap,
    /// Secret: base64 data, stringData, type immutability and type-specific keys.
    Secret,
    /// CertificateSigningRequest: requester identity, immutable spec, approval subresource.
    Csr,
    /// core/v1 Event.
    CoreEvent,
    /// events.k8s.io/v1 Event (stored as core/v1 Event).
    EventsEvent,
    /// CustomResourceDefinition: served dynamically by the CRD controller.
    Crd,
    /// Deployment defaults.
    Deployment,
}

/// How a stored type behaves on writes.
#[derive(Debug, Clone)]
pub struct Behavior {
    /// The type has a status subresource: status is reset on writes of the main resource and only
    /// status is taken from writes of `/status`.
    pub has_status: bool,
    /// `metadata.generation` starts at 1 and is bumped when anything but metadata and status changes.
    pub tracks_generation: bool,
    /// A PUT without `metadata.resourceVersion` is accepted (last writer wins).
    pub allow_unconditional_update: bool,
    /// Kind-specific hooks.
    pub special: Special,
}

/// A custom resource version served from a CRD.
#[derive(Debug, Clone)]
pub struct CustomVersion {
    /// The CRD name (`plural.group`).
    pub crd_name: String,
    /// `openAPIV3Schema` of this version (`Value::Null` when absent).
    pub schema: Value,
    /// `additionalPrinterColumns` of this version.
    pub printer_columns: Vec<Value>,
    /// The storage version of the CRD.
    pub storage_version: String,
    /// The schema's `x-kubernetes-validations` rules, if it has any.
    pub cel: Option<Arc<crate::crd::cel::CelRules>>,
    /// How objects are converted between this CRD's versions.
    pub conversion: crate::conversion::Conversion,
    /// `openAPIV3Schema` of every version of the CRD, by version name: an object converted to a
    /// version is pruned of the fields that version's schema does not declare.
    pub schemas: Arc<BTreeMap<String, Value>>,
    /// Whether the CRD is being deleted (condition `Terminating` true): no new objects.
    pub terminating: bool,
}

/// One served resource type at one group/version.
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    /// API group ("" for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
    /// Kind.
    pub kind: String,
    /// Singular name.
    pub singular: String,
    /// Namespaced or cluster scoped.
    pub namespaced: bool,
    /// Short names.
    pub short_names: Vec<String>,
    /// Categories.
    pub categories: Vec<String>,
    /// Verbs as discovery lists them.
    pub verbs: Vec<String>,
    /// `storageVersionHash`, if listed.
    pub storage_version_hash: Option<String>,
    /// Subresource discovery entries (the `APIResource` JSON of `x/status` etc.).
    pub subresources: Vec<Value>,
    /// How writes behave; `None` for types listed in discovery but not stored by this server.
    pub behavior: Option<Behavior>,
    /// For custom resources: the CRD version.
    pub custom: Option<Arc<CustomVersion>>,
    /// Group and resource under which objects are stored (differs for events.k8s.io Events).
    pub storage_group: String,
    /// See `storage_group`.
    pub storage_resource: String,
}

impl ResourceInfo {
    /// `group/version` or `version` for core.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The list kind (`ConfigMapList`).
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// The identity used in error messages.
    pub fn subject(&self) -> Subject {
        Subject {
            group: self.group.clone(),
            resource: self.resource.clone(),
            kind: self.kind.clone(),
        }
    }

    /// Whether the type has the named subresource.
    pub fn has_subresource(&self, name: &str) -> bool {
        let full = format!("{}/{}", self.resource, name);
        self.subresources
            .iter()
            .any(|s| s.get("name").and_then(Value::as_str) == Some(full.as_str()))
    }

    /// Whether this is a custom resource.
    pub fn is_custom(&self) -> bool {
        self.custom.is_some()
    }

    /// The discovery `APIResource` entries of this type and its subresources.
    pub fn discovery_entries(&self) -> Vec<Value> {
        let mut main = serde_json::Map::new();
        if !self.categories.is_empty() {
            main.insert("categories".into(), json!(self.categories));
        }
        main.insert("kind".into(), json!(self.kind));
        main.insert("name".into(), json!(self.resource));
        main.insert("namespaced".into(), json!(self.namespaced));
        if !self.short_names.is_empty() {
            main.insert("shortNames".into(), json!(self.short_names));
        }
        main.insert("singularName".into(), json!(self.singular));
        if let Some(h) = &self.storage_version_hash {
            main.insert("storageVersionHash".into(), json!(h));
        }
        main.insert("verbs".into(), json!(self.verbs));
        let mut out = vec![Value::Object(main)];
        out.extend(self.subresources.iter().cloned());
        out
    }
}

/// All resource types, keyed by group, version and resource.
#[derive(Debug, Default)]
pub struct Registry {
    inner: RwLock<Inner>,
    /// Called for CRDs with conversion strategy `Webhook`.
    converters: crate::conversion::Converters,
}

#[derive(Debug, Default)]
struct Inner {
    /// `(group, version, resource)` -> info.
    types: BTreeMap<(String, String, String), Arc<ResourceInfo>>,
    /// Group order as `/apis` lists it (built-in groups first, then CRD groups by creation).
    group_order: Vec<String>,
    /// Version order per group (highest priority first).
    versions: BTreeMap<String, Vec<String>>,
}

/// kube's version priority: GA > beta > alpha, higher numbers first, non-kube versions last.
pub fn version_priority_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((3, major, 0));
        }
        let (level, num) = if let Some(n) = tail.strip_prefix("beta") {
            (2, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n)
        } else {
            return None;
        };
        Some((level, major, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    /// A registry holding the built-in types.
    pub fn with_builtins() -> Self {
        Self::with_builtins_and_converters(crate::conversion::Converters::ocm())
    }

    /// A registry holding the built-in types, converting custom resources of CRDs with
    /// conversion strategy `Webhook` with `converters`.
    pub fn with_builtins_and_converters(converters: crate::conversion::Converters) -> Self {
        let registry = Self {
            converters,
            ..Self::default()
        };
        for info in builtin::resources() {
            registry.add(info);
        }
        registry
    }

    /// The converters for CRDs with conversion strategy `Webhook`.
    pub fn converters(&self) -> &crate::conversion::Converters {
        &self.converters
    }

    /// Adds or replaces a type.
    pub fn add(&self, info: ResourceInfo) {
        let mut inner = write(&self.inner);
        if !info.group.is_empty() && !inner.group_order.contains(&info.group) {
            inner.group_order.push(info.group.clone());
        }
        let versions = inner.versions.entry(info.group.clone()).or_default();
        if !versions.contains(&info.version) {
            versions.push(info.version.clone());
            versions.sort_by(|a, b| version_priority_cmp(a, b));
        }
        inner.types.insert(
            (info.group.clone(), info.version.clone(), info.resource.clone()),
            Arc::new(info),
        );
    }

    /// Removes every version of a custom resource type `resource.group`.
    pub fn remove_custom(&self, group: &str, resource: &str) {
        let mut inner = write(&self.inner);
        inner
            .types
            .retain(|(g, _, r), info| !(g == group && r == resource && info.is_custom()));
        let remaining: Vec<String> = inner
            .types
            .keys()
            .filter(|(g, _, _)| g == group)
            .map(|(_, v, _)| v.clone())
            .collect();
        if let Some(versions) = inner.versions.get_mut(group) {
            versions.retain(|v| remaining.contains(v));
            if versions.is_empty() {
                inner.versions.remove(group);
                inner.group_order.retain(|g| g != group);
            }
        }
    }

    /// The type at `group/version/resource`.
    pub fn get(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceInfo>> {
        read(&self.inner)
            .types
            .get(&(group.to_string(), version.to_string(), resource.to_string()))
            .cloned()
    }

    /// Finds a type by group, version and kind.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        read(&self.inner)
            .types
            .values()
            .find(|i| i.group == group && i.version == version && i.kind == kind && i.behavior.is_some())
            .cloned()
    }

    /// Every type served at `group/version`.
    pub fn resources_of(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        read(&self.inner)
            .types
            .iter()
            .filter(|((g, v, _), _)| g == group && v == version)
            .map(|(_, i)| i.clone())
            .collect()
    }

    /// Groups (not core) in `/apis` order.
    pub fn groups(&self) -> Vec<String> {
        read(&self.inner).group_order.clone()
    }

    /// Versions of a group, highest priority first.
    pub fn versions(&self, group: &str) -> Vec<String> {
        read(&self.inner).versions.get(group).cloned().unwrap_or_default()
    }

    /// Every stored type (one entry per group/version/resource).
    pub fn all(&self) -> Vec<Arc<ResourceInfo>> {
        read(&self.inner).types.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kube() {
        let mut v = vec!["v1alpha1", "v1beta1", "v1", "v1beta2", "foo", "v2"];
        v.sort_by(|a, b| version_priority_cmp(a, b));
        assert_eq!(v, vec!["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]);
    }

    #[test]
    fn builtins_are_served() {
        let r = Registry::with_builtins();
        let cm = r.get("", "v1", "configmaps").unwrap();
        assert_eq!(cm.kind, "ConfigMap");
        assert!(cm.behavior.is_some());
        assert!(
            r.get("apps", "v1", "deployments")
                .unwrap()
                .has_subresource("status")
        );
        assert!(r.get("", "v1", "bindings").unwrap().behavior.is_none());
        assert_eq!(r.get("events.k8s.io", "v1", "events").unwrap().storage_group, "");
    }
}
