//! Which field labels a field selector may name, per kind, and kube-apiserver's 400 message for
//! the others.
//!
//! kube-apiserver converts every label of a `fieldSelector` through the kind's field label
//! conversion before listing or watching. Kinds that register their own conversion (Pod, Node,
//! ReplicationController, Event, Namespace, Secret, Service, CertificateSigningRequest, Job)
//! accept their own lists, and word refusals their own way; all other built-in kinds accept
//! `metadata.name` and `metadata.namespace` only, and custom resources `metadata.name` (plus
//! `metadata.namespace` when namespaced).

use crate::registry::ResourceInfo;

/// The labels of the kinds with their own conversion (`None`: the default conversion).
fn own_labels(group: &str, resource: &str) -> Option<&'static [&'static str]> {
    Some(match (group, resource) {
        ("", "pods") => &[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
            "spec.host",
        ],
        ("", "nodes") => &["metadata.name", "spec.unschedulable"],
        ("", "replicationcontrollers") => &["metadata.name", "metadata.namespace", "status.replicas"],
        ("", "events") | ("events.k8s.io", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "metadata.namespace",
            "metadata.name",
        ],
        ("", "namespaces") => &["status.phase", "metadata.name"],
        ("", "secrets") => &["type", "metadata.namespace", "metadata.name"],
        ("", "services") => &[
            "metadata.namespace",
            "metadata.name",
            "spec.clusterIP",
            "spec.type",
        ],
        ("certificates.k8s.io", "certificatesigningrequests") => &["metadata.name", "spec.signerName"],
        ("batch", "jobs") => &["metadata.name", "metadata.namespace", "status.successful"],
        _ => return None,
    })
}

/// Checks one label of a field selector; the error is kube-apiserver's 400 message.
pub fn check(info: &ResourceInfo, label: &str) -> Result<(), String> {
    let not_supported = || format!("field label not supported: {label}");
    if info.is_custom() {
        return match label {
            "metadata.name" => Ok(()),
            "metadata.namespace" if info.namespaced => Ok(()),
            _ => Err(not_supported()),
        };
    }
    match own_labels(&info.group, &info.resource) {
        Some(labels) if labels.contains(&label) => Ok(()),
        Some(_) if info.group == "batch" => Err(format!("field label {label:?} not supported for Job")),
        Some(_) => Err(not_supported()),
        None if matches!(label, "metadata.name" | "metadata.namespace") => Ok(()),
        None => Err(format!(
            "{label:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn info(group: &str, version: &str, resource: &str) -> std::sync::Arc<ResourceInfo> {
        Registry::with_builtins().get(group, version, resource).unwrap()
    }

    #[test]
    fn kube_apiserver_words_refusals_per_kind() {
        let configmaps = info("", "v1", "configmaps");
        assert_eq!(check(&configmaps, "metadata.namespace"), Ok(()));
        assert_eq!(
            check(&configmaps, "spec.foo"),
            Err(
                "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                    .into()
            )
        );
        assert_eq!(
            check(&info("", "v1", "namespaces"), "metadata.namespace"),
            Err("field label not supported: metadata.namespace".into())
        );
        assert_eq!(check(&info("", "v1", "secrets"), "type"), Ok(()));
        assert_eq!(
            check(&info("batch", "v1", "jobs"), "spec.foo"),
            Err("field label \"spec.foo\" not supported for Job".into())
        );
        assert_eq!(
            check(&info("apps", "v1", "replicasets"), "status.replicas"),
            Err("\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"".into())
        );
    }
}
