//! The request phases over ConfigMaps: create, get, update (PUT with resourceVersion) and list.
//!
//! Each phase runs a fixed number of operations on a fixed number of workers (tokio tasks, each
//! with its own kube client) and stops by itself; operations still pending when the phase's
//! deadline passes are counted as errors.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use tokio::time::Instant;

use super::stats::Phase;
use super::table::thousands;

/// What every phase works on.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The namespace of the objects.
    pub namespace: String,
    /// The data payload of each object.
    pub payload: Arc<str>,
    /// When unfinished operations are given up.
    pub deadline: Instant,
}

/// The objects one worker created: name and last resourceVersion (what its updates need).
pub type Owned = Vec<(String, String)>;

/// The create phase's outcome.
#[derive(Debug)]
pub struct Created {
    /// Throughput and latency.
    pub phase: Phase,
    /// The created objects, by worker (empty unless asked for).
    pub owned: Vec<Owned>,
}

/// The name of object `i` of a phase.
pub fn object_name(prefix: &str, i: usize) -> String {
    format!("{prefix}{i:06}")
}

/// A ConfigMap `name` with `payload` under `data.payload` and the `extra` data keys.
pub fn config_map(name: &str, payload: &str, extra: &[(&str, String)]) -> ConfigMap {
    let mut data = BTreeMap::new();
    data.insert("payload".to_string(), payload.to_string());
    for (k, v) in extra {
        data.insert((*k).to_string(), v.clone());
    }
    let mut cm = ConfigMap {
        data: Some(data),
        ..ConfigMap::default()
    };
    cm.metadata.name = Some(name.to_string());
    cm.metadata.labels = Some(BTreeMap::from([(
        "app.kubernetes.io/name".into(),
        "apiserver-load".into(),
    )]));
    cm
}

