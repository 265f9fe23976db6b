//! rbac.authorization.k8s.io/v1 kinds as kube-apiserver defaults and validates them: policy rules
//! of Roles and ClusterRoles, aggregation rules, and the `roleRef` and subjects of bindings.
//!
//! A binding's `roleRef` immutability is not decided here (it is part of the bindings' update
//! rules handled with the bind-escalation check).

use serde_json::{Value, json};

use super::common::{dns_subdomain, label_selector, selector_parses};
use super::field::{self, Errors, Path};

const GROUP: &str = "rbac.authorization.k8s.io";

/// Scheme defaults: a binding's `roleRef.apiGroup` and the `apiGroup` of User and Group subjects.
pub fn default(resource: &str, object: &mut Value) {
    if !resource.ends_with("bindings") {
        return;
    }
    if let Some(role_ref) = object.get_mut("roleRef").and_then(Value::as_object_mut)
        && role_ref
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        role_ref.insert("apiGroup".into(), json!(GROUP));
    }
    if let Some(subjects) = object.get_mut("subjects").and_then(Value::as_array_mut) {
        for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
            let empty = s
                .get("apiGroup")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            let kind = s.get("kind").and_then(Value::as_str).unwrap_or_default();
            if empty && (kind == "User" || kind == "Group") {
                s.insert("apiGroup".into(), json!(GROUP));
            }
        }
    }
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    field::list(v, key)
        .iter()
        .map(|x| x.as_str().unwrap_or_default().to_string())
        .collect()
}

/// `ValidatePolicyRule`.
fn rule(r: &Value, namespaced: bool, path: &Path) -> Errors {
    let mut errs = Errors::new();
    if field::list(r, "verbs").is_empty() {
        errs.push(field::required(
            &path.child("verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = strings(r, "nonResourceURLs");
    if !urls.is_empty() {
        let p = path.child("nonResourceURLs");
        if namespaced {
            errs.push(field::invalid(
                &p,
                &json!(urls),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        let has_resources = ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|k| !field::list(r, k).is_empty());
        if has_resources {
            errs.push(field::invalid(
                &p,
                &json!(urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if field::list(r, "apiGroups").is_empty() {
        errs.push(field::required(
            &path.child("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if field::list(r, "resources").is_empty() {
        errs.push(field::required(
            &path.child("resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errs
}

/// A Role (`namespaced`) or ClusterRole.
pub fn role(o: &Value, namespaced: bool) -> Errors {
    let mut errs = Errors::new();
    for (i, r) in field::list(o, "rules").iter().enumerate() {
        errs.extend(rule(r, namespaced, &Path::new("rules").index(i)));
    }
    if !namespaced && let Some(agg) = field::opt(o, "aggregationRule") {
        let p = Path::new("aggregationRule").child("clusterRoleSelectors");
        let selectors = field::list(agg, "clusterRoleSelectors");
        if selectors.is_empty() {
            errs.push(field::required(
                &p,
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, sel) in selectors.iter().enumerate() {
            let sp = p.index(i);
            errs.extend(label_selector(sel, &sp));
            if !selector_parses(sel) {
                // kube-apiserver shows the (nil) parsed selector, not the one sent.
                errs.push(field::invalid(&sp, &Value::Null, "invalid label selector."));
            }
        }
    }
    errs
}

fn path_segment(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|c| name.contains(*c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

fn subject(s: &Value, namespaced: bool, path: &Path) -> Errors {
    let mut errs = Errors::new();
    let name = field::s(s, "name");
    if name.is_empty() {
        errs.push(field::required(&path.child("name"), ""));
    }
    let group = field::s(s, "apiGroup");
    match field::s(s, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                errs.extend(dns_subdomain(name, &path.child("name")));
            }
            if !group.is_empty() {
                errs.push(field::not_supported(
                    &path.child("apiGroup"),
                    &json!(group),
                    &[""],
                ));
            }
            if !namespaced && field::s(s, "namespace").is_empty() {
                errs.push(field::required(&path.child("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != GROUP {
                errs.push(field::not_supported(
                    &path.child("apiGroup"),
                    &json!(group),
                    &[GROUP],
                ));
            }
        }
        other => errs.push(field::not_supported(
            &path.child("kind"),
            &json!(other),
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

/// A RoleBinding (`namespaced`) or ClusterRoleBinding.
pub fn binding(o: &Value, namespaced: bool) -> Errors {
    let mut errs = Errors::new();
    let role_ref = o.get("roleRef").unwrap_or(&Value::Null);
    let rp = Path::new("roleRef");
    let group = field::s(role_ref, "apiGroup");
    if group != GROUP {
        errs.push(field::not_supported(
            &rp.child("apiGroup"),
            &json!(group),
            &[GROUP],
        ));
    }
    let kind = field::s(role_ref, "kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(field::not_supported(&rp.child("kind"), &json!(kind), kinds));
    }
    let name = field::s(role_ref, "name");
    if name.is_empty() {
        errs.push(field::required(&rp.child("name"), ""));
    } else {
        errs.extend(field::each(&rp.child("name"), name, path_segment(name)));
    }
    for (i, s) in field::list(o, "subjects").iter().enumerate() {
        errs.extend(subject(s, namespaced, &Path::new("subjects").index(i)));
    }
    errs
}
