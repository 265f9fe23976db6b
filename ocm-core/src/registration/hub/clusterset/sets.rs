//! The status of ManagedClusterSets (`ClusterSetEmpty`) and the `default` and `global` sets.

use futures::Stream;

use super::*;

pub(super) fn error_policy(
    set: Arc<ManagedClusterSet>,
    error: &ClusterSetError,
    ctx: Arc<Context>,
) -> Action {
    ctx.metrics.reconciled("managedclusterset", false);
    tracing::warn!(set = %set.name_any(), %error, "cluster set reconciliation failed");
    Action::requeue(ctx.options.resync)
}

#[tracing::instrument(skip_all, fields(set = %set.name_any()))]
pub(super) async fn reconcile_set(
    set: Arc<ManagedClusterSet>,
    ctx: Arc<Context>,
) -> Result<Action, ClusterSetError> {
    ctx.clusters
        .wait_until_ready()
        .await
        .map_err(|_| ClusterSetError::Cache("ManagedCluster"))?;
    let mut selected = 0;
    for cluster in ctx.clusters.state() {
        if selects(&set, cluster.labels())? {
            selected += 1;
        }
    }
    let (status, reason, message) = empty_condition(selected);
    let mut conditions = set.status.as_ref().and_then(|s| s.conditions.clone());
    if conditions.set_condition(Condition::new(
        managed_cluster_set::EMPTY,
        status,
        reason,
        &message,
        now(),
    )) {
        let name = set.name_any();
        Api::<ManagedClusterSet>::all(ctx.client.clone())
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": {"conditions": conditions}})),
            )
            .await
            .map_err(|source| ClusterSetError::PatchStatus {
                kind: "ManagedClusterSet",
                name,
                source,
            })?;
    }
    ctx.metrics.reconciled("managedclusterset", true);
    Ok(Action::await_change())
}

/// Keeps the `default` and `global` sets: on every change of either and every resync, reading
/// them from the shared store.
pub(super) async fn default_sets_loop(
    sets: impl Stream<Item = Arc<ManagedClusterSet>> + Send + 'static,
    ctx: Arc<Context>,
) -> Result<(), ClusterSetError> {
    if !ctx.options.default_sets {
        return std::future::pending().await;
    }
    let mut events = std::pin::pin!(sets);
    let mut tick = tokio::time::interval(ctx.options.resync);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            event = events.next() => match event {
                None => return Err(ClusterSetError::Stopped("default cluster sets")),
                Some(set) if default_set_selector(&set.name_any()).is_none() => continue,
                Some(_) => {}
            },
        }
        ctx.sets
            .wait_until_ready()
            .await
            .map_err(|_| ClusterSetError::Cache("ManagedClusterSet"))?;
        for name in [DEFAULT_CLUSTER_SET, GLOBAL_CLUSTER_SET] {
            let result = ensure_default_set(&ctx, name).await;
            ctx.metrics.reconciled("defaultclusterset", result.is_ok());
            if let Err(error) = result {
                super::super::log_failure(name, &error, "keeping a default cluster set failed");
            }
        }
    }
}

async fn ensure_default_set(ctx: &Context, name: &str) -> Result<(), ClusterSetError> {
    let Some(selector) = default_set_selector(name) else {
        return Ok(());
    };
    let error = |source| ClusterSetError::DefaultSet {
        set: name.to_string(),
        source,
    };
    let sets = Api::<ManagedClusterSet>::all(ctx.client.clone());
    match ctx.sets.get(&ObjectRef::new(name)) {
        None => {
            let set = ManagedClusterSet::new(
                name,
                ManagedClusterSetSpec {
                    cluster_selector: Some(selector),
                    managed_namespaces: None,
                },
            );
            match sets.create(&PostParams::default(), &set).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                Err(source) => Err(error(source)),
            }
        }
        Some(existing) => {
            let auto_update = existing
                .annotations()
                .get(CLUSTER_SET_AUTO_UPDATE)
                .map(String::as_str)
                != Some("false");
            if !auto_update
                || existing.metadata.deletion_timestamp.is_some()
                || existing.spec.cluster_selector.as_ref() == Some(&selector)
            {
                return Ok(());
            }
            // A merge patch keeps keys it does not name: name every key, null where unwanted.
            let patch = json!({"metadata": {"resourceVersion": existing.resource_version()},
                "spec": {"clusterSelector": selector_merge_patch(name)}});
            sets.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(error)?;
            Ok(())
        }
    }
}

/// The merge-patch value that turns any `clusterSelector` into the one of default set `name`.
fn selector_merge_patch(name: &str) -> serde_json::Value {
    if name == GLOBAL_CLUSTER_SET {
        json!({"selectorType": "LabelSelector", "labelSelector": {"matchLabels": null, "matchExpressions": null}})
    } else {
        json!({"selectorType": "ExclusiveClusterSetLabel", "labelSelector": null})
    }
}
