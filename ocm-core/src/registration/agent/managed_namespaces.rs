//! Managed namespaces (ocm-core.md §1.9 step 5): the namespaces the cluster's ManagedClusterSets
//! ask for (`status.managedNamespaces`, filled by the hub) exist on the managed cluster.
//!
//! Each listed namespace is created, or kept, with the label
//! `clusterset.open-cluster-management.io/<hub hash, 63 characters>: "true"`, and its entry gets
//! the condition `NamespaceAvailable` (True `NamespaceApplied`, or False `NamespaceApplyFailed`
//! with the error). A namespace that carries the label `"true"` but is no longer listed (or every
//! one, while the ManagedCluster is being deleted) gets the value `"false"`: it is never deleted,
//! since it may hold the user's workloads.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedClusterStatus;
use ocm_api::conditions::{ConditionList, Status};
use ocm_api::meta::Condition;
use ocm_api::names::conditions::cluster::managed_namespace::{NAMESPACE_AVAILABLE, reasons};
use ocm_api::names::labels;
use ocm_api::spec_hash::hub_hash;

use super::{Agent, kubeconfig};

/// The managed-namespace label of the agent's hub (from its bootstrap kubeconfig's server).
pub(crate) fn hub_label(agent: &Agent) -> Option<String> {
    let (_, cluster) = kubeconfig::current_cluster(&agent.bootstrap)?;
    Some(labels::managed_namespace(&hub_hash(cluster.server.as_deref()?)))
}

/// Makes the namespaces of `status.managedNamespaces` exist with the hub's label and records the
/// outcome in each entry's conditions; releases namespaces no longer listed (all of them when
/// `deleting`). Failures are logged and recorded, never fatal to the status round.
pub(crate) async fn reconcile(agent: &Agent, status: &mut ManagedClusterStatus, deleting: bool) {
    let Some(label) = hub_label(agent) else {
        tracing::warn!(cluster = %agent.cluster, "the bootstrap kubeconfig names no server: managed namespaces skipped");
        return;
    };
    let api: Api<Namespace> = Api::all(agent.spoke.clone());
    let mut wanted = BTreeSet::new();
    if !deleting {
        for entry in status.managed_namespaces.iter_mut().flatten() {
            wanted.insert(entry.name.clone());
            let condition = match set_label(&api, &entry.name, &label, "true").await {
                Ok(()) => Condition::new(
                    NAMESPACE_AVAILABLE,
                    Status::True,
                    reasons::NAMESPACE_APPLIED,
                    "Namespace successfully applied and managed",
                    Time(Timestamp::now()),
                ),
                Err(error) => {
                    tracing::warn!(cluster = %agent.cluster, namespace = %entry.name, %error, "applying a managed namespace failed");
                    Condition::new(
                        NAMESPACE_AVAILABLE,
                        Status::False,
                        reasons::NAMESPACE_APPLY_FAILED,
                        &format!("Failed to apply namespace: {error}"),
                        Time(Timestamp::now()),
                    )
                }
            };
            entry.conditions.set_condition(condition);
        }
    }
    let managed = match api
        .list_metadata(&ListParams::default().labels(&format!("{label}=true")))
        .await
    {
        Ok(list) => list.items,
        Err(error) => {
            tracing::warn!(cluster = %agent.cluster, %error, "listing managed namespaces failed");
            return;
        }
    };
    for namespace in managed {
        let name = namespace.name_any();
        if wanted.contains(&name) {
            continue;
        }
        match set_label(&api, &name, &label, "false").await {
            Ok(()) => tracing::info!(cluster = %agent.cluster, namespace = %name, "NamespaceUnmanaged"),
            Err(error) => {
                tracing::warn!(cluster = %agent.cluster, namespace = %name, %error, "releasing a managed namespace failed");
            }
        }
    }
}

/// Creates namespace `name` with `label: value`, or sets that label on the existing one (its other
/// labels untouched).
async fn set_label(api: &Api<Namespace>, name: &str, label: &str, value: &str) -> Result<(), kube::Error> {
    match api.get_opt(name).await? {
        Some(existing) if existing.labels().get(label).map(String::as_str) == Some(value) => Ok(()),
        Some(_) => {
            let patch = serde_json::json!({"metadata": {"labels": {label: value}}});
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| ())
        }
        None => {
            let namespace = Namespace {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    labels: Some([(label.to_string(), value.to_string())].into()),
                    ..Default::default()
                },
                ..Default::default()
            };
            match api.create(&PostParams::default(), &namespace).await {
                Ok(_) => Ok(()),
                // Created meanwhile by someone else: label it on the next round.
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
                Err(error) => Err(error),
            }
        }
    }
}
