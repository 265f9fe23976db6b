//! API errors as kube-apiserver reports them: a `metav1.Status` with reason, code, message and details.
//!
//! The constructors reproduce kube-apiserver's message shapes (`configmaps "x" not found`,
//! `Operation cannot be fulfilled on ...`, `Kind "name" is invalid: [...]`), so that clients matching
//! on reasons and people reading messages see what a real cluster says.

use serde_json::{Map, Value, json};

/// One field error of an `Invalid` status (`details.causes[]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, ...
    pub reason: String,
    /// The text after the field, e.g. `Invalid value: "x": must be ...`.
    pub message: String,
    /// The field path, e.g. `metadata.name`.
    pub field: String,
}

impl Cause {
    /// A `FieldValueInvalid` cause; `value` is rendered the way kube-apiserver quotes values.
    pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        let shown = render_value(value);
        let message = if detail.is_empty() {
            format!("Invalid value: {shown}")
        } else {
            format!("Invalid value: {shown}: {detail}")
        };
        Self {
            reason: "FieldValueInvalid".into(),
            message,
            field: field.into(),
        }
    }

    /// A `FieldValueRequired` cause.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        Self {
            reason: "FieldValueRequired".into(),
            message,
            field: field.into(),
        }
    }

    /// A `FieldValueForbidden` cause.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Self {
            reason: "FieldValueForbidden".into(),
            message: format!("Forbidden: {detail}"),
            field: field.into(),
        }
    }

    /// A `FieldValueNotSupported` cause listing the supported values.
    pub fn not_supported(field: impl Into<String>, value: &Value, supported: &[String]) -> Self {
        let list = supported
            .iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ");
        Self {
            reason: "FieldValueNotSupported".into(),
            message: format!(
                "Unsupported value: {}: supported values: {list}",
                render_value(value)
            ),
            field: field.into(),
        }
    }

    /// A `FieldValueTypeInvalid` cause.
    pub fn type_invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        Self {
            reason: "FieldValueTypeInvalid".into(),
            message: format!("Invalid value: {}: {detail}", render_value(value)),
            field: field.into(),
        }
    }

    fn to_json(&self) -> Value {
        json!({"reason": self.reason, "message": self.message, "field": self.field})
    }
}

/// Renders a value as kube-apiserver's field errors do (`"text"`, `5`, `true`, `null`, `{...}`).
pub fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(_) | Value::Object(_) => format!("{:?}", value.to_string()),
    }
}

/// The identity of the object an error is about.
#[derive(Debug, Clone, Default)]
pub struct Subject {
    /// API group ("" for core).
    pub group: String,
    /// Plural resource name (e.g. `configmaps`).
    pub resource: String,
    /// Kind (e.g. `ConfigMap`).
    pub kind: String,
}

impl Subject {
    /// `configmaps` or `manifestworks.work.open-cluster-management.io`.
    pub fn qualified_resource(&self) -> String {
        qualify(&self.resource, &self.group)
    }

    /// `ConfigMap` or `ManifestWork.work.open-cluster-management.io`.
    pub fn qualified_kind(&self) -> String {
        qualify(&self.kind, &self.group)
    }
}

fn qualify(name: &str, group: &str) -> String {
    if group.is_empty() {
        name.to_string()
    } else {
        format!("{name}.{group}")
    }
}

/// An error answered as a `metav1.Status`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `NotFound`, `Conflict`, ... (empty for none).
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// `details`, if any.
    pub details: Option<Value>,
    /// `metadata` of the Status (a fresh `continue` token for expired ones), if any.
    pub status_metadata: Option<Value>,
}

