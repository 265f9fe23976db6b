//! The RBAC the hub grants an accepted cluster, rendered as typed objects (pure functions).
//!
//! Names, rules and subjects are upstream's byte for byte (ocm-core.md §2.2): a per-cluster
//! ClusterRole and ClusterRoleBinding `open-cluster-management:managedcluster:<c>`, two RoleBindings
//! in the cluster namespace (`…:<c>:registration` and `…:<c>:work`, the latter with the
//! `manifest-work-cleanup` finalizer) bound to the shared ClusterRoles
//! `open-cluster-management:managedcluster:registration` and `…:work`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use ocm_api::names::{finalizers, labels, objects, subjects};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Group of the renew permission checked by the CSR approver.
pub const REGISTER_GROUP: &str = "register.open-cluster-management.io";
/// The finalizer on the work RoleBinding, released once no ManifestWork remains.
pub const MANIFEST_WORK_CLEANUP: &str = finalizers::MANIFEST_WORK_CLEANUP;

fn rule(groups: &[&str], resources: &[&str], names: &[&str], verbs: &[&str]) -> PolicyRule {
    let strings = |v: &[&str]| v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
    PolicyRule {
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        resource_names: (!names.is_empty()).then(|| strings(names)),
        verbs: strings(verbs),
        non_resource_urls: None,
    }
}

/// The labels of every object created for `cluster`: the cluster-name label plus `extra`.
#[must_use]
pub fn cluster_labels(cluster: &str, extra: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut all = extra.clone();
    all.insert(labels::CLUSTER_NAME.to_string(), cluster.to_string());
    all
}

fn meta(name: &str, namespace: Option<&str>, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        labels: Some(labels),
        ..ObjectMeta::default()
    }
}

/// The two groups every per-cluster binding names: `system:open-cluster-management:<c>` and
/// `open-cluster-management:<c>`.
#[must_use]
pub fn cluster_groups(cluster: &str) -> Vec<Subject> {
    [
        format!("{}{cluster}", subjects::SUBJECT_PREFIX),
        format!("open-cluster-management:{cluster}"),
    ]
    .into_iter()
    .map(|name| Subject {
        api_group: Some(RBAC_GROUP.to_string()),
        kind: "Group".to_string(),
        name,
        namespace: None,
    })
    .collect()
}

/// The cluster namespace `<c>`, labelled with the cluster name and `extra`.
#[must_use]
pub fn namespace(cluster: &str, extra: &BTreeMap<String, String>) -> Namespace {
    Namespace {
        metadata: meta(cluster, None, cluster_labels(cluster, extra)),
        ..Namespace::default()
    }
}

/// The per-cluster ClusterRole; `accepted` false renders the reduced (denied) rules.
#[must_use]
pub fn cluster_role(cluster: &str, accepted: bool, extra: &BTreeMap<String, String>) -> ClusterRole {
    let name = objects::managed_cluster_cluster_role(cluster);
    let rules = if accepted {
        vec![
            rule(
                &["certificates.k8s.io"],
                &["certificatesigningrequests"],
                &[],
                &["create", "get", "list", "watch"],
            ),
            rule(
                &[REGISTER_GROUP],
                &["managedclusters/clientcertificates"],
                &[],
                &["renew"],
            ),
            rule(
                &["cluster.open-cluster-management.io"],
                &["managedclusters"],
                &[cluster],
                &["get", "list", "update", "watch"],
            ),
            rule(
                &["cluster.open-cluster-management.io"],
                &["managedclusters/status"],
                &[cluster],
                &["patch", "update"],
            ),
        ]
    } else {
        vec![rule(
            &["cluster.open-cluster-management.io"],
            &["managedclusters"],
            &[cluster],
            &["get", "list", "watch"],
        )]
    };
    ClusterRole {
        metadata: meta(&name, None, cluster_labels(cluster, extra)),
        rules: Some(rules),
        aggregation_rule: None,
    }
}

fn role_ref(name: &str) -> RoleRef {
    RoleRef {
        api_group: Some(RBAC_GROUP.to_string()),
        kind: "ClusterRole".to_string(),
        name: name.to_string(),
    }
}

/// The per-cluster ClusterRoleBinding to [`cluster_role`].
#[must_use]
pub fn cluster_role_binding(cluster: &str, extra: &BTreeMap<String, String>) -> ClusterRoleBinding {
    let name = objects::managed_cluster_cluster_role(cluster);
    ClusterRoleBinding {
        metadata: meta(&name, None, cluster_labels(cluster, extra)),
        role_ref: role_ref(&name),
        subjects: Some(cluster_groups(cluster)),
    }
}

/// The registration RoleBinding in the cluster namespace.
#[must_use]
pub fn registration_role_binding(cluster: &str, extra: &BTreeMap<String, String>) -> RoleBinding {
    RoleBinding {
        metadata: meta(
            &objects::managed_cluster_registration_role_binding(cluster),
            Some(cluster),
            cluster_labels(cluster, extra),
        ),
        role_ref: role_ref(objects::REGISTRATION_CLUSTER_ROLE),
        subjects: Some(cluster_groups(cluster)),
    }
}

