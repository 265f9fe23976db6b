//! The placement controller: schedules every Placement with [`crate::placement::schedule`] and
//! writes its PlacementDecisions and status (ocm-core.md §4.2, §4.3 steps 12–14).
//!
//! One kube-runtime `Controller` over Placements. Clusters, sets, bindings, add-on scores and
//! decisions are watched into reflector stores, and each of their watch events schedules again
//! only the placements it can affect (`triggers`); decisions are also indexed by placement with
//! per-cluster counts for Balance (`index`). Every placement is scheduled again every
//! [`PlacementOptions::resync`] (upstream's informer resync), and when a toleration of one of its
//! clusters expires.
//!
//! A misconfigured placement gets `PlacementMisconfigured=True`, a single empty decision and no
//! retry until something changes; failed writes are retried with per-placement backoff.

mod bind;
mod flight;
mod index;
mod scores;
mod triggers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::events::EventRecorder;
use futures::{Stream, StreamExt};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::{Action, Config as ControllerConfig};
use kube::runtime::events::Reporter;
use kube::runtime::reflector::{self, ObjectRef, Store, reflector};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

pub use bind::{EVENTS_IN_FLIGHT, desired_status, score_message};
pub use index::{DecisionIndex, PlacementKey, is_older};

use flight::{Flights, Writes};

use crate::metrics::ControllerMetrics;
use crate::placement::schedule::{self, Code, Fleet, ScheduleError, ScoreSource};
use crate::registration::hub::Backoff;

/// The controller's name in metrics, and the reporter of its events (upstream's).
pub const CONTROLLER_NAME: &str = "placement-controller";

/// The default of [`PlacementOptions::workers`].
pub const DEFAULT_WORKERS: u16 = 8;

/// How the placement controller runs.
#[derive(Debug, Clone)]
pub struct PlacementOptions {
    /// How often every placement is scheduled again without a change (upstream's informer
    /// resync: 10 minutes).
    pub resync: Duration,
    /// How many placements are written at once (upstream's scheduling controller: 1). Scheduling
    /// itself is serialized (it holds the decision index), and each placement's choice is reserved
    /// in the decision counts until its writes are in, so that Balance sees the placements being
    /// written; the workers overlap the API round trips (docs/performance.md).
    pub workers: u16,
}

impl Default for PlacementOptions {
    fn default() -> Self {
        Self {
            resync: Duration::from_secs(600),
            workers: DEFAULT_WORKERS,
        }
    }
}

/// What failed in the placement controller.
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// The controller or one of its watches stopped.
    #[error("the placement controller stopped")]
    Stopped,
    /// A cache was dropped before it filled.
    #[error("the {0} cache is gone")]
    CacheGone(&'static str),
    /// The placement could not be scheduled (an invalid cluster set selector).
    #[error("scheduling placement {placement}: {source}")]
    Schedule {
        /// The placement.
        placement: String,
        /// Why.
        source: ScheduleError,
    },
    /// Scheduling ended with an error status.
    #[error("scheduling placement {placement}: {plugin}:{message}")]
    Plugin {
        /// The placement.
        placement: String,
        /// The plugin.
        plugin: String,
        /// Its message.
        message: String,
    },
    /// Creating a PlacementDecision failed.
    #[error("creating placement decision {decision}: {source}")]
    CreateDecision {
        /// The decision.
        decision: String,
        /// The API error.
        source: kube::Error,
    },
    /// Patching a PlacementDecision's status or labels failed.
    #[error("patching placement decision {decision}: {source}")]
    PatchDecision {
        /// The decision.
        decision: String,
        /// The API error.
        source: kube::Error,
    },
    /// Deleting a PlacementDecision failed.
    #[error("deleting placement decision {decision}: {source}")]
    DeleteDecision {
        /// The decision.
        decision: String,
        /// The API error.
        source: kube::Error,
    },
    /// Patching a Placement's status failed.
    #[error("patching the status of placement {placement}: {source}")]
    PatchStatus {
        /// The placement.
        placement: String,
        /// The API error.
        source: kube::Error,
    },
}

