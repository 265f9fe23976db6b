//! The review kinds, answered by the server's authenticator and authorizer and never stored:
//! SelfSubjectReview (who am I), SubjectAccessReview, LocalSubjectAccessReview,
//! SelfSubjectAccessReview (may this user do that) and SelfSubjectRulesReview (what may I do in
//! a namespace). Bodies are echoed with `status` filled in, as kube-apiserver answers them.

use serde_json::{Map, Value, json};

use crate::auth::{Identity, UserInfo};
use crate::authorization::{Attributes, Authorizer, Decision, Target};
use crate::status::ApiError;

/// Which review a POST is for, from its group and resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// `authentication.k8s.io` selfsubjectreviews.
    SelfSubject,
    /// `authentication.k8s.io` tokenreviews (answered with [`token_review`]).
    Token,
    /// `authorization.k8s.io` subjectaccessreviews.
    SubjectAccess,
    /// `authorization.k8s.io` localsubjectaccessreviews.
    LocalSubjectAccess,
    /// `authorization.k8s.io` selfsubjectaccessreviews.
    SelfSubjectAccess,
    /// `authorization.k8s.io` selfsubjectrulesreviews.
    SelfSubjectRules,
}

impl Review {
    /// The review served at `group`/`resource`, if any.
    pub fn of(group: &str, resource: &str) -> Option<Review> {
        match (group, resource) {
            ("authentication.k8s.io", "selfsubjectreviews") => Some(Review::SelfSubject),
            ("authentication.k8s.io", "tokenreviews") => Some(Review::Token),
            ("authorization.k8s.io", "subjectaccessreviews") => Some(Review::SubjectAccess),
            ("authorization.k8s.io", "localsubjectaccessreviews") => Some(Review::LocalSubjectAccess),
            ("authorization.k8s.io", "selfsubjectaccessreviews") => Some(Review::SelfSubjectAccess),
            ("authorization.k8s.io", "selfsubjectrulesreviews") => Some(Review::SelfSubjectRules),
            _ => None,
        }
    }
}

fn s(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// The attributes a review's `spec` asks about.
fn spec_attributes(spec: &Value) -> Result<Attributes, ApiError> {
    if let Some(r) = spec.get("resourceAttributes").filter(|r| r.is_object()) {
        let namespace = s(r, "namespace");
        return Ok(Attributes {
            verb: s(r, "verb"),
            target: Target::Resource {
                namespace: (!namespace.is_empty()).then_some(namespace),
                group: s(r, "group"),
                resource: s(r, "resource"),
                subresource: s(r, "subresource"),
                name: s(r, "name"),
            },
        });
    }
    if let Some(n) = spec.get("nonResourceAttributes").filter(|n| n.is_object()) {
        return Ok(Attributes {
            verb: s(n, "verb"),
            target: Target::NonResource { path: s(n, "path") },
        });
    }
    Err(invalid(
        "spec.resourceAttributes",
        "exactly one of nonResourceAttributes or resourceAttributes must be specified",
    ))
}

fn invalid(field: &str, detail: &str) -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        format!("{field}: Invalid value: \"null\": {detail}"),
    )
}

/// `fieldsV1` of the fields set in `value` (what the request's managedFields entry records).
fn fields_of(value: &Value, member: bool) -> Value {
    let mut out = Map::new();
    if let Some(map) = value.as_object() {
        if member {
            out.insert(".".into(), json!({}));
        }
        for (k, v) in map {
            let child = if v.is_object() {
                fields_of(v, true)
            } else {
                json!({})
            };
            out.insert(format!("f:{k}"), child);
        }
    }
    Value::Object(out)
}

fn with_status(mut body: Value, spec_fields: bool, manager: &str, status: Value) -> Value {
    let api_version = s(&body, "apiVersion");
    if let Some(map) = body.as_object_mut() {
        let meta = map.entry("metadata").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        if spec_fields && let Some(spec) = map.get("spec").cloned() {
            let entry = json!({
                "apiVersion": api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": fields_of(&spec, false)},
                "manager": manager,
                "operation": "Update",
                "time": crate::fieldmanager::now_rfc3339(),
            });
            if let Some(m) = map.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("managedFields".into(), json!([entry]));
            }
        }
        map.insert("status".into(), status);
    }
    body
}

fn access_status(decision: &Decision) -> Value {
    match decision {
        Decision::Allow { reason } if reason.is_empty() => json!({"allowed": true}),
        Decision::Allow { reason } => json!({"allowed": true, "reason": reason}),
        Decision::NoOpinion => json!({"allowed": false}),
    }
}

fn rule_json(rule: &crate::authorization::rbac::Rule) -> Value {
    let mut m = Map::new();
    m.insert("verbs".into(), json!(rule.verbs));
    if rule.non_resource_urls.is_empty() {
        m.insert("apiGroups".into(), json!(rule.api_groups));
        m.insert("resources".into(), json!(rule.resources));
        if !rule.resource_names.is_empty() {
            m.insert("resourceNames".into(), json!(rule.resource_names));
        }
    } else {
        m.insert("nonResourceURLs".into(), json!(rule.non_resource_urls));
    }
    Value::Object(m)
}