/// An index in `0..n` spread over the range as `k` grows (a multiplicative hash), for reads that
/// do not walk the keys in order.
pub fn spread(k: usize, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let h = (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    (h % n as u64) as usize
}

/// Runs `fut` until `deadline`; its latency and its result, the error as text.
pub async fn timed<T>(
    deadline: Instant,
    fut: impl Future<Output = kube::Result<T>>,
) -> (Duration, Result<T, String>) {
    let start = Instant::now();
    let result = match tokio::time::timeout_at(deadline, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the phase's deadline passed".to_string()),
    };
    (start.elapsed(), result)
}

/// How many of the indexes `from, from + step, …` are below `end`.
fn remaining(from: usize, step: usize, end: usize) -> usize {
    if from >= end || step == 0 {
        0
    } else {
        (end - from).div_ceil(step)
    }
}

/// Records that the deadline passed with `left` operations not done.
fn give_up(phase: &mut Phase, left: usize) {
    if left > 0 {
        phase.record_error(format!("the phase's deadline passed with {left} operations left"));
        phase.errors += left - 1;
    }
}

fn api(clients: &[Client], worker: usize, namespace: &str) -> Option<Api<ConfigMap>> {
    let client = clients.get(worker % clients.len().max(1))?;
    Some(Api::namespaced(client.clone(), namespace))
}

/// Waits for the workers and merges their shares into `phase`.
async fn join<T>(phase: &mut Phase, handles: Vec<tokio::task::JoinHandle<(Phase, T)>>) -> Vec<T> {
    let mut outputs = Vec::new();
    for joined in futures::future::join_all(handles).await {
        match joined {
            Ok((share, output)) => {
                phase.absorb(share);
                outputs.push(output);
            }
            Err(e) => phase.record_error(format!("a worker failed: {e}")),
        }
    }
    outputs
}

/// Creates `count` ConfigMaps named `prefix000000…` with `concurrency` workers; keeps their names and
/// resourceVersions when `keep`.
pub async fn create(
    operation: &str,
    clients: &[Client],
    concurrency: usize,
    work: &Workload,
    prefix: &str,
    count: usize,
    keep: bool,
) -> Created {
    let workers = concurrency.min(count).max(1);
    let mut phase = Phase::new(operation, workers);
    let started = Instant::now();
    let mut handles = Vec::new();
    for w in 0..workers {
        let Some(api) = api(clients, w, &work.namespace) else {
            phase.record_error("no client");
            continue;
        };
        let (payload, prefix, deadline) = (work.payload.clone(), prefix.to_string(), work.deadline);
        handles.push(tokio::spawn(async move {
            let mut share = Phase::default();
            let mut owned = Owned::new();
            let mut i = w;
            while i < count {
                if Instant::now() >= deadline {
                    give_up(&mut share, remaining(i, workers, count));
                    break;
                }
                let name = object_name(&prefix, i);
                let cm = config_map(&name, &payload, &[]);
                let (latency, result) = timed(deadline, api.create(&PostParams::default(), &cm)).await;
                match result {
                    Ok(created) => {
                        share.samples.push(latency);
                        if keep {
                            owned.push((name, created.metadata.resource_version.unwrap_or_default()));
                        }
                    }
                    Err(e) => share.record_error(format!("create {name}: {e}")),
                }
                i += workers;
            }
            (share, owned)
        }));
    }
    let owned = join(&mut phase, handles).await;
    phase.elapsed = started.elapsed();
    Created { phase, owned }
}

/// `count` gets of objects `prefix…` (indexes below `objects`, spread) with `concurrency` workers.
pub async fn get(
    clients: &[Client],
    concurrency: usize,
    work: &Workload,
    prefix: &str,
    objects: usize,
    count: usize,
) -> Phase {
    let workers = concurrency.min(count).max(1);
    let mut phase = Phase::new("get", workers);
    let started = Instant::now();
    let mut handles = Vec::new();
    for w in 0..workers {
        let Some(api) = api(clients, w, &work.namespace) else {
            phase.record_error("no client");
            continue;
        };
        let (prefix, deadline) = (prefix.to_string(), work.deadline);
        handles.push(tokio::spawn(async move {
            let mut share = Phase::default();
            let mut k = w;
            while k < count {
                if Instant::now() >= deadline {
                    give_up(&mut share, remaining(k, workers, count));
                    break;
                }
                let name = object_name(&prefix, spread(k, objects));
                let (latency, result) = timed(deadline, api.get(&name)).await;
                match result {
                    Ok(_) => share.samples.push(latency),
                    Err(e) => share.record_error(format!("get {name}: {e}")),
                }
                k += workers;
            }
            (share, ())
        }));
    }
    join(&mut phase, handles).await;
    phase.elapsed = started.elapsed();
    phase
}

/// `count` updates (PUT with the last resourceVersion, changing the data) spread over the
/// objects each worker created; a worker only updates its own objects, so there are no conflicts.
pub async fn update(clients: &[Client], work: &Workload, owned: Vec<Owned>, count: usize) -> Phase {
    let owned: Vec<Owned> = owned.into_iter().filter(|o| !o.is_empty()).collect();
    let workers = owned.len().min(count).max(1);
    let mut phase = Phase::new("update", workers);
    if owned.is_empty() {
        phase.record_error("no objects to update (the create phase made none)");
        return phase;
    }
    let started = Instant::now();
    let mut handles = Vec::new();
    for (w, mut mine) in owned.into_iter().enumerate().take(workers) {
        let Some(api) = api(clients, w, &work.namespace) else {
            phase.record_error("no client");
            continue;
        };
        let (payload, deadline) = (work.payload.clone(), work.deadline);
        handles.push(tokio::spawn(async move {
            let mut share = Phase::default();
            let mut k = w;
            let mut round = 0usize;
            while k < count {
                if Instant::now() >= deadline {
                    give_up(&mut share, remaining(k, workers, count));
                    break;
                }
                let slot = round % mine.len();
                let (name, rv) = mine.get(slot).cloned().unwrap_or_default();
                let mut cm = config_map(&name, &payload, &[("revision", round.to_string())]);
                cm.metadata.resource_version = Some(rv);
                let (latency, result) =
                    timed(deadline, api.replace(&name, &PostParams::default(), &cm)).await;
                match result {
                    Ok(updated) => {
                        share.samples.push(latency);
                        if let (Some(entry), Some(rv)) =
                            (mine.get_mut(slot), updated.metadata.resource_version)
                        {
                            entry.1 = rv;
                        }
                    }
                    Err(e) => share.record_error(format!("update {name}: {e}")),
                }
                k += workers;
                round += 1;
            }
            (share, ())
        }));
    }
    join(&mut phase, handles).await;
    phase.elapsed = started.elapsed();
    phase
}

/// Selects the harness's ConfigMaps (a namespace also holds `kube-root-ca.crt`).
const LOAD_SELECTOR: &str = "app.kubernetes.io/name=apiserver-load";

/// `count` lists of the harness's ConfigMaps in the namespace, each expected to return `expected`
/// objects.
pub async fn list(
    clients: &[Client],
    concurrency: usize,
    work: &Workload,
    expected: usize,
    count: usize,
) -> Phase {
    let workers = concurrency.min(count).max(1);
    let mut phase = Phase::new(format!("list ({} objects)", thousands(expected as u64)), workers);
    let started = Instant::now();
    let mut handles = Vec::new();
    for w in 0..workers {
        let Some(api) = api(clients, w, &work.namespace) else {
            phase.record_error("no client");
            continue;
        };
        let deadline = work.deadline;
        handles.push(tokio::spawn(async move {
            let mut share = Phase::default();
            let mut k = w;
            while k < count {
                if Instant::now() >= deadline {
                    give_up(&mut share, remaining(k, workers, count));
                    break;
                }
                let (latency, result) =
                    timed(deadline, api.list(&ListParams::default().labels(LOAD_SELECTOR))).await;
                match result {
                    Ok(list) if list.items.len() == expected => share.samples.push(latency),
                    Ok(list) => share.record_error(format!(
                        "list returned {} objects, expected {expected}",
                        list.items.len()
                    )),
                    Err(e) => share.record_error(format!("list: {e}")),
                }
                k += workers;
            }
            (share, ())
        }));
    }
    join(&mut phase, handles).await;
    phase.elapsed = started.elapsed();
    phase
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remaining_counts_the_strided_indexes_left() {
        assert_eq!(remaining(0, 4, 10), 3); // 0 4 8
        assert_eq!(remaining(3, 4, 10), 2); // 3 7
        assert_eq!(remaining(10, 4, 10), 0);
        assert_eq!(remaining(0, 0, 10), 0);
    }

    #[test]
    fn spread_stays_in_range_and_covers_it() {
        let n = 100;
        let hits: std::collections::BTreeSet<usize> = (0..10 * n).map(|k| spread(k, n)).collect();
        assert!(hits.iter().all(|&i| i < n));
        assert!(hits.len() > n * 9 / 10, "{} distinct", hits.len());
        assert_eq!(spread(5, 0), 0);
    }

    #[test]
    fn objects_carry_their_payload_and_extras() {
        let cm = config_map("a-000001", "xyz", &[("revision", "3".into())]);
        assert_eq!(object_name("a-", 1), "a-000001");
        assert_eq!(cm.metadata.name.as_deref(), Some("a-000001"));
        let data = cm.data.unwrap();
        assert_eq!(data.get("payload").map(String::as_str), Some("xyz"));
        assert_eq!(data.get("revision").map(String::as_str), Some("3"));
    }

    #[test]
    fn giving_up_counts_every_left_operation_once() {
        let mut p = Phase::default();
        give_up(&mut p, 5);
        assert_eq!(p.errors, 5);
        give_up(&mut p, 0);
        assert_eq!(p.errors, 5);
    }
}
