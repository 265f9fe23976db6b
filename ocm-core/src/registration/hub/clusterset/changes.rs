//! Which watch events of clusters and sets matter to the other kind's loop.
//!
//! Re-evaluating every object of one kind on every change of the other is O(n²) with many
//! clusters: each joining cluster changes the `ClusterSetEmpty` message of the sets selecting it
//! ("N ManagedClusters selected"), and each such status write used to re-reconcile every cluster.
//! A [`ChangeFilter`] keeps a fingerprint of the fields the other loop depends on — a set's spec
//! and deletion, a cluster's labels and deletion — and lets an event through only when that
//! fingerprint changed, the object was deleted, or a relist finished.

use std::collections::HashMap;

use kube::ResourceExt;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta2::ManagedClusterSet;

use super::super::informers::Change;

/// What of an object another loop depends on, as a comparable string.
pub(super) trait Fingerprint {
    /// The fingerprint.
    fn fingerprint(&self) -> String;
}

impl Fingerprint for ManagedClusterSet {
    /// Membership and managed namespaces follow the spec; a deleting set stops counting.
    fn fingerprint(&self) -> String {
        let spec = serde_json::to_string(&self.spec).unwrap_or_default();
        format!("{}|{spec}", self.metadata.deletion_timestamp.is_some())
    }
}

impl Fingerprint for ManagedCluster {
    /// Set membership follows the labels.
    fn fingerprint(&self) -> String {
        let labels = serde_json::to_string(self.labels()).unwrap_or_default();
        format!("{}|{labels}", self.metadata.deletion_timestamp.is_some())
    }
}

/// The fingerprints seen so far, by object name.
#[derive(Debug, Default)]
pub(super) struct ChangeFilter {
    seen: HashMap<String, String>,
}

impl ChangeFilter {
    /// Whether `change` should re-evaluate the other kind's objects.
    pub(super) fn matters<K: Fingerprint + ResourceExt>(&mut self, change: &Change<K>) -> bool {
        match change {
            Change::Applied(obj) => {
                let fingerprint = obj.fingerprint();
                self.seen.insert(obj.name_any(), fingerprint.clone()) != Some(fingerprint)
            }
            Change::Deleted(obj) => {
                self.seen.remove(&obj.name_any());
                true
            }
            // A relist completed: re-evaluate once (the informer also reports what disappeared
            // meanwhile as deleted).
            Change::Relisted => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied<K>(object: K) -> Change<K> {
        Change::Applied(std::sync::Arc::new(object))
    }

    fn deleted<K>(object: K) -> Change<K> {
        Change::Deleted(std::sync::Arc::new(object))
    }
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use ocm_api::cluster::v1beta2::{ManagedClusterSetSpec, ManagedClusterSetStatus};
    use ocm_api::names::labels::CLUSTER_SET;

    fn set(status_message: &str, namespaces: &[&str]) -> ManagedClusterSet {
        let mut s = ManagedClusterSet::new(
            "dev",
            ManagedClusterSetSpec {
                cluster_selector: None,
                managed_namespaces: Some(
                    namespaces
                        .iter()
                        .map(|n| ocm_api::cluster::v1beta2::ManagedNamespaceConfig {
                            name: (*n).to_string(),
                        })
                        .collect(),
                ),
            },
        );
        s.status = Some(ManagedClusterSetStatus {
            conditions: Some(vec![ocm_api::meta::Condition::new(
                "ClusterSetEmpty",
                ocm_api::conditions::Status::False,
                "ClustersSelected",
                status_message,
                Time(k8s_openapi::jiff::Timestamp::now()),
            )]),
        });
        s
    }

    fn cluster(set_label: Option<&str>, accepted: bool) -> ManagedCluster {
        let mut c = ManagedCluster::new("c1", Default::default());
        if let Some(label) = set_label {
            c.labels_mut().insert(CLUSTER_SET.into(), label.into());
        }
        c.spec.hub_accepts_client = Some(accepted);
        c
    }

    #[test]
    fn a_set_status_change_does_not_reconcile_every_cluster() {
        let mut filter = ChangeFilter::default();
        assert!(filter.matters(&applied(set("1 ManagedClusters selected", &["a"]))));
        // Another cluster joined: only the status message changed.
        assert!(!filter.matters(&applied(set("2 ManagedClusters selected", &["a"]))));
        // The managed namespaces changed: every cluster must be looked at.
        assert!(filter.matters(&applied(set("2 ManagedClusters selected", &["a", "b"]))));
        let mut deleting = set("2 ManagedClusters selected", &["a", "b"]);
        deleting.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
        assert!(filter.matters(&applied(deleting.clone())));
        assert!(filter.matters(&deleted(deleting)));
    }

    #[test]
    fn only_label_changes_of_a_cluster_reconcile_the_sets() {
        let mut filter = ChangeFilter::default();
        assert!(filter.matters(&applied(cluster(None, false))));
        // Spec and status changes keep the membership.
        assert!(!filter.matters(&applied(cluster(None, true))));
        assert!(filter.matters(&applied(cluster(Some("default"), true))));
        assert!(!filter.matters(&applied(cluster(Some("default"), true))));
        // A relist re-evaluates once at its end, not per unchanged object.
        assert!(!filter.matters(&applied(cluster(Some("default"), true))));
        assert!(filter.matters::<ManagedCluster>(&Change::Relisted));
        assert!(filter.matters(&deleted(cluster(Some("default"), true))));
        // A cluster created again with the same labels is new.
        assert!(filter.matters(&applied(cluster(Some("default"), true))));
    }
}
