//! Server-side apply: merging an applied configuration into an object and recording who owns
//! what, as kube-apiserver's field manager does.
//!
//! 1. An object without managedFields first gets a `before-first-apply` Update manager owning
//!    everything it holds, so that applying to it conflicts with what was there.
//! 2. The configuration is merged into the object (`typed::merge`); the applier's set becomes
//!    exactly the configuration's fields (minus the fields the strategy resets).
//! 3. Fields the applier applied last time and no longer applies are removed, unless another
//!    manager owns them (or they only ever were the applier's by sharing a parent).
//! 4. Fields the change adds or modifies that another manager owns are conflicts: without
//!    `force` the apply fails with all of them; with `force` they move to the applier. Fields the
//!    change removes leave every manager.
//! 5. The applier's entry gets the current time when the object changed.
//!
//! `kubectl` applying to an object that carries `kubectl.kubernetes.io/last-applied-configuration`
//! (client-side apply's record) may take fields that record still matches without `force`, and
//! the record is rewritten to the new configuration, as kube-apiserver does for migrations.

use serde_json::{Map, Value};

use super::fieldset::{FieldSet, path_string};
use super::managers::{self, Identity, Managed, Operation, Owned};
use super::typed::{self, Schema};
use super::update::{update, without_managed_fields};
use super::{Manager, now_rfc3339};

/// The annotation client-side `kubectl apply` records its configuration in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A failed apply.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The live object's managedFields do not decode.
    #[error("failed to decode managed fields: {0}")]
    DecodeManaged(#[from] managers::DecodeError),
    /// The configuration carries managedFields.
    #[error("metadata.managedFields must be nil")]
    ConfigManagedFields,
    /// The configuration does not fit the schema.
    #[error("failed to create typed patch object ({object}): {errors}")]
    ConfigInvalid {
        /// `namespace/name; group/version, Kind=Kind` of the configuration.
        object: String,
        /// The problems, joined as structured-merge-diff joins them.
        errors: String,
    },
    /// The live object could not be walked (e.g. list items without keys).
    #[error("failed to merge config: {0}")]
    MergeLive(String),
    /// Fields other managers own would change.
    #[error("{}", conflict_message(.0))]
    ApplyConflicts(Vec<Conflict>),
}

/// A field another manager owns that the apply would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The owner.
    pub manager: Identity,
    /// The field (`.data.a`).
    pub path: String,
}

fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [one] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            one.manager.describe(),
            one.path
        );
    }
    let mut lines = Vec::new();
    let mut last: Option<&Identity> = None;
    for c in conflicts {
        if last != Some(&c.manager) {
            lines.push(format!("conflicts with {}:", c.manager.describe()));
            last = Some(&c.manager);
        }
        lines.push(format!("- {}", c.path));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// The result of an apply.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The merged object with its new `metadata.managedFields` (before defaulting).
    pub object: Value,
    /// Whether anything but managedFields changed.
    pub changed: bool,
}

/// What an apply needs besides the objects.
#[derive(Debug, Clone, Copy)]
pub struct ApplyRequest<'a> {
    /// The schema of the addressed version.
    pub schema: Schema<'a>,
    /// Top-level fields the strategy resets (`status`, or `spec` for `/status`).
    pub reset: &'a [&'a str],
    /// The applier.
    pub manager: Manager<'a>,
    /// `force=true`.
    pub force: bool,
}

/// Applies `config` to `live` (an empty object when creating) for `request.manager`.
pub fn apply(live: &Value, config: &Value, request: &ApplyRequest<'_>) -> Result<Applied, ApplyError> {
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(Value::is_array)
    {
        return Err(ApplyError::ConfigManagedFields);
    }
    let errors = typed::validate(config, request.schema);
    if !errors.is_empty() {
        return Err(ApplyError::ConfigInvalid {
            object: describe_object(config),
            errors: typed::join_errors(&errors),
        });
    }
    let managed = match managers::entries_of(live) {
        Some(entries) => managers::decode(entries)?,
        None => Managed::new(),
    };
    match apply_managed(live, config, managed.clone(), request, request.force) {
        Err(ApplyError::ApplyConflicts(conflicts)) if request.manager.name == "kubectl" => {
            let allowed = allowed_by_last_applied(live, request);
            let left: Vec<Conflict> = conflicts
                .into_iter()
                .filter(|c| !allowed.contains(&c.path))
                .collect();
            if left.is_empty() {
                apply_managed(live, config, managed, request, true).map(|a| with_last_applied(a, config))
            } else {
                Err(ApplyError::ApplyConflicts(left))
            }
        }
        other => other.map(|a| {
            if request.manager.name == "kubectl" {
                with_last_applied(a, config)
            } else {
                a
            }
        }),
    }
}

/// `namespace/name; group/version, Kind=Kind` of an object, as kube-apiserver names it in errors.
fn describe_object(object: &Value) -> String {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let api_version = text("/apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!(
        "{}/{}; {group}/{version}, Kind={}",
        text("/metadata/namespace"),
        text("/metadata/name"),
        text("/kind")
    )
}

