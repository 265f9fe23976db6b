//! Comparing a normalized actual body with the recorded one, loosened only where the fixtures'
//! README says the real server itself varies:
//!
//! - paths a scenario lists as `unordered` (multiset) or `volatile` (not compared);
//! - `metadata.managedFields`: a multiset whose operations keep their order (Apply before Update);
//! - the `resources` of a custom (CRD-served) group-version discovery document: a multiset;
//! - `details.causes` of a custom-resource `422` with several causes: a multiset, and the clauses of
//!   the message (built from the same causes) likewise;
//! - status written by kube-controller-manager's workload controllers (Deployment, ReplicaSet,
//!   ...), their kube-controller-manager `managedFields` entries, and their resourceVersion.
//!
//! A list's or bookmark's `metadata.resourceVersion` that is newer than recorded is accepted by
//! the normalizer (see `normalize.rs`), not here.

use serde_json::{Map, Value};

/// Groups served by kube-apiserver itself; every other group is served from CRDs.
const BUILT_IN_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// Kinds whose status kube-controller-manager writes concurrently with the steps.
const CONTROLLER_WRITTEN_KINDS: &[&str] = &["Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "Job"];

/// Annotations kube-controller-manager writes on controller-written kinds while the steps run (the
/// deployment controller's revision, which in the recordings races the patches); this server runs
/// no workload controllers.
const CONTROLLER_WRITTEN_ANNOTATIONS: &[&str] = &["deployment.kubernetes.io/revision"];

/// `annotations` without the controller-written ones; `None` when nothing else is left.
fn without_controller_annotations(v: Option<&Value>) -> Option<Value> {
    let mut m = v?.as_object()?.clone();
    for key in CONTROLLER_WRITTEN_ANNOTATIONS {
        m.remove(*key);
    }
    (!m.is_empty()).then_some(Value::Object(m))
}

/// One difference between the recorded and the actual value.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    /// Where (`steps[3].response.body.metadata.labels`).
    pub path: String,
    /// The recorded value (compact JSON, or a description).
    pub expected: String,
    /// The actual value.
    pub actual: String,
}

impl Diff {
    /// A difference of two values.
    pub fn new(path: &str, expected: impl Into<String>, actual: impl Into<String>) -> Self {
        Self {
            path: path.to_string(),
            expected: expected.into(),
            actual: actual.into(),
        }
    }
}

impl Diff {
    /// The difference as one line, each value shortened to `max` characters.
    pub fn render(&self, max: usize) -> String {
        format!(
            "{}: expected {}, got {}",
            self.path,
            clip(&self.expected, max),
            clip(&self.actual, max)
        )
    }
}

impl std::fmt::Display for Diff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(300))
    }
}

/// Shortens a text for display.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// Two long strings shown from a little before their first difference (JSON-quoted).
pub fn around_first_difference(expected: &str, actual: &str) -> (String, String) {
    let common = expected
        .chars()
        .zip(actual.chars())
        .take_while(|(e, a)| e == a)
        .count();
    let skip = common.saturating_sub(40);
    let cut = |text: &str| {
        let rest: String = text.chars().skip(skip).collect();
        let quoted = show(&Value::String(rest));
        if skip > 0 { format!("…{quoted}") } else { quoted }
    };
    (cut(expected), cut(actual))
}

/// Compact JSON of a value for messages.
pub fn show(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// The comparison rules of one step.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Paths compared as multisets (scenario `unordered`).
    pub unordered: Vec<String>,
    /// Paths not compared (scenario `volatile`).
    pub volatile: Vec<String>,
}

impl Rules {
    /// The scenario's `unordered`/`volatile` paths.
    pub fn new(unordered: &[String], volatile: &[String]) -> Self {
        Self {
            unordered: unordered.to_vec(),
            volatile: volatile.to_vec(),
        }
    }
}

/// The API group of a request path (`/apis/G/...` -> `G`, `/api/...` -> ``), if it is a resource path.
pub fn group_of(path: &str) -> Option<&str> {
    if path == "/api" || path.starts_with("/api/") {
        return Some("");
    }
    path.strip_prefix("/apis/")
        .map(|rest| rest.split('/').next().unwrap_or_default())
}

/// Whether a group is served from CRDs (not built into kube-apiserver).
pub fn is_custom_group(group: &str) -> bool {
    !BUILT_IN_GROUPS.contains(&group)
}

