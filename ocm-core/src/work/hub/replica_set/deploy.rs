//! The deploy step: ManifestWorks for the clusters the Placements decide, rolled out by each
//! Placement reference's strategy (ocm-core.md §3.11).
//!
//! For a replica set, in order:
//! 1. its owner key must be a label value, else `ManifestworkApplied` False
//!    `InvalidManifestWorkName` and nothing else happens;
//! 2. works of Placements no longer referenced (or naming none) are deleted;
//! 3. for each Placement reference: a missing Placement stops everything with `PlacementVerified`
//!    False `PlacementDecisionNotFound`; otherwise the works carrying the current template give
//!    each cluster's rollout status, [`ocm_api::rollout::plan`] says which clusters get the
//!    template now (their works are created or updated), and the works of clusters the
//!    Placement no longer selects are deleted;
//! 4. `placementSummary`, `summary.total`, `PlacementVerified` and `PlacementRolledOut` follow.
//!
//! [`plan_placement`] is step 3 without the API calls.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use ocm_api::cluster::v1beta1::Placement;
use ocm_api::names::conditions::work::manifest_work_replica_set::reasons;
use ocm_api::names::labels::{MANIFEST_WORK_REPLICA_SET, MANIFEST_WORK_REPLICA_SET_PLACEMENT};
use ocm_api::rollout::{self, ClusterGroups, RolloutStatus};
use ocm_api::work::v1::{ManifestWork, ManifestWorkSpec};
use ocm_api::work::v1alpha1::{
    LocalPlacementReference, ManifestWorkReplicaSet, ManifestWorkReplicaSetStatus,
};

use super::decisions::cluster_groups;
use super::summary::{self, manifestwork_applied, placement_summary, placement_verified, rolled_out};
use super::works::{self, ReplicaSetWorks, has_template, owner_key, rollout_status};
use super::{Context, ReplicaSetError};

/// What the rollout of one Placement reference does now.
#[derive(Debug, Default, Clone)]
pub struct PlacementStep {
    /// The clusters whose work carries the current template.
    pub current: BTreeSet<String>,
    /// Those of them whose rollout status is `Succeeded`.
    pub succeeded: BTreeSet<String>,
    /// The clusters to create or update the work of, in the planner's order.
    pub to_apply: Vec<String>,
    /// The works of clusters the Placement no longer selects.
    pub to_remove: Vec<Arc<ManifestWork>>,
    /// When the rollout must be looked at again (a soak time ends, a deadline passes).
    pub recheck_after: Option<Duration>,
}

/// Plans the rollout of `reference` over `groups`, given the Placement's works `works`.
///
/// Works whose spec is not the template count as not rolled out (the planner sees their
/// clusters as new); works in clusters outside `groups` are to be removed, whatever their spec.
///
/// # Errors
/// The rollout strategy holds an invalid value.
pub fn plan_placement(
    reference: &LocalPlacementReference,
    groups: &ClusterGroups,
    works: &[Arc<ManifestWork>],
    template: &ManifestWorkSpec,
    now: k8s_openapi::jiff::Timestamp,
) -> Result<PlacementStep, rollout::Error> {
    let mut step = PlacementStep::default();
    let mut statuses = Vec::new();
    for work in works {
        if !has_template(work, template) {
            continue;
        }
        let cluster = work.namespace().unwrap_or_default();
        let group = groups.group_of(&cluster).cloned().unwrap_or_default();
        let status = rollout_status(&cluster, group, work);
        if status.status == RolloutStatus::Succeeded {
            step.succeeded.insert(cluster.clone());
        }
        step.current.insert(cluster);
        statuses.push(status);
    }
    let strategy = reference.rollout_strategy.clone().unwrap_or_default();
    let result = rollout::plan(&strategy, groups, &statuses, now)?;
    step.to_apply = result
        .clusters_to_rollout
        .iter()
        .filter(|c| c.status == RolloutStatus::ToApply)
        .map(|c| c.cluster_name.clone())
        .collect();
    let selected = groups.clusters();
    step.to_remove = works
        .iter()
        .filter(|w| !selected.contains(w.namespace().unwrap_or_default().as_str()))
        .cloned()
        .collect();
    step.recheck_after = result.recheck_after;
    Ok(step)
}

