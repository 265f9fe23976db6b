//! `metadata.managedFields` entries and the managers' field sets they encode.
//!
//! kube-apiserver keys a manager by its name, operation, subresource and, for Update operations
//! only, the apiVersion it wrote with: one entry per such identity. Entries are decoded strictly
//! (operation `Apply` or `Update`, an apiVersion, `fieldsType: FieldsV1`); a list that does not
//! decode is not used. Encoded entries are sorted by operation, time (seconds), manager,
//! apiVersion and subresource.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::fieldset::{FieldSet, FieldsError};

/// A managedFields list that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// An entry is not an object.
    #[error("managed fields entry {0} is not an object")]
    DecodeEntry(usize),
    /// The operation is neither `Apply` nor `Update`.
    #[error("operation must be `Apply` or `Update`")]
    DecodeOperation,
    /// The apiVersion is missing.
    #[error("apiVersion must not be empty")]
    DecodeApiVersion,
    /// `fieldsType` is missing.
    #[error("missing fieldsType in managed fields entry {0}")]
    DecodeMissingFieldsType(usize),
    /// `fieldsType` is not `FieldsV1`.
    #[error("invalid fieldsType {0:?} in managed fields entry {1}")]
    DecodeFieldsType(String, usize),
    /// `fieldsV1` is not a valid field set.
    #[error("error decoding versioned set: {0}")]
    DecodeFields(#[from] FieldsError),
}

/// The operation an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update and the non-apply patches.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who owns a set: kube-apiserver's manager identifier.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Identity {
    /// The manager name.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// The apiVersion, part of the identity of Update managers only (empty for Apply).
    pub api_version: String,
    /// `status` for writes of the status subresource, else empty.
    pub subresource: String,
}

impl Identity {
    /// The identity of `manager` writing with `operation`.
    pub fn new(manager: &super::Manager<'_>, operation: Operation) -> Identity {
        Identity {
            manager: if manager.name.is_empty() {
                "unknown".into()
            } else {
                manager.name.to_string()
            },
            operation,
            api_version: if operation == Operation::Update {
                manager.api_version.to_string()
            } else {
                String::new()
            },
            subresource: manager.subresource.to_string(),
        }
    }

    /// The identifier as kube-apiserver serializes it (its sort key and conflict grouping).
    pub fn key(&self) -> String {
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), json!(self.manager));
        }
        m.insert("operation".into(), json!(self.operation.as_str()));
        if !self.api_version.is_empty() {
            m.insert("apiVersion".into(), json!(self.api_version));
        }
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), json!(self.subresource));
        }
        crate::gojson::encode(&Value::Object(m))
    }

    /// How conflicts name the manager: `"name"`, with ` with subresource "s"` and, for
    /// Update managers, ` using <apiVersion>`.
    pub fn describe(&self) -> String {
        let mut out = crate::gojson::quote(&self.manager);
        if !self.subresource.is_empty() {
            out = format!(
                "{out} with subresource {}",
                crate::gojson::quote(&self.subresource)
            );
        }
        if self.operation == Operation::Update {
            out = format!("{out} using {}", self.api_version);
        }
        out
    }
}

/// What one manager owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned {
    /// The fields.
    pub set: FieldSet,
    /// The apiVersion the set is expressed in.
    pub api_version: String,
    /// When the manager last changed the object (as stored, RFC 3339).
    pub time: Option<String>,
}

/// Every manager's fields.
pub type Managed = BTreeMap<Identity, Owned>;

/// The managedFields list of an object (`None` when absent or not a list).
pub fn entries_of(object: &Value) -> Option<&Vec<Value>> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
}

/// Whether a client asks to drop the managedFields: an empty list, or one empty entry.
pub fn is_reset(object: &Value) -> bool {
    match object.pointer("/metadata/managedFields") {
        Some(Value::Array(entries)) => match entries.as_slice() {
            [] => true,
            [Value::Object(entry)] => entry
                .values()
                .all(|v| v.is_null() || v.as_str().is_some_and(str::is_empty)),
            _ => false,
        },
        _ => false,
    }
}