struct Context {
    client: kube::Client,
    recorder: EventRecorder,
    clusters: Store<ManagedCluster>,
    sets: Store<ManagedClusterSet>,
    bindings: Store<ManagedClusterSetBinding>,
    scores_store: Store<AddOnPlacementScore>,
    scores: Arc<scores::ScoreIndex>,
    decisions: Store<PlacementDecision>,
    index: Arc<Mutex<DecisionIndex>>,
    /// Placements as this controller's last status patch returned them, until the placement
    /// cache holds that version (a placement scheduled again before then patches from it, and
    /// the watch event of that version is not scheduled again: [`is_echo`]).
    patched: Arc<Mutex<HashMap<PlacementKey, Arc<Placement>>>>,
    /// The placements being scheduled and written, and the events of them seen meanwhile.
    flights: Arc<Flights>,
    events: Arc<Semaphore>,
    backoff: Backoff,
    metrics: ControllerMetrics,
}

impl Context {
    /// `placement` from the cache, or the newer version this controller's status patch returned.
    fn newest(&self, key: &PlacementKey, cached: Arc<Placement>) -> Arc<Placement> {
        let mut patched = self
            .patched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match patched.get(key) {
            Some(ours)
                if is_older(
                    cached.resource_version().as_deref(),
                    ours.resource_version().as_deref(),
                ) =>
            {
                ours.clone()
            }
            Some(_) => {
                patched.remove(key);
                cached
            }
            None => cached,
        }
    }

    fn index(&self) -> std::sync::MutexGuard<'_, DecisionIndex> {
        self.index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits until every cache has been filled once.
    async fn ready(&self) -> Result<(), PlacementError> {
        self.clusters
            .wait_until_ready()
            .await
            .map_err(|_| PlacementError::CacheGone("cluster"))?;
        self.sets
            .wait_until_ready()
            .await
            .map_err(|_| PlacementError::CacheGone("cluster set"))?;
        self.bindings
            .wait_until_ready()
            .await
            .map_err(|_| PlacementError::CacheGone("cluster set binding"))?;
        self.scores_store
            .wait_until_ready()
            .await
            .map_err(|_| PlacementError::CacheGone("add-on placement score"))?;
        self.decisions
            .wait_until_ready()
            .await
            .map_err(|_| PlacementError::CacheGone("placement decision"))?;
        Ok(())
    }
}

/// A watch of every `K` into a reflector store, as a stream of watch events after they are stored.
fn watched<K>(client: &kube::Client) -> (Store<K>, impl Stream<Item = watcher::Event<K>> + Send + 'static)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store::<K>();
    let api: Api<K> = Api::all(client.clone());
    let stream = reflector(
        writer,
        watcher(api, watcher::Config::default()).modify(|o| o.meta_mut().managed_fields = None),
    )
    .default_backoff()
    .filter_map(|event| futures::future::ready(event.ok()));
    (store, stream)
}

/// Whether the watch event of `placement` is the echo of this controller's own status patch
/// (nothing the scheduling reads has changed). The overlay entry is dropped once the cache holds
/// that version or a newer one.
fn is_echo(patched: &Mutex<HashMap<PlacementKey, Arc<Placement>>>, placement: &Placement) -> bool {
    let key = (placement.namespace().unwrap_or_default(), placement.name_any());
    let mut patched = patched.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(ours) = patched.get(&key) else {
        return false;
    };
    let seen = placement.resource_version();
    let held = ours.resource_version();
    if is_older(seen.as_deref(), held.as_deref()) {
        return false;
    }
    patched.remove(&key);
    seen.is_some() && seen == held
}

/// A stream of object refs from a stream of lists.
fn refs<S>(stream: S) -> impl Stream<Item = ObjectRef<Placement>> + Send + 'static
where
    S: Stream<Item = Vec<ObjectRef<Placement>>> + Send + 'static,
{
    stream.flat_map(futures::stream::iter)
}

