//! Writing a schedule: the PlacementDecisions (created, their status and labels patched, extra ones
//! deleted, with upstream's events) and the Placement's status (only when it changed).

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::events::EventRecorder;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use kube::{Api, Resource, ResourceExt};
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision, PlacementStatus};
use ocm_api::conditions;
use serde_json::json;
use tokio::sync::Semaphore;

use super::PlacementError;
use crate::placement::schedule::groups::decision_object;
use crate::placement::schedule::{Code, Schedule, cluster_name};

/// Event messages are cut to this many characters (kube allows 1024).
const MAX_EVENT_MESSAGE: usize = 1000;

/// How many events may be being published at once; a write waits for a free slot past that.
pub const EVENTS_IN_FLIGHT: usize = 64;

/// A write of a PlacementDecision the API server answered.
#[derive(Debug)]
pub enum Written {
    /// Created or patched: the object the API server returned.
    Decision(Arc<PlacementDecision>),
    /// Deleted: the version that was deleted.
    Deleted(Arc<PlacementDecision>),
}

/// What the writes need.
pub struct Writer<'a> {
    /// The hub client.
    pub client: &'a kube::Client,
    /// The event recorder.
    pub recorder: &'a EventRecorder,
    /// Slots for events being published: events are published beside the writes, not before
    /// the next one (a placement's writes do not wait for its events).
    pub events: &'a Arc<Semaphore>,
}

