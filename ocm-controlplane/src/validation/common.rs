//! Validators shared by several kinds: labels and annotations at any path, label selectors (their
//! validity, whether they parse, whether they match a set of labels), names of referenced objects,
//! and IntOrString percentages.

use serde_json::{Map, Value, json};

use super::field::{self, Errors, Path};
use crate::validation::{dns1123_label, dns1123_subdomain, label_value, qualified_name};

/// apimachinery's `ValidateLabels` at `path`: every key a qualified name, every value a label value.
pub fn labels(map: Option<&Value>, path: &Path) -> Errors {
    let mut errs = Errors::new();
    if let Some(m) = map.and_then(Value::as_object) {
        for (k, v) in m {
            errs.extend(field::each(path, k, qualified_name(k)));
            let v = v.as_str().unwrap_or_default();
            errs.extend(field::each(path, v, label_value(v)));
        }
    }
    errs
}

/// apimachinery's `ValidateAnnotations` at `path`: keys are qualified names (case-insensitive), the
/// total size is at most 256 KiB.
pub fn annotations(map: Option<&Value>, path: &Path) -> Errors {
    let mut errs = Errors::new();
    if let Some(m) = map.and_then(Value::as_object) {
        let mut total = 0;
        for (k, v) in m {
            total += k.len() + v.as_str().map(str::len).unwrap_or(0);
            errs.extend(field::each(path, k, qualified_name(&k.to_lowercase())));
        }
        if total > 256 * 1024 {
            errs.push(field::too_long(path, 256 * 1024));
        }
    }
    errs
}

/// `Invalid` causes of a DNS-1123 label at `path`.
pub fn dns_label(value: &str, path: &Path) -> Errors {
    field::each(path, value, dns1123_label(value))
}

/// `Invalid` causes of a DNS-1123 subdomain at `path`.
pub fn dns_subdomain(value: &str, path: &Path) -> Errors {
    field::each(path, value, dns1123_subdomain(value))
}

/// `Invalid` causes of a label key (qualified name) at `path`.
pub fn label_name(value: &str, path: &Path) -> Errors {
    field::each(path, value, qualified_name(value))
}

