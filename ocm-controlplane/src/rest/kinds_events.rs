//! Events: core/v1 and events.k8s.io/v1 share one storage (as core/v1 Events).
//!
//! events.k8s.io/v1 objects are converted to the core/v1 shape on write and back on read; the
//! field renames follow kube-apiserver's conversion (`regarding` = `involvedObject`, `note` =
//! `message`, `deprecated*` = the core fields they replaced).

use serde_json::{Map, Value};

use crate::registry::{ResourceInfo, Special};
use crate::status::ApiError;

/// `(events.k8s.io name, core name)` of renamed fields.
const RENAMES: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

fn rename(object: &Value, to_core: bool) -> Value {
    let Some(map) = object.as_object() else {
        return object.clone();
    };
    let mut out = Map::new();
    for (k, v) in map {
        let renamed = RENAMES.iter().find_map(|(ev, core)| {
            if to_core && k == ev {
                Some(*core)
            } else if !to_core && k == core {
                Some(*ev)
            } else {
                None
            }
        });
        out.insert(renamed.unwrap_or(k).to_string(), v.clone());
    }
    Value::Object(out)
}

/// Converts a body addressed to events.k8s.io/v1 into the stored core/v1 shape.
pub fn decode(info: &ResourceInfo, object: &mut Value) -> Result<(), ApiError> {
    if info.behavior.as_ref().map(|b| b.special) == Some(Special::EventsEvent) {
        *object = rename(object, true);
    }
    Ok(())
}

/// Converts a stored core/v1 Event into the events.k8s.io/v1 shape.
pub fn core_to_events(object: &Value) -> Value {
    rename(object, false)
}
