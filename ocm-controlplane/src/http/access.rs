//! The security hook of the HTTP layer: impersonation, authorization of every request, and the
//! admission checks that need the requester (CSR requester fields and the system:masters
//! restriction, the `approve` verb on signers, RBAC escalation prevention).

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::HeaderMap;
use serde_json::{Value, json};

use crate::auth::{AUTHENTICATED, Authenticator, Identity, UserInfo};
use crate::authorization::{Attributes, Authorizer, Target, escalation, forbidden_message, rbac::Rule};
use crate::status::ApiError;

/// Authentication and authorization of a server.
#[derive(Debug, Clone)]
pub struct Security {
    /// Who requests come from.
    pub authenticator: Authenticator,
    /// What they may do.
    pub authorizer: Arc<Authorizer>,
}

/// kube-apiserver's `401 Unauthorized`.
pub fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

fn forbidden(attributes: &Attributes, message: String) -> ApiError {
    let details = match &attributes.target {
        Target::NonResource { .. } => json!({}),
        Target::Resource {
            group,
            resource,
            name,
            ..
        } => {
            let mut d = serde_json::Map::new();
            if !name.is_empty() {
                d.insert("name".into(), json!(name));
            }
            if !group.is_empty() {
                d.insert("group".into(), json!(group));
            }
            d.insert("kind".into(), json!(resource));
            Value::Object(d)
        }
    };
    ApiError::new(403, "Forbidden", message).with_details(details)
}

/// `403` unless `user` may do `attributes`.
pub fn authorize(authorizer: &Authorizer, user: &UserInfo, attributes: &Attributes) -> Result<(), ApiError> {
    if authorizer.authorize(user, attributes).allowed() {
        return Ok(());
    }
    Err(forbidden(attributes, forbidden_message(user, attributes)))
}

fn resource(
    verb: &str,
    namespace: Option<&str>,
    group: &str,
    resource: &str,
    sub: &str,
    name: &str,
) -> Attributes {
    Attributes {
        verb: verb.into(),
        target: Target::Resource {
            namespace: namespace.map(str::to_string),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
        },
    }
}

/// Applies `Impersonate-*` headers: the requester must have `impersonate` on each user, group,
/// uid and extra value asked for, or (constrained impersonation, Kubernetes 1.36)
/// `impersonate:<mode>` on them and `impersonate-on:<mode>:<verb>` on what the request does
/// (`mode` is `serviceaccount` for ServiceAccounts, `user-info` otherwise); the request then runs
/// as that identity. Refusals name the `impersonate-on` check, as kube-apiserver 1.36 does.
pub fn impersonate(
    authorizer: &Authorizer,
    identity: Identity,
    headers: &HeaderMap,
    request: &Attributes,
) -> Result<Identity, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    };
    let users = values("impersonate-user");
    let groups = values("impersonate-group");
    let uid = values("impersonate-uid");
    let extras: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(k, v)| {
            let key = k.as_str().strip_prefix("impersonate-extra-")?;
            Some((key.to_string(), v.to_str().ok()?.to_string()))
        })
        .collect();
    if users.is_empty() {
        if !groups.is_empty() || !uid.is_empty() || !extras.is_empty() {
            return Err(ApiError::new(
                500,
                "InternalError",
                "Internal error occurred: requested impersonation without impersonating a user",
            ));
        }
        return Ok(identity);
    }
    let me = &identity.user;
    let user = users[0].clone();
    let mut checks = Vec::new();
    match user
        .strip_prefix("system:serviceaccount:")
        .and_then(|r| r.split_once(':'))
    {
        Some((ns, name)) => checks.push(resource("impersonate", Some(ns), "", "serviceaccounts", "", name)),
        None => checks.push(resource("impersonate", None, "", "users", "", &user)),
    }
    for g in &groups {
        checks.push(resource("impersonate", None, "", "groups", "", g));
    }
    for u in &uid {
        checks.push(resource(
            "impersonate",
            None,
            "authentication.k8s.io",
            "uids",
            "",
            u,
        ));
    }
    for (k, v) in &extras {
        checks.push(resource(
            "impersonate",
            None,
            "authentication.k8s.io",
            "userextras",
            k,
            v,
        ));
    }
    let allowed = |checks: &[Attributes]| checks.iter().all(|c| authorizer.authorize(me, c).allowed());
    if !allowed(&checks) {
        let mode = if user.starts_with("system:serviceaccount:") {
            "serviceaccount"
        } else {
            "user-info"
        };
        let on = Attributes {
            verb: format!("impersonate-on:{mode}:{}", request.verb),
            target: request.target.clone(),
        };
        if !authorizer.authorize(me, &on).allowed() {
            return Err(forbidden(&on, forbidden_message(me, &on)));
        }
        let constrained: Vec<Attributes> = checks
            .iter()
            .map(|c| Attributes {
                verb: format!("impersonate:{mode}"),
                target: c.target.clone(),
            })
            .collect();
        if let Some(denied) = constrained
            .iter()
            .find(|c| !authorizer.authorize(me, c).allowed())
        {
            return Err(forbidden(denied, forbidden_message(me, denied)));
        }
    }
    let mut new_groups = groups;
    if let Some((ns, _)) = user
        .strip_prefix("system:serviceaccount:")
        .and_then(|r| r.split_once(':'))
    {
        for g in [
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{ns}"),
        ] {
            if !new_groups.contains(&g) {
                new_groups.push(g);
            }
        }
    }
    if user != crate::auth::ANONYMOUS && !new_groups.iter().any(|g| g == AUTHENTICATED) {
        new_groups.push(AUTHENTICATED.into());
    }
    let mut extra = std::collections::BTreeMap::new();
    for (k, v) in extras {
        extra.entry(k).or_insert_with(Vec::new).push(v);
    }
    Ok(Identity {
        user: UserInfo {
            name: user,
            groups: new_groups,
        },
        uid: uid.into_iter().next().unwrap_or_default(),
        extra,
    })
}

