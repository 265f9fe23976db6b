//! Judging an answer against a recorded response: status code, Content-Type, `Warning` headers and
//! the body (normalized, canonicalized, compared; filtered recordings compared on the subset they
//! kept), and the alternative answers the README allows.

use serde_json::{Map, Value, json};

use super::compare::{self, Diff, Rules, clip};
use super::fixture::Response;
use super::normalize::{Normalizer, Origin};
use super::scan::wildcard_eq;
use super::target::Answer;

/// Compares an answer with a recorded response: status, Content-Type, warnings, body.
pub fn judge(
    normalizer: &mut Normalizer,
    recorded: &Response,
    answer: &Answer,
    request_path: &str,
    base: &str,
    rules: &Rules,
) -> Vec<Diff> {
    let mut diffs = Vec::new();
    let status_differs = recorded.status != answer.status;
    if status_differs {
        let detail = format!("{} {}", answer.status, clip(&answer.text(), 400));
        diffs.push(Diff::new(
            &format!("{base}.status"),
            recorded.status.to_string(),
            detail,
        ));
    }
    if recorded.content_type != answer.content_type {
        diffs.push(Diff::new(
            &format!("{base}.content_type"),
            format!("{:?}", recorded.content_type),
            format!("{:?}", answer.content_type),
        ));
    }
    let recorded_warnings = recorded.warnings.clone().unwrap_or_default();
    let warnings: Vec<String> = answer
        .warnings
        .iter()
        .enumerate()
        .map(|(i, w)| normalizer.normalize_text(w, recorded_warnings.get(i).map(String::as_str)))
        .collect();
    if warnings != recorded_warnings {
        diffs.push(Diff::new(
            &format!("{base}.warnings"),
            format!("{recorded_warnings:?}"),
            format!("{warnings:?}"),
        ));
    }
    let path = format!("{base}.body");
    match &recorded.body {
        None => {}
        Some(Value::Null) if recorded.body_filtered || answer.body.is_empty() || status_differs => {}
        Some(Value::Null) => diffs.push(Diff::new(&path, "(no body)", clip(&answer.text(), 300))),
        Some(Value::String(text)) => {
            let actual = normalizer.normalize_text(&answer.text(), Some(text));
            if &actual != text && !status_differs {
                let (expected, actual) = compare::around_first_difference(text, &actual);
                diffs.push(Diff::new(&path, expected, actual));
            }
        }
        Some(expected) => match answer.json() {
            None if status_differs => {}
            None => diffs.push(Diff::new(
                &path,
                "a JSON body",
                format!("not JSON: {}", clip(&answer.text(), 300)),
            )),
            Some(actual) => {
                let origin = Origin {
                    path: request_path,
                    bookmark: false,
                };
                let actual = if recorded.body_filtered {
                    let scratch = normalizer.clone().normalize(&actual, Some(expected), origin);
                    project(expected, &scratch, &actual)
                } else {
                    actual
                };
                let mut normalized = normalizer.normalize(&actual, Some(expected), origin);
                let mut expected = expected.clone();
                compare::canonicalize_step(request_path, recorded.status, &mut expected);
                compare::canonicalize_step(request_path, recorded.status, &mut normalized);
                // With another status the body is another answer altogether (shown with the
                // status); it is still normalized above so that its values are known later.
                if !status_differs {
                    compare::compare(&expected, &normalized, &path, rules, &mut diffs);
                }
            }
        },
    }
    diffs
}

/// Keeps of `raw` (normalized: `normalized`) what a filtered recording kept: the recorded keys,
/// and for lists the elements matching recorded ones, in order.
pub fn project(recorded: &Value, normalized: &Value, raw: &Value) -> Value {
    match (recorded, normalized, raw) {
        (Value::Object(recorded), Value::Object(normalized), Value::Object(raw)) => {
            let mut raw_keys: Vec<&String> = raw.keys().collect();
            raw_keys.sort();
            let mut out = Map::new();
            // The normalizer inserted keys in sorted raw-key order.
            for (raw_key, (normalized_key, normalized_value)) in raw_keys.into_iter().zip(normalized) {
                if let Some((_, recorded_value)) =
                    recorded.iter().find(|(key, _)| wildcard_eq(key, normalized_key))
                {
                    out.insert(
                        raw_key.clone(),
                        project(recorded_value, normalized_value, &raw[raw_key]),
                    );
                }
            }
            Value::Object(out)
        }
        (Value::Array(recorded), Value::Array(normalized), Value::Array(raw)) => {
            let mut out = Vec::new();
            let mut next = 0;
            for element in recorded {
                if let Some(offset) = normalized[next.min(normalized.len())..]
                    .iter()
                    .position(|candidate| subset(element, candidate))
                {
                    let found = next + offset;
                    out.push(project(element, &normalized[found], &raw[found]));
                    next = found + 1;
                }
            }
            Value::Array(out)
        }
        _ => raw.clone(),
    }
}

/// `recorded` is contained in `actual` (keys, subsequences), placeholders matching any number.
fn subset(recorded: &Value, actual: &Value) -> bool {
    match (recorded, actual) {
        (Value::Object(recorded), Value::Object(actual)) => recorded.iter().all(|(key, value)| {
            actual
                .iter()
                .any(|(actual_key, actual_value)| wildcard_eq(key, actual_key) && subset(value, actual_value))
        }),
        (Value::Array(recorded), Value::Array(actual)) => {
            let mut remaining = actual.iter();
            recorded
                .iter()
                .all(|element| remaining.any(|candidate| subset(element, candidate)))
        }
        (Value::String(recorded), Value::String(actual)) => wildcard_eq(recorded, actual),
        (recorded, actual) => recorded == actual,
    }
}

/// Whether the events are the one ERROR (410 Expired) a watch from a compacted `requested` gets.
pub fn is_single_expired_error(events: &[Value], requested: &str) -> bool {
    let [event] = events else {
        return false;
    };
    let object = &event["object"];
    let message = object.get("message").and_then(Value::as_str).unwrap_or_default();
    let prefix = format!("too old resource version: {requested} (");
    event["type"] == "ERROR"
        && object["kind"] == "Status"
        && object["apiVersion"] == "v1"
        && object["status"] == "Failure"
        && object["reason"] == "Expired"
        && object["code"] == json!(410)
        && message
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(')'))
            .is_some_and(|n| n.parse::<u64>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filtered_bodies_are_projected() {
        let recorded =
            json!({"kind": "X", "metadata": {"uid": "<uid:1>"}, "groups": [{"name": "b"}, {"name": "d"}]});
        let uid = "8d2a1b7e-0c1f-4a57-9a63-5d0e4b3c2a10";
        let raw = json!({"kind": "X", "apiVersion": "v1", "metadata": {"uid": uid, "x": 1},
                         "groups": [{"name": "a"}, {"name": "b", "v": 1}, {"name": "c"}, {"name": "d"}]});
        let scratch = Normalizer::default().normalize(&raw, Some(&recorded), Origin::default());
        let projected = project(&recorded, &scratch, &raw);
        assert_eq!(
            projected,
            json!({"kind": "X", "metadata": {"uid": uid}, "groups": [{"name": "b"}, {"name": "d"}]})
        );
    }

    #[test]
    fn expired_error_alternative() {
        let event = json!({"type": "ERROR", "object": {
            "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
            "message": "too old resource version: 1 (57)", "reason": "Expired", "code": 410}});
        assert!(is_single_expired_error(std::slice::from_ref(&event), "1"));
        assert!(!is_single_expired_error(&[event.clone(), event], "1"));
    }
}
