//! `/openapi/v3`: the index of per-group-version OpenAPI v3 documents and the documents of custom
//! resource group-versions (what `kubectl explain` reads).
//!
//! The index maps `apis/G/V` (and `api/v1`) to `/openapi/v3/apis/G/V?hash=H`, where `H` is the
//! upper-case hex SHA-512 of the document, as kube-apiserver publishes it. The documents of custom
//! resources name their schemas as kube-apiserver does (`io.open-cluster-management.cluster.v1.
//! ManagedCluster`, reversed group, version, kind) and mark them with
//! `x-kubernetes-group-version-kind`; built-in group-versions are listed with their paths but
//! with the schemas of the k8s-openapi types (upstream's definitions and descriptions) under
//! upstream's names (`io.k8s.api.core.v1.ConfigMap`). Write operations list the `fieldValidation`,
//! `dryRun` and `fieldManager` query parameters, which is how kubectl learns that the server
//! validates fields itself.
//!
//! The hashes are of this server's documents, so they differ from kube-apiserver's.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use k8s_openapi::api;
use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use crate::registry::{Registry, ResourceInfo};

/// `apis/G/V` or `api/v1`.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The name kube-apiserver gives a custom resource's schema.
fn schema_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

fn meta_schemas() -> Vec<(String, Value)> {
    vec![
        (
            OBJECT_META.to_string(),
            json!({"description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
                "type": "object"}),
        ),
        (
            LIST_META.to_string(),
            json!({"description": "ListMeta describes metadata that synthetic resources must have, including lists and various status objects. A resource may have only one of {ObjectMeta, ListMeta}.",
                "type": "object"}),
        ),
    ]
}

fn gvk(info: &ResourceInfo, kind: &str) -> Value {
    json!([{"group": info.group, "kind": kind, "version": info.version}])
}

