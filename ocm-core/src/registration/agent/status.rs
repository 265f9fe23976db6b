//! The ManagedCluster's status as the agent reports it (ocm-core.md §1.9): Joined, Available
//! (from `/livez`, falling back to `/healthz`), the Kubernetes version, and capacity and
//! allocatable summed over the Nodes. Written as a merge patch on `/status` only when changed.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{
    api::core::v1::Node,
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Time},
    jiff::Timestamp,
};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
};
use ocm_api::{
    cluster::v1::{ManagedCluster, ManagedClusterStatus, ManagedClusterVersion},
    conditions::{self, ConditionList, Status},
    meta::Condition,
    names::conditions::cluster::managed_cluster,
};

use super::{Agent, AgentError};

/// The controller name in metrics and logs.
const CONTROLLER: &str = "managed-cluster-status";

/// How long an API-server failure must persist before Available turns False.
pub const UNAVAILABLE_GRACE: Duration = Duration::from_secs(20);

/// Whether an API-server failure first seen at `first` has lasted long enough at `now` to be
/// written as Available False.
pub fn failure_persisted(first: tokio::time::Instant, now: tokio::time::Instant) -> bool {
    now.saturating_duration_since(first) >= UNAVAILABLE_GRACE
}

/// The health of the spoke's API server: `Ok` or the status code and body of the failure.
async fn probe(spoke: &kube::Client) -> Result<(), (u16, String)> {
    let get = |path: &str| {
        let req = http::Request::get(path).body(Vec::new());
        async move {
            let req = req.map_err(|e| (0u16, e.to_string()))?;
            match spoke.request_text(req).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(s)) => Err((s.code, s.message)),
                Err(e) => Err((0, e.to_string())),
            }
        }
    };
    match get("/livez").await {
        Err((404 | 403, _)) => get("/healthz").await,
        other => other,
    }
}

/// Adds each quantity of `from` to the values collected per resource name in `into`.
fn collect_quantities<'a>(into: &mut BTreeMap<String, Vec<&'a str>>, from: &'a BTreeMap<String, Quantity>) {
    for (name, q) in from {
        into.entry(name.clone()).or_default().push(q.0.as_str());
    }
}

/// Capacity (all nodes) and allocatable (schedulable nodes) summed over `nodes` as upstream's
/// agent sums them: per resource, in the format of the first Node's value (`8Gi` stays `8Gi`),
/// printed canonically ([`super::quantity`]). A resource with a value that does not parse keeps
/// the first Node's text.
pub fn node_resources(nodes: &[Node]) -> (BTreeMap<String, Quantity>, BTreeMap<String, Quantity>) {
    let mut capacity = BTreeMap::new();
    let mut allocatable = BTreeMap::new();
    for node in nodes {
        let Some(status) = &node.status else { continue };
        if let Some(c) = &status.capacity {
            collect_quantities(&mut capacity, c);
        }
        let unschedulable = node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
        if !unschedulable && let Some(a) = &status.allocatable {
            collect_quantities(&mut allocatable, a);
        }
    }
    let sum = |m: BTreeMap<String, Vec<&str>>| {
        m.into_iter()
            .map(|(k, values)| {
                let first = values.first().map(|v| (*v).to_string()).unwrap_or_default();
                let total = super::quantity::sum(values).unwrap_or(first);
                (k, Quantity(total))
            })
            .collect()
    };
    (sum(capacity), sum(allocatable))
}

/// The state the status loop keeps between rounds.
#[derive(Default)]
struct StatusState {
    /// When the API server was first seen failing in the current run of failures.
    first_failure: Option<tokio::time::Instant>,
}

/// What a status round found, which decides how soon the next one runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    /// The status was reported (or was already current).
    Reported,
    /// The ManagedCluster does not exist yet, or this identity may not read it yet (its
    /// permissions come with acceptance): nothing was reported.
    NotReadable,
    /// The ManagedCluster is readable but the hub has not accepted it: nothing was reported,
    /// and Joined should follow acceptance quickly.
    NotAccepted,
    /// The API server is failing but still within [`UNAVAILABLE_GRACE`]: later work was skipped.
    FailureInGrace,
}

/// The longest the status loop waits between two looks while the cluster waits for acceptance.
pub const MAX_ACCEPTANCE_POLL: Duration = Duration::from_secs(8);

