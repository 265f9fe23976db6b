//! `deletion-load`: how long the embedded control plane takes to delete a namespace full of
//! objects and to garbage-collect dependents through ownerReferences.
//!
//! ```text
//! cargo run -p ocm-benches --release --bin deletion-load -- [--objects 10000] [--dependents 1000]
//! ```
//!
//! Phases, each in a namespace of its own on one fresh in-memory server: (1) a namespace holding
//! `--objects` ConfigMaps is deleted and timed until it is gone; (2) `--dependents` ConfigMaps
//! owned by one root are collected after the root's Background deletion, (3) and after its
//! Foreground deletion (until the root itself is gone); (4) a chain of `--dependents` ConfigMaps,
//! each owned by the previous one, is collected after the first one's deletion.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams, PropagationPolicy};
use ocm_benches::load::LoadError;
use ocm_benches::load::target::{Target, create_namespace};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The command line.
#[derive(Debug, Parser)]
#[command(about = "Namespace deletion and garbage collection timings of the embedded control plane")]
struct Options {
    /// ConfigMaps in the namespace that is deleted.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// Dependents of the garbage-collection phases.
    #[arg(long, default_value_t = 1_000)]
    dependents: usize,
    /// Concurrent creates while filling.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// How long one phase may take before the run fails.
    #[arg(long, default_value = "600", value_parser = |s: &str| s.parse::<u64>().map(Duration::from_secs))]
    timeout: Duration,
}

/// A failure of one phase.
#[derive(Debug, thiserror::Error)]
enum BenchError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{what}: {source}")]
    Api { what: String, source: kube::Error },
    #[error("{0} did not finish within {1:?}")]
    Timeout(String, Duration),
}

fn api_err(what: &str) -> impl FnOnce(kube::Error) -> BenchError + '_ {
    move |source| BenchError::Api {
        what: what.to_string(),
        source,
    }
}

/// A ConfigMap with a small payload, labelled `run=gc`, owned by `owner` (name, uid) if given.
fn configmap(name: &str, owner: Option<(&str, &str)>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some([("run".to_string(), "gc".to_string())].into()),
            owner_references: owner.map(|(owner_name, uid)| {
                vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    name: owner_name.into(),
                    uid: uid.into(),
                    ..OwnerReference::default()
                }]
            }),
            ..ObjectMeta::default()
        },
        data: Some([("payload".to_string(), "x".repeat(64))].into()),
        ..ConfigMap::default()
    }
}

/// Creates `objects`, `concurrency` at a time.
async fn fill(api: &Api<ConfigMap>, objects: Vec<ConfigMap>, concurrency: usize) -> Result<(), BenchError> {
    futures::stream::iter(objects)
        .map(|cm| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &cm).await.map(|_| ()) }
        })
        .buffer_unordered(concurrency)
        .try_collect::<Vec<()>>()
        .await
        .map_err(api_err("creating ConfigMaps"))?;
    Ok(())
}

