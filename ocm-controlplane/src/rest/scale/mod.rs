//! The `scale` subresource: an `autoscaling/v1` Scale view of Deployments, ReplicaSets,
//! StatefulSets, ReplicationControllers and custom resources whose CRD version declares
//! `subresources.scale`.
//!
//! As in kube-apiserver, a Scale is computed from the stored parent object on every request
//! (name, namespace, uid, resourceVersion and creationTimestamp of the parent; `spec.replicas`,
//! `status.replicas` and `status.selector`). Writes (PUT, the three patch types, server-side
//! apply) change the Scale the request addressed, then copy `spec.replicas` (and the Scale's
//! `resourceVersion` as a precondition) into the parent, which goes through the parent's update
//! path (generation, validation, optimistic concurrency). managedFields are translated both ways
//! as kube's scale handler translates them: managers of the parent's replicas field appear as
//! owners of the Scale's `spec.replicas`, and the Scale's owner of `spec.replicas` becomes an
//! entry (`subresource: scale`) of the parent.

use serde_json::{Map, Value, json};

use super::update::FieldsBy;
use super::{Api, Reply, RequestContext, meta, meta_str};
use crate::fieldmanager::managers;
use crate::fieldmanager::{self, ApplyRequest, Manager, Schema};
use crate::registry::ResourceInfo;
use crate::status::{ApiError, Cause, Subject};
use crate::storage;

mod managed_fields;

use managed_fields::{managers_to_parent, managers_to_scale};

/// The Scale's own group/version.
const SCALE_API_VERSION: &str = "autoscaling/v1";

/// What kube-apiserver puts into the Scale of a custom resource whose spec replicas field is
/// missing (the smallest int32): a patch that leaves it so is refused.
const MISSING_REPLICAS: i64 = -2_147_483_648;

/// Where the selector of a Scale comes from.
#[derive(Debug, Clone, PartialEq)]
enum SelectorSource {
    /// `spec.selector` is a `metav1.LabelSelector` (apps kinds).
    LabelSelector,
    /// `spec.selector` is a map of labels (ReplicationController).
    LabelMap,
    /// A custom resource's `labelSelectorPath` (the string found there), if the CRD names one.
    Path(Option<Vec<String>>),
}

/// How a kind maps onto a Scale.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScalePaths {
    /// The parent's replicas field, as written in the CRD (`.spec.replicas`).
    spec_replicas_text: String,
    spec_replicas: Vec<String>,
    status_replicas: Vec<String>,
    selector: SelectorSource,
    /// The replicas field of the parent in each apiVersion its managedFields may name (`None`:
    /// a version without a scale subresource). Entries of other apiVersions are dropped on
    /// writes, as kube's scale handler drops them.
    mappings: Vec<(String, Option<Vec<String>>)>,
}

/// kube's `splitReplicasPath`: `.spec.replicas` → `["spec", "replicas"]`.
fn split_path(path: &str) -> Vec<String> {
    path.strip_prefix('.')
        .unwrap_or(path)
        .split('.')
        .map(str::to_string)
        .collect()
}

impl ScalePaths {
    /// The paths of a built-in kind that has a scale subresource.
    fn builtin(info: &ResourceInfo) -> Option<Self> {
        let selector = match (info.group.as_str(), info.resource.as_str()) {
            ("apps", "deployments" | "replicasets" | "statefulsets") => SelectorSource::LabelSelector,
            ("", "replicationcontrollers") => SelectorSource::LabelMap,
            _ => return None,
        };
        let replicas = split_path(".spec.replicas");
        Some(Self {
            spec_replicas_text: ".spec.replicas".into(),
            spec_replicas: replicas.clone(),
            status_replicas: split_path(".status.replicas"),
            selector,
            mappings: vec![(info.api_version(), Some(replicas))],
        })
    }