/// The longest wait between two looks during the first 16 s of waiting for acceptance.
pub const SHORT_ACCEPTANCE_POLL: Duration = Duration::from_secs(2);

/// How long to wait before looking again at a cluster that waits for acceptance, after
/// `waited` looks over `waited_for`: the poll period doubled per look, up to an eighth of the time
/// waited so far, at least [`SHORT_ACCEPTANCE_POLL`] and at most [`MAX_ACCEPTANCE_POLL`] (or the
/// poll period when that is longer). So a look comes at most an eighth of the wait after the
/// acceptance it sees (about 2 s while a thousand clusters join in 20 s), and agents that wait
/// minutes for a hub busy with thousands of clusters look every 8 s instead of every 2. The
/// lease loop does not poll: it waits for the status loop to see the acceptance
/// (`Agent::accepted`).
pub fn acceptance_poll(poll_period: Duration, waited: u32, waited_for: Duration) -> Duration {
    let cap = (waited_for / 8).clamp(SHORT_ACCEPTANCE_POLL, MAX_ACCEPTANCE_POLL);
    poll_period
        .saturating_mul(1u32 << waited.min(16))
        .min(cap.max(poll_period))
}

/// How long the status loop waits after a round (`None`: the round failed): the health-check
/// period after a report; while the cluster waits for acceptance, the poll period doubled for
/// each round already spent waiting (`waited`, 0 for the first) up to a cap that grows with the
/// time waited (`waited_for`; [`acceptance_poll`]), so that a thousand waiting agents do not load
/// the hub with a request each per second (see [`rounds_waited`] for when the count starts
/// again); 5 s
/// while an API-server failure is in its grace; the poll period (at least 1 s) after an error.
/// Never more than the health-check period.
pub fn wait_after(
    round: Option<Round>,
    healthcheck_period: Duration,
    poll_period: Duration,
    waited: u32,
    waited_for: Duration,
) -> Duration {
    let wait = match round {
        Some(Round::Reported) => healthcheck_period,
        Some(Round::NotReadable | Round::NotAccepted) => acceptance_poll(poll_period, waited, waited_for),
        Some(Round::FailureInGrace) => Duration::from_secs(5),
        None => poll_period.max(Duration::from_secs(1)),
    };
    wait.min(healthcheck_period)
}

/// How many rounds in a row the status loop has spent waiting for acceptance, counting `round`
/// (`waited` before it, `previous` the round before): none after a report or a failure, and the
/// count starts again at one when the cluster has just become readable — its permissions come
/// with acceptance, whose condition follows within moments, so the next look is soon again
/// rather than after the backed-off wait.
pub fn rounds_waited(previous: Option<Round>, round: Option<Round>, waited: u32) -> u32 {
    match (previous, round) {
        (Some(Round::NotReadable), Some(Round::NotAccepted)) => 1,
        (_, Some(Round::NotReadable | Round::NotAccepted)) => waited.saturating_add(1),
        _ => 0,
    }
}

/// The agent's own ManagedCluster as its identity sees it: `None` while it does not exist, and
/// also while the identity may not read it — the cluster's permissions come with its
/// acceptance, so a `403` before then is routine. The status and lease loops both read it so.
pub(crate) async fn own_cluster(
    api: &Api<ManagedCluster>,
    name: &str,
) -> Result<Option<ManagedCluster>, kube::Error> {
    match api.get_opt(name).await {
        Err(kube::Error::Api(status)) if status.code == 403 => {
            tracing::debug!(cluster = %name, "not (yet) permitted to read its ManagedCluster");
            Ok(None)
        }
        read => read,
    }
}

/// Tells the lease loop (`Agent::accepted`) whether the hub accepts the cluster, waking it only
/// when that changed.
fn publish_acceptance(agent: &Agent, accepted: bool) {
    agent
        .accepted
        .send_if_modified(|current| std::mem::replace(current, accepted) != accepted);
}

