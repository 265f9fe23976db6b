//! Condition rules: manifest conditions computed from an applied object by CEL expressions
//! (`manifestConfigs[].conditionRules`).
//!
//! A `CEL` rule's expressions see the object as `object` and must all return `true` for the
//! condition to be `True` (reason `ConditionRuleEvaluated`); the first `false` makes it `False`
//! with the same reason. An expression that does not parse, fails while running (a missing
//! field, say) or returns no boolean makes it `False` with reason
//! `ConditionRuleExpressionError` and the error as message. A `WellKnownConditions` rule uses
//! the agent's built-in expressions for its condition and kind (`Complete` for `batch/v1` Job
//! and `v1` Pod); other combinations set nothing. The message is the rule's
//! `messageExpression` (which also sees the boolean `result`), else its `message`, else
//! `Manifest is <condition>` / `Manifest is not <condition>`.
//!
//! Expressions run on the `cel` crate with kube-cel's Kubernetes libraries (strings, lists,
//! regex, URLs, quantities, IPs/CIDRs, format, semver) and OCM's `hasConditions(map)`, as
//! upstream's environment. Unlike cel-go, the `cel` crate parses without type checking (an
//! undeclared variable fails when run, still as `ConditionRuleExpressionError`) and has no cost
//! accounting: upstream's runtime cost budget is not enforced.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube_cel::KubeCelExt;
use kube_cel::cel::extractors::Arguments;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, Program, Value as CelValue};
use ocm_api::conditions::Status;
use ocm_api::meta::Condition;
use ocm_api::names::conditions::work::manifest::{COMPLETE, reasons};
use ocm_api::work::v1::{ConditionRule, ConditionRuleType};
use serde_json::Value;

use super::feedback::Gvk;

/// The prefix of the reasons of conditions that condition rules set.
pub const CONDITION_RULE_REASON_PREFIX: &str = "ConditionRule";

/// Whether a condition was set by a condition rule (its reason starts with `ConditionRule`).
#[must_use]
pub fn is_rule_condition(condition: &Condition) -> bool {
    condition.reason.starts_with(CONDITION_RULE_REASON_PREFIX)
}

/// Removes the conditions set by condition rules of an older work generation: a rule that is
/// gone (removing it changed the generation) leaves no condition behind.
pub fn prune_rule_conditions(conditions: &mut Vec<Condition>, generation: i64) {
    conditions.retain(|c| !is_rule_condition(c) || c.observed_generation == Some(generation));
}

const JOB_COMPLETE: &str = "hasConditions(object.status) \
    ? object.status.conditions.filter(c, c.type == 'Complete' || c.type == 'Failed').exists(c, c.status == 'True') \
    : false";
const JOB_COMPLETE_MESSAGE: &str = r#"result ? "Job is finished" : "Job is not finished""#;
const POD_COMPLETE: &str = "object.status.phase in ['Succeeded', 'Failed']";
const POD_COMPLETE_MESSAGE: &str = r#""Pod is in phase " + object.status.phase"#;

/// The built-in expressions and message expression of a well-known condition of a kind.
fn well_known_rule(gvk: &Gvk<'_>, condition: &str) -> Option<(&'static str, &'static str)> {
    match (gvk.group, gvk.version, gvk.kind, condition) {
        ("batch", "v1", "Job", COMPLETE) => Some((JOB_COMPLETE, JOB_COMPLETE_MESSAGE)),
        ("", "v1", "Pod", COMPLETE) => Some((POD_COMPLETE, POD_COMPLETE_MESSAGE)),
        _ => None,
    }
}

/// The conditions the rules compute for `object`, in rule order, without
/// `observedGeneration`; well-known rules that do not apply to the object's kind set none.
#[must_use]
pub fn evaluate_rules(object: &Value, rules: &[ConditionRule], now: &Time) -> Vec<Condition> {
    let cel_object = json_to_cel(object);
    rules
        .iter()
        .filter_map(|rule| evaluate_rule(object, &cel_object, rule, now))
        .collect()
}

fn evaluate_rule(
    object: &Value,
    cel_object: &CelValue,
    rule: &ConditionRule,
    now: &Time,
) -> Option<Condition> {
    let (expressions, message_expression): (Vec<&str>, Option<&str>) = match rule.type_ {
        ConditionRuleType::WellKnownConditions => {
            let (expression, message) = well_known_rule(&Gvk::of(object), &rule.condition)?;
            let message = match rule.message_expression.as_deref() {
                Some(own) if !own.is_empty() => own,
                _ => message,
            };
            (vec![expression], Some(message))
        }
        ConditionRuleType::Cel => (
            rule.cel_expressions
                .iter()
                .flatten()
                .map(String::as_str)
                .collect(),
            rule.message_expression.as_deref(),
        ),
    };
    let (status, reason, message) = match evaluate_expressions(cel_object, &expressions) {
        Err((status, reason, error)) => (status, reason, error),
        Ok(result) => {
            let message = message_of(cel_object, rule, message_expression, result);
            (Status::from(result), reasons::CONDITION_RULE_EVALUATED, message)
        }
    };
    Some(Condition::new(
        &rule.condition,
        status,
        reason,
        &message,
        now.clone(),
    ))
}