/// Runs the placement controller until it stops.
///
/// # Errors
/// [`PlacementError::Stopped`] when the controller's streams end.
pub async fn run(
    client: kube::Client,
    options: PlacementOptions,
    metrics: ControllerMetrics,
) -> Result<(), PlacementError> {
    let patched: Arc<Mutex<HashMap<PlacementKey, Arc<Placement>>>> = Arc::default();
    let (placement_store, placement_writer) = reflector::store::<Placement>();
    let flights = Arc::new(Flights::default());
    let echoes = patched.clone();
    let placement_flights = flights.clone();
    let placements = watcher(Api::<Placement>::all(client.clone()), watcher::Config::default())
        .modify(|p| p.metadata.managed_fields = None)
        .default_backoff()
        .reflect(placement_writer)
        .applied_objects()
        .filter(move |placement| {
            let news = placement.as_ref().map_or(true, |p| {
                !is_echo(&echoes, p)
                    && !placement_flights.hold_placement(
                        &(p.namespace().unwrap_or_default(), p.name_any()),
                        p.resource_version(),
                    )
            });
            futures::future::ready(news)
        });
    let controller = Controller::for_stream(placements, placement_store)
        .with_config(ControllerConfig::default().concurrency(options.workers));
    let (clusters, cluster_events) = watched::<ManagedCluster>(&client);
    let (sets, set_events) = watched::<ManagedClusterSet>(&client);
    let (bindings, binding_events) = watched::<ManagedClusterSetBinding>(&client);
    let (scores_store, score_events) = watched::<AddOnPlacementScore>(&client);
    let (decisions, decision_events) = watched::<PlacementDecision>(&client);
    let stores = triggers::Stores {
        placements: controller.store(),
        sets: sets.clone(),
        bindings: bindings.clone(),
        clusters: clusters.clone(),
    };
    let index = Arc::new(Mutex::new(DecisionIndex::default()));

    let last_labels = Arc::new(Mutex::new(HashMap::new()));
    let s = stores.clone();
    let cluster_triggers = refs(cluster_events.map(move |e| triggers::for_cluster(&s, &last_labels, &e)));
    let s = stores.clone();
    let set_triggers = refs(set_events.map(move |e| {
        triggers::touched(&e)
            .map(|o| triggers::for_set(&s, o))
            .unwrap_or_default()
    }));
    let s = stores.clone();
    let binding_triggers = refs(binding_events.map(move |e| {
        triggers::touched(&e)
            .map(|o| triggers::for_binding(&s, o))
            .unwrap_or_default()
    }));
    let s = stores.clone();
    let score_index = Arc::new(scores::ScoreIndex::new(scores_store.clone()));
    let indexed = score_index.clone();
    let score_triggers = refs(score_events.map(move |e| {
        indexed.changed();
        triggers::touched(&e)
            .map(|o| triggers::for_score(&s, o))
            .unwrap_or_default()
    }));
    let decision_index = index.clone();
    let decision_store = decisions.clone();
    let decision_flights = flights.clone();
    let decision_triggers = decision_events.filter_map(move |e| {
        let news = decision_index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .on_event(&e, &decision_store);
        let trigger = match &e {
            watcher::Event::Apply(d) | watcher::Event::Delete(d) if news => {
                triggers::for_decision(d).filter(|placement| {
                    let key = (
                        placement.namespace.clone().unwrap_or_default(),
                        placement.name.clone(),
                    );
                    let deleted = matches!(e, watcher::Event::Delete(_));
                    !decision_flights.hold_decision(&key, &d.name_any(), d.resource_version(), deleted)
                })
            }
            _ => None,
        };
        futures::future::ready(trigger)
    });
    let resync = options.resync;
    let periodic = futures::stream::unfold((), move |()| async move {
        tokio::time::sleep(resync).await;
        Some(((), ()))
    });

    let ctx = Arc::new(Context {
        recorder: EventRecorder::new(
            client.clone(),
            Reporter {
                controller: CONTROLLER_NAME.to_string(),
                instance: None,
            },
        ),
        client,
        clusters,
        sets,
        bindings,
        scores: score_index,
        scores_store,
        decisions,
        index,
        patched,
        flights,
        events: Arc::new(Semaphore::new(EVENTS_IN_FLIGHT)),
        backoff: Backoff::default(),
        metrics,
    });
    controller
        .reconcile_on(cluster_triggers)
        .reconcile_on(set_triggers)
        .reconcile_on(binding_triggers)
        .reconcile_on(score_triggers)
        .reconcile_on(decision_triggers)
        .reconcile_all_on(periodic)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(PlacementError::Stopped)
}

