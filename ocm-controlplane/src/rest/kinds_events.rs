//! Events: core/v1 and events.k8s.io/v1 share one storage (as core/v1 Events).
//!
//! events.k8s.io/v1 objects are converted to the core/v1 shape for storage and back on read; the
//! field renames follow kube-apiserver's conversion (`regarding` = `involvedObject`, `note` =
//! `message`, `deprecated*` = the core fields they replaced). Each direction ends in the target
//! version's wire shape ([`crate::registry::shapes`]): core/v1 always carries
//! `reportingComponent`/`reportingInstance`, events.k8s.io/v1 omits them when empty.
//!
//! Validation follows kube-apiserver's: every Event passes the legacy rules; Events created
//! through events.k8s.io/v1 also need `eventTime`, a `Normal`/`Warning` type, and none of the
//! deprecated fields.

use serde_json::{Map, Value, json};

use crate::registry::shapes;
use crate::status::Cause;

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

/// Fields of events.k8s.io/v1 that are `omitempty` strings or numbers.
const EVENTS_OMITEMPTY: &[&str] = &[
    "reportingController",
    "reportingInstance",
    "action",
    "reason",
    "note",
    "type",
    "deprecatedCount",
];

fn rename(object: &Value, to_core: bool) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(map) = object.as_object() {
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
    }
    out
}

/// Converts an events.k8s.io/v1 Event into the stored core/v1 shape.
pub fn events_to_core(object: &Value) -> Value {
    let mut out = rename(object, true);
    out.insert("apiVersion".into(), json!("v1"));
    let mut out = Value::Object(out);
    shapes::normalize_decoded("", "events", &mut out);
    out
}

/// Converts a stored core/v1 Event into the events.k8s.io/v1 shape.
pub fn core_to_events(object: &Value) -> Value {
    let mut out = rename(object, false);
    out.insert("apiVersion".into(), json!("events.k8s.io/v1"));
    out.retain(|k, v| {
        let empty = match v {
            Value::String(s) => s.is_empty(),
            Value::Number(n) => n.as_f64() == Some(0.0),
            _ => false,
        };
        !(empty && EVENTS_OMITEMPTY.contains(&k.as_str()))
    });
    let mut out = Value::Object(out);
    shapes::normalize_decoded("events.k8s.io", "events", &mut out);
    out
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn is_unset(object: &Value, field: &str) -> bool {
    object.get(field).is_none_or(Value::is_null)
}

/// Validation of a new Event (core shape); `events_api` for creates through events.k8s.io/v1.
pub fn validate_create(event: &Value, events_api: bool) -> Vec<Cause> {
    let mut causes = legacy(event, events_api);
    if !events_api {
        return causes;
    }
    if is_unset(event, "eventTime") {
        causes.push(Cause::required("eventTime", ""));
    }
    let ty = text(event, "/type");
    if ty != "Normal" && ty != "Warning" {
        causes.push(Cause::invalid(
            "type",
            &json!(""),
            &format!("has invalid value: {ty}"),
        ));
    }
    if !is_unset(event, "firstTimestamp") {
        causes.push(Cause::invalid("firstTimestamp", &json!(""), "needs to be unset"));
    }
    if !is_unset(event, "lastTimestamp") {
        causes.push(Cause::invalid("lastTimestamp", &json!(""), "needs to be unset"));
    }
    if event.get("count").and_then(Value::as_i64).unwrap_or(0) != 0 {
        causes.push(Cause::invalid("count", &json!(""), "needs to be unset"));
    }
    if !text(event, "/source/component").is_empty() || !text(event, "/source/host").is_empty() {
        causes.push(Cause::invalid("source", &json!(""), "needs to be unset"));
    }
    causes
}

/// The rules every Event passes (kube-apiserver's legacy Event validation).
fn legacy(event: &Value, events_api: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let namespace = text(event, "/metadata/namespace");
    let involved = text(event, "/involvedObject/namespace");
    let mismatch = || {
        Cause::invalid(
            "involvedObject.namespace",
            &json!(involved),
            "does not match event.namespace",
        )
    };
    let controller_field = if events_api {
        "reportingController"
    } else {
        "reportingComponent"
    };
    if is_unset(event, "eventTime") {
        if involved.is_empty() {
            if !namespace.is_empty() && namespace != "default" {
                causes.push(mismatch());
            }
        } else {
            if namespace.is_empty() && involved != "default" {
                causes.push(mismatch());
            }
            if namespace != involved {
                causes.push(mismatch());
            }
        }
    } else {
        if involved.is_empty() && namespace != "default" && namespace != "kube-system" {
            causes.push(mismatch());
        }
        let controller = text(event, "/reportingComponent");
        if controller.is_empty() {
            causes.push(Cause::required(controller_field, ""));
        }
        for message in crate::validation::qualified_name(controller) {
            if !controller.is_empty() {
                causes.push(Cause::invalid(controller_field, &json!(controller), &message));
            }
        }
        let limits: [(&str, &str, usize, bool); 4] = [
            ("reportingInstance", "/reportingInstance", 128, true),
            ("action", "/action", 128, true),
            ("reason", "/reason", 128, true),
            ("message", "/message", 1024, false),
        ];
        for (field, pointer, limit, required) in limits {
            let value = text(event, pointer);
            if required && value.is_empty() {
                causes.push(Cause::required(field, ""));
            }
            if value.len() > limit {
                causes.push(Cause::invalid(
                    field,
                    &json!(""),
                    &format!("can have at most {limit} characters"),
                ));
            }
        }
    }
    for message in crate::validation::dns1123_subdomain(namespace) {
        if !namespace.is_empty() {
            causes.push(Cause::invalid("namespace", &json!(namespace), &message));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_fields_and_shapes() {
        let ev = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "note": "n", "regarding": {"kind": "ConfigMap"}, "reportingController": "c", "type": "Normal"});
        let core = events_to_core(&ev);
        assert_eq!(core["message"], "n");
        assert_eq!(core["involvedObject"]["kind"], "ConfigMap");
        assert_eq!(core["reportingInstance"], "");
        assert_eq!(core["firstTimestamp"], Value::Null);
        let back = core_to_events(&core);
        assert_eq!(back["note"], "n");
        assert!(back.get("reportingInstance").is_none());
        assert_eq!(back["deprecatedSource"], json!({}));
        assert_eq!(back["deprecatedFirstTimestamp"], Value::Null);
    }

    #[test]
    fn events_api_creates_are_strict() {
        let ev = json!({"metadata": {"name": "bad", "namespace": "ns"}, "reason": "X", "type": "Weird",
            "involvedObject": {}});
        let causes = validate_create(&ev, true);
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["involvedObject.namespace", "eventTime", "type"]);
        assert_eq!(causes[2].message, "Invalid value: \"\": has invalid value: Weird");
        assert!(validate_create(&ev, false).len() == 1);
    }
}
