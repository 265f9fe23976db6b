//! DELETE of one object: DeleteOptions validation, preconditions, the garbage collector's
//! finalizers for the propagation policy, graceful deletion of objects with finalizers, the
//! namespace's own rules (Terminating phase, immortal namespaces), and the answer kube-apiserver
//! gives for each case.
//!
//! The propagation policy becomes finalizers as kube-apiserver's generic store sets them:
//! `Orphan` adds `orphan`, `Foreground` adds `foregroundDeletion`, `Background` adds neither (and
//! each policy removes the other's finalizer). Without a policy in the request, a finalizer
//! already on the object wins, then the kind's default ([`default_orphans`]). The in-process
//! garbage collector ([`crate::controllers::garbage_collector`]) acts on those finalizers.

use serde_json::{Value, json};

use super::{Api, Reply, RequestContext, finalizers, key_of, meta_mut, meta_str, storage_error, to_version};
use crate::controllers::garbage_collector::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use crate::controllers::namespace_lifecycle::IMMORTAL_NAMESPACES;
use crate::fieldmanager;
use crate::registry::{ResourceInfo, Special};
use crate::status::{self, ApiError, Cause, Subject};
use crate::storage::{StorageError, Stored};

/// Whether objects of this type orphan their dependents when DELETE names no policy: the legacy
/// workload versions (`extensions/v1beta1`, `apps/v1beta1`, `apps/v1beta2`) and core/v1
/// ReplicationControllers keep kube's old default; everything else deletes them in the background.
pub(crate) fn default_orphans(info: &ResourceInfo) -> bool {
    matches!(
        (info.group.as_str(), info.version.as_str()),
        ("extensions", "v1beta1") | ("apps", "v1beta1") | ("apps", "v1beta2")
    ) || (info.group.is_empty() && info.resource == "replicationcontrollers")
}

/// The `orphanDependents` and `propagationPolicy` of DeleteOptions.
struct Propagation<'a> {
    orphan_dependents: Option<bool>,
    policy: Option<&'a str>,
}

impl<'a> Propagation<'a> {
    fn of(options: &'a Value) -> Self {
        Self {
            orphan_dependents: options.get("orphanDependents").and_then(Value::as_bool),
            policy: options.get("propagationPolicy").and_then(Value::as_str),
        }
    }

    /// The first garbage-collection finalizer on the object, which stands for the policy of an
    /// earlier DELETE.
    fn earlier(existing: &[String]) -> Option<&str> {
        existing
            .iter()
            .map(String::as_str)
            .find(|f| *f == ORPHAN_FINALIZER || *f == FOREGROUND_FINALIZER)
    }

    fn orphans(&self, existing: &[String], default_orphan: bool) -> bool {
        if let Some(orphan) = self.orphan_dependents {
            return orphan;
        }
        match self.policy {
            Some("Orphan") => true,
            Some("Background" | "Foreground") => false,
            _ => match Self::earlier(existing) {
                Some(ORPHAN_FINALIZER) => true,
                Some(_) => false,
                None => default_orphan,
            },
        }
    }

    fn foreground(&self, existing: &[String]) -> bool {
        if self.orphan_dependents.is_some() {
            return false;
        }
        match self.policy {
            Some("Foreground") => true,
            Some("Background" | "Orphan") => false,
            _ => Self::earlier(existing) == Some(FOREGROUND_FINALIZER),
        }
    }

    /// The object's finalizers after this DELETE (the existing list when nothing changes).
    fn finalizers(&self, existing: &[String], default_orphan: bool) -> Vec<String> {
        let mut out: Vec<String> = existing
            .iter()
            .filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER)
            .cloned()
            .collect();
        if self.orphans(existing, default_orphan) {
            out.push(ORPHAN_FINALIZER.into());
        }
        if self.foreground(existing) {
            out.push(FOREGROUND_FINALIZER.into());
        }
        if same_set(&out, existing) {
            existing.to_vec()
        } else {
            out
        }
    }
}

