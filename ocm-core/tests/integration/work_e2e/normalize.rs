//! What of a work's status and of an AppliedManifestWork two agents must agree on: everything
//! but times, UIDs and the hub hash's source.

use ocm_api::work::v1::{AppliedManifestWork, ManifestWork};
use serde_json::{Value, json};

/// Conditions without their times, sorted by type.
fn conditions(list: Option<&Value>) -> Value {
    let mut out: Vec<Value> = list
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .map(|c| {
                    json!({"type": c["type"], "status": c["status"], "reason": c["reason"],
                        "message": c["message"], "observedGeneration": c["observedGeneration"]})
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by_key(|c| c["type"].as_str().unwrap_or_default().to_string());
    Value::Array(out)
}

/// The work's conditions and per-manifest status (meta, conditions, feedback values sorted by
/// name), in ordinal order.
pub fn work_status(work: &ManifestWork) -> Value {
    let status = serde_json::to_value(&work.status).unwrap_or(Value::Null);
    let mut manifests: Vec<Value> = status
        .pointer("/resourceStatus/manifests")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .map(|m| {
                    let mut values: Vec<Value> = m
                        .pointer("/statusFeedback/values")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    values.sort_by_key(|v| v["name"].as_str().unwrap_or_default().to_string());
                    json!({"resourceMeta": m["resourceMeta"], "conditions": conditions(m.get("conditions")),
                        "feedback": values})
                })
                .collect()
        })
        .unwrap_or_default();
    manifests.sort_by_key(|m| m["resourceMeta"]["ordinal"].as_i64().unwrap_or_default());
    json!({"conditions": conditions(status.get("conditions")), "manifests": manifests})
}

/// The AppliedManifestWork's name, agent id presence and applied resources without UIDs.
pub fn applied(applied: &AppliedManifestWork) -> Value {
    let resources: Vec<Value> = applied
        .status
        .as_ref()
        .and_then(|s| s.applied_resources.as_ref())
        .map(|l| {
            l.iter()
                .map(|r| {
                    json!({"group": r.group, "version": r.version, "resource": r.resource,
                        "namespace": r.namespace, "name": r.name})
                })
                .collect()
        })
        .unwrap_or_default();
    json!({"name": applied.metadata.name, "hubHash": applied.spec.hub_hash,
        "manifestWorkName": applied.spec.manifest_work_name, "appliedResources": resources,
        "finalizers": applied.metadata.finalizers})
}