impl ApiError {
    /// An error with the given fields and no details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
            status_metadata: None,
        }
    }

    /// Adds `details`.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    fn name_details(subject: &Subject, name: &str, use_kind: bool) -> Value {
        let mut d = Map::new();
        if !name.is_empty() {
            d.insert("name".into(), json!(name));
        }
        if !subject.group.is_empty() {
            d.insert("group".into(), json!(subject.group));
        }
        d.insert(
            "kind".into(),
            json!(if use_kind {
                &subject.kind
            } else {
                &subject.resource
            }),
        );
        Value::Object(d)
    }

    /// `404 NotFound`: `configmaps "x" not found`.
    pub fn not_found(subject: &Subject, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", subject.qualified_resource()),
        )
        .with_details(Self::name_details(subject, name, false))
    }

    /// `404 NotFound` for an unknown path or resource type.
    pub fn resource_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    /// `409 AlreadyExists`.
    pub fn already_exists(subject: &Subject, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", subject.qualified_resource()),
        )
        .with_details(Self::name_details(subject, name, false))
    }

    /// `409 Conflict` of an update with a stale resourceVersion.
    pub fn conflict(subject: &Subject, name: &str) -> Self {
        Self::conflict_msg(
            subject,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// `409 Conflict` with the given explanation after `Operation cannot be fulfilled on R "n": `.
    pub fn conflict_msg(subject: &Subject, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                subject.qualified_resource()
            ),
        )
        .with_details(Self::name_details(subject, name, false))
    }

    /// `409 Conflict` of a failed delete precondition (names the kind, not the resource).
    pub fn precondition_conflict(subject: &Subject, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                subject.qualified_kind()
            ),
        )
        .with_details(Self::name_details(subject, name, true))
    }

    /// `422 Invalid` with field causes.
    pub fn invalid(subject: &Subject, name: &str, causes: Vec<Cause>) -> Self {
        let mut rendered: Vec<String> = Vec::new();
        for c in &causes {
            let r = format!("{}: {}", c.field, c.message);
            if !rendered.contains(&r) {
                rendered.push(r);
            }
        }
        let list = if rendered.len() == 1 {
            rendered.join("")
        } else {
            format!("[{}]", rendered.join(", "))
        };
        let message = format!("{} \"{name}\" is invalid: {list}", subject.qualified_kind());
        let mut details = Self::name_details(subject, name, true);
        if let Some(d) = details.as_object_mut() {
            d.insert(
                "causes".into(),
                Value::Array(causes.iter().map(Cause::to_json).collect()),
            );
        }
        Self::new(422, "Invalid", message).with_details(details)
    }

    /// `400 BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `403 Forbidden` with the given message and name details.
    pub fn forbidden(subject: &Subject, name: &str, message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message).with_details(Self::name_details(subject, name, false))
    }

    /// `410 Expired`.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// `405 MethodNotAllowed`.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// `500 InternalError`.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
        .with_details(json!({"causes": [{"message": message.to_string()}]}))
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut s = Map::new();
        s.insert("kind".into(), json!("Status"));
        s.insert("apiVersion".into(), json!("v1"));
        s.insert(
            "metadata".into(),
            self.status_metadata.clone().unwrap_or_else(|| json!({})),
        );
        s.insert("status".into(), json!("Failure"));
        s.insert("message".into(), json!(self.message));
        if !self.reason.is_empty() {
            s.insert("reason".into(), json!(self.reason));
        }
        if let Some(d) = &self.details {
            s.insert("details".into(), d.clone());
        }
        s.insert("code".into(), json!(self.code));
        Value::Object(s)
    }
}

/// The `Status` of a successful delete: `{status: Success, details: {name, group?, kind, uid}}`.
pub fn delete_success(subject: &Subject, name: &str, uid: &str) -> Value {
    let mut d = Map::new();
    d.insert("name".into(), json!(name));
    if !subject.group.is_empty() {
        d.insert("group".into(), json!(subject.group));
    }
    d.insert("kind".into(), json!(subject.resource));
    d.insert("uid".into(), json!(uid));
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": d})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_message_brackets_only_several_causes() {
        let s = Subject {
            group: String::new(),
            resource: "configmaps".into(),
            kind: "ConfigMap".into(),
        };
        let one = ApiError::invalid(
            &s,
            "x",
            vec![Cause::required("metadata.name", "name is required")],
        );
        assert_eq!(
            one.message,
            "ConfigMap \"x\" is invalid: metadata.name: Required value: name is required"
        );
        let two = ApiError::invalid(
            &s,
            "x",
            vec![Cause::required("a", ""), Cause::invalid("b", &json!("v"), "bad")],
        );
        assert_eq!(
            two.message,
            "ConfigMap \"x\" is invalid: [a: Required value, b: Invalid value: \"v\": bad]"
        );
    }
}
