//! Unit tests of RBAC rule matching and policy evaluation (`rbac.rs`).

use super::rbac::*;
use super::{Attributes, Decision, Target};
use crate::auth::UserInfo;
use serde_json::json;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}

fn res(verb: &str, ns: Option<&str>, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
    Attributes {
        verb: verb.into(),
        target: Target::Resource {
            namespace: ns.map(str::to_string),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
        },
    }
}

fn path(verb: &str, p: &str) -> Attributes {
    Attributes {
        verb: verb.into(),
        target: Target::NonResource { path: p.into() },
    }
}

fn policy() -> Policy {
    let mut p = Policy::new();
    p.upsert(
        "Role",
        &json!({"metadata": {"name": "cm-reader", "namespace": "a"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}),
    );
    p.upsert(
        "RoleBinding",
        &json!({"metadata": {"name": "alice-reads", "namespace": "a"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
            "subjects": [{"kind": "User", "name": "alice"}]}),
    );
    p.upsert(
        "ClusterRole",
        &json!({"metadata": {"name": "system:discovery"},
            "rules": [{"nonResourceURLs": ["/api", "/api/*", "/healthz"], "verbs": ["get"]}]}),
    );
    p.upsert(
        "ClusterRoleBinding",
        &json!({"metadata": {"name": "system:discovery"},
            "roleRef": {"kind": "ClusterRole", "name": "system:discovery"},
            "subjects": [{"kind": "Group", "name": "system:authenticated"}]}),
    );
    p.upsert(
        "ClusterRole",
        &json!({"metadata": {"name": "csr-approver"},
            "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/approval"], "verbs": ["update"]},
                      {"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": ["kubernetes.io/kube-apiserver-client"], "verbs": ["approve"]}]}),
    );
    p.upsert(
        "RoleBinding",
        &json!({"metadata": {"name": "sa-approves", "namespace": "a"},
            "roleRef": {"kind": "ClusterRole", "name": "csr-approver"},
            "subjects": [{"kind": "ServiceAccount", "name": "approver"}]}),
    );
    p
}

#[test]
fn a_role_binding_grants_in_its_namespace_only() {
    let p = policy();
    let alice = user("alice", &["system:authenticated"]);
    let d = p.authorize(&alice, &res("get", Some("a"), "", "configmaps", "", "data"));
    assert_eq!(
        d,
        Decision::Allow {
            reason: r#"RBAC: allowed by RoleBinding "alice-reads/a" of Role "cm-reader" to User "alice""#
                .into()
        }
    );
    assert!(
        !p.authorize(&alice, &res("get", Some("b"), "", "configmaps", "", "data"))
            .allowed()
    );
    assert!(
        !p.authorize(&alice, &res("create", Some("a"), "", "configmaps", "", ""))
            .allowed()
    );
    assert!(
        !p.authorize(&alice, &res("list", None, "", "configmaps", "", ""))
            .allowed()
    );
    assert!(
        !p.authorize(&alice, &res("get", Some("a"), "", "secrets", "", "x"))
            .allowed()
    );
}

#[test]
fn cluster_role_bindings_and_non_resource_urls() {
    let p = policy();
    let bob = user("bob", &["system:authenticated"]);
    assert_eq!(
        p.authorize(&bob, &path("get", "/healthz")),
        Decision::Allow {
            reason: r#"RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#.into()
        }
    );
    assert!(p.authorize(&bob, &path("get", "/api/v1")).allowed());
    assert!(!p.authorize(&bob, &path("get", "/apis")).allowed());
    assert!(!p.authorize(&bob, &path("post", "/api")).allowed());
    assert!(
        !p.authorize(&UserInfo::anonymous(), &path("get", "/api"))
            .allowed()
    );
}

