//! The entry points of built-in kind validation: which rules apply to which resource, on create,
//! update and status updates, and the scheme defaults these rules rely on.
//!
//! Causes come in kube-apiserver's order for each kind (spec rules after the metadata rules of
//! [`crate::rest`]); the aggregated message is formed by [`crate::status::ApiError::invalid`].

use serde_json::Value;

use super::field::Errors;
use super::{apps, batch, certificates, coordination, core, pod, rbac};
use crate::registry::ResourceInfo;

/// Scheme defaults the validation relies on that the workload defaults do not set: RBAC
/// `apiGroup`s, and a ReplicationController's selector and labels taken from its template.
pub fn default(info: &ResourceInfo, object: &mut Value) {
    if info.storage_group == "rbac.authorization.k8s.io" {
        rbac::default(&info.storage_resource, object);
    }
    if info.storage_group.is_empty() && info.storage_resource == "replicationcontrollers" {
        replication_controller_default(object);
    }
}

/// The strategies' preparation of built-in objects beyond [`crate::rest::kinds`]: fields of
/// disabled features dropped (`old` is the stored object on update).
pub fn prepare(info: &ResourceInfo, object: &mut Value, old: Option<&Value>) {
    if info.storage_group == "coordination.k8s.io" && info.storage_resource == "leases" {
        coordination::drop_disabled_fields(object, old);
    }
}

fn empty_map(v: Option<&Value>) -> bool {
    v.and_then(Value::as_object).is_none_or(serde_json::Map::is_empty)
}

fn replication_controller_default(object: &mut Value) {
    let Some(labels) = object
        .pointer("/spec/template/metadata/labels")
        .filter(|l| !empty_map(Some(l)))
        .cloned()
    else {
        return;
    };
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut)
        && empty_map(spec.get("selector"))
    {
        spec.insert("selector".into(), labels.clone());
    }
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
        && empty_map(meta.get("labels"))
    {
        meta.insert("labels".into(), labels);
    }
}

/// Validation of a built-in object on create (`old` = `None`) or update through the main
/// resource; `subresource` is the addressed subresource (`status`, `approval`) or empty.
pub fn validate(info: &ResourceInfo, object: &Value, old: Option<&Value>, subresource: &str) -> Errors {
    let group = info.storage_group.as_str();
    let resource = info.storage_resource.as_str();
    if subresource == "status" {
        return match group {
            "apps" => apps::status(resource, object),
            _ => Errors::new(),
        };
    }
    if !subresource.is_empty() {
        return Errors::new();
    }
    let mut errs = super::common::owner_references(object.get("metadata").unwrap_or(&Value::Null));
    errs.extend(kind_rules(group, resource, object, old));
    errs
}

fn kind_rules(group: &str, resource: &str, object: &Value, old: Option<&Value>) -> Errors {
    match (group, resource) {
        ("", "namespaces") if old.is_none() => core::namespace(object),
        ("", "nodes") => core::node(object, old),
        ("", "services") => core::service(object, old),
        ("", "pods") => match old {
            None => pod::pod(object),
            Some(old) => pod::pod_update(object, old),
        },
        ("", "podtemplates") => core::pod_template(object),
        ("", "replicationcontrollers") => core::replication_controller(object),
        ("", "secrets") => core::secret(object),
        ("", "configmaps") => core::config_map(object),
        ("apps", "deployments") => apps::deployment(object, old),
        ("apps", "replicasets") => apps::replica_set(object, old),
        ("apps", "statefulsets") => apps::stateful_set(object, old),
        ("apps", "daemonsets") => apps::daemon_set(object, old),
        ("apps", "controllerrevisions") => apps::controller_revision(object, old),
        ("batch", "jobs") => batch::job(object, old),
        ("batch", "cronjobs") => batch::cron_job(object, old),
        ("rbac.authorization.k8s.io", "roles") => rbac::role(object, true),
        ("rbac.authorization.k8s.io", "clusterroles") => rbac::role(object, false),
        ("rbac.authorization.k8s.io", "rolebindings") => rbac::binding(object, true),
        ("rbac.authorization.k8s.io", "clusterrolebindings") => rbac::binding(object, false),
        ("coordination.k8s.io", "leases") => coordination::lease(object),
        ("certificates.k8s.io", "certificatesigningrequests") => certificates::csr(object),
        _ => Errors::new(),
    }
}