/// Rewrites the parts of a step's expected and actual bodies whose order the real server does not
/// fix (see the module docs), so that a plain comparison of the results is the right one.
pub fn canonicalize_step(request_path: &str, status: u16, body: &mut Value) {
    let custom = group_of(request_path).is_some_and(is_custom_group);
    if !custom {
        return;
    }
    let segments: Vec<&str> = request_path.trim_matches('/').split('/').collect();
    // /apis/G/V discovery document of a CRD group: resources in registration order.
    if segments.len() == 3
        && body.get("kind").and_then(Value::as_str) == Some("APIResourceList")
        && let Some(resources) = body.get_mut("resources").and_then(Value::as_array_mut)
    {
        resources.sort_by_key(show);
    }
    // A custom-resource 422 with several causes: causes and message clauses in any order.
    if status == 422 && body.get("kind").and_then(Value::as_str) == Some("Status") {
        sort_causes_and_clauses(body);
    }
}

fn sort_causes_and_clauses(body: &mut Value) {
    let Some(causes) = body.pointer("/details/causes").and_then(Value::as_array).cloned() else {
        return;
    };
    if causes.len() < 2 {
        return;
    }
    let clauses: Vec<String> = causes
        .iter()
        .map(|cause| {
            let field = cause.get("field").and_then(Value::as_str).unwrap_or_default();
            let message = cause.get("message").and_then(Value::as_str).unwrap_or_default();
            format!("{field}: {message}")
        })
        .collect();
    let joined = format!("[{}]", clauses.join(", "));
    if let Some(message) = body.get("message").and_then(Value::as_str)
        && let Some(prefix) = message.strip_suffix(joined.as_str())
    {
        let mut sorted = clauses.clone();
        sorted.sort();
        body["message"] = Value::String(format!("{prefix}[{}]", sorted.join(", ")));
    }
    let mut sorted = causes;
    sorted.sort_by_key(show);
    if let Some(slot) = body.pointer_mut("/details/causes") {
        *slot = Value::Array(sorted);
    }
}

/// Compares `actual` with `expected` at `path`, appending differences.
pub fn compare(expected: &Value, actual: &Value, path: &str, rules: &Rules, diffs: &mut Vec<Diff>) {
    walk(expected, actual, path, rules, None, diffs);
}

/// Whether two values compare equal under `rules`.
pub fn equal(expected: &Value, actual: &Value, path: &str, rules: &Rules) -> bool {
    let mut diffs = Vec::new();
    compare(expected, actual, path, rules, &mut diffs);
    diffs.is_empty()
}

fn walk(
    expected: &Value,
    actual: &Value,
    path: &str,
    rules: &Rules,
    kind: Option<&str>,
    diffs: &mut Vec<Diff>,
) {
    if rules.volatile.iter().any(|volatile| volatile == path) {
        return;
    }
    match (expected, actual) {
        (Value::Object(expected), Value::Object(actual)) => {
            objects(expected, actual, path, rules, kind, diffs)
        }
        (Value::Array(expected), Value::Array(actual)) => {
            if path.ends_with(".metadata.managedFields") {
                managed_fields(expected, actual, path, rules, kind, diffs);
            } else if rules.unordered.iter().any(|unordered| unordered == path) {
                multiset(expected, actual, path, rules, kind, diffs);
            } else {
                for (index, (e, a)) in expected.iter().zip(actual).enumerate() {
                    walk(e, a, &format!("{path}[{index}]"), rules, kind, diffs);
                }
                for (index, missing) in expected.iter().enumerate().skip(actual.len()) {
                    diffs.push(Diff::new(&format!("{path}[{index}]"), show(missing), "(missing)"));
                }
                for (index, extra) in actual.iter().enumerate().skip(expected.len()) {
                    diffs.push(Diff::new(&format!("{path}[{index}]"), "(nothing)", show(extra)));
                }
            }
        }
        (expected, actual) if expected == actual => {}
        (Value::String(expected), Value::String(actual)) => {
            let (expected, actual) = around_first_difference(expected, actual);
            diffs.push(Diff::new(path, expected, actual));
        }
        (expected, actual) => diffs.push(Diff::new(path, show(expected), show(actual))),
    }
}

