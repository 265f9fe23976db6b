//! Publishing Kubernetes events (`events.k8s.io/v1`) from the controllers.
//!
//! [`EventRecorder`] publishes what kube-runtime's `Recorder` publishes — the same event objects,
//! and a repeated event (same type, reason, action, reporter, regarding and related object)
//! within [`SERIES_WINDOW`] becomes a series on the first one (`series.count`,
//! `series.lastObservedTime`) instead of a new object — but at fleet scale:
//!
//! - kube-runtime's recorder scans its whole cache on every publish to drop old entries and keeps a
//!   full copy of every event it published for six minutes. A hub controller publishing for 10 000
//!   placements spent 40 % of its CPU in that scan and tens of MiB on the copies. Here the cache is
//!   swept at most once per [`SWEEP_EVERY`] and keeps, per event, a 64-bit hash of what makes it
//!   the same event, its name, namespace, count and when it was last seen (two different events
//!   sharing a hash, about one chance in 10^10 among 30 000 events, would count as one series).
//! - A series update is a merge patch of `series` alone, not of the whole event.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as KubeEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use kube::{Api, Client};
use serde_json::json;

/// A repeated event within this time joins the first one's series (kube-runtime's and client-go's
/// six minutes).
pub const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// How often the cache drops the events older than [`SERIES_WINDOW`].
pub const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// What makes two events the same (kube-runtime's event key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    warning: bool,
    reason: String,
    action: String,
    regarding: Reference,
    related: Option<Reference>,
}

/// The identifying fields of an object reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Reference {
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
}

impl From<&ObjectReference> for Reference {
    fn from(r: &ObjectReference) -> Self {
        Self {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            uid: r.uid.clone(),
        }
    }
}

/// What is remembered of a published event.
#[derive(Debug, Clone)]
struct Published {
    name: String,
    namespace: String,
    count: i32,
    last: Timestamp,
}

#[derive(Debug)]
struct Cache {
    /// By the hash of the event's [`Key`].
    events: HashMap<u64, Published>,
    swept: Timestamp,
}

/// Publishes events as one reporter; cheap to clone (clones share the series cache).
#[derive(Clone)]
pub struct EventRecorder {
    client: Client,
    reporter: Reporter,
    cache: Arc<Mutex<Cache>>,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("reporter", &self.reporter)
            .finish_non_exhaustive()
    }
}

/// The key's hash (the same in every process: `DefaultHasher` with fixed keys).
fn hash(key: &Key) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(key)
}

fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

impl EventRecorder {
    /// A recorder publishing as `reporter`.
    #[must_use]
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self {
            client,
            reporter,
            cache: Arc::new(Mutex::new(Cache {
                events: HashMap::new(),
                swept: Timestamp::now(),
            })),
        }
    }

    /// How many events the series cache remembers.
    #[must_use]
    pub fn remembered(&self) -> usize {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .events
            .len()
    }

    /// The series the event of `key` joins at `now`: its name, namespace and new count.
    fn series_of(&self, key: &Key, now: Timestamp) -> Option<Published> {
        let key = hash(key);
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let window = signed(SERIES_WINDOW);
        if now.duration_since(cache.swept) >= signed(SWEEP_EVERY) {
            cache.events.retain(|_, p| now.duration_since(p.last) < window);
            cache.swept = now;
        }
        let published = cache.events.get_mut(&key)?;
        if now.duration_since(published.last) >= window {
            return None;
        }
        published.count += 1;
        published.last = now;
        Some(published.clone())
    }

    fn remember(&self, key: Key, published: Published) {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .events
            .insert(hash(&key), published);
    }

    /// The event object kube-runtime's recorder creates for `event` about `regarding`.
    fn event_object(&self, event: &Event, regarding: &ObjectReference, now: Timestamp) -> KubeEvent {
        KubeEvent {
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            note: event.note.clone(),
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_ref().unwrap_or(&self.reporter.controller),
                    now.as_nanosecond()
                )),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            type_: Some(
                match event.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_string(),
            ),
            related: event.secondary.clone(),
            ..KubeEvent::default()
        }
    }

    /// Publishes `event` about `regarding`, in its namespace (`default` for a cluster-scoped
    /// object): a new event, or the next of its series.
    ///
    /// # Errors
    /// The API server's refusal of the create or patch.
    pub async fn publish(&self, event: &Event, regarding: &ObjectReference) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = Key {
            warning: matches!(event.type_, EventType::Warning),
            reason: event.reason.clone(),
            action: event.action.clone(),
            regarding: regarding.into(),
            related: event.secondary.as_ref().map(Reference::from),
        };
        if let Some(series) = self.series_of(&key, now) {
            let api: Api<KubeEvent> = Api::namespaced(self.client.clone(), &series.namespace);
            let patch = json!({
                "series": {"count": series.count, "lastObservedTime": MicroTime(now)},
            });
            api.patch(&series.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            return Ok(());
        }
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string());
        let object = self.event_object(event, regarding, now);
        let api: Api<KubeEvent> = Api::namespaced(self.client.clone(), &namespace);
        let created = api.create(&PostParams::default(), &object).await?;
        self.remember(
            key,
            Published {
                name: created.metadata.name.unwrap_or_default(),
                namespace,
                count: 1,
                last: now,
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder() -> EventRecorder {
        // A client that is never called: only the cache is exercised.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        EventRecorder::new(
            client,
            Reporter {
                controller: "test-controller".into(),
                instance: None,
            },
        )
    }

    fn key(reason: &str) -> Key {
        Key {
            warning: false,
            reason: reason.into(),
            action: "Act".into(),
            regarding: Reference {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
                namespace: Some("ns".into()),
                name: Some("cm".into()),
                uid: None,
            },
            related: None,
        }
    }

    fn published(at: Timestamp) -> Published {
        Published {
            name: "cm.1".into(),
            namespace: "ns".into(),
            count: 1,
            last: at,
        }
    }

    #[tokio::test]
    async fn a_repeat_within_the_window_joins_the_series() {
        let r = recorder();
        let start = Timestamp::now();
        assert!(r.series_of(&key("A"), start).is_none());
        r.remember(key("A"), published(start));
        let second = r
            .series_of(&key("A"), start + SignedDuration::from_secs(10))
            .unwrap();
        assert_eq!((second.name.as_str(), second.count), ("cm.1", 2));
        let third = r
            .series_of(&key("A"), start + SignedDuration::from_secs(20))
            .unwrap();
        assert_eq!(third.count, 3);
        // Another reason is another event.
        assert!(r.series_of(&key("B"), start).is_none());
        // Past the window after its last occurrence, a new event.
        let late = start + SignedDuration::from_secs(20) + signed(SERIES_WINDOW);
        assert!(r.series_of(&key("A"), late).is_none());
    }

    #[tokio::test]
    async fn old_events_are_swept_at_most_once_per_sweep_period() {
        let r = recorder();
        let start = Timestamp::now();
        r.remember(key("A"), published(start - signed(SERIES_WINDOW)));
        r.remember(key("B"), published(start));
        // Not yet time to sweep: A stays although it is out of the window.
        assert!(
            r.series_of(&key("C"), start + SignedDuration::from_secs(30))
                .is_none()
        );
        assert_eq!(r.remembered(), 2);
        assert!(
            r.series_of(&key("C"), start + SignedDuration::from_secs(61))
                .is_none()
        );
        assert_eq!(r.remembered(), 1);
    }
}
