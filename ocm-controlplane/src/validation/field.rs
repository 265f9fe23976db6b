//! Field paths and field errors as apimachinery's `field` package renders them, plus small readers
//! of JSON objects with Go's zero values (a missing string reads as `""`, a missing number as 0).
//!
//! A cause's message is `<type>[: <value>][: <detail>]`: `Required value`, `Forbidden: ...`,
//! `Invalid value: "x": ...`, `Unsupported value: "x": supported values: "a", "b"`,
//! `Duplicate value: "x"`, `Not found: "x"`, `Too long: may not be more than N bytes`. Values are
//! rendered as Go does: strings quoted (`%q`), numbers and booleans as they are, anything else as
//! JSON.

use serde_json::{Map, Value};

use crate::gojson;
use crate::status::Cause;

/// A field path such as `spec.template.spec.containers[0].name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    /// A root path (`metadata`, `spec`, ...).
    pub fn new(root: &str) -> Self {
        Self(root.to_string())
    }

    /// `self.name` (or `name` for an empty path).
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Self(name.to_string())
        } else {
            Self(format!("{}.{name}", self.0))
        }
    }

    /// `self[i]`.
    pub fn index(&self, i: usize) -> Self {
        Self(format!("{}[{i}]", self.0))
    }

    /// `self[key]`.
    pub fn key(&self, key: &str) -> Self {
        Self(format!("{}[{key}]", self.0))
    }

    /// The rendered path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A list of field errors.
pub type Errors = Vec<Cause>;

/// Renders a bad value as apimachinery does.
pub fn render(value: &Value) -> String {
    match value {
        Value::String(s) => gojson::quote(s),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => gojson::encode(other),
    }
}

fn cause(reason: &str, path: &Path, message: String) -> Cause {
    Cause {
        reason: reason.into(),
        message,
        field: path.as_str().to_string(),
    }
}

fn with_detail(head: String, detail: &str) -> String {
    if detail.is_empty() {
        head
    } else {
        format!("{head}: {detail}")
    }
}

/// `FieldValueRequired`.
pub fn required(path: &Path, detail: &str) -> Cause {
    cause(
        "FieldValueRequired",
        path,
        with_detail("Required value".into(), detail),
    )
}

/// `FieldValueInvalid` with the bad value.
pub fn invalid(path: &Path, value: &Value, detail: &str) -> Cause {
    cause(
        "FieldValueInvalid",
        path,
        with_detail(format!("Invalid value: {}", render(value)), detail),
    )
}

/// `FieldValueInvalid` of a string value.
pub fn invalid_str(path: &Path, value: &str, detail: &str) -> Cause {
    invalid(path, &Value::String(value.to_string()), detail)
}

/// `FieldValueNotSupported` listing the supported values.
pub fn not_supported(path: &Path, value: &Value, supported: &[&str]) -> Cause {
    let list = supported
        .iter()
        .map(|s| gojson::quote(s))
        .collect::<Vec<_>>()
        .join(", ");
    let detail = if supported.is_empty() {
        String::new()
    } else {
        format!("supported values: {list}")
    };
    cause(
        "FieldValueNotSupported",
        path,
        with_detail(format!("Unsupported value: {}", render(value)), &detail),
    )
}

/// `FieldValueForbidden`.
pub fn forbidden(path: &Path, detail: &str) -> Cause {
    cause(
        "FieldValueForbidden",
        path,
        with_detail("Forbidden".into(), detail),
    )
}

/// `FieldValueDuplicate`.
pub fn duplicate(path: &Path, value: &Value) -> Cause {
    cause(
        "FieldValueDuplicate",
        path,
        format!("Duplicate value: {}", render(value)),
    )
}

/// `FieldValueNotFound`.
pub fn not_found(path: &Path, value: &Value) -> Cause {
    cause(
        "FieldValueNotFound",
        path,
        format!("Not found: {}", render(value)),
    )
}

/// `FieldValueTooLong` (`may not be more than N bytes`).
pub fn too_long(path: &Path, max: usize) -> Cause {
    let unit = if max == 1 { "byte" } else { "bytes" };
    cause(
        "FieldValueTooLong",
        path,
        format!("Too long: may not be more than {max} {unit}"),
    )
}

/// `FieldValueTooMany` (`must have at most N items`).
pub fn too_many(path: &Path, actual: usize, max: usize) -> Cause {
    let unit = if max == 1 { "item" } else { "items" };
    cause(
        "FieldValueTooMany",
        path,
        format!("Too many: {actual}: must have at most {max} {unit}"),
    )
}

/// `Invalid` causes for each message of a string check.
pub fn each(path: &Path, value: &str, messages: Vec<String>) -> Errors {
    messages
        .into_iter()
        .map(|m| invalid_str(path, value, &m))
        .collect()
}

/// The string at `key` (Go's zero value `""` when absent or not a string).
pub fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The integer at `key`, if set.
pub fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// The value at `key` unless absent or null.
pub fn opt<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// The list at `key` (empty when absent).
pub fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The string map at `key` as pairs (empty when absent).
pub fn string_map<'a>(v: &'a Value, key: &str) -> Vec<(&'a str, &'a str)> {
    v.get(key)
        .and_then(Value::as_object)
        .map(|m: &Map<String, Value>| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

/// `must be greater than or equal to 0` for a negative value.
pub fn nonnegative(v: Option<i64>, path: &Path) -> Errors {
    match v {
        Some(n) if n < 0 => vec![invalid(
            path,
            &Value::from(n),
            "must be greater than or equal to 0",
        )],
        _ => Vec::new(),
    }
}

/// `field is immutable` when `new` differs from `old` (absent and null are the same).
pub fn immutable(new: Option<&Value>, old: Option<&Value>, path: &Path) -> Errors {
    let norm = |v: Option<&Value>| v.filter(|x| !x.is_null()).cloned();
    if norm(new) == norm(old) {
        Vec::new()
    } else {
        vec![invalid(path, new.unwrap_or(&Value::Null), "field is immutable")]
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn messages_render_like_apimachinery() {
        let p = Path::new("spec").child("ports").index(0).child("protocol");
        assert_eq!(p.as_str(), "spec.ports[0].protocol");
        assert_eq!(required(&p, "").message, "Required value");
        assert_eq!(
            not_supported(&p, &json!("XTP"), &["SCTP", "TCP", "UDP"]).message,
            "Unsupported value: \"XTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        );
        assert_eq!(duplicate(&p, &json!("a")).message, "Duplicate value: \"a\"");
        assert_eq!(
            invalid(&p, &json!({"app": "x"}), "bad").message,
            "Invalid value: {\"app\":\"x\"}: bad"
        );
        assert_eq!(
            nonnegative(Some(-1), &p)[0].message,
            "Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(too_long(&p, 1).message, "Too long: may not be more than 1 byte");
        assert_eq!(forbidden(&p, "no").message, "Forbidden: no");
    }
}