impl Writer<'_> {
    async fn event(
        &self,
        placement: &Placement,
        decision: &PlacementDecision,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.to_string(),
            note: Some(note),
            action: action.to_string(),
            secondary: Some(decision.object_ref(&())),
        };
        let Ok(permit) = self.events.clone().acquire_owned().await else {
            return;
        };
        let recorder = self.recorder.clone();
        let regarding = placement.object_ref(&());
        tokio::spawn(async move {
            if let Err(error) = recorder.publish(&event, &regarding).await {
                tracing::debug!(%error, reason = event.reason, "publishing an event failed");
            }
            drop(permit);
        });
    }

    /// Creates, updates and deletes the PlacementDecisions of `placement` so that they are those of
    /// `schedule`; `existing` are its current decisions. Every write the API server answered is
    /// pushed onto `written`, failed or not.
    ///
    /// # Errors
    /// The first failed write (the others are still tried).
    pub async fn bind(
        &self,
        placement: &Placement,
        schedule: &Schedule,
        existing: &[Arc<PlacementDecision>],
        written: &mut Vec<Written>,
    ) -> Result<(), PlacementError> {
        let namespace = placement.namespace().unwrap_or_default();
        let api: Api<PlacementDecision> = Api::namespaced(self.client.clone(), &namespace);
        let mut wanted = BTreeSet::new();
        let mut first_error = None;
        for (group, page) in schedule.pages() {
            wanted.insert(page.name.clone());
            let desired = decision_object(placement, group, page);
            let current = existing.iter().find(|d| d.name_any() == page.name).cloned();
            if let Err(error) = self
                .write_decision(&api, placement, schedule, desired, current, written)
                .await
            {
                first_error.get_or_insert(error);
            }
        }
        for decision in existing.iter().filter(|d| !wanted.contains(&d.name_any())) {
            match api.delete(&decision.name_any(), &DeleteParams::default()).await {
                Ok(_) => written.push(Written::Deleted(decision.clone())),
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    written.push(Written::Deleted(decision.clone()));
                    continue;
                }
                Err(source) => {
                    first_error.get_or_insert(PlacementError::DeleteDecision {
                        decision: decision.name_any(),
                        source,
                    });
                    continue;
                }
            }
            self.event(
                placement,
                decision,
                false,
                "DecisionDelete",
                "DecisionDeleted",
                format!(
                    "Decision {} is deleted with placement {} in namespace {namespace}",
                    decision.name_any(),
                    placement.name_any()
                ),
            )
            .await;
        }
        first_error.map_or(Ok(()), Err)
    }

    async fn write_decision(
        &self,
        api: &Api<PlacementDecision>,
        placement: &Placement,
        schedule: &Schedule,
        desired: PlacementDecision,
        current: Option<Arc<PlacementDecision>>,
        written: &mut Vec<Written>,
    ) -> Result<(), PlacementError> {
        let name = desired.name_any();
        let namespace = placement.namespace().unwrap_or_default();
        let current = match current {
            Some(current) => current,
            None => {
                let mut body = desired.clone();
                body.status = None;
                let created = api
                    .create(&PostParams::default(), &body)
                    .await
                    .map_err(|source| PlacementError::CreateDecision {
                        decision: name.clone(),
                        source,
                    })?;
                self.event(
                    placement,
                    &created,
                    false,
                    "DecisionCreate",
                    "DecisionCreated",
                    format!(
                        "Decision {name} is created with placement {} in namespace {namespace}",
                        placement.name_any()
                    ),
                )
                .await;
                let created = Arc::new(created);
                written.push(Written::Decision(created.clone()));
                created
            }
        };
        let decisions =
            |d: &PlacementDecision| d.status.as_ref().map(|s| s.decisions.clone()).unwrap_or_default();
        let wanted = decisions(&desired);
        let mut current = current;
        if decisions(&current) != wanted {
            let patch = json!({
                "metadata": {"uid": current.metadata.uid, "resourceVersion": current.metadata.resource_version},
                "status": {"decisions": wanted},
            });
            let patched = api
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|source| PlacementError::PatchDecision {
                    decision: name.clone(),
                    source,
                })?;
            self.decision_events(placement, &current, schedule).await;
            // Upstream leaves the labels to the next round (the echo of this write schedules the
            // placement again); this controller does not schedule again on its own writes, so
            // the labels follow in the same round, from the version just written.
            current = Arc::new(patched);
            written.push(Written::Decision(current.clone()));
        }
        let labels = desired.labels();
        if current.labels() != labels {
            let mut label_patch = serde_json::Map::new();
            for (k, v) in labels {
                if current.labels().get(k) != Some(v) {
                    label_patch.insert(k.clone(), json!(v));
                }
            }
            for k in current.labels().keys() {
                if !labels.contains_key(k) {
                    label_patch.insert(k.clone(), serde_json::Value::Null);
                }
            }
            let patch = json!({
                "metadata": {
                    "uid": current.metadata.uid,
                    "resourceVersion": current.metadata.resource_version,
                    "labels": label_patch,
                },
            });
            let patched = api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|source| PlacementError::PatchDecision {
                    decision: name,
                    source,
                })?;
            written.push(Written::Decision(Arc::new(patched)));
        }
        Ok(())
    }

    /// `DecisionUpdate` (a Warning naming the plugin when scheduling warned) and `ScoreUpdate`.
    async fn decision_events(
        &self,
        placement: &Placement,
        decision: &PlacementDecision,
        schedule: &Schedule,
    ) {
        let namespace = placement.namespace().unwrap_or_default();
        let base = format!(
            "Decision {} is updated with placement {} in namespace {namespace}",
            decision.name_any(),
            placement.name_any()
        );
        let (warning, note) = if schedule.status.code == Code::Warning {
            (
                true,
                format!(
                    "{base}: {} in plugin {}",
                    schedule.status.message, schedule.status.plugin
                ),
            )
        } else {
            (false, base)
        };
        self.event(
            placement,
            decision,
            warning,
            "DecisionUpdate",
            "DecisionUpdated",
            note,
        )
        .await;
        if schedule.scores.is_empty() {
            return;
        }
        self.event(
            placement,
            decision,
            false,
            "ScoreUpdate",
            "ScoreUpdated",
            score_message(schedule),
        )
        .await;
    }

    /// Patches the status of `placement` to what `schedule` says, if that changes it; the
    /// placement as the API server returned it, if it was patched.
    ///
    /// # Errors
    /// When the patch fails.
    pub async fn status(
        &self,
        placement: &Placement,
        schedule: &Schedule,
    ) -> Result<Option<Placement>, PlacementError> {
        let current = placement.status.clone().unwrap_or_default();
        let wanted = desired_status(&current, schedule);
        if wanted == current {
            return Ok(None);
        }
        let api: Api<Placement> =
            Api::namespaced(self.client.clone(), &placement.namespace().unwrap_or_default());
        let patch = json!({
            "metadata": {"uid": placement.metadata.uid, "resourceVersion": placement.metadata.resource_version},
            "status": {
                "numberOfSelectedClusters": wanted.number_of_selected_clusters,
                "decisionGroups": wanted.decision_groups,
                "conditions": wanted.conditions,
            },
        });
        api.patch_status(
            &placement.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map(Some)
        .map_err(|source| PlacementError::PatchStatus {
            placement: placement.name_any(),
            source,
        })
    }
}