fn target_parts(attributes: &Attributes) -> Option<(Option<&str>, &str, &str, &str, &str)> {
    match &attributes.target {
        Target::Resource {
            namespace,
            group,
            resource,
            subresource,
            name,
        } => Some((
            namespace.as_deref(),
            group.as_str(),
            resource.as_str(),
            subresource.as_str(),
            name.as_str(),
        )),
        Target::NonResource { .. } => None,
    }
}

fn rules(v: Option<&Value>) -> Vec<Rule> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(Rule::from_json).collect())
        .unwrap_or_default()
}

/// Admission checks that need the requester; may rewrite the body (CSR requester fields).
pub fn admit(
    authorizer: &Authorizer,
    identity: &Identity,
    attributes: &Attributes,
    body: axum::body::Bytes,
) -> Result<axum::body::Bytes, ApiError> {
    let Some((namespace, group, res, sub, path_name)) = target_parts(attributes) else {
        return Ok(body);
    };
    let verb = attributes.verb.as_str();
    if !matches!(verb, "create" | "update") {
        return Ok(body);
    }
    let Ok(mut object) = serde_json::from_slice::<Value>(&body) else {
        return Ok(body);
    };
    let user = &identity.user;
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or(path_name)
        .to_string();
    let object_attributes = resource(verb, namespace, group, res, sub, &name);
    match (group, res, sub, verb) {
        ("certificates.k8s.io", "certificatesigningrequests", "", "create") => {
            let signer = object
                .pointer("/spec/signerName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if signer == "kubernetes.io/kube-apiserver-client"
                && let Some(request) = object.pointer("/spec/request").and_then(Value::as_str)
                && let Ok(parsed) = crate::controllers::csr_signing::request::parse_spec_request(request)
                && parsed
                    .organizations
                    .iter()
                    .any(|o| o == crate::authorization::SYSTEM_MASTERS)
            {
                return Err(forbidden(
                    &object_attributes,
                    format!(
                        "certificatesigningrequests.certificates.k8s.io \"{name}\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
                    ),
                ));
            }
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("username".into(), json!(user.name));
                spec.insert("groups".into(), json!(user.groups));
                spec.remove("uid");
                spec.remove("extra");
                if !identity.uid.is_empty() {
                    spec.insert("uid".into(), json!(identity.uid));
                }
                if !identity.extra.is_empty() {
                    spec.insert("extra".into(), json!(identity.extra));
                }
            }
            return Ok(axum::body::Bytes::from(object.to_string()));
        }
        ("certificates.k8s.io", "certificatesigningrequests", "approval", "update") => {
            let signer = object
                .pointer("/spec/signerName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let decides = object
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| matches!(c.get("type").and_then(Value::as_str), Some("Approved" | "Denied")))
                });
            if decides {
                let domain_wildcard = signer
                    .split_once('/')
                    .map(|(d, _)| format!("{d}/*"))
                    .unwrap_or_default();
                let may = [signer.to_string(), domain_wildcard].iter().any(|n| {
                    authorizer
                        .authorize(
                            user,
                            &resource("approve", None, "certificates.k8s.io", "signers", "", n),
                        )
                        .allowed()
                });
                if !may {
                    return Err(forbidden(
                        &object_attributes,
                        format!(
                            "certificatesigningrequests.certificates.k8s.io \"{name}\" is forbidden: user not permitted to approve requests with signerName \"{signer}\""
                        ),
                    ));
                }
            }
        }
        (
            "rbac.authorization.k8s.io",
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings",
            "",
            _,
        ) => {
            if user.in_group(crate::authorization::SYSTEM_MASTERS) {
                return Ok(body);
            }
            let ns = namespace.unwrap_or_default();
            let requested = if res.ends_with("bindings") {
                let kind = object
                    .pointer("/roleRef/kind")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let role = object
                    .pointer("/roleRef/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let role_resource = if kind == "ClusterRole" {
                    "clusterroles"
                } else {
                    "roles"
                };
                let bind = resource(
                    "bind",
                    namespace,
                    "rbac.authorization.k8s.io",
                    role_resource,
                    "",
                    role,
                );
                if authorizer.authorize(user, &bind).allowed() {
                    return Ok(body);
                }
                // Without `bind`, the referenced role must exist: kube-apiserver reads its rules
                // for the escalation check and answers 404 when it is missing, naming the role
                // under the binding's resource (the request's, which its storage error carries).
                match authorizer.role_rules(kind, ns, role) {
                    Some(rules) => rules,
                    None => {
                        let subject = crate::status::Subject {
                            group: "rbac.authorization.k8s.io".into(),
                            resource: res.into(),
                            kind: String::new(),
                        };
                        return Err(ApiError::not_found(&subject, role));
                    }
                }
            } else {
                let escalate = resource("escalate", namespace, "rbac.authorization.k8s.io", res, "", &name);
                if authorizer.authorize(user, &escalate).allowed() {
                    return Ok(body);
                }
                rules(object.get("rules"))
            };
            let held: Vec<Rule> = authorizer
                .rules_for(user, ns)
                .into_iter()
                .map(|g| g.rule)
                .collect();
            let missing = escalation::missing(&held, &requested);
            if !missing.is_empty() {
                return Err(forbidden(
                    &object_attributes,
                    format!(
                        "{res}.rbac.authorization.k8s.io \"{name}\" is forbidden: {}",
                        escalation::message(user, &missing)
                    ),
                ));
            }
        }
        _ => {}
    }
    Ok(body)
}

