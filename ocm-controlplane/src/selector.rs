//! Label and field selectors of list and watch requests (`?labelSelector=env in (a,b),!tier`,
//! `?fieldSelector=metadata.name=x`).
//!
//! Label selectors are parsed and matched by the workspace's shared [`ocm_api::selector`]; this
//! module only words its errors as kube-apiserver's 400 messages. Field selectors (which ocm-api
//! does not have) are parsed here: `field=value`, `field==value`, `field!=value`, comma separated.

use std::borrow::Cow;
use std::collections::BTreeMap;

use ocm_api::selector::{Error as SelectorError, Selector};
use serde_json::Value;

/// A parsed label selector (all requirements must hold; none selects everything).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Selector);

/// kube-apiserver's operator list in "expected:" messages.
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

/// What kube-apiserver's parser expects between requirements.
const TOP_LEVEL: &[&str] = &[
    "identifier after ','",
    "',' or 'end of string'",
    "!, identifier, or 'end of string'",
];

/// The 400 message kube-apiserver gives for a selector `query` that does not parse.
fn kube_message(query: &str, error: &SelectorError) -> String {
    let detail = match error {
        // Errors between requirements are not about one requirement.
        SelectorError::ParseQuery { found, expected } if TOP_LEVEL.contains(expected) => {
            return format!("found '{found}', expected: {expected}");
        }
        SelectorError::ParseQuery { found, expected } => {
            // ocm-api lists the operators by their symbols; kube-apiserver by its own names.
            let expected = if expected.starts_with("one of [") {
                BINARY_OPERATORS
            } else {
                expected
            };
            format!("found '{found}', expected: {expected}")
        }
        SelectorError::ValidateKey { key, .. } => {
            let why = crate::validation::qualified_name(key).join("; ");
            format!("key: Invalid value: {key:?}: {why}")
        }
        SelectorError::ValidateValue { key, value, .. } => {
            let why = crate::validation::label_value(value).join("; ");
            let index = value_index(query, key, value);
            format!("values[{index}][{key}]: Invalid value: {value:?}: {why}")
        }
        SelectorError::CheckValues { reason, .. } => format!("values: Invalid value: {reason}"),
        other => other.to_string(),
    };
    format!("unable to parse requirement: {detail}")
}

/// The position of `value` among the sorted values of `key`'s requirement (kube validates the
/// de-duplicated, sorted list), 0 when it cannot be told.
fn value_index(query: &str, key: &str, value: &str) -> usize {
    let Some(start) = query.find(key) else { return 0 };
    let rest = &query[start + key.len()..];
    let Some(open) = rest.find('(') else { return 0 };
    let Some(close) = rest[open..].find(')') else {
        return 0;
    };
    let mut values: Vec<&str> = rest[open + 1..open + close].split(',').map(str::trim).collect();
    values.sort_unstable();
    values.dedup();
    values.iter().position(|v| *v == value).unwrap_or(0)
}

impl LabelSelector {
    /// Parses the query syntax; the error is kube-apiserver's 400 message.
    pub fn parse(s: &str) -> Result<Self, String> {
        Selector::parse(s).map(Self).map_err(|e| kube_message(s, &e))
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.matches(labels)
    }

    /// Whether an object's `metadata.labels` satisfy the selector.
    pub fn matches_object(&self, object: &Value) -> bool {
        self.is_empty() || self.matches(&labels_of(object))
    }
}

/// `metadata.labels` of an object's JSON, read without building the object: only the labels are
/// kept, everything else is skipped by the parser (`None` when the bytes are not a JSON object).
/// A label whose value is not a string counts as empty, as in [`labels_of`].
pub fn labels_of_json(bytes: &[u8]) -> Option<BTreeMap<String, String>> {
    #[derive(serde::Deserialize)]
    struct Object {
        #[serde(default)]
        metadata: Option<Metadata>,
    }
    #[derive(serde::Deserialize)]
    struct Metadata {
        #[serde(default)]
        labels: Option<serde_json::Map<String, Value>>,
    }
    let object: Object = serde_json::from_slice(bytes).ok()?;
    Some(
        object
            .metadata
            .and_then(|m| m.labels)
            .map(|labels| {
                labels
                    .into_iter()
                    .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default(),
    )
}

/// `metadata.labels` of an object as a map.
pub fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// A field selector: `field=value`, `field==value`, `field!=value`, comma separated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(pub Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses a field selector; the error is kube-apiserver's 400 message.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, eq, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!("invalid selector: '{s}'; can't understand '{part}'"));
            };
            out.push((field.trim().to_string(), eq, value.trim().to_string()));
        }
        Ok(Self(out))
    }

    /// Whether every term holds for `object`.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(field, eq, want)| {
            let actual = field_value(object, field);
            (actual.as_deref().unwrap_or("") == want) == *eq
        })
    }

    /// Whether the selector has no term.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value `field` must equal (`field=value` or `field==value`), if the selector says so.
    pub fn required(&self, field: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(f, eq, _)| *eq && f == field)
            .map(|(_, _, value)| value.as_str())
    }

    /// Fields named by the selector.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(f, _, _)| f.as_str())
    }
}