/// Schedules one placement and writes the result.
async fn reconcile(placement: Arc<Placement>, ctx: Arc<Context>) -> Result<Action, PlacementError> {
    ctx.ready().await?;
    let namespace = placement.namespace().unwrap_or_default();
    let name = placement.name_any();
    let key: PlacementKey = (namespace.clone(), name.clone());
    let flight = ctx.flights.start(key.clone());
    let placement = ctx.newest(&key, placement);
    let clusters = ctx.clusters.state();
    let sets = ctx.sets.state();
    let bindings = ctx.bindings.state();
    let scores: Arc<dyn ScoreSource> = ctx.scores.current();
    let (existing, outcome) = {
        let mut index = ctx.index();
        let existing = index.of(&namespace, &name);
        let fleet = Fleet {
            clusters: &clusters,
            sets: &sets,
            bindings: &bindings,
            scores: &scores,
            decision_counts: index.counts(),
        };
        let outcome = schedule::schedule(&placement, &existing, fleet, Timestamp::now());
        if let Ok(Some(result)) = &outcome {
            let chosen: Vec<&str> = result
                .pages()
                .flat_map(|(_, page)| page.clusters.iter().map(String::as_str))
                .collect();
            index.reserve(&key, &chosen);
        }
        (existing, outcome)
    };
    let outcome = outcome.map_err(|source| PlacementError::Schedule {
        placement: format!("{namespace}/{name}"),
        source,
    })?;
    let Some(result) = outcome else {
        // Nothing to write (a placement being deleted or with scheduling disabled); a change seen
        // meanwhile is still looked at.
        if flight.land(&Writes::default()) {
            return Ok(Action::requeue(Duration::ZERO));
        }
        return Ok(Action::await_change());
    };
    let writer = bind::Writer {
        client: &ctx.client,
        recorder: &ctx.recorder,
        events: &ctx.events,
    };
    let mut written = Vec::new();
    let bound = writer.bind(&placement, &result, &existing, &mut written).await;
    let mut writes = Writes::default();
    {
        let mut index = ctx.index();
        index.release(&key);
        for write in written {
            match write {
                bind::Written::Decision(decision) => {
                    writes
                        .decisions
                        .insert((decision.name_any(), decision.resource_version()));
                    index.wrote(decision);
                }
                bind::Written::Deleted(decision) => {
                    writes.deleted.insert(decision.name_any());
                    index.deleted(&decision);
                }
            }
        }
    }
    bound?;
    if let Some(patched) = writer.status(&placement, &result).await? {
        writes.placement = Some(patched.resource_version());
        ctx.patched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, Arc::new(patched));
    }
    let changed_meanwhile = flight.land(&writes);
    ctx.metrics.reconciled(CONTROLLER_NAME, true);
    ctx.backoff.succeeded(&format!("{namespace}/{name}"));
    if result.status.code == Code::Error {
        return Err(PlacementError::Plugin {
            placement: format!("{namespace}/{name}"),
            plugin: result.status.plugin,
            message: result.status.message,
        });
    }
    if changed_meanwhile {
        return Ok(Action::requeue(Duration::ZERO));
    }
    Ok(result
        .requeue_after
        .map_or_else(Action::await_change, Action::requeue))
}

fn error_policy(placement: Arc<Placement>, error: &PlacementError, ctx: Arc<Context>) -> Action {
    let key = format!(
        "{}/{}",
        placement.namespace().unwrap_or_default(),
        placement.name_any()
    );
    crate::registration::hub::log_failure(&key, error, "scheduling a placement failed");
    ctx.metrics.reconciled(CONTROLLER_NAME, false);
    Action::requeue(ctx.backoff.failed(&key))
}