fn objects(
    expected: &Map<String, Value>,
    actual: &Map<String, Value>,
    path: &str,
    rules: &Rules,
    inherited: Option<&str>,
    diffs: &mut Vec<Diff>,
) {
    let kind = expected.get("kind").and_then(Value::as_str).or(inherited);
    let controller_written = kind.is_some_and(|kind| CONTROLLER_WRITTEN_KINDS.contains(&kind));
    let mut keys: Vec<&String> = expected
        .keys()
        .chain(actual.keys().filter(|k| !expected.contains_key(*k)))
        .collect();
    keys.sort();
    for key in keys {
        let child = format!("{path}.{key}");
        if controller_written
            && (key == "status" || (key == "resourceVersion" && path.ends_with(".metadata")))
        {
            continue;
        }
        let child_kind = match kind {
            Some(kind) if key == "items" => Some(kind.strip_suffix("List").unwrap_or(kind)),
            other => other,
        };
        if controller_written && key == "annotations" && path.ends_with(".metadata") {
            let e = without_controller_annotations(expected.get(key));
            let a = without_controller_annotations(actual.get(key));
            match (&e, &a) {
                (Some(e), Some(a)) => walk(e, a, &child, rules, child_kind, diffs),
                (Some(e), None) => diffs.push(Diff::new(&child, show(e), "(missing)")),
                (None, Some(a)) => diffs.push(Diff::new(&child, "(absent)", show(a))),
                (None, None) => {}
            }
            continue;
        }
        match (expected.get(key), actual.get(key)) {
            (Some(e), Some(a)) => walk(e, a, &child, rules, child_kind, diffs),
            (Some(e), None) if !rules.volatile.contains(&child) => {
                diffs.push(Diff::new(&child, show(e), "(missing)"))
            }
            (None, Some(a)) if !rules.volatile.contains(&child) => {
                diffs.push(Diff::new(&child, "(absent)", show(a)))
            }
            _ => {}
        }
    }
}

/// Matches each expected element with an equal, not yet matched actual element.
fn multiset(
    expected: &[Value],
    actual: &[Value],
    path: &str,
    rules: &Rules,
    kind: Option<&str>,
    diffs: &mut Vec<Diff>,
) {
    let mut used = vec![false; actual.len()];
    let mut missing = Vec::new();
    for (index, e) in expected.iter().enumerate() {
        let element = format!("{path}[{index}]");
        let found = actual.iter().enumerate().position(|(j, a)| {
            if used[j] {
                return false;
            }
            let mut inner = Vec::new();
            walk(e, a, &element, rules, kind, &mut inner);
            inner.is_empty()
        });
        match found {
            Some(j) => used[j] = true,
            None => missing.push((index, e)),
        }
    }
    let extra: Vec<(usize, &Value)> = actual.iter().enumerate().filter(|(j, _)| !used[*j]).collect();
    // Pair leftovers positionally to show the finest differences.
    for (&(index, e), &(_, a)) in missing.iter().zip(&extra) {
        walk(e, a, &format!("{path}[{index}]"), rules, kind, diffs);
    }
    for (index, e) in missing.iter().skip(extra.len()) {
        let others = format!(
            "(no matching element; actual: {})",
            show(&Value::Array(actual.to_vec()))
        );
        diffs.push(Diff::new(&format!("{path}[{index}]"), show(e), others));
    }
    for (index, a) in extra.iter().skip(missing.len()) {
        diffs.push(Diff::new(
            &format!("{path}[{index}]"),
            "(no matching element)",
            show(a),
        ));
    }
}

