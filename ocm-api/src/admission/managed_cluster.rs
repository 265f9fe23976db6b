//! ManagedCluster admission (ocm-core.md §2.8).
//!
//! Mutating ([`mutate`]), on CREATE and UPDATE:
//! - taints: on CREATE every taint gets `timeAdded` = now (what the request says is ignored). On
//!   UPDATE a taint with a new key, or whose value or effect changed, must come without
//!   `timeAdded` and gets now; an unchanged taint must carry the `timeAdded` it had. Otherwise
//!   `400` "It is not allowed to set TimeAdded of Taint \"k1,k2\"."
//! - with the gate DefaultClusterSet, a cluster without a cluster-set label (or with an empty one)
//!   gets `cluster.open-cluster-management.io/clusterset: default`.
//!
//! Validating ([`validate`]): the name must be a valid namespace name and every
//! `spec.managedClusterClientConfigs[].url` an https URL (`400`); then the checks to make:
//! setting `hubAcceptsClient` to true (on CREATE, or false → true on UPDATE) needs the cluster's
//! namespace not Terminating and the accept permission; adding, changing or removing the
//! cluster-set label needs the join permission on the old set and on the new one.

use serde_json::{Value, json};

use super::{Check, Denial, Permission, label, meta_str, url};
use crate::names::labels::CLUSTER_SET;
use crate::names::objects::DEFAULT_CLUSTER_SET;

/// How the mutating rules are configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MutateOptions {
    /// The hub's feature gate DefaultClusterSet (on by default): label clusters without a set
    /// into `default`.
    pub default_cluster_set: bool,
}

impl Default for MutateOptions {
    fn default() -> Self {
        Self {
            default_cluster_set: true,
        }
    }
}

/// Applies the mutating rules to `cluster` (the object of the request; `old` is the stored one on
/// UPDATE). `now` is the RFC 3339 time (seconds) given to new taints.
///
/// # Errors
/// `400` when an UPDATE sets `timeAdded` of a taint it must not.
pub fn mutate(
    cluster: &mut Value,
    old: Option<&Value>,
    now: &str,
    options: MutateOptions,
) -> Result<(), Denial> {
    mutate_taints(cluster, old, now)?;
    if options.default_cluster_set && label(cluster, CLUSTER_SET).is_empty() {
        add_default_label(cluster);
    }
    Ok(())
}

fn mutate_taints(cluster: &mut Value, old: Option<&Value>, now: &str) -> Result<(), Denial> {
    let old_taints: Vec<Value> = old.map(taints).unwrap_or_default();
    let Some(list) = cluster
        .get_mut("spec")
        .and_then(|s| s.get_mut("taints"))
        .and_then(Value::as_array_mut)
    else {
        return Ok(());
    };
    let mut invalid = Vec::new();
    for taint in list.iter_mut() {
        let key = str_of(taint, "key").to_string();
        let original = old_taints.iter().find(|t| str_of(t, "key") == key);
        let time_added = time_of(taint);
        let stamp = match (old, original) {
            // CREATE: whatever the request says is replaced.
            (None, _) => true,
            (Some(_), Some(o))
                if str_of(o, "value") == str_of(taint, "value")
                    && str_of(o, "effect") == str_of(taint, "effect") =>
            {
                if !same_time(time_of(o), time_added) {
                    invalid.push(key);
                }
                false
            }
            // A new taint, or one whose value or effect changed.
            (Some(_), _) => {
                if time_added.is_some() {
                    invalid.push(key);
                    continue;
                }
                true
            }
        };
        if stamp && let Some(t) = taint.as_object_mut() {
            t.insert("timeAdded".into(), json!(now));
        }
    }
    if invalid.is_empty() {
        Ok(())
    } else {
        Err(Denial::bad_request(format!(
            "It is not allowed to set TimeAdded of Taint {:?}.",
            invalid.join(",")
        )))
    }
}

fn add_default_label(cluster: &mut Value) {
    let Some(object) = cluster.as_object_mut() else {
        return;
    };
    let metadata = object.entry("metadata").or_insert_with(|| json!({}));
    if !metadata.is_object() {
        *metadata = json!({});
    }
    if let Some(m) = metadata.as_object_mut() {
        let labels = m.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(l) = labels.as_object_mut() {
            l.insert(CLUSTER_SET.into(), json!(DEFAULT_CLUSTER_SET));
        }
    }
}

fn taints(cluster: &Value) -> Vec<Value> {
    cluster
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn str_of<'a>(object: &'a Value, field: &str) -> &'a str {
    object.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// `timeAdded` when set (absent, null and empty are Go's zero time).