/// The work RoleBinding in the cluster namespace, carrying the manifest-work-cleanup finalizer.
#[must_use]
pub fn work_role_binding(cluster: &str, extra: &BTreeMap<String, String>) -> RoleBinding {
    let mut metadata = meta(
        &objects::managed_cluster_work_role_binding(cluster),
        Some(cluster),
        cluster_labels(cluster, extra),
    );
    metadata.finalizers = Some(vec![MANIFEST_WORK_CLEANUP.to_string()]);
    RoleBinding {
        metadata,
        role_ref: role_ref(objects::WORK_CLUSTER_ROLE),
        subjects: Some(cluster_groups(cluster)),
    }
}

/// The two shared ClusterRoles (registration and work), labelled cluster-name `""` plus `extra`.
#[must_use]
pub fn shared_cluster_roles(extra: &BTreeMap<String, String>) -> [ClusterRole; 2] {
    let labels = cluster_labels("", extra);
    [
        ClusterRole {
            metadata: meta(objects::REGISTRATION_CLUSTER_ROLE, None, labels.clone()),
            rules: Some(vec![
                rule(
                    &["coordination.k8s.io"],
                    &["leases"],
                    &[],
                    &["get", "list", "watch", "update"],
                ),
                rule(
                    &["addon.open-cluster-management.io"],
                    &["managedclusteraddons"],
                    &[],
                    &["get", "list", "watch"],
                ),
                rule(
                    &["addon.open-cluster-management.io"],
                    &["managedclusteraddons/status"],
                    &[],
                    &["patch", "update"],
                ),
                rule(&["events.k8s.io"], &["events"], &[], &["create"]),
            ]),
            aggregation_rule: None,
        },
        ClusterRole {
            metadata: meta(objects::WORK_CLUSTER_ROLE, None, labels),
            rules: Some(vec![
                rule(
                    &["", "events.k8s.io"],
                    &["events"],
                    &[],
                    &["create", "patch", "update"],
                ),
                rule(
                    &["work.open-cluster-management.io"],
                    &["manifestworks"],
                    &[],
                    &["get", "list", "watch", "update", "patch"],
                ),
                rule(
                    &["work.open-cluster-management.io"],
                    &["manifestworks/status"],
                    &[],
                    &["patch", "update"],
                ),
            ]),
            aggregation_rule: None,
        },
    ]
}

/// The finalizer the controller puts on accepted clusters.
pub const API_RESOURCE_CLEANUP: &str = finalizers::MANAGED_CLUSTER_API_RESOURCE_CLEANUP;

#[cfg(test)]
mod tests {
    use super::*;

    fn extra() -> BTreeMap<String, String> {
        BTreeMap::from([("team".to_string(), "a".to_string())])
    }

    #[test]
    fn per_cluster_objects_have_upstream_names_labels_and_subjects() {
        let role = cluster_role("c1", true, &extra());
        assert_eq!(
            role.metadata.name.as_deref(),
            Some("open-cluster-management:managedcluster:c1")
        );
        let labels = role.metadata.labels.clone().unwrap();
        assert_eq!(labels["open-cluster-management.io/cluster-name"], "c1");
        assert_eq!(labels["team"], "a");
        let rules = role.rules.unwrap();
        assert_eq!(rules.len(), 4);
        assert_eq!(
            rules[1].resources.as_deref(),
            Some(&["managedclusters/clientcertificates".to_string()][..])
        );
        assert_eq!(rules[1].verbs, vec!["renew"]);
        assert_eq!(rules[2].resource_names.as_deref(), Some(&["c1".to_string()][..]));
        let binding = cluster_role_binding("c1", &extra());
        let groups: Vec<_> = binding.subjects.unwrap().into_iter().map(|s| s.name).collect();
        assert_eq!(
            groups,
            vec!["system:open-cluster-management:c1", "open-cluster-management:c1"]
        );
        let work = work_role_binding("c1", &extra());
        assert_eq!(
            work.metadata.name.as_deref(),
            Some("open-cluster-management:managedcluster:c1:work")
        );
        assert_eq!(work.metadata.namespace.as_deref(), Some("c1"));
        assert_eq!(work.metadata.finalizers.unwrap(), vec![MANIFEST_WORK_CLEANUP]);
        assert_eq!(work.role_ref.name, "open-cluster-management:managedcluster:work");
        let reg = registration_role_binding("c1", &BTreeMap::new());
        assert_eq!(
            reg.metadata.name.as_deref(),
            Some("open-cluster-management:managedcluster:c1:registration")
        );
        assert_eq!(
            reg.role_ref.name,
            "open-cluster-management:managedcluster:registration"
        );
    }

    #[test]
    fn denied_role_only_reads_the_own_cluster() {
        let rules = cluster_role("c1", false, &BTreeMap::new()).rules.unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].verbs, vec!["get", "list", "watch"]);
        assert_eq!(rules[0].resource_names.as_deref(), Some(&["c1".to_string()][..]));
    }

    #[test]
    fn shared_roles_carry_an_empty_cluster_name_label() {
        let [registration, work] = shared_cluster_roles(&extra());
        assert_eq!(
            registration.metadata.labels.unwrap()["open-cluster-management.io/cluster-name"],
            ""
        );
        assert_eq!(
            work.metadata.name.as_deref(),
            Some("open-cluster-management:managedcluster:work")
        );
        let json = serde_json::to_value(&work).unwrap();
        assert_eq!(json["kind"], "ClusterRole");
        assert_eq!(
            json["rules"][0]["apiGroups"],
            serde_json::json!(["", "events.k8s.io"])
        );
    }
}
