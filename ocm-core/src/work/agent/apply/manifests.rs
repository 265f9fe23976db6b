//! Parsing the manifests of a work: each one's resource meta (ordinal, group, version, kind,
//! resource, namespace, name; ocm-core.md §3.3 step 2) and upstream's apply order (step 3).

use ocm_api::work::v1::{Manifest, ManifestResourceMeta};
use serde_json::{Map, Value};

use crate::work::agent::mapper::{MapperError, Mapping, ResourceMapper};

/// Why a manifest cannot be applied before any write.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ManifestError {
    /// The manifest has no usable `apiVersion`/`kind` (upstream: the decoder's message).
    #[error("Object 'Kind' is missing in '{0}'")]
    MissingKind(String),
    /// Discovery does not know the kind.
    #[error(transparent)]
    Map(#[from] MapperError),
}

/// One manifest of a work, parsed, with its place in the spec.
#[derive(Debug)]
pub(crate) struct Parsed {
    /// Index in `spec.workload.manifests`.
    pub(crate) index: usize,
    /// The object (with `metadata.uid` removed).
    pub(crate) object: Map<String, Value>,
    /// Its resource meta (as complete as discovery allowed).
    pub(crate) meta: ManifestResourceMeta,
    /// The mapping, or why there is none.
    pub(crate) mapping: Result<Mapping, ManifestError>,
}

fn empty(value: &str) -> Option<String> {
    Some(value.to_string()).filter(|v| !v.is_empty())
}

/// Parses the manifests and sorts them into apply order (stable: spec order within a rank).
pub(crate) async fn parse(manifests: &[Manifest], mapper: &ResourceMapper) -> Vec<Parsed> {
    let mut parsed = Vec::with_capacity(manifests.len());
    for (index, manifest) in manifests.iter().enumerate() {
        let mut object = manifest.as_object().clone();
        if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
            metadata.remove("uid");
        }
        let ordinal = i32::try_from(index).unwrap_or(i32::MAX);
        let (Some(kind), Some(group), Some(version)) = (
            manifest.kind().filter(|k| !k.is_empty()),
            manifest.group(),
            manifest.version().filter(|v| !v.is_empty()),
        ) else {
            parsed.push(Parsed {
                index,
                meta: ManifestResourceMeta {
                    ordinal,
                    ..ManifestResourceMeta::default()
                },
                mapping: Err(ManifestError::MissingKind(
                    Value::Object(object.clone()).to_string(),
                )),
                object,
            });
            continue;
        };
        let mut meta = ManifestResourceMeta {
            ordinal,
            group: empty(group),
            version: empty(version),
            kind: empty(kind),
            name: manifest.name().and_then(empty),
            namespace: manifest.namespace().and_then(empty),
            resource: None,
        };
        let mapping = mapper
            .map(group, version, kind)
            .await
            .map_err(ManifestError::from);
        if let Ok(mapping) = &mapping {
            meta.resource = empty(&mapping.resource);
            if !mapping.namespaced {
                meta.namespace = None;
            }
        }
        parsed.push(Parsed {
            index,
            object,
            meta,
            mapping,
        });
    }
    parsed.sort_by_key(|p| {
        rank(
            p.object.get("kind").and_then(Value::as_str),
            p.mapping.is_ok() || p.meta.kind.is_some(),
        )
    });
    parsed
}

/// The apply rank of a kind (lower first); unparseable manifests last.
pub(crate) fn rank(kind: Option<&str>, parseable: bool) -> u32 {
    if !parseable {
        return 1001;
    }
    match kind.unwrap_or_default() {
        "PriorityClass"
        | "Namespace"
        | "CustomResourceDefinition"
        | "StorageClass"
        | "PersistentVolume"
        | "PodSecurityPolicy" => 0,
        "ClusterRole" | "ClusterRoleBinding" | "Role" | "RoleBinding" => 1,
        "NetworkPolicy" | "ResourceQuota" | "LimitRange" | "PodDisruptionBudget" | "ServiceAccount" => 2,
        "Secret" | "ConfigMap" | "PersistentVolumeClaim" => 3,
        "Service" => 4,
        "DaemonSet"
        | "Pod"
        | "ReplicationController"
        | "ReplicaSet"
        | "Deployment"
        | "HorizontalPodAutoscaler"
        | "StatefulSet"
        | "Job"
        | "CronJob" => 5,
        "APIService"
        | "MutatingWebhookConfiguration"
        | "ValidatingWebhookConfiguration"
        | "ValidatingAdmissionPolicy"
        | "ValidatingAdmissionPolicyBinding" => 6,
        _ => 1000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_follow_upstream() {
        assert_eq!(rank(Some("Namespace"), true), 0);
        assert_eq!(rank(Some("CustomResourceDefinition"), true), 0);
        assert_eq!(rank(Some("RoleBinding"), true), 1);
        assert_eq!(rank(Some("ServiceAccount"), true), 2);
        assert_eq!(rank(Some("ConfigMap"), true), 3);
        assert_eq!(rank(Some("Service"), true), 4);
        assert_eq!(rank(Some("Deployment"), true), 5);
        assert_eq!(rank(Some("ValidatingWebhookConfiguration"), true), 6);
        assert_eq!(rank(Some("Foo"), true), 1000);
        assert_eq!(rank(None, false), 1001);
    }

    #[test]
    fn sorting_is_stable_within_a_rank() {
        let mut kinds = vec![
            (0, "Foo"),
            (1, "ConfigMap"),
            (2, "Namespace"),
            (3, "Secret"),
            (4, "Bar"),
        ];
        kinds.sort_by_key(|(_, k)| rank(Some(k), true));
        let order: Vec<_> = kinds.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, [2, 1, 3, 0, 4]);
    }
}