/// The schema of a custom resource kind and of its list kind.
fn custom_schemas(info: &ResourceInfo) -> Vec<(String, Value)> {
    let Some(custom) = &info.custom else {
        return Vec::new();
    };
    let mut schema = match &custom.schema {
        Value::Object(m) => Value::Object(m.clone()),
        _ => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    };
    if let Some(m) = schema.as_object_mut() {
        let props = m
            .entry("properties")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let mut props: Map<String, Value> = props;
        props.insert(
            "metadata".into(),
            json!({"allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}],
                "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}),
        );
        m.insert("properties".into(), Value::Object(props));
        m.insert("x-kubernetes-group-version-kind".into(), gvk(info, &info.kind));
    }
    let list_kind = info.list_kind();
    let list = json!({
        "description": format!("{list_kind} is a list of {}", info.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object.", "type": "string"},
            "items": {"description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", info.resource),
                "type": "array",
                "items": {"$ref": format!("#/components/schemas/{}", schema_name(&info.group, &info.version, &info.kind))}},
            "kind": {"description": "Kind is a string value representing the REST resource this object represents.", "type": "string"},
            "metadata": {"allOf": [{"$ref": format!("#/components/schemas/{LIST_META}")}],
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}
        },
        "x-kubernetes-group-version-kind": gvk(info, &list_kind),
    });
    vec![
        (schema_name(&info.group, &info.version, &info.kind), schema),
        (schema_name(&info.group, &info.version, &list_kind), list),
    ]
}

/// Adds a built-in type's definitions to the generator; answers its `$ref`.
type BuiltinSchema = fn(&mut SchemaGenerator) -> schemars::Schema;

/// The built-in kinds whose schemas the documents carry: `(group, version, kind, schema)`.
fn builtin_schemas() -> Vec<(&'static str, &'static str, &'static str, BuiltinSchema)> {
    use api::admissionregistration::v1 as admission;
    use api::core::v1 as core;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    vec![
        ("", "v1", "ConfigMap", |g| g.subschema_for::<core::ConfigMap>()),
        ("", "v1", "Endpoints", |g| g.subschema_for::<core::Endpoints>()),
        ("", "v1", "Event", |g| g.subschema_for::<core::Event>()),
        ("", "v1", "LimitRange", |g| g.subschema_for::<core::LimitRange>()),
        ("", "v1", "Namespace", |g| g.subschema_for::<core::Namespace>()),
        ("", "v1", "Node", |g| g.subschema_for::<core::Node>()),
        ("", "v1", "PersistentVolume", |g| {
            g.subschema_for::<core::PersistentVolume>()
        }),
        ("", "v1", "PersistentVolumeClaim", |g| {
            g.subschema_for::<core::PersistentVolumeClaim>()
        }),
        ("", "v1", "Pod", |g| g.subschema_for::<core::Pod>()),
        ("", "v1", "PodTemplate", |g| {
            g.subschema_for::<core::PodTemplate>()
        }),
        ("", "v1", "ReplicationController", |g| {
            g.subschema_for::<core::ReplicationController>()
        }),
        ("", "v1", "ResourceQuota", |g| {
            g.subschema_for::<core::ResourceQuota>()
        }),
        ("", "v1", "Secret", |g| g.subschema_for::<core::Secret>()),
        ("", "v1", "Service", |g| g.subschema_for::<core::Service>()),
        ("", "v1", "ServiceAccount", |g| {
            g.subschema_for::<core::ServiceAccount>()
        }),
        ("apps", "v1", "ControllerRevision", |g| {
            g.subschema_for::<api::apps::v1::ControllerRevision>()
        }),
        ("apps", "v1", "DaemonSet", |g| {
            g.subschema_for::<api::apps::v1::DaemonSet>()
        }),
        ("apps", "v1", "Deployment", |g| {
            g.subschema_for::<api::apps::v1::Deployment>()
        }),
        ("apps", "v1", "ReplicaSet", |g| {
            g.subschema_for::<api::apps::v1::ReplicaSet>()
        }),
        ("apps", "v1", "StatefulSet", |g| {
            g.subschema_for::<api::apps::v1::StatefulSet>()
        }),
        ("batch", "v1", "CronJob", |g| {
            g.subschema_for::<api::batch::v1::CronJob>()
        }),
        ("batch", "v1", "Job", |g| g.subschema_for::<api::batch::v1::Job>()),
        ("events.k8s.io", "v1", "Event", |g| {
            g.subschema_for::<api::events::v1::Event>()
        }),
        ("coordination.k8s.io", "v1", "Lease", |g| {
            g.subschema_for::<api::coordination::v1::Lease>()
        }),
        ("certificates.k8s.io", "v1", "CertificateSigningRequest", |g| {
            g.subschema_for::<api::certificates::v1::CertificateSigningRequest>()
        }),
        ("rbac.authorization.k8s.io", "v1", "ClusterRole", |g| {
            g.subschema_for::<api::rbac::v1::ClusterRole>()
        }),
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", |g| {
            g.subschema_for::<api::rbac::v1::ClusterRoleBinding>()
        }),
        ("rbac.authorization.k8s.io", "v1", "Role", |g| {
            g.subschema_for::<api::rbac::v1::Role>()
        }),
        ("rbac.authorization.k8s.io", "v1", "RoleBinding", |g| {
            g.subschema_for::<api::rbac::v1::RoleBinding>()
        }),
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", |g| {
            g.subschema_for::<apiextensions::CustomResourceDefinition>()
        }),
        (
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            |g| g.subschema_for::<admission::MutatingWebhookConfiguration>(),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            |g| g.subschema_for::<admission::ValidatingAdmissionPolicy>(),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            |g| g.subschema_for::<admission::ValidatingAdmissionPolicyBinding>(),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            |g| g.subschema_for::<admission::ValidatingWebhookConfiguration>(),
        ),
    ]
}

/// The schemas of the built-in kinds of one group-version (and the definitions they use), each
/// kind marked with `x-kubernetes-group-version-kind`.
fn builtin_components(group: &str, version: &str) -> Map<String, Value> {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut kinds = Vec::new();
    for (g, v, kind, schema) in builtin_schemas() {
        if g == group && v == version {
            let reference = schema(&mut generator);
            let name = reference
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.rsplit('/').next())
                .map(str::to_string);
            kinds.push((kind, name));
        }
    }
    let mut definitions = generator.take_definitions(true);
    for (kind, name) in kinds {
        if let Some(Value::Object(schema)) = name.and_then(|n| definitions.get_mut(&n)) {
            schema.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": group, "kind": kind, "version": version}]),
            );
        }
    }
    definitions.into_iter().collect()
}

/// The query parameters of write operations that clients look for.
fn write_parameters() -> Value {
    let param = |name: &str, description: &str| {
        json!({"name": name, "in": "query", "description": description,
            "schema": {"type": "string", "uniqueItems": true}})
    };
    json!([
        param(
            "dryRun",
            "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed"
        ),
        param(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making these changes."
        ),
        param(
            "fieldValidation",
            "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict"
        ),
    ])
}

