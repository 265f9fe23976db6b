//! WATCH: a stream of `{"type": ..., "object": ...}` events, one JSON document per line.
//!
//! Starting points follow kube-apiserver: no resourceVersion or `0` first sends the current state as
//! synthetic ADDED events; `sendInitialEvents=true` (with `resourceVersionMatch=NotOlderThan`) does
//! the same and ends the burst with a BOOKMARK annotated `k8s.io/initial-events-end`; an explicit
//! revision replays retained history after it, or sends one ERROR event (410 Expired) when it is
//! too old. With label or field selectors, an object that stops matching is sent as DELETED and one
//! that starts matching as ADDED. With `allowWatchBookmarks`, a BOOKMARK carrying the type's latest
//! revision is sent about 2 s before `timeoutSeconds` ends (and every minute), only if it moved.
//!
//! Events are written from the stored bytes ([`crate::storage::Event`] keeps them serialized):
//! a built-in kind stored at the version the watch addresses is sent as stored, without being
//! parsed; others are parsed, converted and encoded once per change and version for all of its
//! watchers ([`crate::storage::EncodedCache`]). Selectors read only what they test (labels, or
//! the object for a field selector), and no tree outlives the event being sent.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};

use super::list::{ListOptions, parse_rv, selects};
use super::{Api, RequestContext, to_version};
use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::storage::{self, EventType, StorageError, WatchItem};

/// A watch stream of encoded event lines.
pub type EventLines = BoxStream<'static, bytes::Bytes>;

fn line(kind: &str, object: Value) -> bytes::Bytes {
    let mut s = json!({"type": kind, "object": object}).to_string();
    s.push('\n');
    bytes::Bytes::from(s)
}

/// An event line around an object already serialized (the same bytes [`line`] makes).
fn line_encoded(kind: &str, object: &[u8]) -> bytes::Bytes {
    let mut s = Vec::with_capacity(object.len() + kind.len() + 24);
    s.extend_from_slice(b"{\"type\":\"");
    s.extend_from_slice(kind.as_bytes());
    s.extend_from_slice(b"\",\"object\":");
    s.extend_from_slice(object);
    s.extend_from_slice(b"}\n");
    bytes::Bytes::from(s)
}

/// `object` serialized as JSON (a `Value` always serializes: its keys are strings).
fn encode(object: &Value) -> bytes::Bytes {
    bytes::Bytes::from(serde_json::to_vec(object).unwrap_or_default())
}

/// The `apiVersion` of a stored object, read without building its tree.
fn stored_api_version(bytes: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct TypeMeta {
        #[serde(rename = "apiVersion")]
        api_version: Option<String>,
    }
    serde_json::from_slice::<TypeMeta>(bytes).ok()?.api_version
}

/// A stored object as a tree.
fn parse_stored(key: &str, bytes: &[u8]) -> Result<Value, ApiError> {
    storage::parse_json(key, bytes).map_err(ApiError::internal)
}

/// The stored object `bytes` (under `key`) serialized as the watch of `info` sends it: the
/// stored bytes themselves for a built-in kind stored at the addressed version (what
/// [`to_version`] would make of them), else parsed, converted and encoded.
fn encode_stored(
    info: &ResourceInfo,
    key: &str,
    bytes: &std::sync::Arc<[u8]>,
) -> Result<bytes::Bytes, ApiError> {
    if super::list_stream::streams(info) && stored_api_version(bytes).is_some_and(|v| v == info.api_version())
    {
        return Ok(bytes::Bytes::from_owner(bytes.clone()));
    }
    to_version(info, &parse_stored(key, bytes)?).map(|object| encode(&object))
}

/// The object an event's watcher last saw (`prev`, stored bytes) at the event's revision: what
/// is sent when a change makes it stop matching the watch's selectors.
fn encode_last_state(info: &ResourceInfo, key: &str, prev: &[u8], rv: u64) -> Result<bytes::Bytes, ApiError> {
    let mut last = to_version(info, &parse_stored(key, prev)?)?;
    storage::set_resource_version(&mut last, rv);
    Ok(encode(&last))
}

