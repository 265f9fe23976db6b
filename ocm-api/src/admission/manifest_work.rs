//! ManifestWork admission (ocm-core.md §3.11), as upstream's work webhook decides it on CREATE
//! and UPDATE: the work must carry manifests, their total size must stay within the limit, every
//! manifest must be a named object without `generateName`, no two may address the same object,
//! and — when the executor is set (or, with the gate NilExecutorValidating, always) and on UPDATE
//! only when it changed — the requester must be allowed to `execute-as` the executor.
//!
//! Every refusal is a `400 BadRequest` with upstream's message.

use serde_json::Value;

use super::{Check, Denial};
use crate::spec_hash::go_json;

/// Upstream's default limit on the total size of a work's manifests: 500 KiB.
pub const DEFAULT_MANIFEST_LIMIT: usize = 500 * 1024;

/// The executor assumed for a work without one when the gate NilExecutorValidating is on: the
/// work agent's own ServiceAccount, with an empty namespace (as upstream).
pub const DEFAULT_EXECUTOR_SERVICE_ACCOUNT: &str = "klusterlet-work-sa";

/// How ManifestWorks are admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManifestWorkOptions {
    /// The largest total size of a work's manifests, in bytes (upstream's `--manifestLimit`).
    pub manifest_limit: usize,
    /// The hub's gate NilExecutorValidating: check `execute-as` for works without an executor
    /// too, as [`DEFAULT_EXECUTOR_SERVICE_ACCOUNT`].
    pub nil_executor_validating: bool,
}

impl Default for ManifestWorkOptions {
    fn default() -> Self {
        Self {
            manifest_limit: DEFAULT_MANIFEST_LIMIT,
            nil_executor_validating: false,
        }
    }
}