/// One round: compute the new status and patch it when it changed.
async fn sync(agent: &Agent, hub: &kube::Client, state: &mut StatusState) -> Result<Round, AgentError> {
    let api: Api<ManagedCluster> = Api::all(hub.clone());
    let cluster = own_cluster(&api, &agent.cluster)
        .await
        .map_err(|source| AgentError::PatchStatus {
            name: agent.cluster.clone(),
            source,
        })?;
    let Some(cluster) = cluster else {
        publish_acceptance(agent, false);
        return Ok(Round::NotReadable);
    };
    let old = cluster.status.clone().unwrap_or_default();
    let mut new = old.clone();
    let now = Time(Timestamp::now());
    let accepted = conditions::is_true(
        old.conditions.as_deref().unwrap_or_default(),
        managed_cluster::HUB_ACCEPTED,
    );
    publish_acceptance(agent, accepted);
    if !accepted {
        tracing::debug!(cluster = %agent.cluster, "ManagedClusterIsNotAccepted");
        return Ok(Round::NotAccepted);
    }
    new.conditions.set_condition(Condition::new(
        managed_cluster::JOINED,
        Status::True,
        managed_cluster::reasons::JOINED,
        "Managed cluster joined",
        now.clone(),
    ));
    let mut skipped = false;
    match probe(&agent.spoke).await {
        Ok(()) => {
            state.first_failure = None;
            new.conditions.set_condition(Condition::new(
                managed_cluster::AVAILABLE,
                Status::True,
                managed_cluster::reasons::AVAILABLE,
                "Managed cluster is available",
                now.clone(),
            ));
        }
        Err((code, body)) => {
            let first = *state.first_failure.get_or_insert_with(tokio::time::Instant::now);
            if failure_persisted(first, tokio::time::Instant::now()) {
                new.conditions.set_condition(Condition::new(
                    managed_cluster::AVAILABLE,
                    Status::False,
                    managed_cluster::reasons::KUBE_API_SERVER_UNAVAILABLE,
                    &format!("The kube-apiserver is not ok, status code: {code}, {body}"),
                    now.clone(),
                ));
            } else {
                skipped = true;
            }
        }
    }
    if !skipped {
        let version = agent
            .spoke
            .apiserver_version()
            .await
            .map_err(AgentError::ReadSpoke)?;
        new.version = Some(ManagedClusterVersion {
            kubernetes: Some(version.git_version),
        });
        let nodes: Api<Node> = Api::all(agent.spoke.clone());
        let nodes = nodes
            .list(&ListParams::default())
            .await
            .map_err(AgentError::ReadSpoke)?
            .items;
        let (capacity, allocatable) = node_resources(&nodes);
        let mut merged = old.capacity.clone().unwrap_or_default();
        merged.extend(capacity);
        new.capacity = Some(merged);
        new.allocatable = Some(allocatable);
        // Claims need their CRDs on the managed cluster; without any, the status keeps its claims.
        if let Some((claims, truncated)) = super::claims::collect(agent).await? {
            if truncated {
                tracing::info!(cluster = %agent.cluster, "CustomClusterClaimsTruncated");
            }
            new.cluster_claims = (!claims.is_empty() || old.cluster_claims.is_some()).then_some(claims);
        }
        super::managed_namespaces::reconcile(agent, &mut new, cluster.metadata.deletion_timestamp.is_some())
            .await;
    }
    if conditions::is_false(
        new.conditions.as_deref().unwrap_or_default(),
        managed_cluster::CLOCK_SYNCED,
    ) {
        return Err(AgentError::ClockOutOfSync(agent.cluster.clone()));
    }
    if new != old {
        patch_status(&api, &cluster, &new).await?;
        let available = |s: &ManagedClusterStatus| {
            conditions::find(
                s.conditions.as_deref().unwrap_or_default(),
                managed_cluster::AVAILABLE,
            )
            .map(|c| c.status.clone())
        };
        if available(&old) != available(&new) {
            publish_available_event(agent, hub, &new).await;
        }
    }
    Ok(if skipped {
        Round::FailureInGrace
    } else {
        Round::Reported
    })
}

