//! The REST verbs over storage, independent of HTTP: get, list, create, update, patch, delete,
//! deletecollection, with kube-apiserver's object lifecycle rules.
//!
//! Writes follow kube-apiserver's pipeline: decode and check the type, default, compute
//! managedFields, prepare (status resets, server-set metadata), validate, then commit with
//! optimistic concurrency. Custom resources additionally go through [`crate::crd::schema`]
//! (pruning, defaulting, validation).

mod apply;
mod create;
pub mod decode;
pub(crate) mod delete;
pub mod field_labels;
pub mod kinds;
pub mod kinds_events;
pub mod kinds_workloads;
pub mod list;
pub mod list_stream;
pub mod nulls;
mod patch;
mod rbac_update;
pub mod reviews;
pub mod scale;
pub mod strategic;
#[cfg(test)]
mod strategic_props;
pub mod token_request;
mod update;
pub mod watch;

use std::sync::Arc;

use rand::Rng;
use serde_json::{Map, Value, json};

use crate::auth::UserInfo;
use crate::fieldmanager::{self, Schema};
use crate::registry::{Registry, ResourceInfo, Special};
use crate::status::{ApiError, Cause};
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
    /// The serving CA bundle (PEM) published as `kube-root-ca.crt` into every namespace.
    pub root_ca: Option<Arc<str>>,
    /// Admission of the OCM hub kinds, when the server serves as a hub ([`crate::admission`]).
    pub admission: Option<Arc<crate::admission::Admission>>,
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

/// `v` as a JSON object, replacing anything else by an empty one.
pub(crate) fn ensure_object(v: &mut Value) -> &mut Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => {
            *other = Value::Object(Map::new());
            ensure_object(other)
        }
    }
}

/// `metadata` of an object as a map (created when missing).
pub(crate) fn meta_mut(object: &mut Value) -> &mut Map<String, Value> {
    ensure_object(ensure_object(object).entry("metadata").or_insert(Value::Null))
}

/// Strips server-owned content the way kube-apiserver's list conversion does for built-in items.
pub fn list_item(info: &ResourceInfo, mut object: Value) -> Value {
    if !info.is_custom()
        && let Some(m) = object.as_object_mut()
    {
        m.remove("apiVersion");
        m.remove("kind");
    }
    object
}

/// Converts a stored object into the addressed version's representation.
///
/// # Errors
/// A custom resource whose CRD converts through a webhook and whose converter fails (or is not
/// registered): 500, as kube-apiserver answers a failed conversion webhook call.
pub fn to_version(info: &ResourceInfo, object: &Value) -> Result<Value, ApiError> {
    if info.group == "events.k8s.io" {
        return Ok(kinds_events::core_to_events(object));
    }
    convert_custom(info, object, &info.api_version())
}

/// Converts an object of the addressed version into its stored representation.
///
/// # Errors
/// As [`to_version`].
pub fn from_version(info: &ResourceInfo, object: &Value) -> Result<Value, ApiError> {
    let mut o = if info.group == "events.k8s.io" {
        kinds_events::events_to_core(object)
    } else if let Some(custom) = &info.custom {
        let storage_api_version = format!("{}/{}", info.group, custom.storage_version);
        convert_custom(info, object, &storage_api_version)?
    } else {
        object.clone()
    };
    if !info.is_custom() {
        crate::registry::shapes::normalize_stored(&info.storage_group, &info.storage_resource, &mut o);
    }
    Ok(o)
}

/// `object` at `api_version`: custom resources through their CRD's conversion and then pruned
/// to the schema of that version (as kube-apiserver's codec does after every conversion, even to
/// the same version), built-in objects relabelled.
fn convert_custom(info: &ResourceInfo, object: &Value, api_version: &str) -> Result<Value, ApiError> {
    match &info.custom {
        Some(custom) => {
            let mut converted = convert_with(info, custom, object, api_version)?;
            let version = api_version.rsplit('/').next().unwrap_or(api_version);
            if let Some(schema) = custom.schemas.get(version) {
                crate::crd::schema::prune_unknown(&mut converted, schema);
            }
            Ok(converted)
        }
        None => {
            let mut o = object.clone();
            if let Some(m) = o.as_object_mut() {
                m.insert("apiVersion".into(), json!(api_version));
            }
            Ok(o)
        }
    }
}

/// `object` converted by the CRD's strategy (a failed webhook conversion answers 500).
fn convert_with(
    info: &ResourceInfo,
    custom: &crate::registry::CustomVersion,
    object: &Value,
    api_version: &str,
) -> Result<Value, ApiError> {
    custom.conversion.apply(object, api_version).map_err(|e| {
        let from = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        ApiError::internal(format!(
            "conversion webhook for {from}, Kind={} failed: {e}",
            info.kind
        ))
    })
}

/// Whom a 422 names: the stored kind (validation runs on the stored representation, so an
/// events.k8s.io Event is reported as a core Event).
fn invalid_subject(info: &ResourceInfo) -> crate::status::Subject {
    let mut subject = info.subject();
    subject.group = info.storage_group.clone();
    subject
}

/// How the field manager sees objects of the addressed version.
fn schema_of(info: &ResourceInfo) -> Schema<'_> {
    match &info.custom {
        Some(c) => Schema::custom(&c.schema),
        None => Schema::builtin(&info.group, &info.resource),
    }
}

/// The Go zero value of a built-in kind in the addressed version (what an object is created from,
/// as the field manager sees it); `None` for custom resources.
fn zero_object(info: &ResourceInfo) -> Option<Value> {
    if info.is_custom() {
        return None;
    }
    let mut zero = json!({"metadata": {}});
    crate::registry::shapes::normalize_decoded(&info.group, &info.resource, &mut zero);
    Some(zero)
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
        Self {
            storage,
            registry,
            root_ca: None,
            admission: None,
        }
    }

    /// Publishes `ca_pem` as `kube-root-ca.crt` into every namespace.
    pub fn with_root_ca(mut self, ca_pem: &str) -> Self {
        self.root_ca = Some(Arc::from(ca_pem));
        self
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
            Some(stored) => Ok(Reply::ok(to_version(info, &stored.object)?)),
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
            nulls::prune_builtin(&info.group, &info.resource, &mut object);
            decode::check_builtin_types(info, &object)?;
            crate::registry::shapes::normalize_decoded(&info.group, &info.resource, &mut object);
            kinds::default(info, &mut object);
        }
        Ok(object)
    }

    fn validate_meta(&self, info: &ResourceInfo, object: &Value, old: Option<&Value>) -> Vec<Cause> {
        let m = meta(object);
        let mut causes = Vec::new();
        // Namespaces, Services and StatefulSets are named by DNS labels, the rest by subdomains.
        let label = matches!(
            info.behavior.as_ref().map(|b| b.special),
            Some(Special::Namespace)
        ) || (!info.is_custom()
            && matches!(
                (info.storage_group.as_str(), info.storage_resource.as_str()),
                ("", "services") | ("apps", "statefulsets")
            ));
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
        causes.extend(crate::validation::finalizers(m, !info.is_custom()));
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
}

/// `metadata.finalizers` as strings.
pub fn finalizers(object: &Value) -> Vec<String> {
    meta(object)
        .get("finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}