fn apply_managed(
    live: &Value,
    config: &Value,
    mut managed: Managed,
    request: &ApplyRequest<'_>,
    force: bool,
) -> Result<Applied, ApplyError> {
    let schema = request.schema;
    let live = without_managed_fields(live);
    if managed.is_empty() {
        let before = Manager {
            name: "before-first-apply",
            ..request.manager
        };
        let empty = Value::Object(Map::new());
        managed =
            update(&empty, &live, managed, schema, request.reset, &before).map_err(ApplyError::MergeLive)?;
    }
    let merged = typed::merge(&live, config, schema).map_err(ApplyError::MergeLive)?;
    let identity = Identity::new(&request.manager, Operation::Apply);
    let last = managed.get(&identity).map(|o| o.set.clone());
    let applied = typed::to_field_set(config, schema)
        .map_err(ApplyError::MergeLive)?
        .without_top(request.reset);
    let time = managed.get(&identity).and_then(|o| o.time.clone());
    managed.insert(
        identity.clone(),
        Owned {
            set: applied,
            api_version: request.manager.api_version.to_string(),
            time,
        },
    );
    let new = match &last {
        Some(last) if !last.is_empty() => {
            prune(&merged, &managed, last, schema).map_err(ApplyError::MergeLive)?
        }
        _ => merged,
    };
    let comparison = typed::compare(&live, &new, schema)
        .map_err(ApplyError::MergeLive)?
        .without_top(request.reset);
    let changed_fields = comparison.modified.union(&comparison.added);
    let mut conflicts = Vec::new();
    for (id, owned) in &managed {
        if *id == identity {
            continue;
        }
        let clash = owned.set.intersection(&changed_fields);
        conflicts.extend(clash.paths().iter().map(|p| Conflict {
            manager: id.clone(),
            path: path_string(p),
        }));
    }
    if !force && !conflicts.is_empty() {
        conflicts.sort_by_key(|c| c.manager.key());
        return Err(ApplyError::ApplyConflicts(conflicts));
    }
    for (id, owned) in managed.iter_mut() {
        if *id != identity {
            owned.set = owned
                .set
                .difference(&changed_fields)
                .difference(&comparison.removed);
        }
    }
    managed.retain(|_, owned| !owned.set.is_empty());
    let changed = new != live;
    if let Some(owned) = managed.get_mut(&identity) {
        owned.set = managers::strip(&owned.set);
        if changed {
            owned.time = Some(now_rfc3339());
        }
    }
    managed.retain(|_, owned| !owned.set.is_empty());
    let mut object = new;
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        let entries = managers::encode(&managed);
        if entries.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(entries));
        }
    }
    Ok(Applied { object, changed })
}

/// Removes what the applier applied last time (`last`) and no longer applies, keeping what any
/// manager still owns and what was never the applier's own.
fn prune(merged: &Value, managed: &Managed, last: &FieldSet, schema: Schema<'_>) -> Result<Value, String> {
    let named = |s: &FieldSet| typed::ensure_named_members(s, schema);
    let fields = |v: &Value| typed::to_field_set(v, schema).map(|s| named(&s));
    let last = named(last);
    let pruned = typed::remove_items(merged, &last, schema);
    // Add back what some manager owns.
    let owned = managed
        .values()
        .fold(FieldSet::default(), |acc, o| acc.union(&o.set));
    let merged_set = fields(merged)?;
    let keep = fields(&pruned)?.union(&named(&owned));
    let pruned = typed::remove_items(merged, &merged_set.difference(&keep), schema);
    // Remove only what the applier owned before.
    let gone = merged_set.difference(&fields(&pruned)?).intersection(&last);
    Ok(typed::remove_items(merged, &gone, schema))
}

/// The conflicting paths client-side apply's record allows `kubectl` to take: fields of the
/// record whose live value still is the recorded one.
fn allowed_by_last_applied(live: &Value, request: &ApplyRequest<'_>) -> Vec<String> {
    let Some(text) = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let Ok(recorded) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    if recorded.get("apiVersion").and_then(Value::as_str) != live.get("apiVersion").and_then(Value::as_str) {
        return Vec::new();
    }
    let (Ok(set), Ok(cmp)) = (
        typed::to_field_set(&recorded, request.schema),
        typed::compare(&recorded, &without_managed_fields(live), request.schema),
    ) else {
        return Vec::new();
    };
    let allowed = set
        .difference(&cmp.modified)
        .difference(&cmp.added)
        .difference(&cmp.removed);
    allowed.paths().iter().map(|p| path_string(p)).collect()
}