/// Records the change of Available as an `events.k8s.io` Event in the cluster namespace on the
/// hub (reporting controller `klusterlet-agent`): Normal `Available` or Warning `Unavailable`.
async fn publish_available_event(agent: &Agent, hub: &kube::Client, status: &ManagedClusterStatus) {
    use crate::events::EventRecorder;
    use kube::runtime::events::{Event, EventType, Reporter};
    let available = conditions::is_true(
        status.conditions.as_deref().unwrap_or_default(),
        managed_cluster::AVAILABLE,
    );
    let (type_, reason, note) = if available {
        (
            EventType::Normal,
            "Available",
            format!("The managed cluster ({}) is available.", agent.cluster),
        )
    } else {
        (
            EventType::Warning,
            "Unavailable",
            format!("The managed cluster ({}) is unavailable.", agent.cluster),
        )
    };
    let recorder = EventRecorder::new(
        hub.clone(),
        Reporter {
            controller: "klusterlet-agent".into(),
            instance: Some(agent.agent.clone()),
        },
    );
    let reference = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("cluster.open-cluster-management.io/v1".into()),
        kind: Some("ManagedCluster".into()),
        name: Some(agent.cluster.clone()),
        namespace: Some(agent.cluster.clone()),
        ..Default::default()
    };
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: reason.into(),
        secondary: None,
    };
    if let Err(e) = recorder.publish(&event, &reference).await {
        tracing::warn!(cluster = %agent.cluster, error = %e, "recording the Available event failed");
    }
}

async fn patch_status(
    api: &Api<ManagedCluster>,
    cluster: &ManagedCluster,
    status: &ManagedClusterStatus,
) -> Result<(), AgentError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let old = serde_json::to_value(cluster.status.clone().unwrap_or_default()).unwrap_or_default();
    let new = serde_json::to_value(status).unwrap_or_default();
    let Some(diff) = super::patch::merge_diff(&old, &new) else {
        return Ok(());
    };
    let patch = serde_json::json!({
        "metadata": {"uid": cluster.metadata.uid, "resourceVersion": cluster.metadata.resource_version},
        "status": diff,
    });
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| AgentError::PatchStatus { name, source })?;
    Ok(())
}