fn time_of(taint: &Value) -> Option<&str> {
    taint
        .get("timeAdded")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Whether two `timeAdded` values are the same instant (Go's `metav1.Time.Equal`).
fn same_time(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => match (
            chrono::DateTime::parse_from_rfc3339(a),
            chrono::DateTime::parse_from_rfc3339(b),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        },
        _ => false,
    }
}

/// Applies the validating rules' own checks to `cluster` and returns the permission checks the
/// caller must make, in upstream's order (`old` is the stored object on UPDATE).
///
/// # Errors
/// `400` for an invalid name or a client-config URL that is not https.
pub fn validate(cluster: &Value, old: Option<&Value>) -> Result<Vec<Check>, Denial> {
    validate_object(cluster)?;
    let name = meta_str(cluster, "name").to_string();
    let accepts = |o: &Value| o.pointer("/spec/hubAcceptsClient").and_then(Value::as_bool) == Some(true);
    let mut checks = Vec::new();
    let accepting = match old {
        None => accepts(cluster),
        Some(old) => accepts(cluster) && !accepts(old),
    };
    if accepting {
        checks.push(Check::ClusterNamespace {
            cluster: name.clone(),
        });
        checks.push(Check::Access {
            permission: Permission::Accept,
            name,
        });
    }
    let before = old.map(|o| label(o, CLUSTER_SET)).unwrap_or_default();
    let after = label(cluster, CLUSTER_SET);
    if before != after {
        for set in [before, after].into_iter().filter(|s| !s.is_empty()) {
            checks.push(Check::Access {
                permission: Permission::Join,
                name: set.to_string(),
            });
        }
    }
    Ok(checks)
}

/// The name must be a namespace name and the client-config URLs https. As upstream, a bad name
/// is reported only together with the URLs' check, that is when the cluster has client configs.
fn validate_object(cluster: &Value) -> Result<(), Denial> {
    let mut errors = Vec::new();
    let name_errors = namespace_name_errors(meta_str(cluster, "name"));
    if !name_errors.is_empty() {
        errors.push(format!(
            "metadata.name format is not correct: {}",
            name_errors.join(",")
        ));
    }
    let configs = cluster
        .pointer("/spec/managedClusterClientConfigs")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if configs.is_empty() {
        return Ok(());
    }
    for config in configs {
        let u = str_of(config, "url");
        if !url::is_https(u) {
            errors.push(format!("url {u:?} is invalid in client configs"));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Denial::bad_request(errors.join("\n")))
    }
}

/// kube's `IsDNS1123Label` messages for `name`.
fn namespace_name_errors(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !is_label(name) {
        if !name.is_empty() && name.split('.').all(is_label) {
            errors.push("must not contain dots".to_string());
        } else {
            errors.push(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                    .to_string(),
            );
        }
    }
    errors
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (no length limit).
fn is_label(s: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            alnum(first) && alnum(last) && bytes.iter().all(|&c| alnum(c) || c == b'-')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Answer;
    use super::*;

    const NOW: &str = "2026-11-26T22:00:00Z";
    const T0: &str = "2022-02-21T08:11:06Z";

    fn cluster(taints: Value) -> Value {
        json!({"metadata": {"name": "c1"}, "spec": {"hubAcceptsClient": false, "taints": taints}})
    }

    fn off() -> MutateOptions {
        MutateOptions {
            default_cluster_set: false,
        }
    }

    #[test]
    fn create_stamps_every_taint_and_ignores_given_times() {
        let mut c = cluster(
            json!([{"key": "a", "effect": "NoSelect", "timeAdded": T0}, {"key": "b", "effect": "NoSelect"}]),
        );
        mutate(&mut c, None, NOW, off()).unwrap();
        assert_eq!(c["spec"]["taints"][0]["timeAdded"], NOW);
        assert_eq!(c["spec"]["taints"][1]["timeAdded"], NOW);
    }

    #[test]
    fn update_rules_for_taints() {
        let old = cluster(json!([{"key": "a", "effect": "NoSelect", "value": "v", "timeAdded": T0}]));
        // Unchanged with the same time (written differently): kept.
        let mut same = cluster(
            json!([{"key": "a", "effect": "NoSelect", "value": "v", "timeAdded": "2022-02-21T08:11:06+00:00"}]),
        );
        mutate(&mut same, Some(&old), NOW, off()).unwrap();
        assert_eq!(
            same["spec"]["taints"][0]["timeAdded"],
            "2022-02-21T08:11:06+00:00"
        );
        // Unchanged with another time, or without its time: refused.
        for time in [json!("2023-01-01T00:00:00Z"), Value::Null] {
            let mut c = cluster(json!([{"key": "a", "effect": "NoSelect", "value": "v", "timeAdded": time}]));
            let denial = mutate(&mut c, Some(&old), NOW, off()).unwrap_err();
            assert_eq!(denial.code, 400);
            assert_eq!(
                denial.message,
                "It is not allowed to set TimeAdded of Taint \"a\"."
            );
        }
        // New or changed taints without a time get now; with one they are refused, all named.
        let mut c = cluster(
            json!([{"key": "a", "effect": "NoSelect", "value": "w"}, {"key": "b", "effect": "PreferNoSelect"}]),
        );
        mutate(&mut c, Some(&old), NOW, off()).unwrap();
        assert_eq!(c["spec"]["taints"][0]["timeAdded"], NOW);
        assert_eq!(c["spec"]["taints"][1]["timeAdded"], NOW);
        let mut c = cluster(
            json!([{"key": "a", "effect": "NoSelectIfNew", "value": "v", "timeAdded": T0}, {"key": "b", "effect": "NoSelect", "timeAdded": NOW}]),
        );
        let denial = mutate(&mut c, Some(&old), NOW, off()).unwrap_err();
        assert_eq!(
            denial.message,
            "It is not allowed to set TimeAdded of Taint \"a,b\"."
        );
        assert_eq!(denial.status()["reason"], "BadRequest");
    }

    #[test]
    fn default_cluster_set_label_when_missing_or_empty() {
        for labels in [
            Value::Null,
            json!({}),
            json!({CLUSTER_SET: ""}),
            json!({"x": "y"}),
        ] {
            let mut c = json!({"metadata": {"name": "c1", "labels": labels}, "spec": {}});
            mutate(&mut c, None, NOW, MutateOptions::default()).unwrap();
            assert_eq!(label(&c, CLUSTER_SET), "default", "{c}");
        }
        let mut c = json!({"metadata": {"name": "c1", "labels": {CLUSTER_SET: "prod"}}});
        mutate(&mut c, None, NOW, MutateOptions::default()).unwrap();
        assert_eq!(label(&c, CLUSTER_SET), "prod");
        let mut c = json!({"metadata": {"name": "c1"}});
        mutate(&mut c, None, NOW, off()).unwrap();
        assert_eq!(c, json!({"metadata": {"name": "c1"}}));
    }

    #[test]
    fn names_and_urls() {
        let with_url = |name: &str, url: &str| json!({"metadata": {"name": name}, "spec": {"managedClusterClientConfigs": [{"url": url}]}});
        assert_eq!(validate(&with_url("c1", "https://a:6443"), None), Ok(vec![]));
        let denial = validate(&with_url("c1", "http://a"), None).unwrap_err();
        assert_eq!(denial.code, 400);
        assert_eq!(denial.message, "url \"http://a\" is invalid in client configs");
        let denial = validate(&with_url("a.b", "ftp://x"), None).unwrap_err();
        assert_eq!(
            denial.message,
            "metadata.name format is not correct: must not contain dots\nurl \"ftp://x\" is invalid in client configs"
        );
        let long = "a".repeat(64);
        assert_eq!(
            validate(&with_url(&long, "https://x"), None).unwrap_err().message,
            "metadata.name format is not correct: must be no more than 63 characters"
        );
        assert!(
            validate(&with_url("Bad_", "https://x"), None)
                .unwrap_err()
                .message
                .contains("a lowercase RFC 1123 label must consist of")
        );
        // As upstream: without client configs a bad name is not reported.
        assert_eq!(validate(&json!({"metadata": {"name": "a.b"}}), None), Ok(vec![]));
    }

    #[test]
    fn accept_and_join_checks() {
        let c = |accept: bool, set: Option<&str>| {
            let mut o = json!({"metadata": {"name": "c1"}, "spec": {"hubAcceptsClient": accept}});
            if let Some(set) = set {
                o["metadata"]["labels"] = json!({CLUSTER_SET: set});
            }
            o
        };
        let accept = vec![
            Check::ClusterNamespace { cluster: "c1".into() },
            Check::Access {
                permission: Permission::Accept,
                name: "c1".into(),
            },
        ];
        let join = |s: &str| Check::Access {
            permission: Permission::Join,
            name: s.into(),
        };
        assert_eq!(validate(&c(false, None), None), Ok(vec![]));
        assert_eq!(validate(&c(true, None), None), Ok(accept.clone()));
        assert_eq!(validate(&c(true, None), Some(&c(true, None))), Ok(vec![]));
        assert_eq!(validate(&c(false, None), Some(&c(true, None))), Ok(vec![]));
        assert_eq!(
            validate(&c(true, None), Some(&c(false, None))),
            Ok(accept.clone())
        );
        assert_eq!(validate(&c(false, Some("prod")), None), Ok(vec![join("prod")]));
        assert_eq!(
            validate(&c(true, Some("prod")), Some(&c(false, Some("dev")))),
            Ok([accept, vec![join("dev"), join("prod")]].concat())
        );
        assert_eq!(
            validate(&c(false, None), Some(&c(false, Some("dev")))),
            Ok(vec![join("dev")])
        );
        assert_eq!(
            validate(&c(false, Some("dev")), Some(&c(false, Some("dev")))),
            Ok(vec![])
        );
        assert!(join("x").judge(&Answer::Yes, "u").is_ok());
    }
}