type RuleFailure = (Status, &'static str, String);

/// Runs the expressions in order: `Ok(true)` when all are true, `Ok(false)` at the first false.
fn evaluate_expressions(object: &CelValue, expressions: &[&str]) -> Result<bool, RuleFailure> {
    let expression_error =
        |message: String| (Status::False, reasons::CONDITION_RULE_EXPRESSION_ERROR, message);
    for expression in expressions {
        let program = Program::compile(expression).map_err(|e| expression_error(e.to_string()))?;
        let mut context = context();
        context.add_variable_from_value("object", object.clone());
        match program.execute(&context) {
            Err(e) => return Err(expression_error(e.to_string())),
            Ok(CelValue::Bool(true)) => {}
            Ok(CelValue::Bool(false)) => return Ok(false),
            Ok(other) => {
                return Err(expression_error(format!(
                    "expected bool result, got {}",
                    cel_type(&other)
                )));
            }
        }
    }
    Ok(true)
}

/// The condition message: the message expression's string, else the rule's message, else the
/// default; an error of the message expression becomes the message.
fn message_of(
    object: &CelValue,
    rule: &ConditionRule,
    message_expression: Option<&str>,
    result: bool,
) -> String {
    if let Some(expression) = message_expression.filter(|e| !e.is_empty()) {
        match Program::compile(expression) {
            Err(e) => {
                return e.to_string().lines().next().unwrap_or_default().to_string();
            }
            Ok(program) => {
                let mut context = context();
                context.add_variable_from_value("object", object.clone());
                context.add_variable_from_value("result", result);
                match program.execute(&context) {
                    Err(e) => return e.to_string(),
                    Ok(CelValue::String(s)) if !s.is_empty() => return s.to_string(),
                    Ok(CelValue::String(_)) => {}
                    Ok(other) => {
                        return format!(
                            "expected message expression to have a string result, got {}",
                            cel_type(&other)
                        );
                    }
                }
            }
        }
    }
    match rule.message.as_deref() {
        Some(message) if !message.is_empty() => message.to_string(),
        _ if result => format!("Manifest is {}", rule.condition),
        _ => format!("Manifest is not {}", rule.condition),
    }
}

/// A CEL context with the Kubernetes libraries and `hasConditions`.
fn context() -> Context<'static> {
    let mut context = Context::default().with_all();
    context.add_function("hasConditions", has_conditions);
    context
}

/// `hasConditions(map)`: whether the map has a non-empty list under `conditions`.
fn has_conditions(Arguments(args): Arguments) -> bool {
    let Some(CelValue::Map(map)) = args.first() else {
        return false;
    };
    matches!(
        map.map.get(&Key::String(Arc::new("conditions".into()))),
        Some(CelValue::List(list)) if !list.is_empty()
    )
}

/// The CEL value of decoded JSON: integers as `int` (or `uint` past `i64`), other numbers as
/// `double`, map keys as strings.
fn json_to_cel(value: &Value) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => n
            .as_i64()
            .map(CelValue::Int)
            .or_else(|| n.as_u64().map(CelValue::UInt))
            .unwrap_or_else(|| CelValue::Float(n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(json_to_cel).collect())),
        Value::Object(map) => {
            let entries: HashMap<Key, CelValue> = map
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), json_to_cel(v)))
                .collect();
            CelValue::Map(Map {
                map: Arc::new(entries),
            })
        }
    }
}

