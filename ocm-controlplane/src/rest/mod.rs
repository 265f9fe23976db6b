//! The REST verbs over storage, independent of HTTP: get, list, create, update, patch, delete,
//! deletecollection, with kube-apiserver's object lifecycle rules.
//!
//! Writes follow kube-apiserver's pipeline: decode and check the type, default, compute
//! managedFields, prepare (status resets, server-set metadata), validate, then commit with
//! optimistic concurrency. Custom resources additionally go through [`crate::crd::schema`]
//! (pruning, defaulting, validation).

pub mod decode;
pub mod kinds;
pub mod kinds_events;
pub mod list;
pub mod watch;

use std::sync::Arc;

use rand::Rng;
use serde_json::{Map, Value, json};

use crate::auth::UserInfo;
use crate::fieldmanager::{self, FieldSet, Manager, Schema};
use crate::registry::{Registry, ResourceInfo, Special};
use crate::status::{self, ApiError, Cause};
use crate::storage::{self, Storage, StorageError, Stored};

/// How unknown fields are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them with a `Warning` header each (the default).
    #[default]
    Warn,
    /// Refuse the request.
    Strict,
}

/// What a request carries besides its body.
#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Name from the path.
    pub name: Option<String>,
    /// Subresource from the path (`status`, `approval`).
    pub subresource: Option<String>,
    /// `User-Agent` header.
    pub user_agent: Option<String>,
    /// `fieldManager` query parameter.
    pub field_manager: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// The authenticated user.
    pub user: UserInfo,
}

impl RequestContext {
    fn manager_name(&self) -> String {
        self.field_manager
            .clone()
            .unwrap_or_else(|| fieldmanager::default_manager(self.user_agent.as_deref()))
    }
}

/// A successful answer: status code, body and warnings.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status code.
    pub code: u16,
    /// JSON body.
    pub body: Value,
    /// `Warning: 299` texts.
    pub warnings: Vec<String>,
}

impl Reply {
    fn ok(body: Value) -> Self {
        Self {
            code: 200,
            body,
            warnings: Vec::new(),
        }
    }
}

/// The REST layer: storage plus the type registry.
#[derive(Clone)]
pub struct Api {
    /// Object storage.
    pub storage: Arc<dyn Storage>,
    /// Resource types.
    pub registry: Arc<Registry>,
}

/// The name-generator alphabet of kube-apiserver (no vowels, no confusable digits).
const GEN_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn generate_suffix() -> String {
    let mut rng = rand::rng();
    (0..5)
        .map(|_| GEN_ALPHABET[rng.random_range(0..GEN_ALPHABET.len())] as char)
        .collect()
}

/// The storage key of an object of `info`.
pub fn key_of(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
    storage::object_key(&info.storage_group, &info.storage_resource, namespace, name)
}

pub(crate) fn storage_error(info: &ResourceInfo, name: &str, e: StorageError) -> ApiError {
    let subject = info.subject();
    match e {
        StorageError::CreateAlreadyExists { .. } => ApiError::already_exists(&subject, name),
        StorageError::WriteNotFound { .. } => ApiError::not_found(&subject, name),
        StorageError::WriteConflict { .. } => ApiError::conflict(&subject, name),
        StorageError::ReadExpired { .. } => {
            ApiError::expired("The resourceVersion for the provided list is too old.")
        }
        other => ApiError::internal(other),
    }
}

fn meta(object: &Value) -> &Value {
    object.get("metadata").unwrap_or(&Value::Null)
}

fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    meta(object)
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn meta_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = json!({});
    }
    let map = object
        .as_object_mut()
        .map(|m| m.entry("metadata").or_insert_with(|| json!({})));
    match map {
        Some(Value::Object(m)) => m,
        Some(other) => {
            *other = json!({});
            match other {
                Value::Object(m) => m,
                _ => unreachable_map(),
            }
        }
        None => unreachable_map(),
    }
}

#[allow(clippy::panic)]
fn unreachable_map() -> &'static mut Map<String, Value> {
    // Only reachable if a JSON object stopped being one between two statements.
    Box::leak(Box::new(Map::new()))
}

/// Strips server-owned content the way kube-apiserver's list conversion does for built-in items.
pub fn list_item(info: &ResourceInfo, object: &Value) -> Value {
    if info.is_custom() {
        return object.clone();
    }
    let mut o = object.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
    }
    o
}