/// How the deploy step ended.
#[derive(Debug, Default)]
pub struct DeployOutcome {
    /// Whether the status step is skipped (invalid owner key, missing Placement).
    pub stopped: bool,
    /// The nearest recheck of a rollout.
    pub recheck_after: Option<Duration>,
    /// What failed; the other clusters and Placements were still handled.
    pub errors: Vec<ReplicaSetError>,
}

/// Runs the deploy step for `set`, whose works are `works`, writing into `status`.
pub(super) async fn deploy(
    ctx: &Context,
    set: &ManifestWorkReplicaSet,
    works: &ReplicaSetWorks,
    status: &mut ManifestWorkReplicaSetStatus,
    now: &Time,
) -> DeployOutcome {
    let mut outcome = DeployOutcome::default();
    let key = owner_key(set);
    if let Some(message) = summary::invalid_owner_key(&key) {
        summary::set(
            status,
            manifestwork_applied(reasons::INVALID_MANIFEST_WORK_NAME, &message, now.clone()),
        );
        outcome.stopped = true;
        return outcome;
    }
    let namespace = set.namespace().unwrap_or_default();
    let referenced: BTreeSet<&str> = set.spec.placement_refs.iter().map(|r| r.name.as_str()).collect();
    for work in works.orphaned(&referenced) {
        if let Err(error) = delete_work(ctx, work).await {
            outcome.errors.push(error);
        }
    }

    let template = works::template(set);
    let decisions = ctx.decisions.state();
    let (mut total, mut count, mut succeeded) = (0_i64, 0_usize, 0_usize);
    let mut summaries = Vec::new();
    for reference in &set.spec.placement_refs {
        let Some(placement) = ctx
            .placements
            .get(&ObjectRef::<Placement>::new(&reference.name).within(&namespace))
        else {
            summary::set(
                status,
                placement_verified(reasons::PLACEMENT_DECISION_NOT_FOUND, now.clone()),
            );
            outcome.stopped = true;
            return outcome;
        };
        let groups = match cluster_groups(&namespace, &reference.name, decisions.iter()) {
            Ok(groups) => groups,
            Err(source) => {
                outcome.errors.push(ReplicaSetError::ReadDecisions(source));
                continue;
            }
        };
        let placement_works = works.of_placement(&reference.name);
        let mut step = match plan_placement(reference, &groups, placement_works, &template, now.0) {
            Ok(step) => step,
            Err(source) => {
                summary::set(status, placement_verified(reasons::NOT_AS_EXPECTED, now.clone()));
                outcome.errors.push(ReplicaSetError::PlanRollout {
                    replica_set: format!("{namespace}/{}", set.name_any()),
                    placement: reference.name.clone(),
                    source: Box::new(source),
                });
                continue;
            }
        };
        if let Some(recheck) = step.recheck_after {
            outcome.recheck_after = Some(outcome.recheck_after.map_or(recheck, |r| r.min(recheck)));
        }
        for cluster in &step.to_apply {
            let existing = works.find(&reference.name, cluster);
            match apply_work(ctx, set, cluster, &reference.name, existing.map(|w| &**w)).await {
                Ok(()) => {
                    step.current.insert(cluster.clone());
                }
                Err(error) => outcome.errors.push(error),
            }
        }
        for work in &step.to_remove {
            match delete_work(ctx, work).await {
                Ok(()) => {
                    step.current.remove(&work.namespace().unwrap_or_default());
                }
                Err(error) => outcome.errors.push(error),
            }
        }
        let placement_status = placement.status.clone().unwrap_or_default();
        let selected = placement_status.number_of_selected_clusters.unwrap_or_default();
        let decision_groups = placement_status.decision_groups.as_ref().map_or(0, Vec::len);
        total += i64::from(selected);
        summaries.push(placement_summary(
            &reference.name,
            decision_groups,
            step.current.len(),
            selected,
        ));
        count += step.current.len();
        succeeded += step.succeeded.len();
    }
    status.placement_summary = Some(summaries);
    let previous = status.summary.clone().unwrap_or_default();
    let mut overall = summary::summary(count, works::Counts::default());
    if count > 0 {
        // The condition counts are the status step's; keep the last ones until then.
        overall.applied = previous.applied.or(Some(0));
        overall.available = previous.available.or(Some(0));
        overall.degraded = previous.degraded.or(Some(0));
        overall.progressing = previous.progressing.or(Some(0));
    }
    overall.desired_total = previous.desired_total.or(Some(0));
    overall.updated = previous.updated.or(Some(0));
    status.summary = Some(overall);
    let verified = if count == 0 {
        reasons::PLACEMENT_DECISION_EMPTY
    } else {
        reasons::AS_EXPECTED
    };
    summary::set(status, placement_verified(verified, now.clone()));
    let complete = total == i64::try_from(succeeded).unwrap_or(i64::MAX);
    summary::set(status, rolled_out(complete, now.clone()));
    outcome
}