#[test]
fn subresources_resource_names_and_service_accounts() {
    let p = policy();
    let sa = user(
        "system:serviceaccount:a:approver",
        &["system:serviceaccounts", "system:authenticated"],
    );
    // The binding lives in namespace a: it grants only there, even for cluster-scoped kinds.
    assert!(
        !p.authorize(
            &sa,
            &res(
                "update",
                None,
                "certificates.k8s.io",
                "certificatesigningrequests",
                "approval",
                "c"
            )
        )
        .allowed()
    );
    assert!(
        p.authorize(
            &sa,
            &res(
                "update",
                Some("a"),
                "certificates.k8s.io",
                "certificatesigningrequests",
                "approval",
                "c"
            )
        )
        .allowed()
    );
    assert!(
        !p.authorize(
            &sa,
            &res(
                "update",
                Some("a"),
                "certificates.k8s.io",
                "certificatesigningrequests",
                "",
                "c"
            )
        )
        .allowed()
    );
    assert!(
        p.authorize(
            &sa,
            &res(
                "approve",
                Some("a"),
                "certificates.k8s.io",
                "signers",
                "",
                "kubernetes.io/kube-apiserver-client"
            )
        )
        .allowed()
    );
    assert!(
        !p.authorize(
            &sa,
            &res(
                "approve",
                Some("a"),
                "certificates.k8s.io",
                "signers",
                "",
                "example.com/other"
            )
        )
        .allowed()
    );
    assert!(
        !p.authorize(
            &sa,
            &res("approve", Some("a"), "certificates.k8s.io", "signers", "", "")
        )
        .allowed()
    );
    let other = user("system:serviceaccount:b:approver", &["system:authenticated"]);
    assert!(
        !p.authorize(
            &other,
            &res(
                "update",
                Some("a"),
                "certificates.k8s.io",
                "certificatesigningrequests",
                "approval",
                "c"
            )
        )
        .allowed()
    );
}

#[test]
fn wildcards_and_star_subresources() {
    let rule = Rule::from_json(&json!({"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["*"]}));
    assert!(rule.allows(&res("patch", None, "apps", "deployments", "status", "d")));
    assert!(!rule.allows(&res("patch", None, "apps", "deployments", "", "d")));
    let all = Rule::from_json(&json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}));
    assert!(all.allows(&res("delete", Some("x"), "g", "r", "s", "n")));
    assert!(!all.allows(&path("get", "/healthz")));
    let prefix = Rule::from_json(&json!({"nonResourceURLs": ["/openapi/*"], "verbs": ["get"]}));
    assert!(prefix.allows(&path("get", "/openapi/v3")));
    assert!(!prefix.allows(&path("get", "/openapi")));
}

#[test]
fn missing_roles_grant_nothing_and_removal_takes_effect() {
    let mut p = policy();
    p.upsert(
        "ClusterRoleBinding",
        &json!({"metadata": {"name": "dangling"}, "roleRef": {"kind": "ClusterRole", "name": "nope"},
            "subjects": [{"kind": "User", "name": "carol"}]}),
    );
    let carol = user("carol", &[]);
    assert!(
        !p.authorize(&carol, &res("get", None, "", "nodes", "", "n"))
            .allowed()
    );
    let alice = user("alice", &[]);
    p.remove("RoleBinding", "a", "alice-reads");
    assert!(
        !p.authorize(&alice, &res("get", Some("a"), "", "configmaps", "", "data"))
            .allowed()
    );
}

#[test]
fn rules_for_lists_cluster_rules_first() {
    let p = policy();
    let alice = user("alice", &["system:authenticated"]);
    let rules = p.rules_for(&alice, "a");
    assert_eq!(rules.len(), 2);
    assert!(
        rules[0]
            .source
            .starts_with("ClusterRoleBinding \"system:discovery\"")
    );
    assert_eq!(
        rules[1].rule.to_json(),
        json!({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["configmaps"]})
    );
}

#[test]
fn cluster_role_bindings_follow_their_subjects_through_updates_and_deletes() {
    let mut p = Policy::new();
    p.upsert(
        "ClusterRole",
        &json!({"metadata": {"name": "lister"},
            "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]}),
    );
    let binding = |subjects: serde_json::Value| {
        json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "lister"},
            "subjects": subjects})
    };
    let list = res("list", None, "", "namespaces", "", "");
    let allowed = |p: &Policy, u: &UserInfo| matches!(p.authorize(u, &list), Decision::Allow { .. });
    let alice = user("alice", &[]);
    let sa = user("system:serviceaccount:ns1:robot", &["system:serviceaccounts"]);
    let team = user("bob", &["team"]);

    p.upsert(
        "ClusterRoleBinding",
        &binding(json!([{"kind": "User", "name": "alice"}])),
    );
    assert!(allowed(&p, &alice));
    assert!(!allowed(&p, &sa) && !allowed(&p, &team));

    // The same binding's new subjects replace the old ones.
    p.upsert(
        "ClusterRoleBinding",
        &binding(json!([
            {"kind": "ServiceAccount", "name": "robot", "namespace": "ns1"},
            {"kind": "Group", "name": "team"},
            // A ServiceAccount without namespace names no one in a ClusterRoleBinding.
            {"kind": "ServiceAccount", "name": "alice"}
        ])),
    );
    assert!(!allowed(&p, &alice));
    assert!(allowed(&p, &sa) && allowed(&p, &team));

    p.remove("ClusterRoleBinding", "", "b");
    assert!(!allowed(&p, &sa) && !allowed(&p, &team));
}