/// The CEL type name of a value, for messages.
fn cel_type(value: &CelValue) -> String {
    value.type_of().to_string()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    use super::*;

    fn now() -> Time {
        Time(Timestamp::from_second(1_700_000_000).unwrap())
    }

    fn cel(condition: &str, expressions: &[&str]) -> ConditionRule {
        ConditionRule {
            type_: ConditionRuleType::Cel,
            condition: condition.into(),
            cel_expressions: Some(expressions.iter().map(|e| (*e).to_string()).collect()),
            message: None,
            message_expression: None,
        }
    }

    fn well_known(condition: &str) -> ConditionRule {
        ConditionRule {
            type_: ConditionRuleType::WellKnownConditions,
            condition: condition.into(),
            ..ConditionRule::default()
        }
    }

    fn job(conditions: Value) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
               "status": {"active": 1, "conditions": conditions}})
    }

    fn one(object: &Value, rule: ConditionRule) -> (String, String, String) {
        let mut conditions = evaluate_rules(object, &[rule], &now());
        assert_eq!(conditions.len(), 1);
        let c = conditions.remove(0);
        (c.status, c.reason, c.message)
    }

    fn triple(status: &str, reason: &str, message: &str) -> (String, String, String) {
        (status.into(), reason.into(), message.into())
    }

    #[test]
    fn job_complete_well_known() {
        assert_eq!(
            one(&job(json!([])), well_known("Complete")),
            triple("False", "ConditionRuleEvaluated", "Job is not finished")
        );
        assert_eq!(
            one(
                &job(json!([{"type": "Complete", "status": "True"}])),
                well_known("Complete")
            ),
            triple("True", "ConditionRuleEvaluated", "Job is finished")
        );
        assert_eq!(
            one(
                &job(json!([{"type": "Failed", "status": "True"}])),
                well_known("Complete")
            ),
            triple("True", "ConditionRuleEvaluated", "Job is finished")
        );
        let no_status = json!({"apiVersion": "batch/v1", "kind": "Job", "status": {}});
        assert_eq!(
            one(&no_status, well_known("Complete")).1,
            "ConditionRuleEvaluated"
        );
    }

    #[test]
    fn pod_complete_well_known_and_overrides() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Succeeded"}});
        assert_eq!(
            one(&pod, well_known("Complete")),
            triple("True", "ConditionRuleEvaluated", "Pod is in phase Succeeded")
        );
        let mut rule = well_known("Complete");
        rule.message_expression = Some(r#"result ? "done" : "running""#.into());
        assert_eq!(one(&pod, rule).2, "done");
    }

    #[test]
    fn unknown_well_known_sets_nothing() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        assert!(evaluate_rules(&cm, &[well_known("Complete")], &now()).is_empty());
        assert!(evaluate_rules(&job(json!([])), &[well_known("Ready")], &now()).is_empty());
    }

    #[test]
    fn cel_rules_and_messages() {
        let object = job(json!([]));
        assert_eq!(
            one(&object, cel("OneActive", &["object.status.active == 1"])),
            triple("True", "ConditionRuleEvaluated", "Manifest is OneActive")
        );
        assert_eq!(
            one(
                &object,
                cel("OneActive", &["true", "object.status.active > 1", "bad syntax ("])
            ),
            triple("False", "ConditionRuleEvaluated", "Manifest is not OneActive")
        );
        let mut rule = cel("OneActive", &["object.status.active == 1"]);
        rule.message = Some("fixed".into());
        assert_eq!(one(&object, rule.clone()).2, "fixed");
        rule.message_expression =
            Some(r#"result ? "active " + string(object.status.active) : "idle""#.into());
        assert_eq!(one(&object, rule.clone()).2, "active 1");
        rule.message_expression = Some(r#""""#.into());
        assert_eq!(one(&object, rule.clone()).2, "fixed");
        rule.message_expression = Some("1 + 1".into());
        assert_eq!(
            one(&object, rule).2,
            "expected message expression to have a string result, got int"
        );
    }

    #[test]
    fn cel_errors() {
        let object = job(json!([]));
        let (status, reason, message) = one(&object, cel("X", &["object.status.active =="]));
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "ConditionRuleExpressionError")
        );
        assert!(!message.is_empty());
        let (status, reason, message) = one(&object, cel("X", &["object.status.missing == 1"]));
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "ConditionRuleExpressionError")
        );
        assert!(message.contains("missing"), "{message}");
        assert_eq!(
            one(&object, cel("X", &["object.status.active"])),
            triple(
                "False",
                "ConditionRuleExpressionError",
                "expected bool result, got int"
            )
        );
    }

    #[test]
    fn kubernetes_libraries_and_has_conditions() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-1",
            "labels": {"app.kubernetes.io/name": "web"}}, "data": {"size": "2Gi"}});
        let rule = cel(
            "Ok",
            &[
                "object.metadata.name.startsWith('web')",
                "object.metadata.labels['app.kubernetes.io/name'].lowerAscii() == 'web'",
                "quantity(object.data.size).isGreaterThan(quantity('1Gi'))",
                "!hasConditions(object)",
                "hasConditions({'conditions': [1]})",
            ],
        );
        assert_eq!(one(&object, rule).0, "True");
    }

    #[test]
    fn pruning_keeps_current_generation_and_other_writers() {
        let c = |t: &str, reason: &str, generation: i64| {
            Condition::new(t, Status::True, reason, "", now()).with_observed_generation(generation)
        };
        let mut conditions = vec![
            c("Applied", "AppliedManifestComplete", 1),
            c("Old", "ConditionRuleEvaluated", 1),
            c("Current", "ConditionRuleExpressionError", 2),
        ];
        prune_rule_conditions(&mut conditions, 2);
        let types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, vec!["Applied", "Current"]);
    }
}