/// Creates or updates the work of `cluster` for `placement`. Without a work in the cache, the
/// cluster namespace is asked first, so that a cache lagging behind a create made moments ago
/// does not make a second work (names are generated).
async fn apply_work(
    ctx: &Context,
    set: &ManifestWorkReplicaSet,
    cluster: &str,
    placement: &str,
    cached: Option<&ManifestWork>,
) -> Result<(), ReplicaSetError> {
    let api: Api<ManifestWork> = Api::namespaced(ctx.client.clone(), cluster);
    let existing = match cached {
        Some(work) => Some(work.clone()),
        None => {
            let selector = format!(
                "{MANIFEST_WORK_REPLICA_SET}={},{MANIFEST_WORK_REPLICA_SET_PLACEMENT}={placement}",
                owner_key(set)
            );
            api.list(&ListParams::default().labels(&selector))
                .await
                .map_err(|source| ReplicaSetError::ListWorks {
                    namespace: cluster.to_owned(),
                    source,
                })?
                .items
                .into_iter()
                .next()
        }
    };
    match existing {
        None => {
            let work = works::desired(set, cluster, placement, None);
            match api.create(&PostParams::default(), &work).await {
                Ok(created) => {
                    tracing::info!(work = %format!("{cluster}/{}", created.name_any()), "created ManifestWork");
                    Ok(())
                }
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
                Err(source) => Err(ReplicaSetError::CreateWork {
                    namespace: cluster.to_owned(),
                    source,
                }),
            }
        }
        Some(mut work) => {
            let name = work.name_any();
            let desired = works::desired(set, cluster, placement, Some(&name));
            if !works::needs_update(&work, &desired) {
                return Ok(());
            }
            work.metadata.labels = desired.metadata.labels;
            work.metadata.annotations = None;
            work.metadata.owner_references = None;
            work.metadata.managed_fields = None;
            work.spec = desired.spec;
            api.replace(&name, &PostParams::default(), &work)
                .await
                .map_err(|source| ReplicaSetError::UpdateWork {
                    namespace: cluster.to_owned(),
                    name: name.clone(),
                    source,
                })?;
            tracing::info!(work = %format!("{cluster}/{name}"), "updated ManifestWork");
            Ok(())
        }
    }
}

