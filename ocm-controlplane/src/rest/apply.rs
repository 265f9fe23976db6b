//! Server-side apply (`PATCH` with `application/apply-patch+yaml`): the request's checks, then
//! [`crate::fieldmanager::apply`] on the stored object through the update loop, or on an empty
//! object through the create path when nothing is stored under the name yet.
//!
//! The applied configuration is YAML (JSON being YAML, kube-rs sends JSON). It must name its
//! `apiVersion` and `kind`, may leave the name out, and must not carry managedFields; a
//! `resourceVersion` in it is a precondition, as for other patches. The merged object is then
//! decoded as any other write is (pruning and defaulting for custom resources, the scheme's
//! defaults for built-in kinds), so defaulted fields belong to no manager, as in kube-apiserver.

use serde_json::{Value, json};

use super::update::FieldsBy;
use super::{Api, Reply, RequestContext, decode, kinds, schema_of};
use crate::fieldmanager::{self, ApplyError, ApplyRequest, Manager};
use crate::registry::{ResourceInfo, shapes};
use crate::status::ApiError;

impl Api {
    /// Server-side apply of `body` (YAML or JSON) by `ctx.field_manager`; `force` takes fields
    /// other managers own instead of failing with a conflict.
    pub async fn apply(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        body: &[u8],
        force: bool,
    ) -> Result<Reply, ApiError> {
        let manager_name = match ctx.field_manager.as_deref() {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => return Err(field_manager_required()),
        };
        let config = parse_configuration(body)?;
        check_configuration(info, ctx, &config)?;
        let requested_rv = config
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let sub = ctx.subresource.clone().unwrap_or_default();
        let has_status = info.behavior.as_ref().is_some_and(|b| b.has_status);
        let reset: &[&str] = if sub.is_empty() {
            if has_status { &["status"] } else { &[] }
        } else {
            &["spec"]
        };
        let api_version = info.api_version();
        let request = ApplyRequest {
            schema: schema_of(info),
            reset,
            manager: Manager {
                name: &manager_name,
                api_version: &api_version,
                subresource: &sub,
            },
            force,
        };
        let mut warnings = Vec::new();
        let mut extra_warnings = Vec::new();
        let updated = self
            .write_loop_with(
                info,
                ctx,
                &requested_rv,
                &mut warnings,
                |current| {
                    let applied = fieldmanager::apply(current, &config, &request).map_err(apply_error)?;
                    let mut object = applied.object;
                    self.decode_merged(info, ctx, &mut object, &mut extra_warnings)?;
                    Ok(object)
                },
                FieldsBy::Apply,
            )
            .await;
        match updated {
            Ok(mut reply) => {
                reply.warnings.extend(extra_warnings);
                Ok(reply)
            }
            // Nothing stored under the name: the apply creates the object (not through /status,
            // and not with a resourceVersion precondition).
            Err(error) if error.code == 404 && sub.is_empty() && requested_rv.is_empty() => {
                let applied = fieldmanager::apply(&json!({}), &config, &request).map_err(apply_error)?;
                let mut object = applied.object;
                let mut warnings = Vec::new();
                self.decode_merged(info, ctx, &mut object, &mut warnings)?;
                if let Some(m) = object.pointer_mut("/metadata").and_then(Value::as_object_mut) {
                    m.insert("name".into(), json!(ctx.name.clone().unwrap_or_default()));
                }
                self.create_prepared(info, ctx, object, warnings, FieldsBy::Apply)
                    .await
            }
            Err(error) => Err(error),
        }
    }

    /// The merged object decoded as a written object is: type checks, then pruning and defaulting
    /// (custom resources) or the scheme's normalization and defaults (built-in kinds).
    fn decode_merged(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        object: &mut Value,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        decode::check_type(&self.registry, info, object)?;
        if info.is_custom() {
            crate::crd::schema::decode_custom_applied(info, object, ctx.field_validation, warnings)?;
        } else {
            super::nulls::prune_builtin(&info.group, &info.resource, object);
            decode::check_builtin_types(info, object)?;
            shapes::normalize_decoded(&info.group, &info.resource, object);
            kinds::default(info, object);
        }
        Ok(())
    }
}

/// The applied configuration: a YAML (or JSON) object.
pub(super) fn parse_configuration(body: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: invalid UTF-8: {e}")))?;
    let value: Value = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_saphyr::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
    };
    match value {
        Value::Object(_) => Ok(value),
        other => Err(ApiError::bad_request(format!(
            "error decoding YAML: the applied configuration must be an object, not {}",
            crate::gojson::value_kind(&other)
        ))),
    }
}

/// kube-apiserver's checks of an applied configuration against the request: its type, its name
/// and its namespace.
fn check_configuration(info: &ResourceInfo, ctx: &RequestContext, config: &Value) -> Result<(), ApiError> {
    let text = |p: &str| config.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let api_version = text("/apiVersion");
    let kind = text("/kind");
    if api_version != info.api_version() || kind != info.kind {
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
    if info.namespaced {
        let namespace = text("/metadata/namespace");
        if !namespace.is_empty() && Some(namespace) != ctx.namespace.as_deref() {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    Ok(())
}

/// kube-apiserver's 422 for invalid PatchOptions: `field` with a cause of `reason` saying `detail`.
fn invalid_patch_options(field: &str, reason: &str, detail: &str) -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        format!("PatchOptions.meta.k8s.io \"\" is invalid: {field}: {detail}"),
    )
    .with_details(json!({
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [{"reason": reason, "message": detail, "field": field}],
    }))
}

/// The 422 of an apply without `fieldManager`.
pub(super) fn field_manager_required() -> ApiError {
    invalid_patch_options(
        "fieldManager",
        "FieldValueRequired",
        "Required value: is required for apply patch",
    )
}

/// The 422 of `force` on a patch that is not an apply.
pub(super) fn force_on_non_apply() -> ApiError {
    invalid_patch_options(
        "force",
        "FieldValueForbidden",
        "Forbidden: may not be specified for non-apply patch",
    )
}

/// The answer kube-apiserver gives for each way an apply fails.
pub(super) fn apply_error(e: ApplyError) -> ApiError {
    match &e {
        ApplyError::ApplyConflicts(conflicts) => {
            let causes: Vec<Value> = conflicts
                .iter()
                .map(|c| {
                    json!({
                        "reason": "FieldManagerConflict",
                        "message": format!("conflict with {}", c.manager.describe()),
                        "field": c.path,
                    })
                })
                .collect();
            ApiError::new(409, "Conflict", e.to_string()).with_details(json!({ "causes": causes }))
        }
        ApplyError::ConfigManagedFields => ApiError::bad_request(e.to_string()),
        // kube-apiserver's field manager returns a plain error here, which it answers as a bare
        // 500 (no reason, no details).
        ApplyError::ConfigInvalid { .. } => ApiError::new(500, "", e.to_string()),
        ApplyError::DecodeManaged(_) | ApplyError::MergeLive(_) => ApiError::internal(e.to_string()),
    }
}
