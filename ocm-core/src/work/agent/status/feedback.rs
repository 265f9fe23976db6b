//! Status feedback: the values of an applied object's status that a ManifestWork's
//! `feedbackRules` ask for, and the manifest condition `StatusFeedbackSynced` telling whether
//! reading them worked.
//!
//! A rule is either `WellKnownStatus` (fixed JSONPaths per kind: Deployment, DaemonSet, Job, Pod)
//! or `JSONPaths` (the work's own paths). A path selecting nothing, or `null`, yields no value;
//! an integer, string or boolean yields a typed value; anything else (a float, a map, a list, or
//! several results) is an error unless the `RawFeedbackJsonString` feature is on, which reports
//! it as JSON text (keys sorted, as Go encodes maps) of at most `max-json-raw-length` bytes.
//! Errors of all rules are collected (the values that could be read are still reported) and
//! joined as Kubernetes aggregates errors: one error as is, several as `[a, b]`.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use ocm_api::conditions::Status;
use ocm_api::meta::Condition;
use ocm_api::work::v1::{
    FeedbackRule, FeedbackType, FeedbackValue, FieldValue, ManifestConfigOption, ValueType,
};
use serde_json::Value;

use super::jsonpath::JsonPath;

use ocm_api::names::conditions::work::manifest::{STATUS_FEEDBACK_SYNCED, reasons};

/// A JSONPath of a well-known status value: its feedback name and path.
pub type WellKnownPath = (&'static str, &'static str);

const DEPLOYMENT: &[WellKnownPath] = &[
    ("ReadyReplicas", ".status.readyReplicas"),
    ("Replicas", ".status.replicas"),
    ("AvailableReplicas", ".status.availableReplicas"),
];
const DAEMONSET: &[WellKnownPath] = &[
    ("NumberReady", ".status.numberReady"),
    ("DesiredNumberScheduled", ".status.desiredNumberScheduled"),
    ("NumberAvailable", ".status.numberAvailable"),
];
const JOB: &[WellKnownPath] = &[
    (
        "JobComplete",
        r#".status.conditions[?(@.type=="Complete")].status"#,
    ),
    ("JobSucceeded", ".status.succeeded"),
];
const POD: &[WellKnownPath] = &[
    ("PodReady", r#".status.conditions[?(@.type=="Ready")].status"#),
    ("PodPhase", ".status.phase"),
];

/// Group, version and kind of an object, from its `apiVersion` and `kind`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gvk<'a> {
    /// The API group, `""` for the core group.
    pub group: &'a str,
    /// The API version.
    pub version: &'a str,
    /// The kind.
    pub kind: &'a str,
}