fn bookmark(info: &ResourceInfo, rv: u64, initial_end: bool) -> bytes::Bytes {
    let mut metadata = serde_json::Map::new();
    if initial_end {
        metadata.insert("annotations".into(), json!({"k8s.io/initial-events-end": "true"}));
    }
    metadata.insert("resourceVersion".into(), json!(rv.to_string()));
    line(
        "BOOKMARK",
        json!({"kind": info.kind, "apiVersion": info.api_version(), "metadata": metadata}),
    )
}

fn expired_event(requested: u64, oldest: u64) -> bytes::Bytes {
    let status = ApiError::expired(format!("too old resource version: {requested} ({oldest})")).to_status();
    line("ERROR", status)
}

impl Api {
    /// Opens a watch; errors before the stream starts are answered as plain Status responses.
    pub async fn watch(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        q: &HashMap<String, String>,
    ) -> Result<EventLines, ApiError> {
        let opts = ListOptions::parse(info, q)?;
        let bookmarks = q.get("allowWatchBookmarks").is_some_and(|v| v == "true");
        let send_initial = q.get("sendInitialEvents").map(String::as_str);
        let timeout = q
            .get("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
            .filter(|t| *t > 0)
            .unwrap_or(1800);
        let rv = match opts.rv.as_deref() {
            None => None,
            Some(s) => Some(parse_rv(s).map_err(|_| {
                let mut e = ApiError::new(
                    500,
                    "",
                    format!("resourceVersion: Invalid value: {s:?}: strconv.ParseUint: parsing {s:?}: invalid syntax"),
                );
                e.reason = String::new();
                e
            })?),
        };
        let initial = send_initial == Some("true") || matches!(rv, None | Some(0));
        let ns = if info.namespaced {
            ctx.namespace.clone()
        } else {
            None
        };
        let prefix = storage::resource_prefix(&info.storage_group, &info.storage_resource, None);
        let ns_prefix = storage::resource_prefix(&info.storage_group, &info.storage_resource, ns.as_deref());
        let mut head: Vec<bytes::Bytes> = Vec::new();
        let start = if initial {
            let list = self
                .storage
                .list_encoded(&ns_prefix, None)
                .await
                .map_err(ApiError::internal)?;
            let floor = rv.unwrap_or(0);
            if floor > list.rv {
                return Err(ApiError::new(
                    504,
                    "Timeout",
                    format!(
                        "Timeout: Too large resource version: {floor}, current: {}",
                        list.rv
                    ),
                ));
            }
            for (key, stored) in &list.items {
                if selects(&stored.bytes, &opts) {
                    head.push(line_encoded("ADDED", &encode_stored(info, key, &stored.bytes)?));
                }
            }
            if send_initial == Some("true") && bookmarks {
                head.push(bookmark(info, list.rv, true));
            }
            list.rv
        } else {
            rv.unwrap_or(0)
        };
        let events = match self.storage.watch(&prefix, start).await {
            Ok(s) => s,
            Err(StorageError::ReadExpired { requested, oldest }) => {
                return Ok(futures::stream::iter(vec![expired_event(requested, oldest)]).boxed());
            }
            Err(StorageError::ReadTooLarge { requested, current }) => {
                return Err(ApiError::new(
                    504,
                    "Timeout",
                    format!("Timeout: Too large resource version: {requested}, current: {current}"),
                ));
            }
            Err(e) => return Err(ApiError::internal(e)),
        };
        // The representation this watch sends: events encoded for it are shared with every
        // other watcher of the same version of the resource.
        let cache_key: std::sync::Arc<str> =
            std::sync::Arc::from(format!("{}|{}", info.api_version(), info.resource));
        let info = std::sync::Arc::new(info.clone());
        // A name selector is tested on each change's key first (the name is its last segment):
        // a thousand agents, each watching its own CertificateSigningRequest by name, skip every
        // other CSR's change without walking the object.
        let name_required: Option<std::sync::Arc<str>> =
            opts.field.required("metadata.name").map(std::sync::Arc::from);
        let opts = std::sync::Arc::new(opts);
        let ns_prefix = std::sync::Arc::new(ns_prefix);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
        let bookmark_at = if timeout > 2 {
            Some(deadline - Duration::from_secs(2))
        } else {
            None
        };
        struct St {
            events: crate::storage::WatchStream,
            head: std::vec::IntoIter<bytes::Bytes>,
            last_rv: u64,
            sent_rv: u64,
            bookmark_at: Option<tokio::time::Instant>,
            next_periodic: tokio::time::Instant,
            done: bool,
        }
        let st = St {
            events,
            head: head.into_iter(),
            last_rv: start,
            sent_rv: start,
            bookmark_at: if bookmarks { bookmark_at } else { None },
            next_periodic: tokio::time::Instant::now() + Duration::from_secs(60),
            done: false,
        };
        let stream = futures::stream::unfold(st, move |mut st| {
            let info = info.clone();
            let opts = opts.clone();
            let ns_prefix = ns_prefix.clone();
            let cache_key = cache_key.clone();
            let name_required = name_required.clone();
            async move {
                if let Some(h) = st.head.next() {
                    return Some((h, st));
                }
                loop {
                    if st.done {
                        return None;
                    }
                    let wake = match st.bookmark_at {
                        Some(b) => b.min(deadline),
                        None => deadline,
                    };
                    let wake = if bookmarks {
                        wake.min(st.next_periodic)
                    } else {
                        wake
                    };
                    let item = tokio::select! {
                        item = st.events.next() => item,
                        _ = tokio::time::sleep_until(wake) => {
                            let now = tokio::time::Instant::now();
                            if now >= deadline {
                                return None;
                            }
                            let due = st.bookmark_at.is_some_and(|b| now >= b) || (bookmarks && now >= st.next_periodic);
                            if st.bookmark_at.is_some_and(|b| now >= b) {
                                st.bookmark_at = None;
                            }
                            if now >= st.next_periodic {
                                st.next_periodic = now + Duration::from_secs(60);
                            }
                            if due && st.last_rv > st.sent_rv {
                                st.sent_rv = st.last_rv;
                                return Some((bookmark(&info, st.last_rv, false), st));
                            }
                            continue;
                        }
                    };
                    match item {
                        None => return None,
                        Some(Err(StorageError::ReadExpired { requested, oldest })) => {
                            st.done = true;
                            return Some((expired_event(requested, oldest), st));
                        }
                        Some(Err(_)) => return None,
                        // Other types' changes do not move this type's cache (no bookmark for them).
                        Some(Ok(WatchItem::Progress(_))) => {}
                        Some(Ok(WatchItem::Event(e))) => {
                            st.last_rv = e.rv;
                            if !e.key.starts_with(ns_prefix.as_str())
                                || name_required
                                    .as_deref()
                                    .is_some_and(|name| e.key.rsplit('/').next() != Some(name))
                            {
                                continue;
                            }
                            let now_matches = e.kind != EventType::Deleted && selects(&e.object_json, &opts);
                            let was_matching = e.prev_json.as_deref().is_some_and(|p| selects(p, &opts));
                            let kind = match (e.kind, was_matching, now_matches) {
                                (EventType::Deleted, true, _) => "DELETED",
                                (EventType::Deleted, false, _) => continue,
                                (_, true, true) => "MODIFIED",
                                (_, false, true) => "ADDED",
                                (_, true, false) => "DELETED",
                                (_, false, false) => continue,
                            };
                            // An object that stopped matching is sent as it was (the last state the
                            // watcher saw) at the event's resourceVersion.
                            let object = match (e.kind, kind, &e.prev_json) {
                                (EventType::Deleted, _, _) | (_, "ADDED" | "MODIFIED", _) | (_, _, None) => {
                                    e.encoded.get_or_encode(&cache_key, || {
                                        encode_stored(&info, &e.key, &e.object_json)
                                    })
                                }
                                (_, _, Some(prev)) => encode_last_state(&info, &e.key, prev, e.rv),
                            };
                            st.sent_rv = st.sent_rv.max(e.rv);
                            // An object that cannot be converted is reported as kube-apiserver
                            // reports a failed conversion in a watch: an ERROR event.
                            let event = match object {
                                Ok(object) => line_encoded(kind, &object),
                                Err(error) => line("ERROR", error.to_status()),
                            };
                            return Some((event, st));
                        }
                    }
                }
            }
        });
        Ok(stream.boxed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_around_encoded_bytes_is_the_line_of_the_object() {
        let object = json!({"metadata": {"name": "a\"b", "resourceVersion": "7"}, "data": {"k": "é\n"}});
        assert_eq!(
            line_encoded("MODIFIED", &encode(&object)),
            line("MODIFIED", object)
        );
    }

    fn stored(object: &Value) -> std::sync::Arc<[u8]> {
        std::sync::Arc::from(serde_json::to_vec(object).unwrap())
    }

    #[test]
    fn a_builtin_at_its_stored_version_is_sent_as_stored_and_others_are_converted() {
        let registry = crate::registry::Registry::with_builtins();
        let configmaps = registry.get("", "v1", "configmaps").unwrap();
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "3"}, "data": {"k": "1.5e300 é"}, "n": 1.25});
        let bytes = stored(&object);
        let sent = encode_stored(&configmaps, "/core/configmaps/ns/a", &bytes).unwrap();
        // The very bytes of the store, and what converting the tree makes of them.
        assert_eq!(sent.as_ptr(), bytes.as_ptr());
        assert_eq!(sent, encode(&to_version(&configmaps, &object).unwrap()));

        // Stored at another apiVersion (or none): converted, as before.
        let other = json!({"apiVersion": "v0", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let sent = encode_stored(&configmaps, "/core/configmaps/ns/a", &stored(&other)).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&sent).unwrap()["apiVersion"],
            "v1"
        );
        let untyped = json!({"metadata": {"name": "a"}});
        let sent = encode_stored(&configmaps, "/core/configmaps/ns/a", &stored(&untyped)).unwrap();
        assert_eq!(sent, encode(&to_version(&configmaps, &untyped).unwrap()));

        // events.k8s.io Events are stored as core Events and always converted.
        let events = registry.get("events.k8s.io", "v1", "events").unwrap();
        let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "message": "hi", "reason": "R"});
        let sent = encode_stored(&events, "/core/events/ns/e", &stored(&event)).unwrap();
        assert_eq!(sent, encode(&to_version(&events, &event).unwrap()));
        assert_eq!(
            serde_json::from_slice::<Value>(&sent).unwrap()["apiVersion"],
            "events.k8s.io/v1"
        );

        // Bytes that are not JSON are an error, not an empty object.
        assert!(encode_stored(&events, "/core/events/ns/e", &std::sync::Arc::from(&b"{"[..])).is_err());
    }

    #[test]
    fn an_object_that_stops_matching_is_sent_as_it_was_at_the_new_revision() {
        let registry = crate::registry::Registry::with_builtins();
        let configmaps = registry.get("", "v1", "configmaps").unwrap();
        let prev = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "3", "labels": {"a": "b"}}});
        let sent = encode_last_state(&configmaps, "/core/configmaps/ns/a", &stored(&prev), 9).unwrap();
        let sent: Value = serde_json::from_slice(&sent).unwrap();
        assert_eq!(sent["metadata"]["resourceVersion"], "9");
        assert_eq!(sent["metadata"]["labels"], json!({"a": "b"}));
    }
}
