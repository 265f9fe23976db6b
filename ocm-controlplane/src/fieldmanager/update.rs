//! managedFields after an Update operation (create, update, and the non-apply patches).
//!
//! The previous entries are those the request's object carries when they decode (a client may
//! rewrite managedFields; writes of a subresource never do), else the live object's. An empty
//! list or a single empty entry drops them; an object without entries is then no longer tracked,
//! as kube-apiserver only starts tracking an existing object again on its next apply.
//!
//! The fields the write added or changed move from every other manager to the requester, fields
//! it removed leave every manager, and the requester's entry gets the current time when it gained
//! fields. Fields the strategy resets (`reset`) are attributed to nobody.

use serde_json::{Map, Value};

use super::managers::{self, Identity, Managed, Operation, Owned};
use super::typed::{self, Schema};
use super::{Manager, now_rfc3339};

/// Computes the `managedFields` of an object after an Update operation by `manager`, as
/// kube-apiserver's field manager does.
///
/// `live` is the stored object (`None` on create) and `new` the object the request produced
/// (decoded and defaulted, before the strategy resets fields). `reset` names the top-level fields
/// the strategy resets (`status` for writes of the main resource of a type with a status
/// subresource, `spec` for writes of `/status`). When the computation fails the live entries are
/// kept.
pub fn update_managed_fields(
    live: Option<&Value>,
    new: &Value,
    schema: Schema<'_>,
    reset: &[&str],
    manager: &Manager<'_>,
) -> Vec<Value> {
    let empty = Value::Object(Map::new());
    let live = live.unwrap_or(&empty);
    let live_entries = managers::entries_of(live).cloned().unwrap_or_default();
    let managed = previous(live, new, !manager.subresource.is_empty());
    let tracked_before = live
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .is_some_and(|uid| !uid.is_empty());
    if managed.is_empty() && tracked_before {
        return Vec::new();
    }
    match update(live, new, managed, schema, reset, manager) {
        Ok(managed) => managers::encode(&managed),
        Err(_) => live_entries,
    }
}

/// The entries an Update starts from.
fn previous(live: &Value, new: &Value, subresource: bool) -> Managed {
    let decode_live = || {
        managers::entries_of(live)
            .map(|e| managers::decode(e).unwrap_or_default())
            .unwrap_or_default()
    };
    if subresource {
        return decode_live();
    }
    if managers::is_reset(new) {
        return Managed::new();
    }
    match managers::entries_of(new).map(|e| managers::decode(e)) {
        Some(Ok(m)) if !m.is_empty() => m,
        _ => decode_live(),
    }
}

/// `object` without `metadata.managedFields`.
pub(crate) fn without_managed_fields(object: &Value) -> Value {
    let mut o = object.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    o
}