/// Whether a PATCH needs [`admit_patched`]: RBAC objects patched by someone outside
/// `system:masters`.
pub fn patch_needs_admission(identity: &Identity, attributes: &Attributes) -> bool {
    !identity.user.in_group(crate::authorization::SYSTEM_MASTERS)
        && matches!(
            target_parts(attributes),
            Some((
                _,
                "rbac.authorization.k8s.io",
                "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings",
                "",
                _
            ))
        )
}

/// The admission checks of an update, on the object a PATCH produces (computed by a dry run).
pub fn admit_patched(
    authorizer: &Authorizer,
    identity: &Identity,
    attributes: &Attributes,
    patched: &Value,
) -> Result<(), ApiError> {
    let update = Attributes {
        verb: "update".into(),
        target: attributes.target.clone(),
    };
    admit(
        authorizer,
        identity,
        &update,
        axum::body::Bytes::from(patched.to_string()),
    )
    .map(|_| ())
}

/// After a successful write of an RBAC object, applies it to the authorizer at once (the
/// informer applies it too, moments later).
pub fn after_write(authorizer: &Authorizer, attributes: &Attributes, code: u16, reply: &Value) {
    let Some((_, "rbac.authorization.k8s.io", res, "", _)) = target_parts(attributes) else {
        return;
    };
    let kind = match res {
        "roles" => "Role",
        "clusterroles" => "ClusterRole",
        "rolebindings" => "RoleBinding",
        "clusterrolebindings" => "ClusterRoleBinding",
        _ => return,
    };
    if !(200..300).contains(&code) || reply.get("kind").and_then(Value::as_str) != Some(kind) {
        return;
    }
    let deleted = attributes.verb == "delete" && reply.pointer("/metadata/deletionTimestamp").is_none();
    authorizer.apply(kind, reply, deleted);
}

/// Query parameters as the authorizer reads them.
pub fn attributes(method: &str, path: &str, q: &HashMap<String, String>) -> Attributes {
    crate::authorization::request::attributes(method, path, q)
}