/// apimachinery's `ValidateLabelSelector` (label values in expressions must be valid).
pub fn label_selector(selector: &Value, path: &Path) -> Errors {
    let mut errs = labels(selector.get("matchLabels"), &path.child("matchLabels"));
    for (i, expr) in field::list(selector, "matchExpressions").iter().enumerate() {
        let p = path.child("matchExpressions").index(i);
        let values = field::list(expr, "values");
        let op = field::s(expr, "operator");
        match op {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(field::required(
                        &p.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(field::forbidden(
                        &p.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            _ => errs.push(field::invalid_str(
                &p.child("operator"),
                op,
                "not a valid selector operator",
            )),
        }
        errs.extend(label_name(field::s(expr, "key"), &p.child("key")));
        for (j, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or_default();
            errs.extend(field::each(&p.child("values").index(j), v, label_value(v)));
        }
    }
    errs
}

/// Whether `LabelSelectorAsSelector` accepts the selector (its requirements are well formed).
pub fn selector_parses(selector: &Value) -> bool {
    label_selector(selector, &Path::new("")).is_empty()
}

/// A label selector with neither `matchLabels` nor `matchExpressions`.
pub fn selector_is_empty(selector: &Value) -> bool {
    let labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    labels && field::list(selector, "matchExpressions").is_empty()
}

/// Whether the selector matches `labels` (a `null`/absent selector matches nothing).
pub fn selector_matches(selector: Option<&Value>, labels: Option<&Value>) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return false;
    };
    let empty = Map::new();
    let labels = labels.and_then(Value::as_object).unwrap_or(&empty);
    let get = |k: &str| labels.get(k).and_then(Value::as_str);
    for (k, v) in field::string_map(selector, "matchLabels") {
        if get(k) != Some(v) {
            return false;
        }
    }
    for expr in field::list(selector, "matchExpressions") {
        let key = field::s(expr, "key");
        let values: Vec<&str> = field::list(expr, "values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let ok = match field::s(expr, "operator") {
            "In" => get(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => get(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => get(key).is_some(),
            "DoesNotExist" => get(key).is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// A template's labels as apimachinery renders them in `selector does not match` causes.
pub fn labels_value(labels: Option<&Value>) -> Value {
    match labels {
        Some(Value::Object(m)) if !m.is_empty() => {
            let mut sorted: Vec<(&String, &Value)> = m.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        }
        Some(Value::Object(_)) => json!({}),
        _ => Value::Null,
    }
}

/// An owner reference as Go marshals it: `uid` always, `controller` and `blockOwnerDeletion` when set.
fn go_owner_reference(r: &Value) -> Value {
    let mut m = serde_json::Map::new();
    for key in ["apiVersion", "kind", "name", "uid"] {
        m.insert(key.into(), json!(field::s(r, key)));
    }
    for key in ["controller", "blockOwnerDeletion"] {
        if let Some(b) = r.get(key).and_then(Value::as_bool) {
            m.insert(key.into(), json!(b));
        }
    }
    Value::Object(m)
}

/// apimachinery's `ValidateOwnerReferences` of `metadata.ownerReferences`.
pub fn owner_references(meta: &Value) -> Errors {
    let path = Path::new("metadata").child("ownerReferences");
    let refs = field::list(meta, "ownerReferences");
    let mut errs = Errors::new();
    let mut first_controller: Option<String> = None;
    for r in refs {
        let api_version = field::s(r, "apiVersion");
        let version = api_version.rsplit('/').next().unwrap_or_default();
        if version.is_empty() {
            errs.push(field::invalid_str(
                &path.child("apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        for key in ["kind", "name", "uid"] {
            let v = field::s(r, key);
            if v.is_empty() {
                errs.push(field::invalid_str(&path.child(key), v, "must not be empty"));
            }
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{}/{}", field::s(r, "kind"), field::s(r, "name"));
            match &first_controller {
                Some(first) => errs.push(field::invalid(
                    &path,
                    &Value::Array(refs.iter().map(go_owner_reference).collect()),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

/// `intOrString` holding a percentage: its number, if it is a valid percent string.
pub fn percent(v: &Value) -> Option<i64> {
    let s = v.as_str()?;
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The value of an int-or-percent (`IntValue` of a non-percent string is 0, as in Go).
pub fn int_or_percent_value(v: &Value) -> i64 {
    match v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => percent(v).unwrap_or_else(|| s.parse().unwrap_or(0)),
        _ => 0,
    }
}

/// apps' `ValidatePositiveIntOrPercent`.
pub fn positive_int_or_percent(v: &Value, path: &Path) -> Errors {
    match v {
        Value::String(s) if percent(v).is_none() => vec![field::invalid_str(
            path,
            s,
            "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        )],
        Value::Number(n) => field::nonnegative(n.as_i64(), path),
        _ => Vec::new(),
    }
}

/// apps' `IsNotMoreThan100Percent`.
pub fn not_more_than_100_percent(v: &Value, path: &Path) -> Errors {
    match percent(v) {
        Some(p) if p > 100 => vec![field::invalid(path, v, "must not be greater than 100%")],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_like_kube() {
        let sel = json!({"matchLabels": {"app": "a"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["x", "y"]}]});
        assert!(selector_matches(
            Some(&sel),
            Some(&json!({"app": "a", "tier": "y"}))
        ));
        assert!(!selector_matches(Some(&sel), Some(&json!({"app": "a"}))));
        assert!(!selector_matches(None, Some(&json!({"app": "a"}))));
        assert!(selector_matches(Some(&json!({})), None));
        let bad = json!({"matchExpressions": [{"key": "k", "operator": "Near"}]});
        let errs = label_selector(&bad, &Path::new("spec.selector"));
        assert_eq!(errs[0].field, "spec.selector.matchExpressions[0].operator");
        assert_eq!(
            errs[0].message,
            "Invalid value: \"Near\": not a valid selector operator"
        );
        assert!(!selector_parses(&bad));
    }

    #[test]
    fn percents() {
        assert_eq!(percent(&json!("25%")), Some(25));
        assert_eq!(percent(&json!("x%")), None);
        assert_eq!(int_or_percent_value(&json!(3)), 3);
        assert_eq!(
            not_more_than_100_percent(&json!("101%"), &Path::new("m"))[0].message,
            "Invalid value: \"101%\": must not be greater than 100%"
        );
    }
}