/// Reports the status every health-check period (sooner while the cluster waits for acceptance
/// or an API-server failure is in its grace: see [`wait_after`]). Returns only when the hub
/// kubeconfig becomes invalid.
pub(crate) async fn run(agent: &Agent) -> Result<(), AgentError> {
    let mut state = StatusState::default();
    let mut waited = 0;
    // When the current wait for acceptance began.
    let mut waiting_since = None;
    let mut previous = None;
    loop {
        let hub = agent.hub_client().await?;
        let result = sync(agent, &hub, &mut state).await;
        agent.metrics.reconciled(CONTROLLER, result.is_ok());
        let round = match result {
            Ok(round) => Some(round),
            Err(e) => {
                crate::registration::hub::log_failure(&agent.cluster, &e, "status sync failed");
                None
            }
        };
        waited = rounds_waited(previous, round, waited);
        previous = round;
        let now = tokio::time::Instant::now();
        let since = if waited == 0 {
            waiting_since = None;
            now
        } else {
            *waiting_since.get_or_insert(now)
        };
        let wait = wait_after(
            round,
            agent.options.cluster_healthcheck_period,
            agent.options.poll_period,
            waited.saturating_sub(1),
            now.duration_since(since),
        );
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeSpec, NodeStatus};

    fn node(cpu: &str, mem: &str, unschedulable: bool) -> Node {
        let q = |c: &str, m: &str| {
            BTreeMap::from([
                ("cpu".to_string(), Quantity(c.into())),
                ("memory".to_string(), Quantity(m.into())),
            ])
        };
        Node {
            spec: Some(NodeSpec {
                unschedulable: Some(unschedulable),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                capacity: Some(q(cpu, mem)),
                allocatable: Some(q(cpu, mem)),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn capacity_sums_all_nodes_and_allocatable_skips_unschedulable() {
        let (cap, alloc) = node_resources(&[node("2", "1Gi", false), node("500m", "1Gi", true)]);
        assert_eq!(cap["cpu"], Quantity("2500m".into()));
        assert_eq!(cap["memory"], Quantity("2Gi".into()));
        assert_eq!(alloc["cpu"], Quantity("2".into()));
        assert_eq!(alloc["memory"], Quantity("1Gi".into()));
    }

    #[test]
    fn one_nodes_quantities_are_reported_as_the_node_has_them() {
        let (cap, alloc) = node_resources(&[node("4", "8Gi", false)]);
        assert_eq!(cap["memory"], Quantity("8Gi".into()));
        assert_eq!(cap["cpu"], Quantity("4".into()));
        assert_eq!(alloc["memory"], Quantity("8Gi".into()));
        // The first Node's format wins; a value that is no quantity is kept as it is.
        let (cap, _) = node_resources(&[node("1", "8589934592", false), node("1", "8Gi", false)]);
        assert_eq!(cap["memory"], Quantity("17179869184".into()));
        let (cap, _) = node_resources(&[node("x", "1Gi", false), node("1", "1Gi", false)]);
        assert_eq!(cap["cpu"], Quantity("x".into()));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_written_after_twenty_seconds() {
        let first = tokio::time::Instant::now();
        tokio::time::advance(Duration::from_secs(19)).await;
        assert!(!failure_persisted(first, tokio::time::Instant::now()));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(failure_persisted(first, tokio::time::Instant::now()));
    }

    #[test]
    fn a_cluster_waiting_for_acceptance_is_looked_at_again_backing_off_to_a_cap() {
        let s = Duration::from_secs;
        let (period, poll) = (s(60), s(1));
        assert_eq!(
            wait_after(Some(Round::Reported), period, poll, 0, Duration::ZERO),
            s(60)
        );
        assert_eq!(
            wait_after(Some(Round::NotAccepted), period, poll, 0, Duration::ZERO),
            s(1)
        );
        assert_eq!(
            wait_after(Some(Round::FailureInGrace), period, poll, 0, Duration::ZERO),
            s(5)
        );
        assert_eq!(
            wait_after(None, period, Duration::from_millis(200), 0, Duration::ZERO),
            s(1)
        );
        // Waiting for acceptance: doubled per round waited, up to 2 s for the first 16 s…
        assert_eq!(
            wait_after(Some(Round::NotAccepted), period, poll, 1, Duration::ZERO),
            s(2)
        );
        assert_eq!(
            wait_after(
                Some(Round::NotAccepted),
                period,
                Duration::from_millis(250),
                2,
                Duration::ZERO
            ),
            s(1)
        );
        assert_eq!(
            wait_after(Some(Round::NotAccepted), period, poll, 3, Duration::ZERO),
            SHORT_ACCEPTANCE_POLL
        );
        assert_eq!(
            wait_after(Some(Round::NotAccepted), period, poll, 40, s(16)),
            SHORT_ACCEPTANCE_POLL
        );
        // …then up to an eighth of the time waited, and never more than MAX_ACCEPTANCE_POLL.
        assert_eq!(
            wait_after(Some(Round::NotReadable), period, poll, 40, s(40)),
            s(5)
        );
        assert_eq!(wait_after(Some(Round::NotAccepted), period, poll, 2, s(40)), s(4));
        assert_eq!(
            wait_after(Some(Round::NotReadable), period, poll, 40, s(64)),
            MAX_ACCEPTANCE_POLL
        );
        assert_eq!(
            wait_after(Some(Round::NotReadable), period, poll, 40, s(600)),
            MAX_ACCEPTANCE_POLL
        );
        // Never longer than the period itself.
        assert_eq!(
            wait_after(Some(Round::NotReadable), s(1), s(3), 0, Duration::ZERO),
            s(1)
        );
        assert_eq!(
            wait_after(Some(Round::NotAccepted), s(1), s(3), 0, Duration::ZERO),
            s(1)
        );
        assert_eq!(
            wait_after(Some(Round::NotAccepted), s(60), s(10), 2, Duration::ZERO),
            s(10)
        );
        assert_eq!(
            wait_after(Some(Round::FailureInGrace), s(2), poll, 0, Duration::ZERO),
            s(2)
        );
    }

    #[test]
    fn the_wait_starts_short_again_once_the_cluster_becomes_readable() {
        let (unreadable, readable) = (Some(Round::NotReadable), Some(Round::NotAccepted));
        let mut waited = 0;
        let mut previous = None;
        let mut rounds = Vec::new();
        for round in [
            unreadable,
            unreadable,
            unreadable,
            unreadable,
            readable,
            readable,
            readable,
            Some(Round::Reported),
        ] {
            waited = rounds_waited(previous, round, waited);
            previous = round;
            rounds.push(waited);
        }
        assert_eq!(rounds, [1, 2, 3, 4, 1, 2, 3, 0]);
        // A failed round ends the count; waiting again starts it at one.
        assert_eq!(rounds_waited(Some(Round::NotAccepted), None, 5), 0);
        assert_eq!(rounds_waited(None, readable, 0), 1);
        // Denied after acceptance: readable but not accepted, backing off as before.
        assert_eq!(rounds_waited(readable, readable, 6), 7);
    }
}