async fn wait_until(
    what: &str,
    timeout: Duration,
    mut done: impl AsyncFnMut() -> Result<bool, BenchError>,
) -> Result<(), BenchError> {
    let deadline = Instant::now() + timeout;
    while !done().await? {
        if Instant::now() > deadline {
            return Err(BenchError::Timeout(what.to_string(), timeout));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

async fn remaining(api: &Api<ConfigMap>, selector: &str) -> Result<usize, BenchError> {
    let list = api
        .list_metadata(&ListParams::default().labels(selector))
        .await
        .map_err(api_err("listing"))?;
    Ok(list.items.len())
}

async fn namespace_phase(client: &Client, o: &Options) -> Result<Duration, BenchError> {
    let ns = "deletion-load-namespace";
    create_namespace(client, ns).await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let objects = (0..o.objects)
        .map(|i| configmap(&format!("cm-{i}"), None))
        .collect();
    fill(&api, objects, o.concurrency).await?;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let start = Instant::now();
    namespaces
        .delete(ns, &DeleteParams::default())
        .await
        .map_err(api_err("deleting the namespace"))?;
    wait_until("namespace deletion", o.timeout, async || {
        Ok(namespaces
            .get_opt(ns)
            .await
            .map_err(api_err("reading the namespace"))?
            .is_none())
    })
    .await?;
    Ok(start.elapsed())
}

/// Creates a root and `--dependents` dependents in `ns` (all labelled `run=gc`): owned by the root,
/// or with `chain` each owned by the previous one. Deletes the root with `policy` and times until
/// every one of them (the root included) is gone.
async fn owners_phase(
    client: &Client,
    o: &Options,
    ns: &str,
    policy: PropagationPolicy,
    chain: bool,
) -> Result<Duration, BenchError> {
    create_namespace(client, ns).await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let root = api
        .create(&PostParams::default(), &configmap("root", None))
        .await
        .map_err(api_err("creating the root"))?;
    let root_uid = root.metadata.uid.unwrap_or_default();
    if chain {
        let (mut owner, mut uid) = ("root".to_string(), root_uid);
        for i in 0..o.dependents {
            let name = format!("link-{i}");
            let created = api
                .create(&PostParams::default(), &configmap(&name, Some((&owner, &uid))))
                .await
                .map_err(api_err("creating a link"))?;
            uid = created.metadata.uid.unwrap_or_default();
            owner = name;
        }
    } else {
        let dependents = (0..o.dependents)
            .map(|i| configmap(&format!("dep-{i}"), Some(("root", &root_uid))))
            .collect();
        fill(&api, dependents, o.concurrency).await?;
    }
    let start = Instant::now();
    let params = DeleteParams {
        propagation_policy: Some(policy),
        ..DeleteParams::default()
    };
    api.delete("root", &params)
        .await
        .map_err(api_err("deleting the root"))?;
    wait_until("garbage collection", o.timeout, async || {
        Ok(remaining(&api, "run=gc").await? == 0)
    })
    .await?;
    Ok(start.elapsed())
}

async fn run(client: Client, o: &Options) -> Result<Vec<(String, Duration)>, BenchError> {
    let mut rows = vec![(
        format!("delete a namespace holding {} ConfigMaps", o.objects),
        namespace_phase(&client, o).await?,
    )];
    let n = o.dependents;
    let phases = [
        (
            format!("Background: collect {n} dependents of one owner"),
            "deletion-load-background",
            PropagationPolicy::Background,
            false,
        ),
        (
            format!("Foreground: {n} dependents, then the owner"),
            "deletion-load-foreground",
            PropagationPolicy::Foreground,
            false,
        ),
        (
            format!("Background: a chain of {n} owners"),
            "deletion-load-chain",
            PropagationPolicy::Background,
            true,
        ),
    ];
    for (what, ns, policy, chain) in phases {
        rows.push((what, owners_phase(&client, o, ns, policy, chain).await?));
    }
    Ok(rows)
}

fn main() -> ExitCode {
    let options = Options::parse();
    let runtime = |name: &'static str| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|source| LoadError::StartRuntime { name, source })
    };
    let result = (|| -> Result<Vec<(String, Duration)>, BenchError> {
        let server = runtime("server")?;
        let clients = runtime("client")?;
        let rows = clients.block_on(async {
            let target = Target::embedded(server.handle(), None).await?;
            let client = Client::try_from(target.config.clone()).map_err(api_err("building a client"))?;
            run(client, &options).await
        });
        clients.shutdown_timeout(Duration::from_secs(1));
        server.shutdown_timeout(Duration::from_secs(1));
        rows
    })();
    match result {
        Ok(rows) => {
            println!("deletion-load against a fresh embedded ocm-controlplane (in memory)");
            for (what, took) in rows {
                println!("{what:<52} {:>9.2} s", took.as_secs_f64());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("deletion-load: {e}");
            ExitCode::FAILURE
        }
    }
}
