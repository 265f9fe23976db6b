//! The watch fan-out phase: many watchers of one namespace, each of which must receive every
//! event of a stream of creates.
//!
//! Every watcher starts from the same resourceVersion, taken before the first write, so none can
//! miss an event; the writes start once every watch is open. Each created ConfigMap carries the
//! moment its create was sent (microseconds since the phase's epoch), so a watcher measures the
//! delivery latency of each event: create sent → event decoded. Throughput is deliveries (events ×
//! watchers) per second from the first write to the last delivery. A watch the server ends early
//! is reopened from the last resourceVersion seen.
//!
//! A watcher decodes of each event only what it checks (`Delivered`: the name, the
//! resourceVersion and the send time), as a metadata informer would: decoding the whole
//! ConfigMap with its managedFields took a third of the machine's CPU in this phase (`perf`,
//! 2026-12-02), so the harness's own client, not the server, set the pace on two cores.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::{Api, Client};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::LoadError;
use super::ops::{self, Workload, config_map, object_name};
use super::stats::Phase;

/// The data key holding the send time of a create.
const SENT_KEY: &str = "sentMicros";
/// How often one watcher may open its watch (the first time and after the server ended it).
const MAX_OPENS: usize = 20;
/// The longest watch kube-rs lets a client ask for.
const MAX_WATCH_SECONDS: u64 = 290;

/// The outcome of the fan-out: deliveries, and the writes that caused them.
#[derive(Debug)]
pub struct FanOut {
    /// Deliveries: one sample per event per watcher; errors are missing deliveries.
    pub deliveries: Phase,
    /// The creates of the write stream.
    pub writes: Phase,
}

/// What a watcher decodes of an event's ConfigMap; the parser skips every other field.
#[derive(Clone, Debug, serde::Deserialize)]
struct Delivered {
    metadata: DeliveredMeta,
    #[serde(default)]
    data: Option<DeliveredData>,
}

#[derive(Clone, Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeliveredMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
}

#[derive(Clone, Debug, serde::Deserialize)]
struct DeliveredData {
    #[serde(rename = "sentMicros", default)]
    sent_micros: Option<String>,
}

/// When a create was sent, from the object's data.
fn sent_at(cm: &Delivered) -> Option<Duration> {
    let micros: u64 = cm.data.as_ref()?.sent_micros.as_ref()?.parse().ok()?;
    Some(Duration::from_micros(micros))
}

/// The ConfigMaps of one namespace, as a watcher reaches them.
struct Watched {
    client: Client,
    namespace: String,
}

impl Watched {
    /// A watch from `rv`, decoding [`Delivered`] events.
    async fn open(
        &self,
        params: &WatchParams,
        rv: &str,
    ) -> Result<impl futures::Stream<Item = Result<WatchEvent<Delivered>, kube::Error>> + use<>, kube::Error>
    {
        let path = format!("/api/v1/namespaces/{}/configmaps", self.namespace);
        let request = kube::core::Request::new(path)
            .watch(params, rv)
            .map_err(kube::Error::BuildRequest)?;
        self.client.request_events::<Delivered>(request).await
    }
}

/// One watcher: counts the `expected` creates named `prefix…` and their latencies; returns its
/// share and the moment of its last delivery.
async fn watcher(
    watched: Watched,
    mut rv: String,
    prefix: Arc<str>,
    expected: usize,
    epoch: Instant,
    deadline: Instant,
    ready: mpsc::Sender<()>,
) -> (Phase, Option<Instant>) {
    let mut share = Phase::default();
    let mut seen = 0usize;
    let mut last = None;
    let mut ready = Some(ready);
    let mut opens = 0;
    'open: while seen < expected && opens < MAX_OPENS {
        opens += 1;
        let left = deadline.saturating_duration_since(Instant::now()).as_secs();
        let params = WatchParams::default().timeout(left.clamp(1, MAX_WATCH_SECONDS) as u32);
        let opened = tokio::time::timeout_at(deadline, watched.open(&params, &rv)).await;
        if let Some(ready) = ready.take() {
            let _ = ready.send(()).await;
        }
        let stream = match opened {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                share.record_error(format!("opening a watch: {e}"));
                continue;
            }
            Err(_) => break,
        };
        let mut stream = std::pin::pin!(stream);
        loop {
            let event = match tokio::time::timeout_at(deadline, stream.next()).await {
                Err(_) => break 'open,
                Ok(None) => continue 'open,
                Ok(Some(Err(e))) => {
                    share.record_error(format!("reading a watch: {e}"));
                    continue 'open;
                }
                Ok(Some(Ok(event))) => event,
            };
            match event {
                WatchEvent::Added(cm) => {
                    if let Some(v) = &cm.metadata.resource_version {
                        rv.clone_from(v);
                    }
                    let ours = cm
                        .metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with(&*prefix));
                    if let (true, Some(sent)) = (ours, sent_at(&cm)) {
                        share.samples.push(epoch.elapsed().saturating_sub(sent));
                        last = Some(Instant::now());
                        seen += 1;
                        if seen >= expected {
                            break 'open;
                        }
                    }
                }
                WatchEvent::Modified(cm) | WatchEvent::Deleted(cm) => {
                    if let Some(v) = cm.metadata.resource_version {
                        rv = v;
                    }
                }
                WatchEvent::Bookmark(b) => rv = b.metadata.resource_version,
                WatchEvent::Error(status) => {
                    share.record_error(format!("watch error event: {} {}", status.code, status.message));
                    if status.code == 410 {
                        // Expired: the events in between are gone; a re-list would not bring them back.
                        break 'open;
                    }
                    continue 'open;
                }
            }
        }
    }
    (share, last)
}