/// Decodes managedFields entries (later entries of the same identity win).
pub fn decode(entries: &[Value]) -> Result<Managed, DecodeError> {
    let mut managed = Managed::new();
    for (i, entry) in entries.iter().enumerate() {
        let Some(e) = entry.as_object() else {
            return Err(DecodeError::DecodeEntry(i));
        };
        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let operation = match text("operation").as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err(DecodeError::DecodeOperation),
        };
        let api_version = text("apiVersion");
        if api_version.is_empty() {
            return Err(DecodeError::DecodeApiVersion);
        }
        match text("fieldsType").as_str() {
            "FieldsV1" => {}
            "" => return Err(DecodeError::DecodeMissingFieldsType(i)),
            other => return Err(DecodeError::DecodeFieldsType(other.to_string(), i)),
        }
        let set = match e.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::default(),
            Some(v) => FieldSet::from_json(v)?,
        };
        let identity = Identity {
            manager: text("manager"),
            operation,
            api_version: if operation == Operation::Update {
                api_version.clone()
            } else {
                String::new()
            },
            subresource: text("subresource"),
        };
        let time = e.get("time").and_then(Value::as_str).map(str::to_string);
        managed.insert(
            identity,
            Owned {
                set,
                api_version,
                time,
            },
        );
    }
    Ok(managed)
}

/// Encodes the managers as sorted managedFields entries.
pub fn encode(managed: &Managed) -> Vec<Value> {
    let mut out: Vec<Value> = managed
        .iter()
        .map(|(id, owned)| {
            let mut e = Map::new();
            if !id.manager.is_empty() {
                e.insert("manager".into(), json!(id.manager));
            }
            e.insert("operation".into(), json!(id.operation.as_str()));
            e.insert("apiVersion".into(), json!(owned.api_version));
            if let Some(t) = &owned.time {
                e.insert("time".into(), json!(t));
            }
            e.insert("fieldsType".into(), json!("FieldsV1"));
            e.insert("fieldsV1".into(), owned.set.to_json());
            if !id.subresource.is_empty() {
                e.insert("subresource".into(), json!(id.subresource));
            }
            Value::Object(e)
        })
        .collect();
    sort_entries(&mut out);
    out
}

fn seconds(time: Option<&str>) -> i64 {
    time.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(0, |t| t.timestamp())
}

/// Sorts entries as kube-apiserver encodes them: by operation, time (seconds), manager,
/// apiVersion, subresource.
pub fn sort_entries(entries: &mut [Value]) {
    fn key(e: &Value) -> (String, i64, String, String, String) {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        (
            s("operation"),
            seconds(e.get("time").and_then(Value::as_str)),
            s("manager"),
            s("apiVersion"),
            s("subresource"),
        )
    }
    entries.sort_by_key(key);
}

/// kube-apiserver's last step before storing an update: a write that changes nothing but the
/// times of managedFields entries keeps the stored times (and so stays a no-op).
pub fn keep_times_of_unchanged(new: &mut Value, old: &Value) {
    let (Some(n), Some(o)) = (entries_of(new), entries_of(old)) else {
        return;
    };
    if n.len() != o.len() || n.is_empty() || n == o {
        return;
    }
    let timeless = |e: &Value| {
        let mut e = e.clone();
        if let Some(m) = e.as_object_mut() {
            m.remove("time");
        }
        e
    };
    if !n.iter().zip(o).all(|(a, b)| timeless(a) == timeless(b)) {
        return;
    }
    let mut candidate = new.clone();
    if let Some(meta) = candidate.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("managedFields".into(), Value::Array(o.clone()));
    }
    if candidate == *old {
        *new = candidate;
    }
}

/// The paths no manager ever owns: type metadata and server-owned object metadata.
fn strip_set() -> FieldSet {
    let mut meta = FieldSet::leaf();
    for f in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        meta.children.insert(format!("f:{f}"), FieldSet::leaf());
    }
    let mut set = FieldSet::default();
    set.children.insert("f:apiVersion".into(), FieldSet::leaf());
    set.children.insert("f:kind".into(), FieldSet::leaf());
    set.children.insert("f:metadata".into(), meta);
    set
}

/// `set` without the paths no manager owns.
pub fn strip(set: &FieldSet) -> FieldSet {
    set.difference(&strip_set())
}

/// The most Update managers kept; older ones are merged into `ancient-changes` per apiVersion.
const MAX_UPDATE_MANAGERS: usize = 10;

