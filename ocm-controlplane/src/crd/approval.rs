//! The API approval policy of protected groups, as kube-apiserver applies it to CRDs.
//!
//! Groups `k8s.io` and `kubernetes.io` and their subdomains belong to the Kubernetes project. A CRD
//! in one of them must carry the annotation `api-approved.kubernetes.io`: either the URL where the
//! API was approved (`https://github.com/kubernetes/enhancements/pull/…`) or a text starting with
//! `unapproved` (accepted, but reported as not conformant). Creating such a CRD without it, or
//! with anything else, answers 422; an update is only checked when it changes the approval state
//! (so controllers that only touch the spec of an old CRD keep working). The CRD controller
//! reports the state in the condition `KubernetesAPIApprovalPolicyConformant`
//! ([`condition`]).

use serde_json::{Value, json};

use crate::status::Cause;

/// The annotation naming where an API in a protected group was approved.
pub const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// The condition type reporting the approval state.
pub const CONDITION_TYPE: &str = "KubernetesAPIApprovalPolicyConformant";

/// Whether `group` is reserved for the Kubernetes project.
pub fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

/// What the approval annotation of a CRD says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalState {
    /// No annotation, or an empty one.
    Missing,
    /// A text starting with `unapproved`.
    Bypassed,
    /// A URL with a scheme and a host.
    Approved,
    /// Anything else.
    Invalid,
}

