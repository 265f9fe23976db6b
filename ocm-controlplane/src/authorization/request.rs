//! What a request asks to do, derived from its method, path and query as kube-apiserver's
//! request-info resolver does: resource requests under `/api/v1` and `/apis/<group>/<version>`
//! get the verbs `get`/`list`/`watch`/`create`/`update`/`patch`/`delete`/`deletecollection`;
//! every other path is a non-resource request whose verb is the lower-cased method.

use std::collections::HashMap;

use super::{Attributes, Target};

/// The authorization attributes of a request.
pub fn attributes(method: &str, path: &str, query: &HashMap<String, String>) -> Attributes {
    let segments: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let non_resource = || Attributes {
        verb: method.to_ascii_lowercase(),
        target: Target::NonResource {
            path: path.to_string(),
        },
    };
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] if !rest.is_empty() => ("", rest),
        ["apis", group, _version, rest @ ..] if !rest.is_empty() => (*group, rest),
        _ => return non_resource(),
    };
    let mut namespace = None;
    let mut parts: &[&str] = rest;
    if parts[0] == "namespaces" && parts.len() > 1 {
        namespace = Some(parts[1].to_string());
        if parts.len() > 2 && !matches!(parts[2], "status" | "finalize") {
            parts = &parts[2..];
        }
    }
    let resource = parts[0].to_string();
    let name = parts.get(1).map(|s| s.to_string()).unwrap_or_default();
    let subresource = parts.get(2).map(|s| s.to_string()).unwrap_or_default();
    let watch = query.get("watch").is_some_and(|w| w == "true" || w == "1");
    let verb = match method {
        "GET" | "HEAD" if watch => "watch",
        "GET" | "HEAD" if name.is_empty() => "list",
        "GET" | "HEAD" => "get",
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" if name.is_empty() => "deletecollection",
        "DELETE" => "delete",
        other => {
            return Attributes {
                verb: other.to_ascii_lowercase(),
                target: Target::Resource {
                    namespace,
                    group: group.into(),
                    resource,
                    subresource,
                    name,
                },
            };
        }
    };
    // A list or watch of one object by `metadata.name` is authorized for that name.
    let name = match (verb, query.get("fieldSelector")) {
        ("list" | "watch", Some(selector)) if name.is_empty() => selector
            .strip_prefix("metadata.name=")
            .filter(|n| !n.contains(','))
            .map(str::to_string)
            .unwrap_or_default(),
        _ => name,
    };
    Attributes {
        verb: verb.into(),
        target: Target::Resource {
            namespace,
            group: group.into(),
            resource,
            subresource,
            name,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn resource(a: &Attributes) -> (String, Option<String>, String, String, String, String) {
        match &a.target {
            Target::Resource {
                namespace,
                group,
                resource,
                subresource,
                name,
            } => (
                a.verb.clone(),
                namespace.clone(),
                group.clone(),
                resource.clone(),
                subresource.clone(),
                name.clone(),
            ),
            Target::NonResource { .. } => panic!("not a resource request: {a:?}"),
        }
    }

    #[test]
    fn verbs_follow_the_method_and_the_path() {
        let none = q(&[]);
        let cases = [
            (
                "GET",
                "/api/v1/namespaces/a/configmaps/x",
                &none,
                ("get", Some("a"), "", "configmaps", "", "x"),
            ),
            (
                "GET",
                "/api/v1/namespaces/a/configmaps",
                &none,
                ("list", Some("a"), "", "configmaps", "", ""),
            ),
            (
                "GET",
                "/api/v1/configmaps",
                &none,
                ("list", None, "", "configmaps", "", ""),
            ),
            (
                "POST",
                "/api/v1/namespaces/a/configmaps",
                &none,
                ("create", Some("a"), "", "configmaps", "", ""),
            ),
            (
                "PUT",
                "/apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval",
                &none,
                (
                    "update",
                    None,
                    "certificates.k8s.io",
                    "certificatesigningrequests",
                    "approval",
                    "c",
                ),
            ),
            (
                "PATCH",
                "/apis/apps/v1/namespaces/a/deployments/d/status",
                &none,
                ("patch", Some("a"), "apps", "deployments", "status", "d"),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/a/configmaps/x",
                &none,
                ("delete", Some("a"), "", "configmaps", "", "x"),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/a/configmaps",
                &none,
                ("deletecollection", Some("a"), "", "configmaps", "", ""),
            ),
            (
                "GET",
                "/api/v1/namespaces/x",
                &none,
                ("get", Some("x"), "", "namespaces", "", "x"),
            ),
            (
                "PUT",
                "/api/v1/namespaces/x/finalize",
                &none,
                ("update", Some("x"), "", "namespaces", "finalize", "x"),
            ),
            (
                "POST",
                "/api/v1/namespaces/a/serviceaccounts/sa/token",
                &none,
                ("create", Some("a"), "", "serviceaccounts", "token", "sa"),
            ),
        ];
        for (method, path, query, want) in cases {
            let got = resource(&attributes(method, path, query));
            let want = (
                want.0.to_string(),
                want.1.map(str::to_string),
                want.2.to_string(),
                want.3.to_string(),
                want.4.to_string(),
                want.5.to_string(),
            );
            assert_eq!(got, want, "{method} {path}");
        }
        let watch = q(&[("watch", "true")]);
        assert_eq!(
            resource(&attributes("GET", "/api/v1/namespaces/a/configmaps", &watch)).0,
            "watch"
        );
        let by_name = q(&[("fieldSelector", "metadata.name=x")]);
        assert_eq!(
            resource(&attributes("GET", "/api/v1/namespaces/a/configmaps", &by_name)).5,
            "x"
        );
    }

    #[test]
    fn other_paths_are_non_resource_requests() {
        for (method, path, verb) in [
            ("GET", "/api", "get"),
            ("GET", "/apis/apps/v1", "get"),
            ("GET", "/healthz", "get"),
            ("POST", "/version", "post"),
        ] {
            let a = attributes(method, path, &q(&[]));
            assert_eq!(a.verb, verb);
            assert_eq!(a.target, Target::NonResource { path: path.into() });
        }
    }
}
