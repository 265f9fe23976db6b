//! Prometheus metrics of the control plane, served on `/metrics`.
//!
//! The names and labels follow kube-apiserver's where they overlap, so that existing dashboards and
//! alerts keep working:
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `apiserver_request_total` | counter | verb, group, version, resource, subresource, scope, code |
//! | `apiserver_request_duration_seconds` | histogram | verb, group, version, resource, subresource, scope |
//! | `apiserver_longrunning_requests` | gauge (open watches) | verb, group, version, resource, subresource, scope |
//! | `apiserver_storage_objects` | gauge (read at scrape time) | resource (`configmaps`, `deployments.apps`) |
//!
//! Verbs are kube-apiserver's reported verbs: `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`,
//! `APPLY`, `DELETE` (also for collections, with scope `namespace` or `cluster`), `other`. Requests
//! for resources the server does not serve are counted with empty group, version and resource so
//! that random paths cannot grow the label space. Watches are counted when they start; their
//! duration is not observed (it is the client's timeout, not the server's latency).
//!
//! The exposition is OpenMetrics text (`application/openmetrics-text; version=1.0.0`), which
//! Prometheus scrapes natively.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

use crate::registry::Registry;
use crate::storage::Storage;

/// The content type of [`Metrics::render`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Latency buckets in seconds: kube-apiserver's start at 5 ms; this server answers most requests
/// well below that, so the low end is finer.
const LATENCY_BUCKETS: [f64; 18] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0,
];