/// Converts a stored object into the addressed version's representation.
pub fn to_version(info: &ResourceInfo, object: &Value) -> Value {
    let mut o = object.clone();
    if let Some(m) = o.as_object_mut() {
        m.insert("apiVersion".into(), json!(info.api_version()));
        if info.group == "events.k8s.io" {
            return crate::rest::kinds_events::core_to_events(&o);
        }
    }
    o
}

fn schema_of(info: &ResourceInfo) -> Schema<'_> {
    match &info.custom {
        Some(c) => Schema {
            openapi: Some(&c.schema),
            custom: true,
        },
        None => Schema {
            openapi: None,
            custom: false,
        },
    }
}

fn spec_part(object: &Value) -> Value {
    let mut o = object.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
        m.remove("apiVersion");
        m.remove("kind");
    }
    o
}

impl Api {
    /// A REST layer over `storage` serving the types of `registry`.
    pub fn new(storage: Arc<dyn Storage>, registry: Arc<Registry>) -> Self {
        Self { storage, registry }
    }

    async fn namespace_exists(&self, ns: &str) -> Result<Option<Stored>, ApiError> {
        let key = storage::object_key("", "namespaces", None, ns);
        self.storage.get(&key).await.map_err(ApiError::internal)
    }

    /// GET of one object.
    pub async fn get(&self, info: &ResourceInfo, ctx: &RequestContext) -> Result<Reply, ApiError> {
        let name = ctx.name.clone().unwrap_or_default();
        let key = key_of(info, ctx.namespace.as_deref(), &name);
        match self.storage.get(&key).await.map_err(ApiError::internal)? {
            Some(stored) => Ok(Reply::ok(to_version(info, &stored.object))),
            None => Err(ApiError::not_found(&info.subject(), &name)),
        }
    }

    /// Common decoding of a create/update body into an object of the addressed type.
    fn decode(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        body: &[u8],
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let mut object = decode::parse_object_body(info, body)?;
        decode::check_type(&self.registry, info, &mut object)?;
        if info.is_custom() {
            crate::crd::schema::decode_custom(info, &mut object, ctx.field_validation, warnings)?;
        } else {
            decode::check_builtin_types(info, &object)?;
            crate::rest::kinds_events::decode(info, &mut object)?;
            kinds::default(info, &mut object);
        }
        Ok(object)
    }

    fn validate_meta(&self, info: &ResourceInfo, object: &Value, old: Option<&Value>) -> Vec<Cause> {
        let m = meta(object);
        let mut causes = Vec::new();
        let label = matches!(
            info.behavior.as_ref().map(|b| b.special),
            Some(Special::Namespace)
        );
        let rbac = info.group == "rbac.authorization.k8s.io";
        if old.is_none() {
            if rbac {
                let n = meta_str(object, "name");
                if n.is_empty() {
                    causes.push(Cause::required(
                        "metadata.name",
                        "name or generateName is required",
                    ));
                } else if n.contains('/') || n.contains('%') || n == "." || n == ".." {
                    causes.push(Cause::invalid("metadata.name", &json!(n), "may not contain '/'"));
                }
            } else {
                causes.extend(crate::validation::name(m, label));
            }
        }
        let times = if info.is_custom() { 3 } else { 1 };
        causes.extend(crate::validation::labels(m, times));
        causes.extend(crate::validation::annotations(m, times));
        causes.extend(crate::validation::finalizers(m));
        if let Some(old) = old
            && !meta_str(old, "deletionTimestamp").is_empty()
        {
            let old_f = finalizers(old);
            let new: Vec<String> = finalizers(object)
                .into_iter()
                .filter(|f| !old_f.contains(f))
                .collect();
            if !new.is_empty() {
                let list = new
                    .iter()
                    .map(|f| format!("{f:?}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let c = Cause::forbidden(
                    "metadata.finalizers",
                    &format!(
                        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}"
                    ),
                );
                causes.push(c.clone());
                causes.push(c);
            }
        }
        causes
    }

