//! UPDATE (PUT) and the read-modify-write loop shared with PATCH: optimistic concurrency, the
//! status subresource rules, generation, managedFields, no-op detection and finalizer completion.

use serde_json::{Value, json};

use super::{
    Api, Reply, RequestContext, finalizers, key_of, meta, meta_mut, meta_str, storage_error, to_version,
};
use super::{from_version, invalid_subject, kinds, schema_of, spec_part};
use crate::fieldmanager::{self, Manager};
use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::storage::StorageError;

/// Who computes the managedFields of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldsBy {
    /// The loop, as an Update by the request's manager.
    Update,
    /// Server-side apply, before the loop (they come with the computed object).
    Apply,
}

impl Api {
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

    /// The read-modify-write loop shared by PUT and PATCH.
    pub(super) async fn write_loop(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        requested_rv: &str,
        warnings: &mut Vec<String>,
        compute: impl FnMut(&Value) -> Result<Value, ApiError>,
    ) -> Result<Reply, ApiError> {
        self.write_loop_with(info, ctx, requested_rv, warnings, compute, FieldsBy::Update)
            .await
    }

    /// The read-modify-write loop; with [`FieldsBy::Apply`] the object `compute` returns already
    /// carries its managedFields.
    pub(super) async fn write_loop_with(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        requested_rv: &str,
        warnings: &mut Vec<String>,
        mut compute: impl FnMut(&Value) -> Result<Value, ApiError>,
        fields_by: FieldsBy,
    ) -> Result<Reply, ApiError> {
        let name = ctx.name.clone().unwrap_or_default();
        let ns = if info.namespaced {
            ctx.namespace.clone()
        } else {
            None
        };
        let key = key_of(info, ns.as_deref(), &name);
        let subject = info.subject();
        let first_warning = warnings.len();
        for _attempt in 0..64 {
            // Warnings of an attempt that lost a write conflict are not repeated.
            warnings.truncate(first_warning);
            let Some(current) = self.storage.get(&key).await.map_err(ApiError::internal)? else {
                return Err(ApiError::not_found(&subject, &name));
            };
            if !requested_rv.is_empty() && requested_rv != current.rv.to_string() {
                return Err(ApiError::conflict(&subject, &name));
            }
            let stored_old = current.object.as_ref();
            // Everything up to the commit works on the addressed version's representation.
            let old_version = to_version(info, stored_old)?;
            let old = &old_version;
            let mut new = compute(old)?;
            // Times the strategy fills in (CSR conditions) are the requester's fields, as in kube.
            kinds::prepare_update(info, old, &mut new);
            // The field manager sees the object as the request produced it, before the strategy
            // resets fields.
            let submitted = new.clone();
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
            kinds::prepare_update(info, old, &mut new);
            crate::controllers::namespace_lifecycle::prepare_update(info, &sub, old, &mut new);
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
            crate::admission::mutate(self, info, ctx, &mut new, Some(old))?;
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
                subresource: &sub,
            };
            let reset: &[&str] = if sub == "status" || sub == "approval" {
                &["spec"]
            } else if has_status {
                &["status"]
            } else {
                &[]
            };
            let managed = match fields_by {
                FieldsBy::Update => fieldmanager::update_managed_fields(
                    Some(old),
                    &submitted,
                    schema_of(info),
                    reset,
                    &manager,
                ),
                FieldsBy::Apply => submitted
                    .pointer("/metadata/managedFields")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            };
            if managed.is_empty() {
                meta_mut(&mut new).remove("managedFields");
            } else {
                meta_mut(&mut new).insert("managedFields".into(), Value::Array(managed));
            }
            // Validation: a custom resource against the schema of the addressed version (as
            // kube-apiserver does), before conversion to the storage version.
            let custom_causes = if info.is_custom() {
                crate::crd::schema::validate_custom(info, &new, Some(old))
            } else {
                Vec::new()
            };
            let mut new = from_version(info, &new)?;
            let mut causes = self.validate_meta(info, &new, Some(stored_old));
            if info.is_custom() {
                causes.extend(custom_causes);
            } else {
                causes.extend(kinds::validate(info, &new, Some(stored_old)));
                causes.extend(crate::validation::builtin::validate(
                    info,
                    &new,
                    Some(stored_old),
                    &sub,
                ));
            }
            causes.extend(super::rbac_update::role_ref_causes(info, &new, stored_old));
            if !causes.is_empty() {
                return Err(ApiError::invalid(&invalid_subject(info), &name, causes));
            }
            if info.is_custom() {
                warnings.extend(crate::validation::finalizer_warnings(
                    meta(&new),
                    Some(meta(stored_old)),
                ));
            }
            crate::admission::validate(self, info, ctx, &new, Some(stored_old)).await?;
            if let Some(m) = new.as_object_mut() {
                m.insert(
                    "apiVersion".into(),
                    stored_old
                        .get("apiVersion")
                        .cloned()
                        .unwrap_or(json!(info.api_version())),
                );
            }
            crate::crd::on_update(info, stored_old, &mut new);
            fieldmanager::keep_times_of_unchanged(&mut new, stored_old);
            // No-op writes keep the stored object and its resourceVersion.
            if &new == stored_old {
                return Ok(Reply {
                    code: 200,
                    body: old_version.clone(),
                    warnings: std::mem::take(warnings),
                });
            }
            if ctx.dry_run {
                return Ok(Reply {
                    code: 200,
                    body: to_version(info, &new)?,
                    warnings: std::mem::take(warnings),
                });
            }
            // An object being deleted whose last finalizer is removed is deleted instead of
            // updated; the answer is the object as the update would have made it, with the
            // resourceVersion it had.
            let deleting = !meta_str(&new, "deletionTimestamp").is_empty();
            if deleting
                && finalizers(&new).is_empty()
                && !crate::controllers::namespace_lifecycle::awaits_finalizers(info, &new)
            {
                match self.storage.delete(&key, Some(current.rv)).await {
                    Ok(_) => {
                        crate::crd::on_delete(self, info, &new).await;
                        return Ok(Reply {
                            code: 200,
                            body: to_version(info, &new)?,
                            warnings: std::mem::take(warnings),
                        });
                    }
                    Err(StorageError::WriteConflict { .. }) if requested_rv.is_empty() => continue,
                    Err(e) => return Err(storage_error(info, &name, e)),
                }
            }
            // The write is applied when `update` is called (see [`crate::storage::Storage`]);
            // the trees it was computed from are freed before waiting for it to become durable,
            // which is where writes queue under load.
            let write = self.storage.update(&key, new, Some(current.rv));
            drop(submitted);
            drop(old_version);
            drop(current);
            match write.await {
                Ok(s) => {
                    return Ok(Reply {
                        code: 200,
                        body: to_version(info, &s.object)?,
                        warnings: std::mem::take(warnings),
                    });
                }
                Err(StorageError::WriteConflict { .. }) if requested_rv.is_empty() => continue,
                Err(e) => return Err(storage_error(info, &name, e)),
            }
        }
        Err(ApiError::conflict(&subject, &name))
    }
}
