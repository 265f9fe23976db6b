//! JSON patches (RFC 6902) of one ManagedCluster field, guarded by a `test` of that field as the
//! cached copy has it (and of the uid) instead of by the copy's `resourceVersion`.
//!
//! Several hub controllers write the same new ManagedCluster at once — the accept controller its
//! annotation and `hubAcceptsClient`, the cleanup controller its finalizer, the taint controller
//! the taints, the cluster-set controller the default set label — each from the same cached
//! version. With the `resourceVersion` as precondition only the first write succeeds and the
//! others come back 409 Conflict, to be retried after the next event (about half of all
//! ManagedCluster patches in `join-load`, docs/performance.md). A `test` of the field a controller
//! changes still refuses a write based on a stale view of *that* field (the server answers
//! 422, and the newer copy comes back through the watch), but lets writes of other fields by
//! other controllers pass. kube-runtime's `finalizer` helper guards its finalizer patch the same
//! way; both kube-apiserver and ocm-controlplane pass a `test` for `null` of a member absent from
//! an existing object.
//!
//! Used for the finalizers (accept, cleanup) and the default set label (cluster sets): lists of
//! strings and a string, which the cached copy holds exactly as the server does. The taints keep
//! their `resourceVersion` precondition: a `test` of them would compare the server's JSON with
//! the typed copy re-serialized, where any difference in form would refuse every write.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Patch;
use serde_json::{Value, json};

/// `operations` as a kube JSON patch.
///
/// # Errors
/// `kube::Error::SerdeError` when `operations` is no list of patch operations.
pub(crate) fn json_patch(operations: Value) -> Result<Patch<()>, kube::Error> {
    serde_json::from_value(operations)
        .map(Patch::Json)
        .map_err(kube::Error::SerdeError)
}

/// A JSON pointer token for `key` (`~` and `/` escaped).
fn token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The `test` of the object's uid, when the cached copy has one: a cluster deleted and created
/// again under the same name is not written from the old one's copy.
fn uid_test(meta: &ObjectMeta) -> Option<Value> {
    meta.uid
        .as_ref()
        .map(|uid| json!({"op": "test", "path": "/metadata/uid", "value": uid}))
}