    /// POST: create an object.
    pub async fn create(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        body: &[u8],
    ) -> Result<Reply, ApiError> {
        let mut warnings = Vec::new();
        let mut object = self.decode(info, ctx, body, &mut warnings)?;
        let ns = if info.namespaced {
            ctx.namespace.clone()
        } else {
            None
        };
        {
            let m = meta_mut(&mut object);
            if let Some(ns) = &ns {
                match m.get("namespace").and_then(Value::as_str) {
                    Some(body_ns) if !body_ns.is_empty() && body_ns != ns => {
                        return Err(ApiError::bad_request(
                            "the namespace of the provided object does not match the namespace sent on the request",
                        ));
                    }
                    _ => {
                        m.insert("namespace".into(), json!(ns));
                    }
                }
            } else {
                m.remove("namespace");
            }
            let name = m
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let generate = m
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if name.is_empty() && !generate.is_empty() {
                m.insert("name".into(), json!(format!("{generate}{}", generate_suffix())));
            }
        }
        if let Some(ns) = &ns {
            match self.namespace_exists(ns).await? {
                None => {
                    let subject = status::Subject {
                        group: String::new(),
                        resource: "namespaces".into(),
                        kind: "Namespace".into(),
                    };
                    return Err(ApiError::not_found(&subject, ns));
                }
                Some(nsobj) if !meta_str(&nsobj.object, "deletionTimestamp").is_empty() => {
                    let subject = info.subject();
                    let name = meta_str(&object, "name").to_string();
                    return Err(ApiError::forbidden(
                        &subject,
                        &name,
                        format!(
                            "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                            subject.qualified_resource()
                        ),
                    )
                    .with_details(json!({"name": name, "group": info.group, "kind": info.resource, "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]})));
                }
                _ => {}
            }
        }
        let name = meta_str(&object, "name").to_string();
        let has_status = info.behavior.as_ref().is_some_and(|b| b.has_status);
        // managedFields of the request's fields (status is reset for types with /status).
        {
            let m = meta_mut(&mut object);
            for f in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "selfLink",
            ] {
                m.remove(f);
            }
        }
        if has_status && let Some(map) = object.as_object_mut() {
            map.remove("status");
        }
        let manager_name = ctx.manager_name();
        let api_version = info.api_version();
        let manager = Manager {
            name: &manager_name,
            api_version: &api_version,
            subresource: "",
        };
        let ignore = |_: &str| false;
        let fields = fieldmanager::object_fields(&object, schema_of(info), &ignore);
        let managed =
            fieldmanager::update_managed_fields(None, &object, &FieldSet::default(), &fields, &manager);
        kinds::prepare_create(info, &mut object);
        if info.is_custom() {
            crate::crd::schema::default_custom(info, &mut object);
        }
        let mut causes = self.validate_meta(info, &object, None);
        if info.is_custom() {
            causes.extend(crate::crd::schema::validate_custom(info, &object));
        } else {
            causes.extend(kinds::validate(info, &object, None));
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid(&info.subject(), &name, causes));
        }
        {
            let m = meta_mut(&mut object);
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(fieldmanager::now_rfc3339()));
            if info.behavior.as_ref().is_some_and(|b| b.tracks_generation) || info.is_custom() {
                m.insert("generation".into(), json!(1));
            }
            m.insert("managedFields".into(), Value::Array(managed));
        }
        crate::crd::on_create(info, &mut object);
        if ctx.dry_run {
            return Ok(Reply {
                code: 201,
                body: to_version(info, &object),
                warnings,
            });
        }
        let key = key_of(info, ns.as_deref(), &name);
        let stored = self
            .storage
            .create(&key, object)
            .await
            .map_err(|e| storage_error(info, &name, e))?;
        Ok(Reply {
            code: 201,
            body: to_version(info, &stored.object),
            warnings,
        })
    }

    /// PUT: replace an object (or its status with `ctx.subresource`).
    pub async fn update(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        body: &[u8],
    ) -> Result<Reply, ApiError> {
        let mut warnings = Vec::new();
        let object = self.decode(info, ctx, body, &mut warnings)?;
        let url_name = ctx.name.clone().unwrap_or_default();
        let body_name = meta_str(&object, "name").to_string();
        if body_name != url_name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({url_name})"
            )));
        }
        if let (Some(ns), Some(body_ns)) = (
            &ctx.namespace,
            meta(&object).get("namespace").and_then(Value::as_str),
        ) && info.namespaced
            && !body_ns.is_empty()
            && body_ns != ns
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let body_rv = meta_str(&object, "resourceVersion").to_string();
        let reply = self
            .write_loop(info, ctx, &body_rv, &mut warnings, |_current| Ok(object.clone()))
            .await?;
        Ok(reply)
    }

    /// PATCH with a JSON merge patch or JSON patch.
    pub async fn patch(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        content_type: &str,
        body: &[u8],
    ) -> Result<Reply, ApiError> {
        let mut warnings = Vec::new();
        let kind = content_type.split(';').next().unwrap_or_default().trim();
        enum P {
            Merge(Value),
            Json(json_patch::Patch),
        }
        let patch = match kind {
            "application/merge-patch+json" => P::Merge(parse_patch(body)?),
            "application/strategic-merge-patch+json" if !info.is_custom() => P::Merge(parse_patch(body)?),
            "application/json-patch+json" => {
                let v = parse_patch(body)?;
                if !v.is_array() {
                    return Err(ApiError::bad_request(format!(
                        "error decoding patch: json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                        crate::gojson::value_kind(&v)
                    )));
                }
                match serde_json::from_value::<json_patch::Patch>(v) {
                    Ok(p) => P::Json(p),
                    Err(_) => return Err(generic_invalid()),
                }
            }
            "application/strategic-merge-patch+json"
            | "application/apply-patch+yaml"
            | "application/apply-patch+cbor" => {
                return Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                ));
            }
            _ => {
                return Err(
                    ApiError::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
                        .with_details(json!({})),
                );
            }
        };
        let patch_rv = match &patch {
            P::Merge(v) => v
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            P::Json(_) => String::new(),
        };
        let registry = self.registry.clone();
        let info_c = info.clone();
        let field_validation = ctx.field_validation;
        let mut extra_warnings = Vec::new();
        let reply = self
            .write_loop(info, ctx, &patch_rv, &mut warnings, |current| {
                let mut target = to_version(&info_c, current);
                match &patch {
                    P::Merge(p) => json_patch::merge(&mut target, p),
                    P::Json(p) => {
                        if json_patch::patch(&mut target, p).is_err() {
                            return Err(generic_invalid());
                        }
                    }
                }
                let bytes = serde_json::to_vec(&target).map_err(ApiError::internal)?;
                let mut object = target;
                decode::check_type(&registry, &info_c, &mut object)?;
                if info_c.is_custom() {
                    crate::crd::schema::decode_custom(&info_c, &mut object, field_validation, &mut extra_warnings)?;
                } else {
                    if let Err(e) = decode::check_builtin_types(&info_c, &object) {
                        let detail = e.message.split_once(": ").map(|(_, d)| d.to_string()).unwrap_or(e.message);
                        let shown = String::from_utf8_lossy(&bytes).to_string();
                        return Err(ApiError::new(
                            422,
                            "Invalid",
                            format!(" \"\" is invalid: patch: Invalid value: {:?}: {detail}", shown),
                        )
                        .with_details(json!({"causes": [{"reason": "FieldValueInvalid", "message": format!("Invalid value: {:?}: {detail}", shown), "field": "patch"}]})));
                    }
                    crate::rest::kinds_events::decode(&info_c, &mut object)?;
                    kinds::default(&info_c, &mut object);
                }
                Ok(object)
            })
            .await?;
        let mut reply = reply;
        reply.warnings.extend(extra_warnings);
        Ok(reply)
    }

    /// The read-modify-write loop shared by PUT and PATCH.
    async fn write_loop(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        requested_rv: &str,
        warnings: &mut Vec<String>,
        mut compute: impl FnMut(&Value) -> Result<Value, ApiError>,
    ) -> Result<Reply, ApiError> {
        let name = ctx.name.clone().unwrap_or_default();
        let ns = if info.namespaced {
            ctx.namespace.clone()
        } else {
            None
        };
        let key = key_of(info, ns.as_deref(), &name);
        let subject = info.subject();
        for _attempt in 0..64 {
            let Some(current) = self.storage.get(&key).await.map_err(ApiError::internal)? else {
                return Err(ApiError::not_found(&subject, &name));
            };
            if !requested_rv.is_empty() && requested_rv != current.rv.to_string() {
                return Err(ApiError::conflict(&subject, &name));
            }
            let old = current.object.as_ref();
            let mut new = compute(old)?;
            let sub = ctx.subresource.clone().unwrap_or_default();
            let has_status = info.behavior.as_ref().is_some_and(|b| b.has_status);
            // Status subresource rules.
            if sub == "status" || sub == "approval" {
                let mut merged = old.clone();
                if let (Some(m), Some(n)) = (merged.as_object_mut(), new.as_object()) {
                    match n.get("status") {
                        Some(s) => m.insert("status".into(), s.clone()),
                        None => m.remove("status"),
                    };
                }
                new = merged;
            } else if has_status && let Some(m) = new.as_object_mut() {
                match old.get("status") {
                    Some(s) => m.insert("status".into(), s.clone()),
                    None => m.remove("status"),
                };
            }
            // Server-owned metadata is kept from the stored object.
            {
                let old_meta = meta(old).clone();
                let m = meta_mut(&mut new);
                for f in [
                    "uid",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generation",
                    "namespace",
                    "name",
                ] {
                    match old_meta.get(f) {
                        Some(v) => m.insert(f.into(), v.clone()),
                        None => m.remove(f),
                    };
                }
                m.insert("resourceVersion".into(), json!(current.rv.to_string()));
                if sub == "status" || sub == "approval" {
                    for f in ["labels", "annotations", "finalizers", "ownerReferences"] {
                        match old_meta.get(f) {
                            Some(v) => m.insert(f.into(), v.clone()),
                            None => m.remove(f),
                        };
                    }
                }
            }
            if info.is_custom() {
                crate::crd::schema::default_custom(info, &mut new);
            }
            // Generation.
            let tracks = info.behavior.as_ref().is_some_and(|b| b.tracks_generation) || info.is_custom();
            if tracks && spec_part(&new) != spec_part(old) {
                let g = meta(old).get("generation").and_then(Value::as_i64).unwrap_or(0);
                meta_mut(&mut new).insert("generation".into(), json!(g + 1));
            }
            // managedFields.
            let manager_name = ctx.manager_name();
            let api_version = info.api_version();
            let manager = Manager {
                name: &manager_name,
                api_version: &api_version,
                subresource: if sub == "status" { "status" } else { "" },
            };
            let status_only = sub == "status";
            let ignore = move |k: &str| {
                if status_only {
                    k != "status"
                } else {
                    has_status && k == "status"
                }
            };
            let schema = schema_of(info);
            let old_fields = fieldmanager::object_fields(old, schema, &ignore);
            let new_fields = fieldmanager::object_fields(&new, schema, &ignore);
            let managed =
                fieldmanager::update_managed_fields(Some(old), &new, &old_fields, &new_fields, &manager);
            if managed.is_empty() {
                meta_mut(&mut new).remove("managedFields");
            } else {
                meta_mut(&mut new).insert("managedFields".into(), Value::Array(managed));
            }
            // Validation.
            let mut causes = self.validate_meta(info, &new, Some(old));
            if info.is_custom() {
                causes.extend(crate::crd::schema::validate_custom(info, &new));
            } else {
                causes.extend(kinds::validate(info, &new, Some(old)));
            }
            if !causes.is_empty() {
                return Err(ApiError::invalid(&subject, &name, causes));
            }
            if let Some(m) = new.as_object_mut() {
                m.insert(
                    "apiVersion".into(),
                    old.get("apiVersion")
                        .cloned()
                        .unwrap_or(json!(info.api_version())),
                );
            }
            crate::crd::on_update(info, old, &mut new);
            // No-op writes keep the stored object and its resourceVersion.
            if &new == old {
                return Ok(Reply {
                    code: 200,
                    body: to_version(info, old),
                    warnings: std::mem::take(warnings),
                });
            }
            if ctx.dry_run {
                return Ok(Reply {
                    code: 200,
                    body: to_version(info, &new),
                    warnings: std::mem::take(warnings),
                });
            }
            // Deleting objects whose last finalizer was removed are deleted.
            let deleting = !meta_str(&new, "deletionTimestamp").is_empty();
            if deleting && finalizers(&new).is_empty() {
                let stored = self.storage.update(&key, new, Some(current.rv)).await;
                match stored {
                    Ok(s) => {
                        let _ = self.storage.delete(&key, Some(s.rv)).await;
                        return Ok(Reply {
                            code: 200,
                            body: to_version(info, &s.object),
                            warnings: std::mem::take(warnings),
                        });
                    }
                    Err(StorageError::WriteConflict { .. }) if requested_rv.is_empty() => continue,
                    Err(e) => return Err(storage_error(info, &name, e)),
                }
            }
            match self.storage.update(&key, new, Some(current.rv)).await {
                Ok(s) => {
                    return Ok(Reply {
                        code: 200,
                        body: to_version(info, &s.object),
                        warnings: std::mem::take(warnings),
                    });
                }
                Err(StorageError::WriteConflict { .. }) if requested_rv.is_empty() => continue,
                Err(e) => return Err(storage_error(info, &name, e)),
            }
        }
        Err(ApiError::conflict(&subject, &name))
    }

    /// DELETE of one object with DeleteOptions.
    pub async fn delete(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        options: &Value,
    ) -> Result<Reply, ApiError> {
        let name = ctx.name.clone().unwrap_or_default();
        let ns = if info.namespaced {
            ctx.namespace.clone()
        } else {
            None
        };
        let key = key_of(info, ns.as_deref(), &name);
        let subject = info.subject();
        for _attempt in 0..64 {
            let Some(current) = self.storage.get(&key).await.map_err(ApiError::internal)? else {
                return Err(ApiError::not_found(&subject, &name));
            };
            let old = current.object.as_ref();
            if let Some(uid) = options.pointer("/preconditions/uid").and_then(Value::as_str)
                && uid != meta_str(old, "uid")
            {
                return Err(ApiError::precondition_conflict(
                    &subject,
                    &name,
                    &format!(
                        "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                        meta_str(old, "uid")
                    ),
                ));
            }
            if let Some(rv) = options
                .pointer("/preconditions/resourceVersion")
                .and_then(Value::as_str)
                && rv != current.rv.to_string()
            {
                return Err(ApiError::precondition_conflict(
                    &subject,
                    &name,
                    &format!(
                        "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                        current.rv
                    ),
                ));
            }
            let policy = options
                .get("propagationPolicy")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let mut fins = finalizers(old);
            match policy {
                "Foreground" if !fins.iter().any(|f| f == "foregroundDeletion") => {
                    fins.push("foregroundDeletion".into())
                }
                "Orphan" if !fins.iter().any(|f| f == "orphan") => fins.push("orphan".into()),
                _ => {}
            }
            let is_namespace = matches!(
                info.behavior.as_ref().map(|b| b.special),
                Some(Special::Namespace)
            );
            let spec_fins = is_namespace
                && old
                    .pointer("/spec/finalizers")
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty());
            let graceful = !fins.is_empty() || spec_fins;
            if graceful {
                if !meta_str(old, "deletionTimestamp").is_empty() && fins == finalizers(old) {
                    return Ok(Reply::ok(to_version(info, old)));
                }
                let mut new = old.clone();
                {
                    let m = meta_mut(&mut new);
                    if !m.contains_key("deletionTimestamp") {
                        m.insert("deletionTimestamp".into(), json!(fieldmanager::now_rfc3339()));
                        m.insert("deletionGracePeriodSeconds".into(), json!(0));
                    }
                    m.insert("finalizers".into(), json!(fins));
                }
                if is_namespace && let Some(map) = new.as_object_mut() {
                    map.insert("status".into(), json!({"phase": "Terminating"}));
                }
                if ctx.dry_run {
                    return Ok(Reply::ok(to_version(info, &new)));
                }
                match self.storage.update(&key, new, Some(current.rv)).await {
                    Ok(s) => return Ok(Reply::ok(to_version(info, &s.object))),
                    Err(StorageError::WriteConflict { .. }) => continue,
                    Err(e) => return Err(storage_error(info, &name, e)),
                }
            }
            if ctx.dry_run {
                return Ok(Reply::ok(status::delete_success(
                    &subject,
                    &name,
                    meta_str(old, "uid"),
                )));
            }
            match self.storage.delete(&key, Some(current.rv)).await {
                Ok(s) => {
                    crate::crd::on_delete(self, info, &s.object).await;
                    let body = if is_namespace || info.resource == "customresourcedefinitions" {
                        to_version(info, &s.object)
                    } else {
                        status::delete_success(&subject, &name, meta_str(old, "uid"))
                    };
                    return Ok(Reply::ok(body));
                }
                Err(StorageError::WriteConflict { .. }) => continue,
                Err(e) => return Err(storage_error(info, &name, e)),
            }
        }
        Err(ApiError::conflict(&subject, &name))
    }
}

fn parse_patch(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|_| {
        let go = crate::gojson::syntax_error(body).unwrap_or_else(|| "unexpected end of JSON input".into());
        ApiError::bad_request(format!("error decoding patch: {go}"))
    })
}

fn generic_invalid() -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
    )
    .with_details(json!({}))
}

/// `metadata.finalizers` as strings.
pub fn finalizers(object: &Value) -> Vec<String> {
    meta(object)
        .get("finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}