/// The status `schedule` gives a placement whose status is `current`: conditions keep their
/// `lastTransitionTime` unless their status changes.
///
/// ```
/// use ocm_api::cluster::v1beta1::PlacementStatus;
/// # fn schedule() -> ocm_core::placement::schedule::Schedule {
/// #     let placement = ocm_api::cluster::v1beta1::Placement::new("p", Default::default());
/// #     let counts = Default::default();
/// #     let scores: std::sync::Arc<dyn ocm_core::placement::schedule::ScoreSource> =
/// #         std::sync::Arc::new(ocm_core::placement::schedule::ScoreMap::default());
/// #     let fleet = ocm_core::placement::schedule::Fleet {
/// #         clusters: &[], sets: &[], bindings: &[], scores: &scores, decision_counts: &counts,
/// #     };
/// #     ocm_core::placement::schedule::schedule(&placement, &[], fleet, k8s_openapi::jiff::Timestamp::now())
/// #         .unwrap().unwrap()
/// # }
/// let status = ocm_core::placement::controller::desired_status(&PlacementStatus::default(), &schedule());
/// // Nothing selected: no count is written onto a status without one, as upstream.
/// assert_eq!(status.number_of_selected_clusters, None);
/// assert_eq!(status.decision_groups.unwrap().len(), 1);
/// assert_eq!(status.conditions.unwrap().len(), 2);
/// ```
#[must_use]
pub fn desired_status(current: &PlacementStatus, schedule: &Schedule) -> PlacementStatus {
    let mut status = current.clone();
    let selected = i32::try_from(schedule.selected.len()).unwrap_or(i32::MAX);
    // Upstream writes its status as a merge patch from the old status, where an absent count reads
    // as 0: a count of 0 is not written onto a status without one.
    if selected != 0 || status.number_of_selected_clusters.is_some() {
        status.number_of_selected_clusters = Some(selected);
    }
    status.decision_groups = Some(schedule.groups.iter().map(|g| g.status()).collect());
    let mut list = status.conditions.take().unwrap_or_default();
    for condition in &schedule.conditions {
        conditions::set(&mut list, condition.clone());
    }
    status.conditions = Some(list);
    status
}

/// `name:score ` pairs by cluster name, cut with `......` past 1000 characters.
#[must_use]
pub fn score_message(schedule: &Schedule) -> String {
    let mut by_name: Vec<(&str, i64)> = schedule
        .scores
        .iter()
        .map(|(cluster, total)| (cluster_name(cluster), *total))
        .collect();
    by_name.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut message = String::new();
    for (name, score) in by_name {
        let pair = format!("{name}:{score} ");
        if message.len() + pair.len() > MAX_EVENT_MESSAGE {
            message.push_str("......");
            break;
        }
        message.push_str(&pair);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::schedule::testing::*;
    use crate::placement::schedule::{Fleet, schedule};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn scheduled(world: &World, at_time: k8s_openapi::jiff::Timestamp) -> Schedule {
        let p = placement("ns", "p");
        let fleet: Fleet<'_> = world.fleet();
        schedule(&p, &world.own(&p), fleet, at_time).unwrap().unwrap()
    }

    #[test]
    fn conditions_keep_their_transition_time_while_their_status_holds() {
        let world = World::with_clusters(&["c1"]);
        let first = desired_status(&PlacementStatus::default(), &scheduled(&world, now()));
        assert_eq!(first.number_of_selected_clusters, Some(1));
        let again = desired_status(&first, &scheduled(&world, at(60)));
        assert_eq!(again, first);
        let satisfied = |s: &PlacementStatus| {
            s.conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == "PlacementSatisfied")
                .map(|c| (c.status.clone(), c.last_transition_time.clone()))
        };
        let gone = World::with_clusters(&[]);
        let later = desired_status(&first, &scheduled(&gone, at(120)));
        assert_eq!(satisfied(&later), Some(("False".to_string(), Time(at(120)))));
        // Once written, a count of 0 is written too.
        assert_eq!(later.number_of_selected_clusters, Some(0));
    }

    #[test]
    fn score_messages_are_cut_past_1000_characters() {
        let names: Vec<String> = (0..200).map(|i| format!("cluster-{i:03}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let world = World::with_clusters(&refs);
        let message = score_message(&scheduled(&world, now()));
        // Balance 100 + Steady 0 for every cluster.
        assert!(
            message.starts_with("cluster-000:100 cluster-001:100 "),
            "{message}"
        );
        assert!(message.ends_with("......"));
        assert!(message.len() <= 1000 + 6);
    }
}