/// The managers after `manager` changed `live` into `new` with an Update.
pub(crate) fn update(
    live: &Value,
    new: &Value,
    mut managed: Managed,
    schema: Schema<'_>,
    reset: &[&str],
    manager: &Manager<'_>,
) -> Result<Managed, String> {
    let comparison = typed::compare(
        &without_managed_fields(live),
        &without_managed_fields(new),
        schema,
    )?
    .without_top(reset);
    let changed = comparison.modified.union(&comparison.added);
    for owned in managed.values_mut() {
        owned.set = owned.set.difference(&changed).difference(&comparison.removed);
    }
    managed.retain(|_, owned| !owned.set.is_empty());
    let gained = managers::strip(&changed);
    if !gained.is_empty() {
        let identity = Identity::new(manager, Operation::Update);
        let set = match managed.get(&identity) {
            Some(previous) => gained.union(&previous.set),
            None => gained,
        };
        managed.insert(
            identity,
            Owned {
                set,
                api_version: manager.api_version.to_string(),
                time: Some(now_rfc3339()),
            },
        );
    }
    managers::cap_update_managers(&mut managed);
    Ok(managed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const UNKNOWN: Schema<'static> = Schema::unknown();

    fn manager(name: &'static str, subresource: &'static str) -> Manager<'static> {
        Manager {
            name,
            api_version: "v1",
            subresource,
        }
    }

    fn with_entries(mut object: Value, entries: Vec<Value>) -> Value {
        object["metadata"]["managedFields"] = Value::Array(entries);
        object
    }

    fn live(object: Value, entries: Vec<Value>) -> Value {
        let mut o = with_entries(object, entries);
        o["metadata"]["uid"] = json!("u");
        o
    }

    #[test]
    fn configmap_fields_match_kube() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"},
            "metadata": {"name": "c", "labels": {"app": "demo"}, "finalizers": ["x/y"]}});
        let mf = update_managed_fields(
            None,
            &cm,
            Schema::builtin("", "configmaps"),
            &[],
            &manager("m", ""),
        );
        assert_eq!(
            mf[0]["fieldsV1"],
            json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}},
                "f:finalizers": {".": {}, "v:\"x/y\"": {}}}})
        );
    }

    #[test]
    fn update_transfers_changed_fields() {
        let v1 = json!({"data": {"a": "1", "b": "1"}, "metadata": {}});
        let mf = update_managed_fields(None, &v1, UNKNOWN, &[], &manager("one", ""));
        let v1m = live(v1, mf);
        let v2 = json!({"data": {"a": "2", "b": "1"}, "metadata": {}});
        let mf2 = update_managed_fields(Some(&v1m), &v2, UNKNOWN, &[], &manager("two", ""));
        assert_eq!(mf2.len(), 2);
        let by = |name: &str| {
            mf2.iter()
                .find(|e| e["manager"] == name)
                .map(|e| e["fieldsV1"].clone())
        };
        assert_eq!(by("one"), Some(json!({"f:data": {".": {}, "f:b": {}}})));
        assert_eq!(by("two"), Some(json!({"f:data": {"f:a": {}}})));
    }

    #[test]
    fn reset_fields_stay_with_their_owner() {
        // A /status write that also sends another spec keeps the spec with its owner.
        let v = json!({"spec": {"x": 1}, "metadata": {}});
        let mf = update_managed_fields(None, &v, UNKNOWN, &["status"], &manager("m", ""));
        let v = live(v, mf);
        let new = json!({"spec": {"x": 2}, "status": {"s": "ok"}, "metadata": {}});
        let mf = update_managed_fields(Some(&v), &new, UNKNOWN, &["spec"], &manager("m", "status"));
        assert_eq!(mf.len(), 2);
        assert_eq!(mf[0]["fieldsV1"], json!({"f:spec": {".": {}, "f:x": {}}}));
        assert_eq!(mf[1]["fieldsV1"], json!({"f:status": {".": {}, "f:s": {}}}));
        assert_eq!(mf[1]["subresource"], "status");
    }

    #[test]
    fn removed_fields_leave_every_manager_and_no_op_keeps_entries() {
        let v1 = json!({"data": {"a": "1"}, "metadata": {}});
        let mf = update_managed_fields(None, &v1, UNKNOWN, &[], &manager("one", ""));
        let v1m = live(v1.clone(), mf.clone());
        assert_eq!(
            update_managed_fields(Some(&v1m), &v1, UNKNOWN, &[], &manager("two", "")),
            mf
        );
        let v2 = json!({"data": {}, "metadata": {}});
        let mf2 = update_managed_fields(Some(&v1m), &v2, UNKNOWN, &[], &manager("two", ""));
        assert_eq!(mf2.len(), 1);
        assert_eq!(mf2[0]["manager"], "one");
        assert_eq!(mf2[0]["fieldsV1"], json!({"f:data": {}}));
    }

    #[test]
    fn entries_sent_by_the_client_replace_the_live_ones() {
        let entry = |m: &str| json!({"manager": m, "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}});
        let v = live(json!({"data": {"a": "1"}, "metadata": {}}), vec![entry("old")]);
        let sent = with_entries(json!({"data": {"a": "1"}, "metadata": {}}), vec![entry("other")]);
        let mf = update_managed_fields(Some(&v), &sent, UNKNOWN, &[], &manager("me", ""));
        assert_eq!(mf.len(), 1);
        assert_eq!(mf[0]["manager"], "other");
        // Entries that do not decode are ignored.
        let bad = with_entries(
            json!({"data": {"a": "1"}, "metadata": {}}),
            vec![json!({"manager": "x"})],
        );
        let mf = update_managed_fields(Some(&v), &bad, UNKNOWN, &[], &manager("me", ""));
        assert_eq!(mf[0]["manager"], "old");
    }

    #[test]
    fn a_reset_stops_tracking_an_existing_object() {
        let v = live(
            json!({"data": {"a": "1"}, "metadata": {}}),
            vec![
                json!({"manager": "old", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}),
            ],
        );
        let reset = with_entries(json!({"data": {"a": "2"}, "metadata": {}}), vec![json!({})]);
        assert!(update_managed_fields(Some(&v), &reset, UNKNOWN, &[], &manager("me", "")).is_empty());
        let untracked = live(json!({"data": {"a": "1"}, "metadata": {}}), vec![]);
        let new = json!({"data": {"a": "2"}, "metadata": {}});
        assert!(update_managed_fields(Some(&untracked), &new, UNKNOWN, &[], &manager("me", "")).is_empty());
    }

    #[test]
    fn update_managers_are_per_api_version() {
        let v1 = json!({"data": {"a": "1"}, "metadata": {}});
        let mf = update_managed_fields(None, &v1, UNKNOWN, &[], &manager("m", ""));
        let v1m = live(v1, mf);
        let v2 = json!({"data": {"a": "1", "b": "2"}, "metadata": {}});
        let other = Manager {
            name: "m",
            api_version: "v2",
            subresource: "",
        };
        let mf = update_managed_fields(Some(&v1m), &v2, UNKNOWN, &[], &other);
        assert_eq!(mf.len(), 2);
        assert_eq!(mf[0]["apiVersion"], "v1");
        assert_eq!(mf[1]["apiVersion"], "v2");
    }
}