/// The value of a selectable field of an object (`metadata.name`, `spec.signerName`, ...):
/// borrowed when it is a string.
pub fn field_value<'a>(object: &'a Value, field: &str) -> Option<Cow<'a, str>> {
    // Walked segment by segment: watchers test this for every event of their type.
    let value = field
        .split('.')
        .try_fold(object, |value, segment| value.as_object()?.get(segment));
    match value {
        Some(Value::String(s)) => Some(Cow::Borrowed(s)),
        Some(Value::Bool(b)) => Some(Cow::Owned(b.to_string())),
        Some(Value::Number(n)) => Some(Cow::Owned(n.to_string())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn labels_are_read_from_json_as_from_the_object() {
        for object in [
            serde_json::json!({"metadata": {"name": "a", "labels": {"x": "1", "y": 2}}, "data": {"k": "v"}}),
            serde_json::json!({"metadata": {"name": "a"}}),
            serde_json::json!({"metadata": {"labels": null}}),
            serde_json::json!({"kind": "ConfigMap"}),
        ] {
            let bytes = serde_json::to_vec(&object).unwrap();
            assert_eq!(labels_of_json(&bytes), Some(labels_of(&object)), "{object}");
        }
        assert_eq!(labels_of_json(b"[1]"), None);
    }

    #[test]
    fn operators() {
        let l = labels(&[("env", "prod"), ("tier", "fe")]);
        for (sel, want) in [
            ("env=prod", true),
            ("env==prod", true),
            ("env!=prod", false),
            ("env in (prod,dev)", true),
            ("env notin (prod)", false),
            ("tier", true),
            ("!tier", false),
            ("env=dev,tier", false),
            ("env in ()", false),
            ("env=", false),
            ("other!=x", true),
        ] {
            assert_eq!(LabelSelector::parse(sel).unwrap().matches(&l), want, "{sel}");
        }
    }

    #[test]
    fn errors_are_worded_as_kube_apiserver() {
        assert_eq!(
            LabelSelector::parse("bad key!=x").unwrap_err(),
            "unable to parse requirement: found 'key', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            LabelSelector::parse("a=b,").unwrap_err(),
            "found '', expected: identifier after ','"
        );
        let long = "x".repeat(64);
        let message = LabelSelector::parse(&format!("env in (a,{long})")).unwrap_err();
        assert!(
            message.starts_with(&format!(
                "unable to parse requirement: values[1][env]: Invalid value: \"{long}\": "
            )),
            "{message}"
        );
        assert!(
            LabelSelector::parse("-bad=x")
                .unwrap_err()
                .starts_with("unable to parse requirement: key: Invalid value: \"-bad\": "),
        );
    }

    #[test]
    fn fields() {
        let o = serde_json::json!({"metadata": {"name": "a", "namespace": "n"}});
        assert!(FieldSelector::parse("metadata.name=a").unwrap().matches(&o));
        assert!(!FieldSelector::parse("metadata.name!=a").unwrap().matches(&o));
        assert_eq!(
            FieldSelector::parse("metadata.name").unwrap_err(),
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
        );
        let csr =
            serde_json::json!({"spec": {"signerName": "s", "usages": ["a"]}, "status": {"ok": true, "n": 3}});
        assert_eq!(field_value(&csr, "spec.signerName").as_deref(), Some("s"));
        assert_eq!(field_value(&csr, "status.ok").as_deref(), Some("true"));
        assert_eq!(field_value(&csr, "status.n").as_deref(), Some("3"));
        assert_eq!(field_value(&csr, "spec.usages"), None);
        assert_eq!(field_value(&csr, "spec.signerName.deeper"), None);
        assert_eq!(field_value(&csr, "metadata.name"), None);
        let by_name = FieldSelector::parse("metadata.name==a,metadata.namespace!=x").unwrap();
        assert_eq!(by_name.required("metadata.name"), Some("a"));
        assert_eq!(by_name.required("metadata.namespace"), None);
    }
}