fn same_set(a: &[String], b: &[String]) -> bool {
    a.iter().all(|x| b.contains(x)) && b.iter().all(|x| a.contains(x))
}

/// kube-apiserver's DeleteOptions validation (422 on `DeleteOptions.meta.k8s.io ""`).
fn validate_options(options: &Value) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    let policy = options.get("propagationPolicy");
    if options.get("orphanDependents").is_some_and(|o| !o.is_null())
        && let Some(p) = policy.filter(|p| !p.is_null())
    {
        causes.push(Cause::invalid(
            "propagationPolicy",
            p,
            "orphanDependents and deletionPropagation cannot be both set",
        ));
    }
    if let Some(p) = policy.filter(|p| !p.is_null())
        && !matches!(p.as_str(), Some("Foreground" | "Background" | "Orphan"))
    {
        causes.push(Cause::not_supported(
            "propagationPolicy",
            p,
            &[
                "Foreground".into(),
                "Background".into(),
                "Orphan".into(),
                "nil".into(),
            ],
        ));
    }
    if causes.is_empty() {
        return Ok(());
    }
    let subject = Subject {
        group: "meta.k8s.io".into(),
        resource: String::new(),
        kind: "DeleteOptions".into(),
    };
    Err(ApiError::invalid(&subject, "", causes))
}

fn is_namespace(info: &ResourceInfo) -> bool {
    matches!(
        info.behavior.as_ref().map(|b| b.special),
        Some(Special::Namespace)
    )
}

/// The preconditions of DeleteOptions against the stored object (409 when one fails).
fn check_preconditions(
    subject: &Subject,
    name: &str,
    options: &Value,
    current: &Stored,
) -> Result<(), ApiError> {
    let old = current.object.as_ref();
    if let Some(uid) = options.pointer("/preconditions/uid").and_then(Value::as_str)
        && uid != meta_str(old, "uid")
    {
        return Err(ApiError::precondition_conflict(
            subject,
            name,
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
            subject,
            name,
            &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                current.rv
            ),
        ));
    }
    Ok(())
}

/// Marks an object as being deleted, as kube-apiserver does for objects with finalizers:
/// `deletionTimestamp` now (kept when already set), `deletionGracePeriodSeconds` 0, and a
/// generation bump on the first mark.
fn mark_deleting(object: &mut Value) {
    let m = meta_mut(object);
    if !m.contains_key("deletionTimestamp") {
        if let Some(generation) = m.get("generation").and_then(Value::as_i64)
            && generation > 0
        {
            m.insert("generation".into(), json!(generation + 1));
        }
        m.insert("deletionTimestamp".into(), json!(fieldmanager::now_rfc3339()));
    }
    m.insert("deletionGracePeriodSeconds".into(), json!(0));
}