/// Rewrites client-side apply's record to the applied configuration when the object has one.
fn with_last_applied(mut applied: Applied, config: &Value) -> Applied {
    let has_record = applied
        .object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    if !has_record {
        return applied;
    }
    let mut recorded = config.clone();
    if let Some(a) = recorded
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.remove(LAST_APPLIED);
    }
    let text = format!(
        "{}\n",
        crate::gojson::encode(&crate::registry::shapes::sorted(&recorded))
    );
    if let Some(a) = applied
        .object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.insert(LAST_APPLIED.into(), Value::String(text));
    }
    applied
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(name: &'static str, force: bool) -> ApplyRequest<'static> {
        ApplyRequest {
            schema: Schema::builtin("", "configmaps"),
            reset: &[],
            manager: Manager {
                name,
                api_version: "v1",
                subresource: "",
            },
            force,
        }
    }

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": data})
    }

    fn fields_of(object: &Value, manager: &str) -> Option<Value> {
        object["metadata"]["managedFields"]
            .as_array()?
            .iter()
            .find(|e| e["manager"] == manager)
            .map(|e| e["fieldsV1"].clone())
    }

    fn stored(mut applied: Applied) -> Value {
        applied.object["metadata"]["uid"] = json!("u");
        applied.object
    }

    #[test]
    fn two_managers_share_conflict_force_and_give_up_fields() {
        let empty = json!({});
        let v = stored(
            apply(
                &empty,
                &cm(json!({"a": "1", "shared": "x"})),
                &request("mgr-a", false),
            )
            .unwrap(),
        );
        assert_eq!(
            fields_of(&v, "mgr-a"),
            Some(json!({"f:data": {"f:a": {}, "f:shared": {}}}))
        );
        let v = stored(
            apply(
                &v,
                &cm(json!({"b": "2", "shared": "x"})),
                &request("mgr-b", false),
            )
            .unwrap(),
        );
        assert_eq!(v["data"], json!({"a": "1", "shared": "x", "b": "2"}));
        let conflict = apply(
            &v,
            &cm(json!({"a": "changed", "b": "2"})),
            &request("mgr-b", false),
        )
        .unwrap_err();
        assert_eq!(
            conflict.to_string(),
            "Apply failed with 1 conflict: conflict with \"mgr-a\": .data.a"
        );
        let v = stored(
            apply(
                &v,
                &cm(json!({"a": "changed", "b": "2"})),
                &request("mgr-b", true),
            )
            .unwrap(),
        );
        assert_eq!(fields_of(&v, "mgr-a"), Some(json!({"f:data": {"f:shared": {}}})));
        assert_eq!(
            fields_of(&v, "mgr-b"),
            Some(json!({"f:data": {"f:a": {}, "f:b": {}}}))
        );
        // mgr-a gives up `shared` (only its own: removed).
        let v = stored(apply(&v, &cm(json!({"a2": "new"})), &request("mgr-a", false)).unwrap());
        assert_eq!(v["data"], json!({"a": "changed", "b": "2", "a2": "new"}));
        // mgr-b gives up `a` (removed) and keeps `b`.
        let v = stored(apply(&v, &cm(json!({"b": "2"})), &request("mgr-b", false)).unwrap());
        assert_eq!(v["data"], json!({"b": "2", "a2": "new"}));
    }

    #[test]
    fn no_op_apply_keeps_time_and_reports_unchanged() {
        let empty = json!({});
        let first = apply(&empty, &cm(json!({"a": "1"})), &request("m", false)).unwrap();
        assert!(first.changed);
        let v = stored(first);
        let again = apply(&v, &cm(json!({"a": "1"})), &request("m", false)).unwrap();
        assert!(!again.changed);
        assert_eq!(
            again.object["metadata"]["managedFields"],
            v["metadata"]["managedFields"]
        );
    }

    #[test]
    fn objects_without_entries_conflict_with_what_they_hold() {
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "uid": "u"}, "data": {"a": "1"}});
        let err = apply(&v, &cm(json!({"a": "2"})), &request("m", false)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.a"
        );
    }

    #[test]
    fn kubectl_takes_what_its_record_still_matches() {
        let record = r#"{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"s"}}"#;
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "uid": "u",
            "annotations": {LAST_APPLIED: record}, "managedFields": [{"manager": "kubectl-client-side-apply",
            "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": {}},
            "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}}}}]}, "data": {"a": "1"}});
        let applied = apply(&v, &cm(json!({"a": "2"})), &request("kubectl", false)).unwrap();
        assert_eq!(applied.object["data"]["a"], "2");
        let text = applied.object["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .unwrap();
        assert_eq!(
            text,
            "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"s\"}}\n"
        );
    }

    #[test]
    fn configurations_must_fit_the_schema() {
        let mut bad = cm(json!({"a": "1"}));
        bad["metadata"]["namespace"] = json!("ns");
        bad["spec"] = json!({});
        let err = apply(&json!({}), &bad, &request("m", false)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to create typed patch object (ns/s; /v1, Kind=ConfigMap): .spec: field not declared in schema"
        );
        let mut with_entries = cm(json!({}));
        with_entries["metadata"]["managedFields"] = json!([]);
        assert!(matches!(
            apply(&json!({}), &with_entries, &request("m", false)),
            Err(ApplyError::ConfigManagedFields)
        ));
    }
}