    /// The paths of a custom resource version from its CRD (`None` when the version declares no
    /// scale subresource).
    fn custom(crd: &Value, group: &str, version: &str) -> Option<Self> {
        let versions = crd.pointer("/spec/versions").and_then(Value::as_array)?;
        let scale_of = |v: &Value| v.pointer("/subresources/scale").cloned();
        let text = |scale: &Value, field: &str| {
            scale
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let scale = versions
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
            .and_then(scale_of)?;
        let spec_replicas_text = text(&scale, "specReplicasPath");
        let label_selector = text(&scale, "labelSelectorPath");
        let mappings = versions
            .iter()
            .filter_map(|v| {
                let name = v.get("name").and_then(Value::as_str)?;
                let path = scale_of(v).map(|s| split_path(&text(&s, "specReplicasPath")));
                Some((format!("{group}/{name}"), path))
            })
            .collect();
        Some(Self {
            spec_replicas: split_path(&spec_replicas_text),
            status_replicas: split_path(&text(&scale, "statusReplicasPath")),
            selector: SelectorSource::Path((!label_selector.is_empty()).then(|| split_path(&label_selector))),
            spec_replicas_text,
            mappings,
        })
    }

    fn mapping(&self, api_version: &str) -> Option<&Option<Vec<String>>> {
        self.mappings
            .iter()
            .find(|(v, _)| v == api_version)
            .map(|(_, p)| p)
    }
}

/// The value at `path` below `object`.
fn nested<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(object, |node, key| node.get(key))
}

/// Sets the value at `path`, creating objects on the way (kube's `SetNestedField`).
fn set_nested(object: &mut Value, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = object;
    for key in parents {
        let map = super::ensure_object(node);
        node = map
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    super::ensure_object(node).insert(last.clone(), value);
}

/// A 400 for a parent whose fields cannot be read as a Scale.
fn unreadable(path: &[String], found: &Value, expected: &str) -> ApiError {
    let (shown, go_type) = match found {
        Value::String(s) => (s.clone(), "string"),
        Value::Bool(b) => (b.to_string(), "bool"),
        Value::Number(n) => (n.to_string(), "float64"),
        Value::Array(_) => (found.to_string(), "[]interface {}"),
        Value::Object(_) => (found.to_string(), "map[string]interface {}"),
        Value::Null => (String::new(), "<nil>"),
    };
    ApiError::bad_request(format!(
        ".{} accessor error: {shown} is of the type {go_type}, expected {expected}",
        path.join(".")
    ))
}

/// An integer replicas field (`None` when missing).
fn replicas_at(object: &Value, path: &[String]) -> Result<Option<i64>, ApiError> {
    match nested(object, path) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| unreadable(path, v, "int64")),
    }
}

/// The `labels.Selector` string of a `metav1.LabelSelector`: requirements sorted by key, set
/// values sorted; an absent or empty selector prints as nothing.
pub(crate) fn label_selector_string(selector: &Value) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            requirements.push((
                key.clone(),
                format!("{key}={}", value.as_str().unwrap_or_default()),
            ));
        }
    }
    if let Some(expressions) = selector.get("matchExpressions").and_then(Value::as_array) {
        for e in expressions {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let mut values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            values.sort_unstable();
            values.dedup();
            let set = values.join(",");
            let text = match e.get("operator").and_then(Value::as_str).unwrap_or_default() {
                "In" => format!("{key} in ({set})"),
                "NotIn" => format!("{key} notin ({set})"),
                "Exists" => key.to_string(),
                "DoesNotExist" => format!("!{key}"),
                _ => continue,
            };
            requirements.push((key.to_string(), text));
        }
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    requirements
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

/// The selector string of a map of labels (`labels.SelectorFromSet`).
fn label_map_string(labels: &Value) -> String {
    let mut pairs: Vec<String> = labels
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    pairs.join(",")
}

/// The Scale of `parent` (in the addressed version), without managedFields. For custom
/// resources a missing spec replicas field reads as 0, or as [`MISSING_REPLICAS`] with
/// `mark_missing`.
fn scale_of(paths: &ScalePaths, parent: &Value, mark_missing: bool) -> Result<Value, ApiError> {
    let spec_replicas = match replicas_at(parent, &paths.spec_replicas)? {
        Some(r) => r,
        None if mark_missing => MISSING_REPLICAS,
        None => 0,
    };
    let status_replicas = replicas_at(parent, &paths.status_replicas)?.unwrap_or(0);
    let selector = match &paths.selector {
        SelectorSource::LabelSelector => parent
            .pointer("/spec/selector")
            .map(label_selector_string)
            .unwrap_or_default(),
        SelectorSource::LabelMap => parent
            .pointer("/spec/selector")
            .map(label_map_string)
            .unwrap_or_default(),
        SelectorSource::Path(None) => String::new(),
        SelectorSource::Path(Some(path)) => match nested(parent, path) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => return Err(unreadable(path, other, "string")),
        },
    };
    let m = meta(parent);
    let mut metadata = Map::new();
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = m.get(field).filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
            metadata.insert(field.into(), v.clone());
        }
    }
    let mut spec = Map::new();
    if spec_replicas != 0 {
        spec.insert("replicas".into(), json!(spec_replicas));
    }
    let mut status = Map::new();
    status.insert("replicas".into(), json!(status_replicas));
    if !selector.is_empty() {
        status.insert("selector".into(), json!(selector));
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": SCALE_API_VERSION,
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }))
}