/// managedFields: a multiset (ties at the same second come out either way) whose operations stay
/// in order; kube-controller-manager entries of controller-written kinds are not compared.
fn managed_fields(
    expected: &[Value],
    actual: &[Value],
    path: &str,
    rules: &Rules,
    kind: Option<&str>,
    diffs: &mut Vec<Diff>,
) {
    let controller_written = kind.is_some_and(|kind| CONTROLLER_WRITTEN_KINDS.contains(&kind));
    let keep = |entry: &&Value| {
        !(controller_written
            && entry.get("manager").and_then(Value::as_str) == Some("kube-controller-manager"))
    };
    let expected: Vec<Value> = expected.iter().filter(keep).cloned().collect();
    let actual: Vec<Value> = actual.iter().filter(keep).cloned().collect();
    let operations = |entries: &[Value]| -> Vec<String> {
        entries
            .iter()
            .map(|e| {
                e.get("operation")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    let before = diffs.len();
    multiset(&expected, &actual, path, rules, kind, diffs);
    if diffs.len() == before && operations(&expected) != operations(&actual) {
        diffs.push(Diff::new(
            &format!("{path}[*].operation"),
            format!("{:?}", operations(&expected)),
            format!("{:?}", operations(&actual)),
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_changed_field_is_reported_with_its_path() {
        let expected = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "items": [1, 2]});
        let actual = json!({"metadata": {"name": "a", "labels": {"x": "2"}}, "items": [1, 2, 3]});
        let mut diffs = Vec::new();
        compare(
            &expected,
            &actual,
            "steps[1].response.body",
            &Rules::default(),
            &mut diffs,
        );
        assert_eq!(
            diffs,
            vec![
                Diff::new("steps[1].response.body.items[2]", "(nothing)", "3"),
                Diff::new("steps[1].response.body.metadata.labels.x", "\"1\"", "\"2\""),
            ]
        );
    }

    #[test]
    fn unordered_volatile_and_managed_fields() {
        let rules = Rules::new(&["b.list".to_string()], &["b.noise".to_string()]);
        let expected = json!({"list": [1, 2, 3], "noise": 1, "metadata": {"managedFields": [
            {"manager": "a", "operation": "Apply"}, {"manager": "b", "operation": "Update"},
            {"manager": "c", "operation": "Update"}]}});
        let actual = json!({"list": [3, 1, 2], "noise": 2, "metadata": {"managedFields": [
            {"manager": "a", "operation": "Apply"}, {"manager": "c", "operation": "Update"},
            {"manager": "b", "operation": "Update"}]}});
        assert!(equal(&expected, &actual, "b", &rules));
        let swapped = json!({"list": [3, 1, 2], "noise": 2, "metadata": {"managedFields": [
            {"manager": "c", "operation": "Update"}, {"manager": "a", "operation": "Apply"},
            {"manager": "b", "operation": "Update"}]}});
        assert!(!equal(&expected, &swapped, "b", &rules));
        assert!(!equal(
            &expected,
            &json!({"list": [3, 1, 1], "noise": 2, "metadata": actual["metadata"]}),
            "b",
            &rules
        ));
    }

    #[test]
    fn custom_resource_causes_and_message_clauses() {
        let status = |order: [usize; 2]| {
            let causes = [("spec.a", "Required value"), ("spec.b", "Invalid value: 1: bad")];
            let picked: Vec<_> = order.iter().map(|&i| causes[i]).collect();
            json!({"kind": "Status", "code": 422,
            "message": format!(
                "X.g.io \"x\" is invalid: [{}: {}, {}: {}]",
                picked[0].0, picked[0].1, picked[1].0, picked[1].1
            ),
            "details": {
                "causes": picked.iter().map(|(f, m)| json!({"field": f, "message": m})).collect::<Vec<_>>()
            }})
        };
        let (mut expected, mut actual) = (status([0, 1]), status([1, 0]));
        assert!(!equal(&expected, &actual, "b", &Rules::default()));
        canonicalize_step("/apis/g.io/v1/xs", 422, &mut expected);
        canonicalize_step("/apis/g.io/v1/xs", 422, &mut actual);
        assert!(equal(&expected, &actual, "b", &Rules::default()));
        // Built-in kinds keep their order.
        let (mut expected, mut actual) = (status([0, 1]), status([1, 0]));
        canonicalize_step("/api/v1/namespaces/x/configmaps", 422, &mut expected);
        canonicalize_step("/api/v1/namespaces/x/configmaps", 422, &mut actual);
        assert!(!equal(&expected, &actual, "b", &Rules::default()));
    }

    #[test]
    fn controller_written_annotations_are_not_compared() {
        let rules = Rules::default();
        let expected = json!({"kind": "Deployment", "metadata": {"annotations": {"deployment.kubernetes.io/revision": "2"}}});
        let actual = json!({"kind": "Deployment", "metadata": {}});
        assert!(equal(&expected, &actual, "b", &rules));
        let actual = json!({"kind": "Deployment", "metadata": {"annotations": {"other": "x"}}});
        assert!(!equal(&expected, &actual, "b", &rules));
        let configmap = json!({"kind": "ConfigMap", "metadata": {"annotations": {"deployment.kubernetes.io/revision": "2"}}});
        assert!(!equal(
            &configmap,
            &json!({"kind": "ConfigMap", "metadata": {}}),
            "b",
            &rules
        ));
    }

    #[test]
    fn controller_written_status_is_not_compared() {
        let status = json!({"replicas": 1});
        let expected =
            json!({"kind": "Deployment", "metadata": {"resourceVersion": "<rv:3>"}, "status": status});
        let actual = json!({"kind": "Deployment", "metadata": {"resourceVersion": "<rv:4>"}});
        assert!(equal(&expected, &actual, "b", &Rules::default()));
    }
}