/// Deletes `work` (gone already is fine).
pub(super) async fn delete_work(ctx: &Context, work: &ManifestWork) -> Result<(), ReplicaSetError> {
    let namespace = work.namespace().unwrap_or_default();
    let name = work.name_any();
    if work.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    match Api::<ManifestWork>::namespaced(ctx.client.clone(), &namespace)
        .delete(&name, &DeleteParams::default())
        .await
    {
        Ok(_) => {
            tracing::info!(work = %format!("{namespace}/{name}"), "deleted ManifestWork");
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(ReplicaSetError::DeleteWork {
            namespace,
            name,
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use k8s_openapi::jiff::Timestamp;
    use ocm_api::cluster::v1alpha1::{RolloutProgressive, RolloutStrategy, RolloutType};
    use ocm_api::conditions::Status;
    use ocm_api::meta::Condition;
    use ocm_api::rollout::GroupKey;
    use ocm_api::work::v1::ManifestWorkStatus;

    use super::*;

    fn work(cluster: &str, spec: &ManifestWorkSpec, succeeded: bool) -> Arc<ManifestWork> {
        let mut w = ManifestWork::new(&format!("set-{cluster}"), spec.clone());
        w.metadata.namespace = Some(cluster.into());
        w.metadata.generation = Some(1);
        if succeeded {
            let at = Time(Timestamp::from_second(100).unwrap_or_default());
            w.status = Some(ManifestWorkStatus {
                conditions: Some(vec![
                    Condition::new("Applied", Status::True, "T", "", at.clone()).with_observed_generation(1),
                    Condition::new("Progressing", Status::False, "T", "", at).with_observed_generation(1),
                ]),
                ..ManifestWorkStatus::default()
            });
        }
        Arc::new(w)
    }

    fn progressive(max_concurrency: i32) -> LocalPlacementReference {
        LocalPlacementReference {
            name: "p".into(),
            rollout_strategy: Some(RolloutStrategy {
                type_: Some(RolloutType::Progressive),
                progressive: Some(RolloutProgressive {
                    max_concurrency: Some(IntOrString::Int(max_concurrency)),
                    ..RolloutProgressive::default()
                }),
                ..RolloutStrategy::default()
            }),
        }
    }

    fn groups(clusters: &[&str]) -> ClusterGroups {
        ClusterGroups::new().with_group(GroupKey::new("", 0), clusters.iter().copied())
    }

    fn spec(name: &str) -> ManifestWorkSpec {
        serde_json::from_value(serde_json::json!({"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}]}}))
        .unwrap_or_default()
    }

    #[test]
    fn all_applies_every_selected_cluster_and_removes_the_others() {
        let template = spec("cm1");
        let reference = LocalPlacementReference {
            name: "p".into(),
            rollout_strategy: None,
        };
        let works = [work("c1", &template, true), work("c9", &template, true)];
        let now = Timestamp::from_second(200).unwrap_or_default();
        let step = plan_placement(&reference, &groups(&["c1", "c2", "c3"]), &works, &template, now)
            .unwrap_or_default();
        assert_eq!(step.to_apply, vec!["c2".to_string(), "c3".to_string()]);
        assert_eq!(step.to_remove.len(), 1);
        assert_eq!(step.to_remove[0].namespace().as_deref(), Some("c9"));
        assert_eq!(step.succeeded.len(), 2);
    }

    #[test]
    fn progressive_keeps_max_concurrency_in_flight_and_updates_old_templates() {
        let (old, new) = (spec("cm1"), spec("cm2"));
        let now = Timestamp::from_second(200).unwrap_or_default();
        // Nothing yet: two at a time.
        let step = plan_placement(
            &progressive(2),
            &groups(&["c1", "c2", "c3", "c4"]),
            &[],
            &new,
            now,
        )
        .unwrap_or_default();
        assert_eq!(step.to_apply, vec!["c1".to_string(), "c2".to_string()]);
        // c1 and c2 carry the old template and succeeded there: they count as not rolled out.
        let works = [work("c1", &old, true), work("c2", &old, true)];
        let step = plan_placement(
            &progressive(2),
            &groups(&["c1", "c2", "c3", "c4"]),
            &works,
            &new,
            now,
        )
        .unwrap_or_default();
        assert_eq!(step.to_apply, vec!["c1".to_string(), "c2".to_string()]);
        assert!(step.current.is_empty());
        // c1 applied the new one and is not done: only one more.
        let works = [work("c1", &new, false), work("c2", &new, true)];
        let step = plan_placement(
            &progressive(2),
            &groups(&["c1", "c2", "c3", "c4"]),
            &works,
            &new,
            now,
        )
        .unwrap_or_default();
        assert_eq!(step.to_apply, vec!["c1".to_string(), "c3".to_string()]);
    }

    #[test]
    fn an_invalid_strategy_is_an_error() {
        let mut reference = progressive(2);
        if let Some(p) = reference
            .rollout_strategy
            .as_mut()
            .and_then(|s| s.progressive.as_mut())
        {
            p.max_concurrency = Some(IntOrString::String("many".into()));
        }
        let now = Timestamp::from_second(200).unwrap_or_default();
        assert!(plan_placement(&reference, &groups(&["c1"]), &[], &spec("cm1"), now).is_err());
    }
}