/// What a write of a Scale does to it.
enum ScaleWrite {
    /// PUT of this Scale.
    Replace(Value),
    /// A JSON merge or strategic merge patch (a Scale has no lists, so both merge alike).
    Merge(Value),
    /// A JSON patch.
    Json(json_patch::Patch),
    /// Server-side apply of this configuration.
    Apply {
        config: Value,
        manager: String,
        force: bool,
    },
}

/// kube's `ValidateScale`: a Scale of a built-in kind may not ask for fewer than 0 replicas.
fn validate_scale(scale: &Value) -> Vec<Cause> {
    match scale.pointer("/spec/replicas").and_then(Value::as_i64) {
        Some(r) if r < 0 => vec![Cause::invalid(
            "spec.replicas",
            &json!(r),
            "must be greater than or equal to 0",
        )],
        _ => Vec::new(),
    }
}

/// Checks a Scale body's type, filling in `apiVersion` and `kind` when absent; `custom` words
/// the refusal as apiextensions-apiserver does.
fn check_scale_type(object: &mut Value, custom: bool) -> Result<(), ApiError> {
    let Some(map) = object.as_object_mut() else {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type Scale): couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            crate::gojson::value_kind(object)
        )));
    };
    let text = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if api_version.is_empty() {
        map.insert("apiVersion".into(), json!(SCALE_API_VERSION));
    }
    if kind.is_empty() {
        map.insert("kind".into(), json!("Scale"));
    }
    let api_version = if api_version.is_empty() {
        SCALE_API_VERSION.to_string()
    } else {
        api_version
    };
    let kind = if kind.is_empty() {
        "Scale".to_string()
    } else {
        kind
    };
    if api_version == SCALE_API_VERSION && kind == "Scale" {
        return check_scale_fields(object);
    }
    if custom {
        return Err(ApiError::bad_request(
            "no kind is registered for the type v1.Scale in scheme \"k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go:781\"",
        ));
    }
    let version = api_version
        .split_once('/')
        .map_or(api_version.as_str(), |(_, v)| v);
    Err(ApiError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a Scale: converting ({version}.{kind}) to (autoscaling.Scale): unknown conversion"
    )))
}

/// Go-typed decoding of the Scale's integer fields.
fn check_scale_fields(object: &Value) -> Result<(), ApiError> {
    for (pointer, go_field) in [
        ("/spec/replicas", "ScaleSpec.spec.replicas"),
        ("/status/replicas", "ScaleStatus.status.replicas"),
    ] {
        match object.pointer(pointer) {
            None | Some(Value::Null) => {}
            Some(v) if v.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) => {}
            Some(v) => {
                let shown = match v {
                    Value::Number(n) => format!("number {n}"),
                    other => crate::gojson::value_kind(other).to_string(),
                };
                return Err(ApiError::bad_request(format!(
                    "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal {shown} into Go struct field {go_field} of type int32"
                )));
            }
        }
    }
    Ok(())
}

impl Api {
    /// How `info` maps onto a Scale; 404 when it has no scale subresource.
    async fn scale_paths(&self, info: &ResourceInfo) -> Result<ScalePaths, ApiError> {
        let found = match &info.custom {
            None => ScalePaths::builtin(info),
            Some(custom) => {
                let key = storage::object_key(
                    "apiextensions.k8s.io",
                    "customresourcedefinitions",
                    None,
                    &custom.crd_name,
                );
                let crd = self.storage.get(&key).await.map_err(ApiError::internal)?;
                crd.and_then(|crd| ScalePaths::custom(&crd.object, &info.group, &info.version))
            }
        };
        found.ok_or_else(ApiError::resource_not_found)
    }