/// What a request addressed, as the metrics label it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RequestLabels {
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE` or `other`.
    pub verb: String,
    /// API group (empty for core and for paths that are not served resources).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
    /// Subresource (`status`, `approval`).
    pub subresource: String,
    /// `resource` (one named object), `namespace`, `cluster`, or empty for non-resource paths.
    pub scope: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CodeLabels {
    verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: String,
    code: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ObjectLabels {
    resource: String,
}

type LatencyFamily = Family<RequestLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// Counts stored objects per resource at scrape time.
struct StoredObjects {
    storage: Arc<dyn Storage>,
}

impl std::fmt::Debug for StoredObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredObjects").finish_non_exhaustive()
    }
}

impl Collector for StoredObjects {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let family = Family::<ObjectLabels, Gauge>::default();
        for (group, resource, count) in self.storage.object_counts() {
            let resource = if group == "core" {
                resource
            } else {
                format!("{resource}.{group}")
            };
            family
                .get_or_create(&ObjectLabels { resource })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        let metric = encoder.encode_descriptor(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind.",
            None,
            family.metric_type(),
        )?;
        family.encode(metric)
    }
}

/// The metrics of one control plane.
pub struct Metrics {
    registry: prometheus_client::registry::Registry,
    requests: Family<CodeLabels, Counter>,
    latency: LatencyFamily,
    watches: Family<RequestLabels, Gauge>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Metrics reading object counts from `storage`.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        let mut registry = prometheus_client::registry::Registry::default();
        let requests = Family::<CodeLabels, Counter>::default();
        let latency: LatencyFamily = Family::new_with_constructor(latency_histogram);
        let watches = Family::<RequestLabels, Gauge>::default();
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, group, version, resource, scope and \
             HTTP response code.",
            requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, group, version, resource, \
             subresource and scope (watches excluded).",
            latency.clone(),
        );
        registry.register(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests (watches) broken out by verb, group, \
             version, resource, subresource and scope.",
            watches.clone(),
        );
        registry.register_collector(Box::new(StoredObjects { storage }));
        Self {
            registry,
            requests,
            latency,
            watches,
        }
    }

    /// Records a finished request (for a watch: its start).
    pub fn observe(&self, labels: &RequestLabels, code: u16, elapsed: Duration) {
        self.requests
            .get_or_create(&CodeLabels {
                verb: labels.verb.clone(),
                group: labels.group.clone(),
                version: labels.version.clone(),
                resource: labels.resource.clone(),
                subresource: labels.subresource.clone(),
                scope: labels.scope.clone(),
                code: code.to_string(),
            })
            .inc();
        if labels.verb != "WATCH" {
            self.latency.get_or_create(labels).observe(elapsed.as_secs_f64());
        }
    }

    /// Counts an open watch until the returned guard is dropped.
    pub fn watch_opened(&self, labels: &RequestLabels) -> WatchGuard {
        let gauge = self.watches.get_or_create_owned(labels);
        gauge.inc();
        WatchGuard { gauge }
    }

    /// The exposition in OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; an encoder error would leave a partial page, which
        // is still the best answer available.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Keeps a watch counted in `apiserver_longrunning_requests` while it lives.
#[derive(Debug)]
pub struct WatchGuard {
    gauge: Gauge,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

/// The metric labels of a request: kube-apiserver's reported verb, the served resource it
/// addresses (empty when the path is not one) and its scope.
pub fn classify(method: &str, path: &str, query: Option<&str>, registry: &Registry) -> RequestLabels {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => ("", "", &[][..]),
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, r, tail @ ..] if !(tail.is_empty() && matches!(*r, "status" | "finalize")) => {
            (Some(*ns), &rest[2..])
        }
        _ => (None, rest),
    };
    let resource = rest.first().copied();
    let name = rest.get(1).copied();
    let subresource = rest.get(2).copied();
    let info = match resource {
        Some(resource) if rest.len() <= 3 => registry.get(group, version, resource),
        _ => None,
    };
    let scope = match (&info, name, namespace) {
        (None, _, _) => "",
        (Some(_), Some(_), _) => "resource",
        (Some(_), None, Some(_)) => "namespace",
        (Some(_), None, None) => "cluster",
    };
    let watch = query.is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let verb = match method {
        "GET" | "HEAD" if watch => "WATCH",
        "GET" | "HEAD" if scope == "namespace" || scope == "cluster" => "LIST",
        "GET" | "HEAD" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        _ => "other",
    };
    match info {
        Some(info) => RequestLabels {
            verb: verb.to_string(),
            group: info.group.clone(),
            version: info.version.clone(),
            resource: info.resource.clone(),
            subresource: subresource
                .filter(|s| info.has_subresource(s))
                .unwrap_or_default()
                .to_string(),
            scope: scope.to_string(),
        },
        None => RequestLabels {
            verb: verb.to_string(),
            group: String::new(),
            version: String::new(),
            resource: String::new(),
            subresource: String::new(),
            scope: String::new(),
        },
    }
}

/// `APPLY` for a PATCH with the server-side apply content type, else `verb` unchanged.
pub fn apply_verb(labels: &mut RequestLabels, content_type: Option<&str>) {
    if labels.verb == "PATCH" && content_type.is_some_and(|c| c.starts_with("application/apply-patch")) {
        labels.verb = "APPLY".into();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

    use super::*;
    use crate::storage::MemoryStorage;

    fn labels(method: &str, path: &str, query: Option<&str>) -> RequestLabels {
        classify(method, path, query, &Registry::with_builtins())
    }

    #[test]
    fn classifies_verbs_resources_and_scopes() {
        let l = labels("GET", "/api/v1/namespaces/ns/configmaps", None);
        assert_eq!(
            (l.verb.as_str(), l.resource.as_str(), l.scope.as_str()),
            ("LIST", "configmaps", "namespace")
        );
        let l = labels("GET", "/api/v1/configmaps", Some("watch=true&resourceVersion=3"));
        assert_eq!((l.verb.as_str(), l.scope.as_str()), ("WATCH", "cluster"));
        let l = labels("GET", "/api/v1/namespaces/ns", None);
        assert_eq!(
            (l.verb.as_str(), l.resource.as_str(), l.scope.as_str()),
            ("GET", "namespaces", "resource")
        );
        let l = labels("PUT", "/api/v1/namespaces/ns/status", None);
        assert_eq!(
            (l.resource.as_str(), l.subresource.as_str()),
            ("namespaces", "status")
        );
        let l = labels("DELETE", "/apis/apps/v1/namespaces/ns/deployments", None);
        assert_eq!(
            (l.verb.as_str(), l.group.as_str(), l.scope.as_str()),
            ("DELETE", "apps", "namespace")
        );
        let l = labels("PUT", "/apis/apps/v1/namespaces/ns/deployments/d/status", None);
        assert_eq!(
            (l.resource.as_str(), l.subresource.as_str(), l.scope.as_str()),
            ("deployments", "status", "resource")
        );
        // Unknown resources and paths do not become label values.
        for path in [
            "/api/v1/namespaces/ns/nonsense",
            "/apis/x.io/v1/things",
            "/healthz",
            "/zz/%00",
        ] {
            let l = labels("GET", path, None);
            assert_eq!(
                (l.group.as_str(), l.resource.as_str(), l.scope.as_str()),
                ("", "", ""),
                "{path}"
            );
        }
        assert_eq!(labels("BREW", "/api/v1/configmaps", None).verb, "other");
        let mut l = labels("PATCH", "/api/v1/namespaces/ns/configmaps/c", None);
        apply_verb(&mut l, Some("application/apply-patch+yaml"));
        assert_eq!(l.verb, "APPLY");
    }

    #[tokio::test]
    async fn renders_requests_watches_and_objects() {
        let storage = Arc::new(MemoryStorage::in_memory());
        storage
            .create(
                "/core/configmaps/ns/a",
                serde_json::json!({"metadata": {"name": "a"}}),
            )
            .await
            .unwrap();
        storage
            .create(
                "/apps/deployments/ns/d",
                serde_json::json!({"metadata": {"name": "d"}}),
            )
            .await
            .unwrap();
        let metrics = Metrics::new(storage);
        let get = labels("GET", "/api/v1/namespaces/ns/configmaps/a", None);
        metrics.observe(&get, 200, Duration::from_millis(2));
        let watch = labels("GET", "/api/v1/configmaps", Some("watch=1"));
        let guard = metrics.watch_opened(&watch);
        let text = metrics.render();
        assert!(
            text.contains(
                "apiserver_request_total{verb=\"GET\",group=\"\",version=\"v1\",resource=\"configmaps\",\
                 subresource=\"\",scope=\"resource\",code=\"200\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("apiserver_request_duration_seconds_bucket{"),
            "{text}"
        );
        assert!(
            text.contains("apiserver_longrunning_requests{verb=\"WATCH\""),
            "{text}"
        );
        assert!(
            text.contains("apiserver_storage_objects{resource=\"configmaps\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("apiserver_storage_objects{resource=\"deployments.apps\"} 1"),
            "{text}"
        );
        drop(guard);
        assert!(metrics.render().contains("scope=\"cluster\"} 0"));
        assert!(text.ends_with("# EOF\n"));
    }
}