#[test]
fn role_bindings_of_namespaces_sharing_a_prefix_stay_apart() {
    let mut p = Policy::new();
    p.upsert(
        "ClusterRole",
        &json!({"metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    );
    for (ns, binding) in [("a", "z-last"), ("a-b", "a-first"), ("a.b", "m"), ("ab", "b")] {
        p.upsert(
            "RoleBinding",
            &json!({"metadata": {"name": binding, "namespace": ns},
                "roleRef": {"kind": "ClusterRole", "name": "reader"},
                "subjects": [{"kind": "User", "name": format!("user-of-{ns}")}]}),
        );
    }
    for ns in ["a", "a-b", "a.b", "ab"] {
        for other in ["a", "a-b", "a.b", "ab"] {
            let d = p.authorize(
                &user(&format!("user-of-{ns}"), &[]),
                &res("get", Some(other), "", "configmaps", "", "x"),
            );
            assert_eq!(d.allowed(), ns == other, "user of {ns} in {other}: {d:?}");
        }
    }
    // Within a namespace, bindings are visited in name order, as kube lists them.
    for name in ["c", "b"] {
        p.upsert(
            "RoleBinding",
            &json!({"metadata": {"name": name, "namespace": "a"},
                "roleRef": {"kind": "ClusterRole", "name": "reader"},
                "subjects": [{"kind": "Group", "name": "readers"}]}),
        );
    }
    let sources: Vec<String> = p
        .rules_for(&user("u", &["readers"]), "a")
        .into_iter()
        .map(|g| g.source)
        .collect();
    assert_eq!(
        sources,
        [
            "RoleBinding \"b/a\" of ClusterRole \"reader\" to Group \"readers\"",
            "RoleBinding \"c/a\" of ClusterRole \"reader\" to Group \"readers\"",
        ]
    );
    p.remove("RoleBinding", "a", "b");
    assert_eq!(p.rules_for(&user("u", &["readers"]), "a").len(), 1);
}

#[test]
fn roles_handed_out_are_the_rules_as_stored() {
    let mut p = Policy::new();
    let rules = json!([
        {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters"],
         "resourceNames": ["c1"], "verbs": ["get", "list", "update", "watch"]},
        {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}
    ]);
    for (kind, ns, name) in [
        ("ClusterRole", "", "c1"),
        ("Role", "c1", "c1"),
        ("ClusterRole", "", "c2"),
    ] {
        p.upsert(
            kind,
            &json!({"metadata": {"name": name, "namespace": ns}, "rules": rules}),
        );
    }
    let expected: Vec<Rule> = rules.as_array().unwrap().iter().map(Rule::from_json).collect();
    assert_eq!(p.role("ClusterRole", "", "c1"), Some(expected.clone()));
    assert_eq!(p.role("ClusterRole", "", "c2"), Some(expected.clone()));
    assert_eq!(p.role("Role", "c1", "c1"), Some(expected));
    assert_eq!(p.role("Role", "", "c1"), None);
    assert_eq!(p.role("Binding", "", "c1"), None);
    p.remove("ClusterRole", "", "c1");
    assert_eq!(p.role("ClusterRole", "", "c1"), None);
    assert!(p.role("ClusterRole", "", "c2").is_some());
}