/// Opens `watchers` watches on the workload's namespace, then creates `events` ConfigMaps there
/// with `writers` workers, and collects every delivery.
pub async fn fan_out(
    clients: &[Client],
    writers: usize,
    work: &Workload,
    watchers: usize,
    events: usize,
) -> Result<FanOut, LoadError> {
    let prefix: Arc<str> = Arc::from("fan-");
    let first = clients
        .first()
        .ok_or_else(|| LoadError::BuildClient("no client".into()))?;
    let api: Api<ConfigMap> = Api::namespaced(first.clone(), &work.namespace);
    let start = api
        .list(&ListParams::default().limit(1))
        .await
        .map_err(|e| LoadError::Prepare {
            what: "reading the resourceVersion the watches start from".into(),
            message: e.to_string(),
        })?;
    let rv = start.metadata.resource_version.unwrap_or_else(|| "0".into());
    let epoch = Instant::now();
    let (ready_tx, mut ready_rx) = mpsc::channel(watchers.max(1));
    let mut handles = Vec::with_capacity(watchers);
    for w in 0..watchers {
        let client = clients.get(w % clients.len()).unwrap_or(first).clone();
        handles.push(tokio::spawn(watcher(
            Watched {
                client,
                namespace: work.namespace.clone(),
            },
            rv.clone(),
            prefix.clone(),
            events,
            epoch,
            work.deadline,
            ready_tx.clone(),
        )));
    }
    drop(ready_tx);
    let mut opened = 0;
    while opened < watchers {
        match tokio::time::timeout_at(work.deadline, ready_rx.recv()).await {
            Ok(Some(())) => opened += 1,
            _ => break,
        }
    }

    let write_started = Instant::now();
    let writes = write_stream(clients, writers, work, &prefix, events, epoch).await;

    let mut deliveries = Phase::new("watch fan-out", watchers);
    let mut last_delivery = write_started;
    for joined in futures::future::join_all(handles).await {
        match joined {
            Ok((share, last)) => {
                deliveries.absorb(share);
                if let Some(last) = last {
                    last_delivery = last_delivery.max(last);
                }
            }
            Err(e) => deliveries.record_error(format!("a watcher failed: {e}")),
        }
    }
    deliveries.elapsed = last_delivery.saturating_duration_since(write_started);
    // Errors are counted as missing deliveries; the messages say why.
    let missing = (events * watchers).saturating_sub(deliveries.samples.len());
    deliveries.errors = missing;
    if missing > 0 && deliveries.first_error.is_none() {
        deliveries.first_error = Some(format!("{missing} deliveries missing at the deadline"));
    }
    Ok(FanOut { deliveries, writes })
}

/// The creates the watchers wait for, each stamped with its send time.
async fn write_stream(
    clients: &[Client],
    writers: usize,
    work: &Workload,
    prefix: &Arc<str>,
    events: usize,
    epoch: Instant,
) -> Phase {
    let workers = writers.min(events).max(1);
    let mut phase = Phase::new("watch writes", workers);
    let started = Instant::now();
    let mut handles = Vec::new();
    for w in 0..workers {
        let Some(client) = clients.get(w % clients.len().max(1)) else {
            phase.record_error("no client");
            continue;
        };
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &work.namespace);
        let (payload, prefix, deadline) = (work.payload.clone(), prefix.clone(), work.deadline);
        handles.push(tokio::spawn(async move {
            let mut share = Phase::default();
            let mut i = w;
            while i < events && Instant::now() < deadline {
                let name = object_name(&prefix, i);
                let sent = epoch.elapsed().as_micros().to_string();
                let cm = config_map(&name, &payload, &[(SENT_KEY, sent)]);
                let (latency, result) =
                    ops::timed(deadline, api.create(&kube::api::PostParams::default(), &cm)).await;
                match result {
                    Ok(_) => share.samples.push(latency),
                    Err(e) => share.record_error(format!("create {name}: {e}")),
                }
                i += workers;
            }
            share
        }));
    }
    for joined in futures::future::join_all(handles).await {
        match joined {
            Ok(share) => phase.absorb(share),
            Err(e) => phase.record_error(format!("a writer failed: {e}")),
        }
    }
    phase.elapsed = started.elapsed();
    phase
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ConfigMap as a server sends it (with a resourceVersion and managedFields), decoded as
    /// a watcher decodes it.
    fn delivered(cm: &ConfigMap) -> Delivered {
        let mut json = serde_json::to_value(cm).unwrap();
        json["metadata"]["resourceVersion"] = "42".into();
        json["metadata"]["managedFields"] = serde_json::json!([{"manager": "m", "operation": "Update",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:x": {}}}}]);
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn the_name_version_and_send_time_are_read_back_from_the_object() {
        let cm = delivered(&config_map("fan-000001", "x", &[(SENT_KEY, "1500".into())]));
        assert_eq!(cm.metadata.name.as_deref(), Some("fan-000001"));
        assert_eq!(cm.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(sent_at(&cm), Some(Duration::from_micros(1500)));
        assert_eq!(sent_at(&delivered(&config_map("fan-000002", "x", &[]))), None);
    }
}
