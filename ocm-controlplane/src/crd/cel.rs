//! `x-kubernetes-validations`: CEL rules of custom resource schemas, evaluated with kube-cel (the
//! kube-rs project's port of Kubernetes' CEL library onto the `cel` crate).
//!
//! kube-apiserver runs the rules after OpenAPI validation, and only when that found no error that
//! makes the object unusable (a missing required field, an unsupported enum value, a wrong type, a
//! value too long or a list too long); otherwise it reports one extra cause instead:
//! `<nil>: Invalid value: null: some validation rules were not checked because the object was
//! invalid; correct the existing errors to complete validation`. A failed rule is reported at the
//! rule's field (plus its `fieldPath`) as `Invalid value: "<schema type>": <message>`, with the
//! rule's `reason` choosing the cause type; transition rules (`oldSelf`) run on updates only.
//!
//! Rules kube-cel cannot evaluate (CEL macros the `cel` crate lacks, such as `sortBy`, `cel.bind`
//! and the two-variable comprehensions) fail closed: the object is refused with the evaluation
//! error as the message.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::status::Cause;

/// The compiled rules of one schema.
pub struct CelRules {
    schema: Value,
    /// The schema `type` of the node declaring each rule text.
    types: HashMap<String, String>,
}

impl std::fmt::Debug for CelRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelRules")
            .field("rules", &self.types.len())
            .finish()
    }
}

fn collect_rules(schema: &Value, types: &mut HashMap<String, String>) {
    let Some(node) = schema.as_object() else { return };
    if let Some(rules) = node.get("x-kubernetes-validations").and_then(Value::as_array) {
        let ty = node.get("type").and_then(Value::as_str).unwrap_or("object");
        for rule in rules {
            if let Some(text) = rule.get("rule").and_then(Value::as_str) {
                types.entry(text.to_string()).or_insert_with(|| ty.to_string());
            }
        }
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for child in props.values() {
            collect_rules(child, types);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = node.get(key) {
            collect_rules(child, types);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(branches) = node.get(key).and_then(Value::as_array) {
            for branch in branches {
                collect_rules(branch, types);
            }
        }
    }
}

/// The rules of a schema, if it has any.
pub fn compile(schema: &Value) -> Option<CelRules> {
    let mut types = HashMap::new();
    collect_rules(schema, &mut types);
    (!types.is_empty()).then(|| CelRules {
        schema: schema.clone(),
        types,
    })
}

/// Whether OpenAPI validation found an error that keeps CEL rules from running.
pub fn blocks_rules(causes: &[Cause]) -> bool {
    causes.iter().any(|c| {
        matches!(
            c.reason.as_str(),
            "FieldValueNotSupported"
                | "FieldValueRequired"
                | "FieldValueTooLong"
                | "FieldValueTooMany"
                | "FieldValueTypeInvalid"
        )
    })
}

/// The cause reported instead of the rules when OpenAPI validation failed badly.
pub fn not_checked() -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
        field: "<nil>".into(),
    }
}

/// Evaluates every rule against `object` (and `old` for transition rules).
pub fn validate(rules: &CelRules, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let Err(errors) = kube_cel::validate(&rules.schema, object, old) else {
        return Vec::new();
    };
    errors
        .into_iter()
        .map(|e| {
            let ty = rules.types.get(&e.rule).map_or("object", String::as_str);
            let field = e.field_path.clone();
            match e.reason.as_deref() {
                Some("FieldValueForbidden") => Cause::forbidden(field, &e.message),
                Some("FieldValueRequired") => Cause::required(field, &e.message),
                Some("FieldValueDuplicate") => Cause {
                    reason: "FieldValueDuplicate".into(),
                    message: format!("Duplicate value: {}", crate::status::render_value(&json!(ty))),
                    field,
                },
                _ => Cause::invalid(field, &json!(ty), &e.message),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "rules": {"type": "array", "items": {"type": "object",
                "x-kubernetes-validations": [{"rule": "self.type != 'CEL' || self.condition != \"\"",
                    "message": "Condition is required for CEL rules"}],
                "properties": {"type": {"type": "string"}, "condition": {"type": "string"}}}},
            "manager": {"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf",
                "message": "ClusterManager is immutable"}], "properties": {"name": {"type": "string"}}}}}}})
    }

    #[test]
    fn failing_rules_become_causes() {
        let rules = compile(&schema()).unwrap();
        let bad = json!({"spec": {"rules": [{"type": "CEL", "condition": ""}]}});
        let causes = validate(&rules, &bad, None);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec.rules[0]");
        assert_eq!(
            causes[0].message,
            "Invalid value: \"object\": Condition is required for CEL rules"
        );
        let good = json!({"spec": {"rules": [{"type": "CEL", "condition": "x"}]}});
        assert!(validate(&rules, &good, None).is_empty());
    }

    #[test]
    fn transition_rules_need_the_old_object() {
        let rules = compile(&schema()).unwrap();
        let new = json!({"spec": {"manager": {"name": "b"}}});
        let old = json!({"spec": {"manager": {"name": "a"}}});
        assert!(validate(&rules, &new, None).is_empty());
        assert_eq!(validate(&rules, &new, Some(&old)).len(), 1);
        assert!(compile(&json!({"type": "object"})).is_none());
    }
}