/// Merges the oldest Update managers into one `ancient-changes` entry per apiVersion while there
/// are more than `MAX_UPDATE_MANAGERS`.
pub fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<Identity> = managed
        .keys()
        .filter(|id| id.operation == Operation::Update)
        .cloned()
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by_cached_key(|id| {
        let time = managed.get(id).and_then(|o| o.time.as_deref());
        (seconds(time), id.key())
    });
    let mut first_of_version: BTreeMap<String, Identity> = BTreeMap::new();
    let mut length = updaters.len();
    for id in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(owned) = managed.get(&id).cloned() else {
            continue;
        };
        let bucket = Identity {
            manager: "ancient-changes".into(),
            operation: Operation::Update,
            api_version: owned.api_version.clone(),
            subresource: String::new(),
        };
        let Some(first) = first_of_version.get(&owned.api_version).cloned() else {
            first_of_version.insert(owned.api_version.clone(), id);
            continue;
        };
        if !managed.contains_key(&bucket)
            && let Some(moved) = managed.remove(&first)
        {
            managed.insert(bucket.clone(), moved);
        }
        let merged = managed
            .get(&bucket)
            .map_or_else(|| owned.set.clone(), |b| owned.set.union(&b.set));
        managed.remove(&id);
        managed.insert(
            bucket,
            Owned {
                set: merged,
                api_version: owned.api_version.clone(),
                time: owned.time.clone(),
            },
        );
        length -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_sort_like_kube() {
        let entries = vec![
            json!({"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:02Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:a": {}}}),
            json!({"manager": "a", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:02Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:b": {}}}),
            json!({"manager": "z", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:01Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:c": {}}}),
            json!({"manager": "c", "operation": "Apply", "apiVersion": "v1", "time": "2026-01-01T00:00:09Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:d": {}}, "subresource": "status"}),
        ];
        let managed = decode(&entries).unwrap();
        let encoded = encode(&managed);
        let names: Vec<&str> = encoded.iter().filter_map(|e| e["manager"].as_str()).collect();
        assert_eq!(names, ["c", "z", "a", "b"]);
        assert_eq!(encoded[0], entries[3]);
    }

    #[test]
    fn strict_decoding_and_resets() {
        assert!(
            decode(&[
                json!({"manager": "m", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"})
            ])
            .is_err()
        );
        assert!(decode(&[json!({"manager": "m", "operation": "Update", "fieldsType": "FieldsV1"})]).is_err());
        assert!(decode(&[json!({"manager": "m", "operation": "Update", "apiVersion": "v1"})]).is_err());
        assert!(is_reset(&json!({"metadata": {"managedFields": []}})));
        assert!(is_reset(&json!({"metadata": {"managedFields": [{}]}})));
        assert!(!is_reset(&json!({"metadata": {}})));
        assert!(!is_reset(
            &json!({"metadata": {"managedFields": [{"manager": "x"}]}})
        ));
    }

    #[test]
    fn identities_and_descriptions() {
        let m = super::super::Manager {
            name: "kubectl",
            api_version: "v1",
            subresource: "status",
        };
        let update = Identity::new(&m, Operation::Update);
        assert_eq!(
            update.describe(),
            "\"kubectl\" with subresource \"status\" using v1"
        );
        assert_eq!(
            update.key(),
            r#"{"manager":"kubectl","operation":"Update","apiVersion":"v1","subresource":"status"}"#
        );
        assert_eq!(Identity::new(&m, Operation::Apply).api_version, "");
    }

    #[test]
    fn time_only_changes_keep_the_stored_times() {
        let entry = |t: &str| json!({"manager": "m", "operation": "Apply", "apiVersion": "v1", "time": t, "fieldsType": "FieldsV1", "fieldsV1": {"f:a": {}}});
        let old = json!({"a": 1, "metadata": {"managedFields": [entry("2026-01-01T00:00:00Z")]}});
        let mut new = json!({"a": 1, "metadata": {"managedFields": [entry("2026-01-01T00:00:09Z")]}});
        keep_times_of_unchanged(&mut new, &old);
        assert_eq!(new, old);
        let mut changed = json!({"a": 2, "metadata": {"managedFields": [entry("2026-01-01T00:00:09Z")]}});
        keep_times_of_unchanged(&mut changed, &old);
        assert_eq!(
            changed["metadata"]["managedFields"][0]["time"],
            "2026-01-01T00:00:09Z"
        );
    }

    #[test]
    fn update_managers_are_capped() {
        let mut managed = Managed::new();
        for i in 0..12 {
            managed.insert(
                Identity {
                    manager: format!("m{i:02}"),
                    operation: Operation::Update,
                    api_version: "v1".into(),
                    subresource: String::new(),
                },
                Owned {
                    set: FieldSet::from_json(&json!({format!("f:f{i}"): {}})).unwrap(),
                    api_version: "v1".into(),
                    time: Some(format!("2026-01-01T00:00:{i:02}Z")),
                },
            );
        }
        cap_update_managers(&mut managed);
        assert_eq!(managed.len(), 10);
        let ancient = managed
            .iter()
            .find(|(id, _)| id.manager == "ancient-changes")
            .map(|(_, o)| o.clone())
            .unwrap();
        assert_eq!(ancient.set.to_json(), json!({"f:f0": {}, "f:f1": {}, "f:f2": {}}));
        assert_eq!(ancient.time.as_deref(), Some("2026-01-01T00:00:02Z"));
    }
}