impl Api {
    /// DELETE of one object with DeleteOptions.
    pub async fn delete(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        options: &Value,
    ) -> Result<Reply, ApiError> {
        validate_options(options)?;
        // `dryRun` may come in the DeleteOptions body (kube-rs sends it there) as well as in the
        // query.
        let dry_run_ctx;
        let ctx = if !ctx.dry_run
            && options
                .get("dryRun")
                .and_then(Value::as_array)
                .is_some_and(|d| d.iter().any(|v| v == "All"))
        {
            dry_run_ctx = RequestContext {
                dry_run: true,
                ..ctx.clone()
            };
            &dry_run_ctx
        } else {
            ctx
        };
        let name = ctx.name.clone().unwrap_or_default();
        let subject = info.subject();
        if is_namespace(info) {
            if IMMORTAL_NAMESPACES.contains(&name.as_str()) {
                return Err(ApiError::forbidden(
                    &subject,
                    &name,
                    format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted"),
                ));
            }
            if let Some(reply) = self.start_namespace_deletion(info, ctx, options).await? {
                return Ok(reply);
            }
        }
        if let Some(reply) =
            crate::controllers::crd_deletion::start_deletion(self, info, ctx, options).await?
        {
            return Ok(reply);
        }
        let ns = if info.namespaced {
            ctx.namespace.clone()
        } else {
            None
        };
        let key = key_of(info, ns.as_deref(), &name);
        let propagation = Propagation::of(options);
        let default_orphan = default_orphans(info);
        for _attempt in 0..64 {
            let Some(current) = self.storage.get(&key).await.map_err(ApiError::internal)? else {
                return Err(ApiError::not_found(&subject, &name));
            };
            check_preconditions(&subject, &name, options, &current)?;
            let old = current.object.as_ref();
            let existing = finalizers(old);
            let fins = propagation.finalizers(&existing, default_orphan);
            let changes_finalizers = fins != existing;
            if !fins.is_empty() {
                if !meta_str(old, "deletionTimestamp").is_empty() && !changes_finalizers {
                    return Ok(Reply::ok(to_version(info, old)?));
                }
                let mut new = old.clone();
                mark_deleting(&mut new);
                meta_mut(&mut new).insert("finalizers".into(), json!(fins));
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
                    let body = if is_namespace(info) || info.resource == "customresourcedefinitions" {
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

    /// The first DELETE of a namespace: `deletionTimestamp`, phase `Terminating` and the
    /// garbage-collection finalizers the options ask for; the namespace controller then empties
    /// it. Later DELETEs answer the namespace while `spec.finalizers` is not empty; `None` means
    /// the namespace is finalized and is deleted like any object.
    async fn start_namespace_deletion(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        options: &Value,
    ) -> Result<Option<Reply>, ApiError> {
        let name = ctx.name.clone().unwrap_or_default();
        let subject = info.subject();
        let key = key_of(info, None, &name);
        let propagation = Propagation::of(options);
        for _attempt in 0..64 {
            let Some(current) = self.storage.get(&key).await.map_err(ApiError::internal)? else {
                return Err(ApiError::not_found(&subject, &name));
            };
            let old = current.object.as_ref();
            check_update_preconditions(options, &subject, &name, old, current.rv)?;
            if !meta_str(old, "deletionTimestamp").is_empty() {
                let pending = old
                    .pointer("/spec/finalizers")
                    .and_then(Value::as_array)
                    .is_some_and(|f| !f.is_empty());
                return Ok(if pending {
                    Some(Reply::ok(to_version(info, old)?))
                } else {
                    None
                });
            }
            let mut new = old.clone();
            {
                let existing = finalizers(old);
                let has = |f: &str| existing.iter().any(|e| e == f);
                // The namespace store decides each finalizer on its own: the options when they
                // say something, else what the namespace already has.
                let orphan = match (propagation.orphan_dependents, propagation.policy) {
                    (Some(o), _) => o,
                    (None, Some(p)) => p == "Orphan",
                    (None, None) => has(ORPHAN_FINALIZER),
                };
                let foreground = match (propagation.orphan_dependents, propagation.policy) {
                    (Some(_), _) => false,
                    (None, Some(p)) => p == "Foreground",
                    (None, None) => has(FOREGROUND_FINALIZER),
                };
                let mut fins: Vec<String> = existing
                    .iter()
                    .filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER)
                    .cloned()
                    .collect();
                if orphan {
                    fins.push(ORPHAN_FINALIZER.into());
                }
                if foreground {
                    fins.push(FOREGROUND_FINALIZER.into());
                }
                let m = meta_mut(&mut new);
                m.insert("deletionTimestamp".into(), json!(fieldmanager::now_rfc3339()));
                if !same_set(&fins, &existing) {
                    m.insert("finalizers".into(), json!(fins));
                }
                if m.get("finalizers")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty)
                {
                    m.remove("finalizers");
                }
            }
            let status = super::ensure_object(
                super::ensure_object(&mut new)
                    .entry("status")
                    .or_insert(Value::Null),
            );
            status.insert("phase".into(), json!("Terminating"));
            if ctx.dry_run {
                return Ok(Some(Reply::ok(to_version(info, &new)?)));
            }
            match self.storage.update(&key, new, Some(current.rv)).await {
                Ok(s) => return Ok(Some(Reply::ok(to_version(info, &s.object)?))),
                Err(StorageError::WriteConflict { .. }) => continue,
                Err(e) => return Err(storage_error(info, &name, e)),
            }
        }
        Err(ApiError::conflict(&subject, &name))
    }
}

/// DeleteOptions' preconditions checked as by an update that marks the object deleting (finalizers
/// pending): apimachinery's `Preconditions.Check` messages, 409 when the uid or resourceVersion
/// named differs.
pub(crate) fn check_update_preconditions(
    options: &Value,
    subject: &crate::status::Subject,
    name: &str,
    stored: &Value,
    rv: u64,
) -> Result<(), ApiError> {
    let uid = meta_str(stored, "uid");
    if let Some(wanted) = options.pointer("/preconditions/uid").and_then(Value::as_str)
        && wanted != uid
    {
        return Err(ApiError::conflict_msg(
            subject,
            name,
            &format!("Precondition failed: UID in precondition: {wanted}, UID in object meta: {uid}"),
        ));
    }
    if let Some(wanted) = options
        .pointer("/preconditions/resourceVersion")
        .and_then(Value::as_str)
        && wanted != rv.to_string()
    {
        return Err(ApiError::conflict_msg(
            subject,
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {wanted}, ResourceVersion in object meta: {rv}"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn policies_become_finalizers() {
        let fg = json!({"propagationPolicy": "Foreground"});
        let or = json!({"propagationPolicy": "Orphan"});
        let bg = json!({"propagationPolicy": "Background"});
        let none = json!({});
        let p = |o| Propagation::of(o);
        assert_eq!(p(&fg).finalizers(&[], false), strings(&["foregroundDeletion"]));
        assert_eq!(
            p(&or).finalizers(&strings(&["x"]), false),
            strings(&["x", "orphan"])
        );
        assert!(p(&bg).finalizers(&strings(&["orphan"]), false).is_empty());
        assert_eq!(
            p(&fg).finalizers(&strings(&["orphan", "x"]), false),
            strings(&["x", "foregroundDeletion"])
        );
        // Without a policy an earlier one stays, else the kind's default applies.
        assert_eq!(
            p(&none).finalizers(&strings(&["orphan"]), false),
            strings(&["orphan"])
        );
        assert_eq!(p(&none).finalizers(&[], true), strings(&["orphan"]));
        assert!(p(&none).finalizers(&[], false).is_empty());
        let legacy = json!({"orphanDependents": false});
        assert!(p(&legacy).finalizers(&strings(&["orphan"]), true).is_empty());
    }

    #[test]
    fn delete_options_are_validated_like_kube() {
        let e = validate_options(&json!({"propagationPolicy": "Bogus"})).unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Bogus\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
        let both = json!({"propagationPolicy": "Orphan", "orphanDependents": true});
        assert!(validate_options(&both).is_err());
        assert!(validate_options(&json!({"propagationPolicy": "Foreground"})).is_ok());
    }

    #[test]
    fn marking_bumps_generation_once() {
        let mut o = json!({"metadata": {"generation": 2}});
        mark_deleting(&mut o);
        mark_deleting(&mut o);
        assert_eq!(o["metadata"]["generation"], 3);
        assert_eq!(o["metadata"]["deletionGracePeriodSeconds"], 0);
    }

    #[test]
    fn legacy_kinds_orphan_by_default() {
        let registry = crate::registry::Registry::with_builtins();
        let rc = registry.get("", "v1", "replicationcontrollers").unwrap();
        assert!(default_orphans(&rc));
        let deploy = registry.get("apps", "v1", "deployments").unwrap();
        assert!(!default_orphans(&deploy));
    }
}