/// Answers a review POSTed by `requester` (already authorized to create it) in `namespace`.
pub fn answer(
    review: Review,
    authorizer: &Authorizer,
    requester: &Identity,
    namespace: Option<&str>,
    manager: &str,
    body: &[u8],
) -> Result<Value, ApiError> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}")))?;
    if !body.is_object() {
        return Err(ApiError::bad_request("the body is not an object"));
    }
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    match review {
        Review::Token => Err(ApiError::internal("a TokenReview is answered by token_review")),
        Review::SelfSubject => {
            let mut out = json!({"apiVersion": s(&body, "apiVersion"), "kind": "SelfSubjectReview",
                "metadata": {"creationTimestamp": crate::fieldmanager::now_rfc3339()},
                "status": {"userInfo": requester.to_json()}});
            if out["apiVersion"] == "" {
                out["apiVersion"] = json!("authentication.k8s.io/v1");
            }
            Ok(out)
        }
        Review::SelfSubjectAccess => {
            let attributes = spec_attributes(&spec)?;
            let decision = authorizer.authorize(&requester.user, &attributes);
            Ok(with_status(body, true, manager, access_status(&decision)))
        }
        Review::SubjectAccess | Review::LocalSubjectAccess => {
            let attributes = spec_attributes(&spec)?;
            if review == Review::LocalSubjectAccess
                && let Target::Resource { namespace: asked, .. } = &attributes.target
                && asked.as_deref() != namespace
            {
                return Err(ApiError::bad_request(format!(
                    "spec.resourceAttributes.namespace must match namespace: {}",
                    namespace.unwrap_or_default()
                )));
            }
            let user = UserInfo {
                name: s(&spec, "user"),
                groups: spec
                    .get("groups")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                    .unwrap_or_default(),
            };
            let decision = authorizer.authorize(&user, &attributes);
            Ok(with_status(body, true, manager, access_status(&decision)))
        }
        Review::SelfSubjectRules => {
            let ns = s(&spec, "namespace");
            let granted = authorizer.rules_for(&requester.user, &ns);
            let privileged = requester.user.in_group(crate::authorization::SYSTEM_MASTERS);
            let mut resource_rules: Vec<Value> = Vec::new();
            let mut non_resource_rules: Vec<Value> = Vec::new();
            if privileged {
                resource_rules.push(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
                non_resource_rules.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
            }
            for g in granted {
                let rule = rule_json(&g.rule);
                let list = if g.rule.non_resource_urls.is_empty() {
                    &mut resource_rules
                } else {
                    &mut non_resource_rules
                };
                if !list.contains(&rule) {
                    list.push(rule);
                }
            }
            let key = |v: &Value, fields: &[&str]| -> Vec<String> {
                fields
                    .iter()
                    .map(|f| v.get(*f).map(Value::to_string).unwrap_or_default())
                    .collect()
            };
            resource_rules.sort_by_key(|v| key(v, &["apiGroups", "resources", "resourceNames", "verbs"]));
            non_resource_rules.sort_by_key(|v| key(v, &["nonResourceURLs", "verbs"]));
            let mut out = json!({"apiVersion": s(&body, "apiVersion"), "kind": "SelfSubjectRulesReview",
                "metadata": {}, "spec": {},
                "status": {"incomplete": false, "nonResourceRules": non_resource_rules, "resourceRules": resource_rules}});
            if out["apiVersion"] == "" {
                out["apiVersion"] = json!("authorization.k8s.io/v1");
            }
            Ok(out)
        }
    }
}

fn parse(body: &[u8]) -> Result<Value, ApiError> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}")))?;
    if !body.is_object() {
        return Err(ApiError::bad_request("the body is not an object"));
    }
    Ok(body)
}

/// The `spec.token` and `spec.audiences` of a TokenReview.
pub fn token_of(body: &[u8]) -> Result<(String, Vec<String>), ApiError> {
    let body = parse(body)?;
    let token = s(body.get("spec").unwrap_or(&Value::Null), "token");
    let audiences = body
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    Ok((token, audiences))
}

/// The answer to a TokenReview whose token authenticated as `result` (or did not, `None`).
pub fn token_review(
    body: &[u8],
    manager: &str,
    result: Option<(Identity, Vec<String>)>,
) -> Result<Value, ApiError> {
    let body = parse(body)?;
    let status = match result {
        Some((identity, audiences)) => {
            json!({"authenticated": true, "user": identity.to_json(), "audiences": audiences})
        }
        None => json!({"user": {}, "error": "invalid bearer token"}),
    };
    Ok(with_status(body, true, manager, status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_sets_mark_nested_objects_as_members() {
        let spec = json!({"groups": ["devs"], "resourceAttributes": {"namespace": "a", "verb": "get"}, "user": "alice"});
        assert_eq!(
            fields_of(&spec, false),
            json!({"f:groups": {}, "f:resourceAttributes": {".": {}, "f:namespace": {}, "f:verb": {}}, "f:user": {}})
        );
    }

    #[test]
    fn access_reviews_answer_with_the_authorizer() {
        let authorizer = Authorizer::new();
        let admin = Identity::of(UserInfo {
            name: "admin".into(),
            groups: vec!["system:masters".into()],
        });
        let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "alice", "resourceAttributes": {"namespace": "a", "resource": "configmaps", "verb": "get"}}});
        let out = answer(
            Review::SubjectAccess,
            &authorizer,
            &admin,
            None,
            "m",
            body.to_string().as_bytes(),
        )
        .unwrap();
        assert_eq!(out["status"], json!({"allowed": false}));
        assert_eq!(out["metadata"]["managedFields"][0]["manager"], "m");
        let own = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"nonResourceAttributes": {"path": "/x", "verb": "get"}}});
        let out = answer(
            Review::SelfSubjectAccess,
            &authorizer,
            &admin,
            None,
            "m",
            own.to_string().as_bytes(),
        )
        .unwrap();
        assert_eq!(out["status"], json!({"allowed": true}));
        assert!(
            answer(
                Review::SelfSubjectAccess,
                &authorizer,
                &admin,
                None,
                "m",
                b"{\"spec\":{}}"
            )
            .is_err()
        );
        assert!(answer(Review::SelfSubjectAccess, &authorizer, &admin, None, "m", b"[").is_err());
    }
}