/// The approval state of annotations `annotations` and kube's words for it.
pub fn state(annotations: Option<&Value>) -> (ApprovalState, String) {
    let value = annotations
        .and_then(|a| a.get(APPROVAL_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if value.is_empty() {
        (
            ApprovalState::Missing,
            format!(
                "protected groups must have approval annotation {APPROVAL_ANNOTATION:?}, see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        )
    } else if value.starts_with("unapproved") {
        (ApprovalState::Bypassed, format!("not approved: {value:?}"))
    } else if request_uri_has_scheme_and_host(value) {
        (ApprovalState::Approved, format!("approved in {value}"))
    } else {
        (
            ApprovalState::Invalid,
            format!(
                "protected groups must have approval annotation {APPROVAL_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        )
    }
}

/// Whether `s` parses as an absolute request URI (Go's `url.ParseRequestURI`) with a non-empty
/// scheme and host.
fn request_uri_has_scheme_and_host(s: &str) -> bool {
    if s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return false;
    }
    let Some(after) = rest.strip_prefix("//") else {
        return false;
    };
    let authority = after.split(['/', '?']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host_port.is_empty() {
        return false;
    }
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        match bracketed.split_once(']') {
            Some((_, port)) if port.is_empty() || valid_port(port) => return true,
            _ => return false,
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) if valid_port(&format!(":{port}")) => host,
            Some(_) => return false,
            None => host_port,
        }
    };
    host.bytes()
        .all(|b| b >= 0x80 || b.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"%".contains(&b))
}

/// `:` followed by digits only (or nothing), as Go's URL parser wants a port.
fn valid_port(port: &str) -> bool {
    port.strip_prefix(':')
        .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

fn group_of(crd: &Value) -> &str {
    crd.pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn annotations(crd: &Value) -> Option<&Value> {
    crd.pointer("/metadata/annotations")
}

/// The causes of refusing `crd` (replacing `old` on update) for its approval annotation.
pub fn validate(crd: &Value, old: Option<&Value>) -> Vec<Cause> {
    if !is_protected_group(group_of(crd)) {
        return Vec::new();
    }
    let (new_state, reason) = state(annotations(crd));
    if let Some(old) = old
        && state(annotations(old)).0 == new_state
    {
        return Vec::new();
    }
    let field = format!("metadata.annotations[{APPROVAL_ANNOTATION}]");
    match new_state {
        ApprovalState::Approved | ApprovalState::Bypassed => Vec::new(),
        ApprovalState::Missing => vec![Cause::required(field, &reason)],
        ApprovalState::Invalid => {
            let value = annotations(crd)
                .and_then(|a| a.get(APPROVAL_ANNOTATION))
                .cloned()
                .unwrap_or(json!(""));
            vec![Cause::invalid(field, &value, &reason)]
        }
    }
}

/// The `KubernetesAPIApprovalPolicyConformant` condition of `crd` (without
/// `lastTransitionTime`), `None` outside protected groups.
pub fn condition(crd: &Value) -> Option<Value> {
    if !is_protected_group(group_of(crd)) {
        return None;
    }
    let (state, message) = state(annotations(crd));
    let (status, reason) = match state {
        ApprovalState::Invalid => ("False", "InvalidAnnotation"),
        ApprovalState::Missing => ("False", "MissingAnnotation"),
        ApprovalState::Approved => ("True", "ApprovedAnnotation"),
        ApprovalState::Bypassed => ("False", "UnapprovedAnnotation"),
    };
    Some(json!({"type": CONDITION_TYPE, "status": status, "reason": reason, "message": message}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(group: &str, annotation: Option<&str>) -> Value {
        let mut c = json!({"metadata": {"name": "x"}, "spec": {"group": group}});
        if let Some(a) = annotation {
            c["metadata"]["annotations"] = json!({APPROVAL_ANNOTATION: a});
        }
        c
    }

    #[test]
    fn protected_groups_are_the_kubernetes_domains() {
        for g in ["k8s.io", "about.k8s.io", "a.b.kubernetes.io", "kubernetes.io"] {
            assert!(is_protected_group(g), "{g}");
        }
        for g in [
            "example.com",
            "xk8s.io",
            "k8s.io.example.com",
            "notkubernetes.io",
            "",
        ] {
            assert!(!is_protected_group(g), "{g}");
        }
    }

    #[test]
    fn annotation_values_map_to_kubes_states() {
        let cases = [
            (None, ApprovalState::Missing),
            (Some(""), ApprovalState::Missing),
            (Some("unapproved"), ApprovalState::Bypassed),
            (Some("unapproved, experimental only"), ApprovalState::Bypassed),
            (
                Some("https://github.com/kubernetes/enhancements/pull/3084"),
                ApprovalState::Approved,
            ),
            (Some("http://example.com"), ApprovalState::Approved),
            (Some("https://example.com:8443/x?y=1"), ApprovalState::Approved),
            (
                Some("github.com/kubernetes/enhancements/pull/1"),
                ApprovalState::Invalid,
            ),
            (Some("https://"), ApprovalState::Invalid),
            (Some("mailto:someone@example.com"), ApprovalState::Invalid),
            (Some("https://exa mple.com/"), ApprovalState::Invalid),
            (Some("https://example.com:80x/"), ApprovalState::Invalid),
            (Some("approved"), ApprovalState::Invalid),
            (Some("Unapproved"), ApprovalState::Invalid),
        ];
        for (value, expected) in cases {
            let c = crd("about.k8s.io", value);
            assert_eq!(state(annotations(&c)).0, expected, "{value:?}");
        }
    }

    #[test]
    fn refusals_name_the_annotation_as_kube_does() {
        let missing = validate(&crd("about.k8s.io", None), None);
        assert_eq!(missing.len(), 1);
        assert_eq!(
            missing[0].field,
            "metadata.annotations[api-approved.kubernetes.io]"
        );
        assert_eq!(
            missing[0].message,
            "Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
        );
        let invalid = validate(&crd("x.k8s.io", Some("maybe")), None);
        assert_eq!(
            invalid[0].message,
            "Invalid value: \"maybe\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
        );
        assert!(validate(&crd("example.com", None), None).is_empty());
        assert!(validate(&crd("about.k8s.io", Some("unapproved")), None).is_empty());
    }

    #[test]
    fn updates_are_checked_only_when_the_state_changes() {
        let old = crd("about.k8s.io", None);
        assert!(validate(&crd("about.k8s.io", None), Some(&old)).is_empty());
        let approved = crd("about.k8s.io", Some("https://example.com/1"));
        assert_eq!(validate(&old, Some(&approved)).len(), 1);
        assert!(validate(&approved, Some(&old)).is_empty());
    }

    #[test]
    fn condition_reports_each_state() {
        let reason = |v: Option<&str>| condition(&crd("about.k8s.io", v)).map(|c| c["reason"].clone());
        assert_eq!(
            reason(Some("https://example.com/1")),
            Some(json!("ApprovedAnnotation"))
        );
        assert_eq!(
            reason(Some("unapproved: testing")),
            Some(json!("UnapprovedAnnotation"))
        );
        assert_eq!(reason(Some("nope")), Some(json!("InvalidAnnotation")));
        assert_eq!(reason(None), Some(json!("MissingAnnotation")));
        assert!(condition(&crd("example.com", None)).is_none());
        let approved = condition(&crd("about.k8s.io", Some("https://example.com/1"))).unwrap();
        assert_eq!(approved["status"], "True");
        assert_eq!(approved["message"], "approved in https://example.com/1");
        let bypassed = condition(&crd("about.k8s.io", Some("unapproved: testing"))).unwrap();
        assert_eq!(bypassed["message"], "not approved: \"unapproved: testing\"");
    }
}
