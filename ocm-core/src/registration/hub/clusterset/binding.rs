//! The `Bound` condition of ManagedClusterSetBindings.

use super::*;

pub(super) fn binding_error_policy(
    binding: Arc<ManagedClusterSetBinding>,
    error: &ClusterSetError,
    ctx: Arc<Context>,
) -> Action {
    ctx.metrics.reconciled("managedclustersetbinding", false);
    tracing::warn!(binding = %binding.name_any(), %error, "cluster set binding reconciliation failed");
    Action::requeue(ctx.options.resync)
}

#[tracing::instrument(skip_all, fields(binding = %binding.name_any()))]
pub(super) async fn reconcile_binding(
    binding: Arc<ManagedClusterSetBinding>,
    ctx: Arc<Context>,
) -> Result<Action, ClusterSetError> {
    let namespace = binding.namespace().unwrap_or_default();
    let name = binding.name_any();
    let set_name = binding.spec.cluster_set.clone().unwrap_or_default();
    let exists = !set_name.is_empty()
        && Api::<ManagedClusterSet>::all(ctx.client.clone())
            .get_opt(&set_name)
            .await
            .map_err(|source| ClusterSetError::List {
                what: "ManagedClusterSets",
                source,
            })?
            .is_some();
    let condition = if exists {
        Condition::new(
            managed_cluster_set_binding::BOUND,
            Status::True,
            managed_cluster_set_binding::reasons::CLUSTER_SET_BOUND,
            "",
            now(),
        )
    } else {
        Condition::new(
            managed_cluster_set_binding::BOUND,
            Status::False,
            managed_cluster_set_binding::reasons::CLUSTER_SET_NOT_FOUND,
            "",
            now(),
        )
    };
    let mut conditions = binding.status.as_ref().and_then(|s| s.conditions.clone());
    if conditions.set_condition(condition) {
        Api::<ManagedClusterSetBinding>::namespaced(ctx.client.clone(), &namespace)
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": {"conditions": conditions}})),
            )
            .await
            .map_err(|source| ClusterSetError::PatchStatus {
                kind: "ManagedClusterSetBinding",
                name,
                source,
            })?;
    }
    ctx.metrics.reconciled("managedclustersetbinding", true);
    Ok(Action::await_change())
}