/// The paths of one resource type.
fn resource_paths(info: &ResourceInfo, paths: &mut Map<String, Value>) {
    let base = format!("/{}", gv_path(&info.group, &info.version));
    let collection = if info.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", info.resource)
    } else {
        format!("{base}/{}", info.resource)
    };
    let describe = |verb: &str, what: &str| {
        let mut op = json!({"description": format!("{verb} {what}"),
            "tags": [gv_path(&info.group, &info.version)],
            "x-kubernetes-action": verb, "x-kubernetes-group-version-kind":
                {"group": info.group, "version": info.version, "kind": info.kind}});
        if matches!(verb, "post" | "put" | "patch")
            && let Some(m) = op.as_object_mut()
        {
            m.insert("parameters".into(), write_parameters());
        }
        op
    };
    paths.insert(
        collection.clone(),
        json!({"get": describe("list", &format!("objects of kind {}", info.kind)),
            "post": describe("post", &format!("a {}", info.kind)),
            "delete": describe("deletecollection", &format!("collection of {}", info.kind))}),
    );
    paths.insert(
        format!("{collection}/{{name}}"),
        json!({"get": describe("get", &format!("the specified {}", info.kind)),
            "put": describe("put", &format!("the specified {}", info.kind)),
            "patch": describe("patch", &format!("the specified {}", info.kind)),
            "delete": describe("delete", &format!("a {}", info.kind))}),
    );
    if info.has_subresource("status") {
        paths.insert(
            format!("{collection}/{{name}}/status"),
            json!({"get": describe("get", &format!("status of the specified {}", info.kind)),
                "put": describe("put", &format!("status of the specified {}", info.kind)),
                "patch": describe("patch", &format!("status of the specified {}", info.kind))}),
        );
    }
}

/// The document of one group-version (`None` when nothing is served there).
pub fn document(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let infos: Vec<_> = registry
        .resources_of(group, version)
        .into_iter()
        .filter(|i| i.behavior.is_some())
        .collect();
    if infos.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for info in &infos {
        resource_paths(info, &mut paths);
        for (name, schema) in custom_schemas(info) {
            schemas.insert(name, schema);
        }
    }
    let custom = infos.iter().any(|i| i.is_custom());
    if custom {
        for (name, schema) in meta_schemas() {
            schemas.insert(name, schema);
        }
    } else {
        schemas.extend(cached_builtin_components(group, version));
    }
    let info = if custom {
        json!({"title": "Kubernetes CRD Swagger", "version": "v0.1.0"})
    } else {
        json!({"title": "Kubernetes", "version": "v1.36.2"})
    };
    Some(json!({"openapi": "3.0.0", "info": info, "paths": paths, "components": {"schemas": schemas}}))
}

/// [`builtin_components`], generated once per group-version.
fn cached_builtin_components(group: &str, version: &str) -> Map<String, Value> {
    static CACHE: OnceLock<std::sync::Mutex<BTreeMap<String, Map<String, Value>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = format!("{group}/{version}");
    let mut guard = cache.lock().unwrap_or_else(|e| e.into_inner());
    guard
        .entry(key)
        .or_insert_with(|| builtin_components(group, version))
        .clone()
}

/// Upper-case hex SHA-512 of a document's bytes.
fn hash(document: &Value) -> String {
    Sha512::digest(document.to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// The `/openapi/v3` index.
pub fn index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    let mut gvs: Vec<(String, String)> = vec![(String::new(), "v1".to_string())];
    for group in registry.groups() {
        for version in registry.versions(&group) {
            gvs.push((group.clone(), version));
        }
    }
    for (group, version) in gvs {
        if let Some(doc) = document(registry, &group, &version) {
            let path = gv_path(&group, &version);
            paths.insert(
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", hash(&doc))}),
            );
        }
    }
    json!({"paths": paths})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_hashes() {
        assert_eq!(
            schema_name("cluster.open-cluster-management.io", "v1", "ManagedCluster"),
            "io.open-cluster-management.cluster.v1.ManagedCluster"
        );
        let registry = Registry::with_builtins();
        let index = index(&registry);
        let url = index["paths"]["api/v1"]["serverRelativeURL"].as_str().unwrap();
        let hash = url.rsplit_once("hash=").unwrap().1;
        assert_eq!(hash.len(), 128);
        assert!(hash.chars().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
        let core = document(&registry, "", "v1").unwrap();
        let cm = &core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"];
        assert_eq!(cm["x-kubernetes-group-version-kind"][0]["kind"], "ConfigMap");
        assert!(core["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
        let patch = &core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
    }
}
