//! DELETE of one object: preconditions, propagation policy finalizers, graceful deletion of
//! objects with finalizers, and the answer kube-apiserver gives for each case.

use serde_json::{Value, json};

use super::{Api, Reply, RequestContext, finalizers, key_of, meta_mut, meta_str, storage_error, to_version};
use crate::fieldmanager;
use crate::registry::{ResourceInfo, Special};
use crate::status::{self, ApiError};
use crate::storage::StorageError;

impl Api {
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
                    return Ok(Reply::ok(to_version(info, old)?));
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
                    return Ok(Reply::ok(to_version(info, &new)?));
                }
                match self.storage.update(&key, new, Some(current.rv)).await {
                    Ok(s) => return Ok(Reply::ok(to_version(info, &s.object)?)),
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
                        to_version(info, &s.object)?
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
