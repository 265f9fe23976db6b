//! Per cluster: the default set label and `status.managedNamespaces`.

use super::*;

/// The loop's name in the reconcile metrics (upstream's controller name).
const CONTROLLER: &str = "managednamespace";

pub(super) fn cluster_error_policy(
    cluster: Arc<ManagedCluster>,
    error: &ClusterSetError,
    ctx: Arc<Context>,
) -> Action {
    ctx.metrics.reconciled(CONTROLLER, false);
    tracing::warn!(cluster = %cluster.name_any(), %error, "cluster set membership reconciliation failed");
    Action::requeue(ctx.options.resync)
}

#[tracing::instrument(skip_all, fields(cluster = %cluster.name_any()))]
pub(super) async fn reconcile_cluster(
    cluster: Arc<ManagedCluster>,
    ctx: Arc<Context>,
) -> Result<Action, ClusterSetError> {
    let name = cluster.name_any();
    if cluster.metadata.deletion_timestamp.is_some() || ctx.own_writes.behind(cluster.as_ref()) {
        return Ok(Action::await_change());
    }
    if ctx.options.default_sets
        && let Some(patch) = default_label_patch(&cluster)
    {
        let result = match super::super::guarded::json_patch(patch) {
            Ok(patch) => {
                ctx.own_writes
                    .noting(Api::<ManagedCluster>::all(ctx.client.clone()).patch(
                        &name,
                        &PatchParams::default(),
                        &patch,
                    ))
                    .await
            }
            Err(error) => Err(error),
        };
        match result {
            // The label change brings the cluster back with its new labels.
            Ok(_) => {}
            // The cached label was stale: the cluster was labelled since; its newer version
            // comes back through the watch.
            Err(error) if super::super::guarded::is_stale(&error) => {
                tracing::debug!(cluster = %name, "cluster label changed since it was cached; not labelling");
            }
            Err(source) => {
                return Err(ClusterSetError::LabelCluster {
                    cluster: name.clone(),
                    source,
                });
            }
        }
        ctx.metrics.reconciled(CONTROLLER, true);
        return Ok(Action::await_change());
    }
    ctx.sets
        .wait_until_ready()
        .await
        .map_err(|_| ClusterSetError::Cache("ManagedClusterSet"))?;
    let sets = ctx.sets.state();
    let current = cluster
        .status
        .as_ref()
        .and_then(|s| s.managed_namespaces.clone())
        .unwrap_or_default();
    let wanted = managed_namespaces(cluster.labels(), &sets, &current);
    if wanted != current {
        ctx.own_writes
            .noting(Api::<ManagedCluster>::all(ctx.client.clone()).patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": {"managedNamespaces": wanted}})),
            ))
            .await
            .map_err(|source| ClusterSetError::PatchStatus {
                kind: "ManagedCluster",
                name: name.clone(),
                source,
            })?;
        let names: Vec<String> = wanted
            .iter()
            .map(|n| format!("{}/{}", n.cluster_set, n.name))
            .collect();
        let event = kube::runtime::events::Event {
            type_: kube::runtime::events::EventType::Normal,
            reason: "ManagedNamespacesUpdated".to_string(),
            note: Some(format!("Updated managed namespaces of cluster {name}: {names:?}")),
            action: "ManagedNamespacesUpdated".to_string(),
            secondary: None,
        };
        let reference = kube::Resource::object_ref(cluster.as_ref(), &());
        if let Err(error) = ctx.recorder.publish(&event, &reference).await {
            tracing::debug!(%error, "publishing an event failed");
        }
    }
    ctx.metrics.reconciled(CONTROLLER, true);
    Ok(Action::await_change())
}