/// Checks `work` (and `old` on UPDATE) and returns the permission checks the caller must make.
///
/// # Errors
/// `400` when the manifests are missing, too large, unnamed, generate-named or duplicated, or the
/// executor names no ServiceAccount.
pub fn validate(
    work: &Value,
    old: Option<&Value>,
    options: ManifestWorkOptions,
) -> Result<Vec<Check>, Denial> {
    let manifests = manifests(work);
    if manifests.is_empty() {
        return Err(Denial::bad_request("manifests should not be empty"));
    }
    validate_manifests(manifests, options.manifest_limit).map_err(Denial::bad_request)?;
    let executor = work.pointer("/spec/executor").filter(|e| !e.is_null());
    if let Some(old) = old
        && old.pointer("/spec/executor").filter(|e| !e.is_null()) == executor
    {
        return Ok(Vec::new());
    }
    let (service_account_namespace, service_account) = match executor {
        None if !options.nil_executor_validating => return Ok(Vec::new()),
        None => (String::new(), DEFAULT_EXECUTOR_SERVICE_ACCOUNT.to_string()),
        Some(executor) => {
            let subject = executor.get("subject");
            let kind = subject
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let account = subject
                .and_then(|s| s.get("serviceAccount"))
                .filter(|a| !a.is_null());
            match (kind, account) {
                ("ServiceAccount", None) => {
                    return Err(Denial::bad_request("executor service account can not be nil"));
                }
                // Upstream checks only ServiceAccount subjects (the CRD allows no other type).
                (_, None) => return Ok(Vec::new()),
                (_, Some(account)) => {
                    let field = |f: &str| {
                        account
                            .get(f)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    (field("namespace"), field("name"))
                }
            }
        }
    };
    Ok(vec![Check::ExecuteAs {
        namespace: super::meta_str(work, "namespace").to_string(),
        service_account_namespace,
        service_account,
    }])
}

/// `spec.workload.manifests` (empty when absent).
fn manifests(work: &Value) -> &[Value] {
    work.pointer("/spec/workload/manifests")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Upstream's manifest checks, shared with the ManifestWorkReplicaSet template: size, each
/// manifest named and not generate-named, no duplicates.
///
/// # Errors
/// Upstream's message of the first failed check.
pub fn validate_manifests(manifests: &[Value], limit: usize) -> Result<(), String> {
    if manifests.is_empty() {
        return Err("Workload manifests should not be empty".into());
    }
    let total: usize = manifests.iter().map(encoded_size).sum();
    if total > limit {
        return Err(format!(
            "the size of manifests is {total} bytes which exceeds the {limit} limit"
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for manifest in manifests {
        let str_at = |pointer: &str| {
            manifest
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        if str_at("/kind").is_empty() {
            return Err(format!(
                "Object 'Kind' is missing in '{}'",
                go_json::to_string(manifest)
            ));
        }
        if str_at("/metadata/name").is_empty() {
            return Err("name must be set in manifest".into());
        }
        if !str_at("/metadata/generateName").is_empty() {
            return Err("generateName must not be set in manifest".into());
        }
        let (api_version, kind) = (str_at("/apiVersion"), str_at("/kind"));
        let (namespace, name) = (str_at("/metadata/namespace"), str_at("/metadata/name"));
        if !seen.insert(format!("{api_version}/{kind}/{namespace}/{name}")) {
            return Err(format!(
                "duplicate manifest for resource {namespace}/{name} with resource type {api_version}.{kind}"
            ));
        }
    }
    Ok(())
}

/// The size upstream counts for one manifest: its JSON as kube-apiserver sends it, inside a
/// `RawExtension` inside a `Manifest`, both length-delimited protobuf fields.
fn encoded_size(manifest: &Value) -> usize {
    let raw = go_json::to_string(manifest).len();
    let extension = 1 + varint_len(raw) + raw;
    1 + varint_len(extension) + extension
}

/// The bytes of a protobuf varint holding `value`.
fn varint_len(mut value: usize) -> usize {
    let mut len = 1;
    while value >= 0x80 {
        value >>= 7;
        len += 1;
    }
    len
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::admission::Answer;

    fn work(manifests: Value, executor: Option<Value>) -> Value {
        let mut w = json!({"metadata": {"name": "w", "namespace": "cluster1"},
            "spec": {"workload": {"manifests": manifests}}});
        if let Some(e) = executor {
            w["spec"]["executor"] = e;
        }
        w
    }

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
    }

    fn message(r: Result<Vec<Check>, Denial>) -> String {
        let d = r.unwrap_err();
        assert_eq!((d.code, d.reason), (400, "BadRequest"));
        d.message
    }

    #[test]
    fn manifests_must_be_present_named_and_unique() {
        let o = ManifestWorkOptions::default();
        assert_eq!(
            message(validate(&work(json!([]), None), None, o)),
            "manifests should not be empty"
        );
        assert_eq!(
            message(validate(&json!({"metadata": {"name": "w"}, "spec": {}}), None, o)),
            "manifests should not be empty"
        );
        let unnamed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "d"}});
        assert_eq!(
            message(validate(&work(json!([unnamed]), None), None, o)),
            "name must be set in manifest"
        );
        let generated =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "generateName": "a-"}});
        assert_eq!(
            message(validate(&work(json!([generated]), None), None, o)),
            "generateName must not be set in manifest"
        );
        assert_eq!(
            message(validate(&work(json!([cm("a"), cm("b"), cm("a")]), None), None, o)),
            "duplicate manifest for resource default/a with resource type v1.ConfigMap"
        );
        let kindless = json!({"apiVersion": "v1", "metadata": {"name": "a"}});
        assert_eq!(
            message(validate(&work(json!([kindless]), None), None, o)),
            r#"Object 'Kind' is missing in '{"apiVersion":"v1","metadata":{"name":"a"}}'"#
        );
        assert_eq!(
            validate(&work(json!([cm("a"), cm("b")]), None), None, o),
            Ok(vec![])
        );
    }

    #[test]
    fn size_counts_the_protobuf_encoding_of_every_manifest() {
        // {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}
        let raw = go_json::to_string(&cm("a")).len();
        assert_eq!(raw, 84);
        assert_eq!(encoded_size(&cm("a")), 88);
        let limit = |l| ManifestWorkOptions {
            manifest_limit: l,
            ..ManifestWorkOptions::default()
        };
        let two = work(json!([cm("a"), cm("b")]), None);
        assert!(validate(&two, None, limit(176)).is_ok());
        assert_eq!(
            message(validate(&two, None, limit(175))),
            "the size of manifests is 176 bytes which exceeds the 175 limit"
        );
        let big = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "x".repeat(300)}});
        let raw = go_json::to_string(&big).len();
        assert_eq!(encoded_size(&big), raw + 2 + 1 + 2 + 1);
    }

    #[test]
    fn executor_needs_execute_as_on_create_and_when_it_changes() {
        let o = ManifestWorkOptions::default();
        let executor = json!({"subject": {"type": "ServiceAccount", "serviceAccount": {"namespace": "ns1", "name": "sa1"}}});
        let w = work(json!([cm("a")]), Some(executor.clone()));
        let checks = validate(&w, None, o).unwrap();
        let check = Check::ExecuteAs {
            namespace: "cluster1".into(),
            service_account_namespace: "ns1".into(),
            service_account: "sa1".into(),
        };
        assert_eq!(checks, vec![check.clone()]);
        let attributes = check.attributes().unwrap();
        assert_eq!(
            (
                attributes.namespace.as_deref(),
                attributes.group,
                attributes.resource,
                attributes.verb,
                attributes.name.as_str()
            ),
            (
                Some("cluster1"),
                "work.open-cluster-management.io",
                "manifestworks",
                "execute-as",
                "system:serviceaccount:ns1:sa1"
            )
        );
        assert_eq!(
            check.judge(&Answer::No, "alice").unwrap_err().message,
            "user alice cannot manipulate the Manifestwork with executor ns1/sa1 in namespace cluster1"
        );
        assert_eq!(
            check.judge(&Answer::Failed("boom".into()), "a").unwrap_err().code,
            400
        );
        // An update keeping the executor is not checked again; changing it is.
        assert_eq!(validate(&w, Some(&w), o), Ok(vec![]));
        let before = work(json!([cm("a")]), None);
        assert_eq!(validate(&w, Some(&before), o).unwrap().len(), 1);
        // No executor: nothing to check unless the gate is on.
        assert_eq!(validate(&before, None, o), Ok(vec![]));
        let gated = ManifestWorkOptions {
            nil_executor_validating: true,
            ..o
        };
        assert_eq!(
            validate(&before, None, gated),
            Ok(vec![Check::ExecuteAs {
                namespace: "cluster1".into(),
                service_account_namespace: String::new(),
                service_account: DEFAULT_EXECUTOR_SERVICE_ACCOUNT.into(),
            }])
        );
        let nil_account = work(
            json!([cm("a")]),
            Some(json!({"subject": {"type": "ServiceAccount"}})),
        );
        assert_eq!(
            message(validate(&nil_account, None, o)),
            "executor service account can not be nil"
        );
    }
}