impl<'a> Gvk<'a> {
    /// The group, version and kind of a JSON object (empty strings for missing fields).
    #[must_use]
    pub fn of(object: &'a Value) -> Self {
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        Self {
            group,
            version,
            kind: object.get("kind").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

impl std::fmt::Display for Gvk<'_> {
    /// As Go prints a `schema.GroupVersionKind`: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// The well-known status paths of a kind, empty for kinds without any.
#[must_use]
pub fn well_known_paths(gvk: &Gvk<'_>) -> &'static [WellKnownPath] {
    match (gvk.group, gvk.version, gvk.kind) {
        ("apps", "v1", "Deployment") => DEPLOYMENT,
        ("apps", "v1", "DaemonSet") => DAEMONSET,
        ("batch", "v1", "Job") => JOB,
        ("", "v1", "Pod") => POD,
        _ => &[],
    }
}

/// Reads feedback values, with the agent's settings.
#[derive(Debug, Clone, Copy)]
pub struct FeedbackReader {
    /// Whether values that are not integers, strings or booleans are reported as JSON text
    /// (feature `RawFeedbackJsonString`).
    pub raw_json: bool,
    /// The longest JSON text reported (`--max-json-raw-length`, 1024 by default).
    pub max_json_raw_length: usize,
}

impl Default for FeedbackReader {
    fn default() -> Self {
        Self {
            raw_json: false,
            max_json_raw_length: 1024,
        }
    }
}

impl FeedbackReader {
    /// The values one rule selects from `object`, and the errors met (one message per value
    /// that could not be read).
    #[must_use]
    pub fn values_by_rule(&self, object: &Value, rule: &FeedbackRule) -> (Vec<FeedbackValue>, Vec<String>) {
        let mut values = Vec::new();
        let mut errors = Vec::new();
        match rule.type_ {
            FeedbackType::WellKnownStatus => {
                let gvk = Gvk::of(object);
                let paths = well_known_paths(&gvk);
                if paths.is_empty() {
                    errors.push(format!(
                        "cannot find the wellknown statuses for resource with gvk {gvk}"
                    ));
                }
                for (name, path) in paths {
                    match self.value(name, path, object) {
                        Ok(Some(value)) => values.push(value),
                        Ok(None) => {}
                        Err(e) => errors.push(e),
                    }
                }
            }
            FeedbackType::JsonPaths => {
                let version = Gvk::of(object).version;
                for path in rule.json_paths.iter().flatten() {
                    if path
                        .version
                        .as_deref()
                        .is_some_and(|v| !v.is_empty() && v != version)
                    {
                        errors.push(format!(
                            "version set in the path {} is not matched for the related resource",
                            path.name
                        ));
                        continue;
                    }
                    match self.value(&path.name, &path.path, object) {
                        Ok(Some(value)) => values.push(value),
                        Ok(None) => {}
                        Err(e) => errors.push(e),
                    }
                }
            }
        }
        (values, errors)
    }

    /// The value at `path` (without braces) named `name`; `None` when the path selects nothing
    /// or `null`.
    fn value(&self, name: &str, path: &str, object: &Value) -> Result<Option<FeedbackValue>, String> {
        let parsed = JsonPath::parse(&format!("{{{path}}}"))
            .map_err(|e| format!("failed to parse json path {path} of {name} with error: {e}"))?
            .allow_missing_keys(true);
        let results = parsed
            .find_results(object)
            .map_err(|e| format!("failed to find value for {name} with error: {e}"))?;
        let Some(first) = results.first().filter(|r| !r.is_empty()) else {
            return Ok(None);
        };
        let value: Cow<'_, Value> = if (results.len() == 1 && first.len() == 1) || !self.raw_json {
            first[0].clone()
        } else {
            Cow::Owned(Value::Array(
                first.iter().map(|v| v.clone().into_owned()).collect(),
            ))
        };
        let field_value = match value.as_ref() {
            Value::Null => return Ok(None),
            Value::Number(n) if n.is_i64() => FieldValue {
                type_: ValueType::Integer,
                integer: n.as_i64(),
                ..FieldValue::default()
            },
            Value::String(s) => FieldValue {
                type_: ValueType::String,
                string: Some(s.clone()),
                ..FieldValue::default()
            },
            Value::Bool(b) => FieldValue {
                type_: ValueType::Boolean,
                boolean: Some(*b),
                ..FieldValue::default()
            },
            other if self.raw_json => {
                let raw = go_json(other);
                if raw.len() > self.max_json_raw_length {
                    return Err(format!(
                        "the length of returned json raw string for name {name} is larger than the maximum length {}",
                        self.max_json_raw_length
                    ));
                }
                FieldValue {
                    type_: ValueType::JsonRaw,
                    json_raw: Some(raw),
                    ..FieldValue::default()
                }
            }
            other => {
                return Err(format!(
                    "the type {} of the value for {name} is not found",
                    go_type(other)
                ));
            }
        };
        Ok(Some(FeedbackValue {
            field_value,
            name: name.to_string(),
        }))
    }

    /// The values of every feedback rule of the manifest's settings, and the condition
    /// `StatusFeedbackSynced` (without `observedGeneration`).
    #[must_use]
    pub fn feedback(
        &self,
        object: &Value,
        option: Option<&ManifestConfigOption>,
        now: &Time,
    ) -> (Vec<FeedbackValue>, Condition) {
        let rules = option
            .and_then(|o| o.feedback_rules.as_deref())
            .unwrap_or_default();
        if rules.is_empty() {
            return (
                Vec::new(),
                Condition::new(
                    STATUS_FEEDBACK_SYNCED,
                    Status::True,
                    reasons::NO_STATUS_FEEDBACK_SYNCED,
                    "",
                    now.clone(),
                ),
            );
        }
        let mut values = Vec::new();
        let mut errors = Vec::new();
        for rule in rules {
            let (rule_values, rule_errors) = self.values_by_rule(object, rule);
            values.extend(rule_values);
            errors.extend(rule_errors);
        }
        let condition = if errors.is_empty() {
            Condition::new(
                STATUS_FEEDBACK_SYNCED,
                Status::True,
                reasons::STATUS_FEEDBACK_SYNCED,
                "",
                now.clone(),
            )
        } else {
            Condition::new(
                STATUS_FEEDBACK_SYNCED,
                Status::False,
                reasons::STATUS_FEEDBACK_SYNC_FAILED,
                &format!(
                    "Sync status feedback failed with error {}",
                    aggregate_errors(&errors)
                ),
                now.clone(),
            )
        };
        (values, condition)
    }
}

/// Several error messages as one, as Kubernetes' error aggregates print them: duplicates
/// dropped, one message as is, several as `[a, b]`.
#[must_use]
pub fn aggregate_errors(errors: &[String]) -> String {
    let mut unique: Vec<&str> = Vec::with_capacity(errors.len());
    for e in errors {
        if !unique.contains(&e.as_str()) {
            unique.push(e);
        }
    }
    match unique.as_slice() {
        [one] => (*one).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The Go type name of a decoded JSON value.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// JSON text as Go's `encoding/json` writes decoded JSON: map keys sorted, `<`, `>`, `&`,
/// U+2028 and U+2029 escaped.
fn go_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), sorted(v))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value)
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use ocm_api::work::v1::JsonPath as JsonPathRule;
    use serde_json::json;

    use super::*;

    fn now() -> Time {
        Time(Timestamp::from_second(1_700_000_000).unwrap())
    }

    fn int(name: &str, v: i64) -> FeedbackValue {
        FeedbackValue {
            name: name.into(),
            field_value: FieldValue {
                type_: ValueType::Integer,
                integer: Some(v),
                ..FieldValue::default()
            },
        }
    }

    fn string(name: &str, v: &str) -> FeedbackValue {
        FeedbackValue {
            name: name.into(),
            field_value: FieldValue {
                type_: ValueType::String,
                string: Some(v.into()),
                ..FieldValue::default()
            },
        }
    }

    fn paths(paths: &[(&str, &str)]) -> FeedbackRule {
        FeedbackRule {
            type_: FeedbackType::JsonPaths,
            json_paths: Some(
                paths
                    .iter()
                    .map(|(name, path)| JsonPathRule {
                        name: (*name).into(),
                        path: (*path).into(),
                        version: None,
                    })
                    .collect(),
            ),
        }
    }

    fn well_known() -> FeedbackRule {
        FeedbackRule {
            type_: FeedbackType::WellKnownStatus,
            json_paths: None,
        }
    }

    fn deployment() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "status": {"readyReplicas": 2, "replicas": 3,
                          "conditions": [{"type": "Available", "status": "True"}]}})
    }

    #[test]
    fn well_known_deployment_values_skip_missing_fields() {
        let (values, errors) = FeedbackReader::default().values_by_rule(&deployment(), &well_known());
        assert!(errors.is_empty());
        assert_eq!(values, vec![int("ReadyReplicas", 2), int("Replicas", 3)]);
    }

    #[test]
    fn well_known_job_pod_and_daemonset() {
        let reader = FeedbackReader::default();
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"succeeded": 1,
            "conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(
            reader.values_by_rule(&job, &well_known()).0,
            vec![string("JobComplete", "True"), int("JobSucceeded", 1)]
        );
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}]}});
        assert_eq!(
            reader.values_by_rule(&pod, &well_known()).0,
            vec![string("PodReady", "False"), string("PodPhase", "Running")]
        );
        let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "status": {
            "numberReady": 1, "desiredNumberScheduled": 2, "numberAvailable": 0}});
        assert_eq!(
            reader.values_by_rule(&ds, &well_known()).0,
            vec![
                int("NumberReady", 1),
                int("DesiredNumberScheduled", 2),
                int("NumberAvailable", 0)
            ]
        );
    }

    #[test]
    fn unknown_kind_has_no_well_known_status() {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount"});
        let (values, errors) = FeedbackReader::default().values_by_rule(&sa, &well_known());
        assert!(values.is_empty());
        assert_eq!(
            errors,
            vec!["cannot find the wellknown statuses for resource with gvk /v1, Kind=ServiceAccount"]
        );
    }

    #[test]
    fn json_paths_typed_values_and_version_check() {
        let reader = FeedbackReader::default();
        let rule = paths(&[
            (
                "isAvailable",
                r#".status.conditions[?(@.type=="Available")].status"#,
            ),
            ("missing", ".status.unavailableReplicas"),
            ("name", ".metadata.name"),
        ]);
        let (values, errors) = reader.values_by_rule(&deployment(), &rule);
        assert!(errors.is_empty());
        assert_eq!(values, vec![string("isAvailable", "True"), string("name", "d")]);

        let mut rule = paths(&[("replicas", ".status.replicas")]);
        rule.json_paths.as_mut().unwrap()[0].version = Some("v1beta1".into());
        let (values, errors) = reader.values_by_rule(&deployment(), &rule);
        assert!(values.is_empty());
        assert_eq!(
            errors,
            vec!["version set in the path replicas is not matched for the related resource"]
        );
    }

    #[test]
    fn structured_values_need_raw_json() {
        let off = FeedbackReader::default();
        let rule = paths(&[("conditions", ".status.conditions")]);
        let (values, errors) = off.values_by_rule(&deployment(), &rule);
        assert!(values.is_empty());
        assert_eq!(
            errors,
            vec!["the type []interface {} of the value for conditions is not found"]
        );

        let on = FeedbackReader {
            raw_json: true,
            max_json_raw_length: 1024,
        };
        let (values, errors) = on.values_by_rule(&deployment(), &rule);
        assert!(errors.is_empty());
        assert_eq!(values[0].field_value.type_, ValueType::JsonRaw);
        assert_eq!(
            values[0].field_value.json_raw.as_deref(),
            Some(r#"[{"status":"True","type":"Available"}]"#)
        );

        let short = FeedbackReader {
            raw_json: true,
            max_json_raw_length: 10,
        };
        let (_, errors) = short.values_by_rule(&deployment(), &rule);
        assert_eq!(
            errors,
            vec![
                "the length of returned json raw string for name conditions is larger than the maximum length 10"
            ]
        );
    }

    #[test]
    fn several_results_are_a_list_only_with_raw_json() {
        let object = json!({"apiVersion": "v1", "kind": "X", "items": [{"n": "a"}, {"n": "b<"}]});
        let rule = paths(&[("names", ".items[*].n")]);
        let (values, _) = FeedbackReader::default().values_by_rule(&object, &rule);
        assert_eq!(values, vec![string("names", "a")]);
        let on = FeedbackReader {
            raw_json: true,
            max_json_raw_length: 1024,
        };
        let (values, _) = on.values_by_rule(&object, &rule);
        assert_eq!(
            values[0].field_value.json_raw.as_deref(),
            Some(r#"["a","b\u003c"]"#)
        );
    }

    #[test]
    fn float_without_raw_json_is_an_error() {
        let object = json!({"apiVersion": "v1", "kind": "X", "ratio": 0.5});
        let (_, errors) = FeedbackReader::default().values_by_rule(&object, &paths(&[("r", ".ratio")]));
        assert_eq!(errors, vec!["the type float64 of the value for r is not found"]);
    }

    #[test]
    fn bad_paths_are_reported() {
        let (_, errors) = FeedbackReader::default().values_by_rule(
            &deployment(),
            &paths(&[("bad", ".status.conditions[x]"), ("idx", ".status.conditions[5]")]),
        );
        assert_eq!(
            errors,
            vec![
                "failed to parse json path .status.conditions[x] of bad with error: invalid array index x",
                "failed to find value for idx with error: array index out of bounds: index 5, length 1",
            ]
        );
    }

    #[test]
    fn synced_condition() {
        let reader = FeedbackReader::default();
        let (values, condition) = reader.feedback(&deployment(), None, &now());
        assert!(values.is_empty());
        assert_eq!(
            (
                condition.type_.as_str(),
                condition.status.as_str(),
                condition.reason.as_str()
            ),
            (STATUS_FEEDBACK_SYNCED, "True", "NoStatusFeedbackSynced")
        );

        let option = ManifestConfigOption {
            feedback_rules: Some(vec![well_known()]),
            ..ManifestConfigOption::default()
        };
        let (values, condition) = reader.feedback(&deployment(), Some(&option), &now());
        assert_eq!(values.len(), 2);
        assert_eq!(condition.reason, "StatusFeedbackSynced");

        let option = ManifestConfigOption {
            feedback_rules: Some(vec![
                well_known(),
                paths(&[("a", ".a[1]"), ("b", ".status.conditions")]),
            ]),
            ..ManifestConfigOption::default()
        };
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "a": "s"});
        let (_, condition) = reader.feedback(&sa, Some(&option), &now());
        assert_eq!(condition.status, "False");
        assert_eq!(condition.reason, "StatusFeedbackSyncFailed");
        assert_eq!(
            condition.message,
            "Sync status feedback failed with error [cannot find the wellknown statuses for resource with gvk /v1, Kind=ServiceAccount, failed to find value for a with error: string is not array or slice]"
        );
    }

    #[test]
    fn aggregated_errors_drop_duplicates() {
        assert_eq!(aggregate_errors(&["a".into(), "a".into()]), "a");
        assert_eq!(aggregate_errors(&["a".into(), "b".into()]), "[a, b]");
    }
}