/// Adds `finalizer` to the finalizers `meta` shows, guarded by a test of those finalizers.
#[must_use]
pub(crate) fn add_finalizer(meta: &ObjectMeta, finalizer: &str) -> Value {
    let mut operations: Vec<Value> = uid_test(meta).into_iter().collect();
    match meta.finalizers.as_deref() {
        None => {
            operations.push(json!({"op": "test", "path": "/metadata/finalizers", "value": null}));
            operations.push(json!({"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}));
        }
        Some(current) => {
            operations.push(json!({"op": "test", "path": "/metadata/finalizers", "value": current}));
            operations.push(json!({"op": "add", "path": "/metadata/finalizers/-", "value": finalizer}));
        }
    }
    Value::Array(operations)
}

/// Sets label `key` to `value`, guarded by a test of that label as `meta` shows it (absent,
/// or its current value).
#[must_use]
pub(crate) fn set_label(meta: &ObjectMeta, key: &str, value: &str) -> Value {
    let mut operations: Vec<Value> = uid_test(meta).into_iter().collect();
    let path = format!("/metadata/labels/{}", token(key));
    match meta.labels.as_ref() {
        None => {
            operations.push(json!({"op": "test", "path": "/metadata/labels", "value": null}));
            operations.push(json!({"op": "add", "path": "/metadata/labels", "value": {key: value}}));
        }
        Some(labels) => {
            let current = labels.get(key);
            operations.push(json!({"op": "test", "path": path, "value": current}));
            operations.push(json!({"op": "add", "path": path, "value": value}));
        }
    }
    Value::Array(operations)
}

/// Whether `error` is the server refusing a guarded patch whose `test` failed (422; the field
/// changed since it was cached), or a 409 Conflict.
pub(crate) fn is_stale(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 422 || status.code == 409)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(uid: Option<&str>, finalizers: Option<&[&str]>, labels: Option<&[(&str, &str)]>) -> ObjectMeta {
        ObjectMeta {
            uid: uid.map(str::to_string),
            finalizers: finalizers.map(|f| f.iter().map(|s| (*s).to_string()).collect()),
            labels: labels.map(|l| {
                l.iter()
                    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                    .collect()
            }),
            ..ObjectMeta::default()
        }
    }

    /// Applies `operations` to `doc` as RFC 6902 says, but for the `test` of `null` on an absent
    /// member that both servers pass.
    fn apply(doc: &mut Value, operations: &Value) -> bool {
        for op in operations.as_array().unwrap() {
            let path = op["path"].as_str().unwrap();
            match op["op"].as_str().unwrap() {
                "test" => {
                    let have = doc.pointer(path).cloned().unwrap_or(Value::Null);
                    if have != op["value"] {
                        return false;
                    }
                }
                "add" => {
                    let (parent, key) = path.rsplit_once('/').unwrap();
                    let key = key.replace("~1", "/").replace("~0", "~");
                    let target = doc.pointer_mut(parent).unwrap();
                    match target {
                        Value::Array(items) if key == "-" => items.push(op["value"].clone()),
                        Value::Object(members) => {
                            members.insert(key, op["value"].clone());
                        }
                        _ => return false,
                    }
                }
                other => panic!("unexpected op {other}"),
            }
        }
        true
    }

    #[test]
    fn a_finalizer_is_added_unless_the_finalizers_changed() {
        let cached = meta(Some("u1"), None, None);
        let ops = add_finalizer(&cached, "a/b");
        let mut server = json!({"metadata": {"uid": "u1"}, "spec": {"hubAcceptsClient": true}});
        assert!(apply(&mut server, &ops), "another field changed: still applies");
        assert_eq!(server["metadata"]["finalizers"], json!(["a/b"]));
        // Someone added a finalizer meanwhile: refused rather than overwritten.
        let mut server = json!({"metadata": {"uid": "u1", "finalizers": ["x/y"]}});
        assert!(!apply(&mut server, &ops));
        // From an up-to-date copy it appends.
        let ops = add_finalizer(&meta(Some("u1"), Some(&["x/y"]), None), "a/b");
        assert!(apply(&mut server, &ops));
        assert_eq!(server["metadata"]["finalizers"], json!(["x/y", "a/b"]));
        // Another object of the same name.
        let mut other = json!({"metadata": {"uid": "u2", "finalizers": ["x/y"]}});
        assert!(!apply(&mut other, &ops));
        // The operations decode as a kube JSON patch.
        assert!(json_patch(ops).is_ok());
    }

    #[test]
    fn a_label_is_set_unless_it_changed() {
        let key = "cluster.open-cluster-management.io/clusterset";
        let ops = set_label(&meta(None, None, None), key, "default");
        let mut server = json!({"metadata": {}});
        assert!(apply(&mut server, &ops));
        assert_eq!(server["metadata"]["labels"][key], "default");
        let ops = set_label(&meta(None, None, Some(&[("x", "1")])), key, "default");
        let mut server = json!({"metadata": {"labels": {"x": "1", "y": "2"}}});
        assert!(apply(&mut server, &ops), "other labels changed: still applies");
        assert_eq!(
            server["metadata"]["labels"],
            json!({"x": "1", "y": "2", key: "default"})
        );
        let mut labelled = json!({"metadata": {"labels": {key: "dev"}}});
        assert!(!apply(&mut labelled, &ops), "labelled meanwhile: refused");
        let ops = set_label(&meta(None, None, Some(&[(key, "")])), key, "default");
        let mut empty = json!({"metadata": {"labels": {key: ""}}});
        assert!(apply(&mut empty, &ops));
        assert_eq!(empty["metadata"]["labels"][key], "default");
        assert!(json_patch(ops).is_ok());
    }

    #[test]
    fn stale_means_422_or_409() {
        let status = |code: u16| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                ..kube::core::Status::default()
            }))
        };
        assert!(is_stale(&status(422)));
        assert!(is_stale(&status(409)));
        assert!(!is_stale(&status(404)));
    }
}