    /// GET of `…/scale`.
    pub async fn get_scale(&self, info: &ResourceInfo, ctx: &RequestContext) -> Result<Reply, ApiError> {
        let paths = self.scale_paths(info).await?;
        let parent = self.get(info, ctx).await?;
        // A custom resource without its spec replicas field has no Scale to read (kube-apiserver
        // answers 500).
        if info.is_custom() && replicas_at(&parent.body, &paths.spec_replicas)?.is_none() {
            return Err(ApiError::internal(format!(
                "the spec replicas field {:?} does not exist",
                paths.spec_replicas_text
            )));
        }
        Ok(Reply::ok(scale_of(&paths, &parent.body, false)?))
    }

    /// PUT of `…/scale`.
    pub async fn update_scale(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        body: &[u8],
    ) -> Result<Reply, ApiError> {
        let mut scale = super::decode::parse_object_body(info, body)
            .map_err(|e| ApiError::bad_request(e.message.replacen(&info.kind, "Scale", 1)))?;
        check_scale_type(&mut scale, info.is_custom())?;
        let url_name = ctx.name.clone().unwrap_or_default();
        let body_name = meta_str(&scale, "name").to_string();
        if body_name != url_name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({url_name})"
            )));
        }
        if let (Some(ns), Some(body_ns)) = (
            &ctx.namespace,
            meta(&scale).get("namespace").and_then(Value::as_str),
        ) && info.namespaced
            && !body_ns.is_empty()
            && body_ns != ns
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        self.write_scale(info, ctx, ScaleWrite::Replace(scale)).await
    }

    /// PATCH of `…/scale` (merge, strategic merge, JSON patch or server-side apply).
    pub async fn patch_scale(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        content_type: &str,
        body: &[u8],
        force: bool,
    ) -> Result<Reply, ApiError> {
        let kind = content_type.split(';').next().unwrap_or_default().trim();
        if force && kind != "application/apply-patch+yaml" {
            return Err(super::apply::force_on_non_apply());
        }
        let write = match kind {
            "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                ScaleWrite::Merge(super::patch::parse_patch(body)?)
            }
            "application/json-patch+json" => {
                let v = super::patch::parse_patch(body)?;
                if !v.is_array() {
                    return Err(ApiError::bad_request(format!(
                        "error decoding patch: json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                        crate::gojson::value_kind(&v)
                    )));
                }
                match serde_json::from_value::<json_patch::Patch>(v) {
                    Ok(p) => ScaleWrite::Json(p),
                    Err(_) => return Err(super::patch::generic_invalid()),
                }
            }
            "application/apply-patch+yaml" => {
                let manager = match ctx.field_manager.as_deref() {
                    Some(m) if !m.is_empty() => m.to_string(),
                    _ => return Err(super::apply::field_manager_required()),
                };
                let config = super::apply::parse_configuration(body)?;
                let text = |p: &str| config.pointer(p).and_then(Value::as_str).unwrap_or_default();
                let (api_version, kind) = (text("/apiVersion"), text("/kind"));
                if api_version != SCALE_API_VERSION || kind != "Scale" {
                    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
                    return Err(ApiError::bad_request(format!(
                        "invalid object type: {group}/{version}, Kind={kind}"
                    )));
                }
                let url_name = ctx.name.as_deref().unwrap_or_default();
                let name = text("/metadata/name");
                if !name.is_empty() && name != url_name {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({name}) does not match the name on the URL ({url_name})"
                    )));
                }
                ScaleWrite::Apply {
                    config,
                    manager,
                    force,
                }
            }
            _ => {
                return Err(
                    ApiError::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
                        .with_details(json!({})),
                );
            }
        };
        self.write_scale(info, ctx, write).await
    }

    /// The write of a Scale through the parent's update loop.
    async fn write_scale(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        write: ScaleWrite,
    ) -> Result<Reply, ApiError> {
        let paths = self.scale_paths(info).await?;
        let parent_api_version = info.api_version();
        let request_manager = ctx.manager_name();
        let mut warnings = Vec::new();
        // The Scale's resourceVersion is the parent's precondition; it is checked against each
        // read of the parent below (a conflict retries only when the Scale carries none).
        let reply = self
            .write_loop_with(
                info,
                ctx,
                "",
                &mut warnings,
                |parent| {
                    let mut old_scale = scale_of(&paths, parent, info.is_custom())?;
                    let entries = managers_to_scale(&paths, parent);
                    if !entries.is_empty() {
                        super::meta_mut(&mut old_scale).insert("managedFields".into(), Value::Array(entries));
                    }
                    let (mut new_scale, scale_entries) = match &write {
                        ScaleWrite::Apply {
                            config,
                            manager,
                            force,
                        } => {
                            let request = ApplyRequest {
                                schema: Schema::unknown(),
                                reset: &[],
                                manager: Manager {
                                    name: manager,
                                    api_version: SCALE_API_VERSION,
                                    subresource: "scale",
                                },
                                force: *force,
                            };
                            let applied = fieldmanager::apply(&old_scale, config, &request)
                                .map_err(super::apply::apply_error)?;
                            let entries = managers::entries_of(&applied.object).cloned().unwrap_or_default();
                            (applied.object, entries)
                        }
                        other => {
                            let mut new_scale = match other {
                                ScaleWrite::Replace(scale) => scale.clone(),
                                ScaleWrite::Merge(patch) => {
                                    let mut target = old_scale.clone();
                                    json_patch::merge(&mut target, patch);
                                    target
                                }
                                ScaleWrite::Json(patch) => {
                                    let mut target = old_scale.clone();
                                    super::patch::apply_json_patch(&mut target, patch)
                                        .map_err(|_| super::patch::generic_invalid())?;
                                    target
                                }
                                ScaleWrite::Apply { .. } => Value::Null,
                            };
                            check_scale_type(&mut new_scale, info.is_custom())?;
                            let manager = Manager {
                                name: &request_manager,
                                api_version: SCALE_API_VERSION,
                                subresource: "scale",
                            };
                            let entries = fieldmanager::update_managed_fields(
                                Some(&old_scale),
                                &new_scale,
                                Schema::unknown(),
                                &[],
                                &manager,
                            );
                            (new_scale, entries)
                        }
                    };
                    let replicas = new_scale
                        .pointer("/spec/replicas")
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    if info.is_custom() {
                        if replicas == MISSING_REPLICAS {
                            return Err(ApiError::bad_request(format!(
                                "the spec replicas field {:?} cannot be empty",
                                paths.spec_replicas_text
                            )));
                        }
                    } else {
                        let causes = validate_scale(&new_scale);
                        if !causes.is_empty() {
                            let subject = Subject {
                                group: "autoscaling".into(),
                                resource: String::new(),
                                kind: "Scale".into(),
                            };
                            return Err(ApiError::invalid(&subject, meta_str(parent, "name"), causes));
                        }
                    }
                    let rv = meta_str(&new_scale, "resourceVersion");
                    if !rv.is_empty() && rv != meta_str(parent, "resourceVersion") {
                        return Err(ApiError::conflict(&info.subject(), meta_str(parent, "name")));
                    }
                    let uid = meta_str(&new_scale, "uid");
                    if !uid.is_empty() && uid != meta_str(parent, "uid") {
                        return Err(ApiError::conflict_msg(
                            &info.subject(),
                            meta_str(parent, "name"),
                            &format!(
                                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                                meta_str(parent, "uid")
                            ),
                        ));
                    }
                    let mut new_parent = parent.clone();
                    set_nested(&mut new_parent, &paths.spec_replicas, json!(replicas));
                    if let Some(m) = new_scale.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove("managedFields");
                    }
                    let parent_entries =
                        managers_to_parent(&paths, parent, &parent_api_version, &scale_entries)?;
                    let m = super::meta_mut(&mut new_parent);
                    if parent_entries.is_empty() {
                        m.remove("managedFields");
                    } else {
                        m.insert("managedFields".into(), Value::Array(parent_entries));
                    }
                    Ok(new_parent)
                },
                FieldsBy::Apply,
            )
            .await?;
        let scale = scale_of(&paths, &reply.body, false)?;
        Ok(Reply {
            code: reply.code,
            body: scale,
            warnings: reply.warnings,
        })
    }
}

#[cfg(test)]
mod tests;
