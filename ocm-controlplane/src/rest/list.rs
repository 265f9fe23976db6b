//! LIST and DELETECOLLECTION: selectors, pagination with continue tokens, resourceVersion semantics.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use super::{Api, Reply, RequestContext, list_item, to_version};
use crate::registry::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::{ApiError, Cause, Subject};
use crate::storage::{self, StorageError};

/// Parsed list options.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label: LabelSelector,
    /// `fieldSelector`.
    pub field: FieldSelector,
    /// `limit` (0 = no limit).
    pub limit: usize,
    /// Decoded `continue`: revision and the key to start after.
    pub cont: Option<(u64, String)>,
    /// `resourceVersion`.
    pub rv: Option<String>,
    /// `resourceVersionMatch`.
    pub rv_match: Option<String>,
}

fn list_options_subject() -> Subject {
    Subject {
        group: "meta.k8s.io".into(),
        resource: "listoptions".into(),
        kind: "ListOptions".into(),
    }
}

/// The resourceVersion of a query, parsed as kube-apiserver does.
pub fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "invalid resource version: resourceVersion: Invalid value: {s:?}: strconv.ParseUint: parsing {s:?}: invalid syntax"
        ))
    })
}

/// kube-apiserver's checks of a list's options.
fn list_option_causes(
    rv: Option<&str>,
    rv_match: Option<&str>,
    send_initial: bool,
    has_continue: bool,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(m) = rv_match {
        if rv.is_none() {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if has_continue {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if !matches!(m, "Exact" | "NotOlderThan") {
            causes.push(Cause::not_supported(
                "resourceVersionMatch",
                &json!(m),
                &["Exact".into(), "NotOlderThan".into(), String::new()],
            ));
        }
        if m == "Exact" && rv == Some("0") {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if send_initial {
        causes.push(Cause::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    causes
}

/// kube-apiserver's checks of a watch's options (the WatchList feature is enabled).
fn watch_option_causes(rv_match: Option<&str>, send_initial: bool, has_continue: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    if send_initial && rv_match != Some("NotOlderThan") {
        causes.push(Cause::forbidden(
            "resourceVersionMatch",
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if let Some(m) = rv_match {
        if !send_initial {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if m != "NotOlderThan" {
            causes.push(Cause::not_supported(
                "resourceVersionMatch",
                &json!(m),
                &["NotOlderThan".into()],
            ));
        }
        if has_continue {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    causes
}

impl ListOptions {
    /// Parses the query parameters of a list or watch.
    pub fn parse(info: &ResourceInfo, q: &HashMap<String, String>) -> Result<Self, ApiError> {
        let label = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or_default())
            .map_err(ApiError::bad_request)?;
        let field = FieldSelector::parse(q.get("fieldSelector").map(String::as_str).unwrap_or_default())
            .map_err(ApiError::bad_request)?;
        for f in field.fields() {
            super::field_labels::check(info, f).map_err(ApiError::bad_request)?;
        }
        let limit = q
            .get("limit")
            .and_then(|l| l.parse::<i64>().ok())
            .unwrap_or(0)
            .max(0) as usize;
        let cont = match q.get("continue").filter(|c| !c.is_empty()) {
            Some(token) => Some(decode_continue(token)?),
            None => None,
        };
        let rv = q.get("resourceVersion").filter(|s| !s.is_empty()).cloned();
        let rv_match = q.get("resourceVersionMatch").filter(|s| !s.is_empty()).cloned();
        let watch = q.get("watch").is_some_and(|w| w == "true" || w == "1");
        let send_initial = q.contains_key("sendInitialEvents");
        let has_continue = q.get("continue").is_some_and(|c| !c.is_empty());
        let causes = if watch {
            watch_option_causes(rv_match.as_deref(), send_initial, has_continue)
        } else {
            list_option_causes(rv.as_deref(), rv_match.as_deref(), send_initial, has_continue)
        };
        if !causes.is_empty() {
            return Err(ApiError::invalid(&list_options_subject(), "", causes));
        }
        Ok(Self {
            label,
            field,
            limit,
            cont,
            rv,
            rv_match,
        })
    }

    /// Whether an object passes both selectors.
    pub fn matches(&self, object: &Value) -> bool {
        self.label.matches_object(object) && self.field.matches(object)
    }
}

/// Encodes a continue token (kube-apiserver's format: unpadded URL-safe base64 of
/// `{"v","rv","start"}`).
pub fn encode_continue(rv: u64, start: &str) -> String {
    let body = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{start}\u{0}")});
    GO_RAW_URL.encode(body.to_string())
}

/// The token kube-apiserver hands out with the 410 of an expired token: it continues after the
/// same key at the latest state (`rv` -1).
fn encode_continue_at_latest(start: &str) -> String {
    let body = json!({"v": "meta.k8s.io/v1", "rv": -1, "start": format!("{start}\u{0}")});
    GO_RAW_URL.encode(body.to_string())
}

/// Go's `base64.RawURLEncoding` as a decoder: no padding, trailing bits allowed.
const GO_RAW_URL: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone),
);

fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    let bytes = GO_RAW_URL.decode(token).map_err(|e| {
        let at = match e {
            base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => at,
            _ => token.len(),
        };
        ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid: illegal base64 data at input byte {at}"
        ))
    })?;
    let invalid = |why: String| {
        ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid: {why}"
        ))
    };
    if let Some(go) = crate::gojson::syntax_error(&bytes) {
        return Err(invalid(go));
    }
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(ApiError::bad_request(
            "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    // A token at the latest state (`rv` -1, from a 410) is read as 0: list the current state.
    let rv = v.get("rv").and_then(Value::as_u64).unwrap_or(0);
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim_end_matches('\u{0}')
        .to_string();
    Ok((rv, start))
}

/// What the selectors of a LIST made of one stored object.
#[derive(Debug)]
enum Selection {
    /// Not selected.
    Out,
    /// Selected; `parsed` is the object's tree when testing it took a parse (a field selector),
    /// so that a LIST answered as trees does not parse it again.
    In { parsed: Option<Value> },
}

/// Tests the stored object `bytes` against the selectors of `opts`: without selectors every
/// object passes unparsed; with a label selector only its labels are read; with a field selector
/// the object is parsed to test. A LIST parses (or copies) only the objects that pass.
fn select(bytes: &[u8], opts: &ListOptions) -> Selection {
    let passes = |yes: bool, parsed: Option<Value>| {
        if yes {
            Selection::In { parsed }
        } else {
            Selection::Out
        }
    };
    match (opts.label.is_empty(), opts.field.is_empty()) {
        (true, true) => Selection::In { parsed: None },
        (false, true) => passes(
            crate::selector::labels_of_json(bytes).is_some_and(|labels| opts.label.matches(&labels)),
            None,
        ),
        _ => match serde_json::from_slice::<Value>(bytes) {
            Ok(object) => {
                let yes = opts.matches(&object);
                passes(yes, Some(object))
            }
            Err(_) => Selection::Out,
        },
    }
}

/// Whether the stored object `bytes` passes the selectors of `opts` (read as [`select`] reads it:
/// only the labels for a label selector, unparsed without selectors).
pub(super) fn selects(bytes: &[u8], opts: &ListOptions) -> bool {
    matches!(select(bytes, opts), Selection::In { .. })
}

/// A LIST's selected objects (key order), the revision they reflect, the continue token and the
/// remaining item count.
type Listed<T> = (Vec<(Arc<str>, T)>, u64, Option<String>, Option<usize>);

/// The storage prefix a LIST reads: the resource's (in the request's namespace), narrowed by a
/// field selector that requires `metadata.namespace` (listing across namespaces) or
/// `metadata.name` (then only keys starting with that name are read and tested), as
/// kube-apiserver reads a single key for a name selector instead of testing every object —
/// an agent's list of its own CertificateSigningRequest does not parse the whole fleet's.
fn fetch_prefix(info: &ResourceInfo, ns: Option<&str>, field: &crate::selector::FieldSelector) -> String {
    let ns = match (info.namespaced, ns) {
        (true, None) => field.required("metadata.namespace").filter(|n| !n.is_empty()),
        (_, ns) => ns,
    };
    let mut prefix = storage::resource_prefix(&info.storage_group, &info.storage_resource, ns);
    if (!info.namespaced || ns.is_some())
        && let Some(name) = field.required("metadata.name")
    {
        prefix.push_str(name);
    }
    prefix
}

impl Api {
    /// Waits (up to 3 s) until the store reaches `rv`; else kube-apiserver's 504.
    async fn wait_for_rv(&self, rv: u64) -> Result<(), ApiError> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        while self.storage.current_rv() < rv {
            if tokio::time::Instant::now() >= deadline {
                return Err(ApiError::new(
                    504,
                    "Timeout",
                    format!("Timeout: Too large resource version: {rv}, current: {}", self.storage.current_rv()),
                )
                .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1})));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// Objects of a LIST (key order) and the revision they reflect. The store's bytes are
    /// selected first and only the selected objects are parsed (once: a field selector's parse
    /// is kept): a label-selected list of a few objects among thousands parses a few.
    pub async fn list_objects(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<Listed<Arc<Value>>, ApiError> {
        self.list_selected(info, ctx, opts, |key, bytes, parsed| {
            let object = match parsed {
                Some(object) => object,
                None => storage::parse_json::<Value>(key, &bytes).map_err(ApiError::internal)?,
            };
            Ok(Arc::new(object))
        })
        .await
    }

    /// Objects of a LIST (key order) as the store keeps them (serialized), and the revision
    /// they reflect; objects are parsed only to apply field selectors.
    pub async fn list_encoded(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<Listed<Arc<[u8]>>, ApiError> {
        self.list_selected(info, ctx, opts, |_, bytes, _| Ok(bytes)).await
    }

    /// The selected objects of a LIST, each made into a `T` by `keep` from its key, its stored
    /// bytes and its tree when selecting it took a parse.
    async fn list_selected<T>(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        opts: &ListOptions,
        mut keep: impl FnMut(&str, Arc<[u8]>, Option<Value>) -> Result<T, ApiError>,
    ) -> Result<Listed<T>, ApiError> {
        let ns = if info.namespaced {
            ctx.namespace.as_deref()
        } else {
            None
        };
        let prefix = fetch_prefix(info, ns, &opts.field);
        let (at, start) = match &opts.cont {
            Some((rv, start)) => ((*rv > 0).then_some(*rv), Some(start.clone())),
            None => {
                let at = match (opts.rv.as_deref(), opts.rv_match.as_deref()) {
                    (None, _) | (Some("0"), None | Some("NotOlderThan")) => None,
                    (Some(rv), Some("Exact")) => Some(parse_rv(rv)?),
                    (Some(rv), _) => {
                        let rv = parse_rv(rv)?;
                        self.wait_for_rv(rv).await?;
                        None
                    }
                };
                (at, None)
            }
        };
        let (listed, listed_rv) = match self.storage.list_encoded(&prefix, at).await {
            Ok(listed) => (listed.items, listed.rv),
            Err(StorageError::ReadExpired { .. }) if opts.cont.is_some() => {
                let token = encode_continue_at_latest(start.as_deref().unwrap_or_default());
                return Err(ApiError::expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.").with_metadata_continue(token));
            }
            Err(StorageError::ReadExpired { .. }) => {
                return Err(ApiError::expired(
                    "The resourceVersion for the provided list is too old.",
                ));
            }
            Err(StorageError::ReadTooLarge { requested, current }) => {
                return Err(ApiError::new(504, "Timeout", format!("Timeout: Too large resource version: {requested}, current: {current}"))
                    .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1})));
            }
            Err(e) => return Err(ApiError::internal(e)),
        };
        // The token's start is relative to the resource prefix (`namespace/name`).
        let base = storage::resource_prefix(&info.storage_group, &info.storage_resource, None);
        let start_key = start.map(|s| format!("{base}{s}"));
        let mut items = Vec::new();
        let mut next = None;
        let mut remaining = 0usize;
        for (key, object) in listed {
            if let Some(sk) = &start_key
                && &*key < sk.as_str()
            {
                continue;
            }
            let Selection::In { parsed } = select(&object.bytes, opts) else {
                continue;
            };
            if opts.limit > 0 && items.len() >= opts.limit {
                if next.is_none() {
                    next = Some(encode_continue(listed_rv, key.trim_start_matches(&base)));
                }
                remaining += 1;
                continue;
            }
            let kept = keep(&key, object.bytes, parsed)?;
            items.push((key, kept));
        }
        let remaining = if next.is_some() && opts.label.is_empty() && opts.field.is_empty() {
            Some(remaining)
        } else {
            None
        };
        Ok((items, listed_rv, next, remaining))
    }

    /// LIST.
    pub async fn list(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<Reply, ApiError> {
        let (items, rv, next, remaining) = self.list_objects(info, ctx, opts).await?;
        let mut metadata = serde_json::Map::new();
        metadata.insert("resourceVersion".into(), json!(rv.to_string()));
        match next {
            Some(c) => {
                metadata.insert("continue".into(), json!(c));
            }
            // Custom resource lists are unstructured: their metadata always has `continue`.
            None if info.is_custom() => {
                metadata.insert("continue".into(), json!(""));
            }
            None => {}
        }
        if let Some(r) = remaining {
            metadata.insert("remainingItemCount".into(), json!(r));
        }
        let items = items
            .iter()
            .map(|(_, o)| Ok(list_item(info, to_version(info, o)?)))
            .collect::<Result<Vec<Value>, ApiError>>()?;
        Ok(Reply {
            code: 200,
            body: json!({"kind": info.list_kind(), "apiVersion": info.api_version(), "metadata": metadata, "items": items}),
            warnings: Vec::new(),
        })
    }

    /// DELETECOLLECTION: deletes every selected object; answers the list of deleted objects.
    pub async fn delete_collection(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        opts: &ListOptions,
        options: &Value,
    ) -> Result<Reply, ApiError> {
        let (items, _, _, _) = self
            .list_objects(
                info,
                ctx,
                &ListOptions {
                    limit: 0,
                    cont: None,
                    ..opts.clone()
                },
            )
            .await?;
        let mut deleted = Vec::new();
        for (_, object) in items {
            let name = object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let ns = object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .map(str::to_string);
            let item_ctx = RequestContext {
                name: Some(name),
                namespace: ns,
                ..ctx.clone()
            };
            match self.delete(info, &item_ctx, options).await {
                Ok(reply) => {
                    let body = if reply.body.get("kind").and_then(Value::as_str) == Some("Status") {
                        to_version(info, &object)?
                    } else {
                        reply.body
                    };
                    deleted.push(list_item(info, body));
                }
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Reply {
            code: 200,
            body: json!({"kind": info.list_kind(), "apiVersion": info.api_version(),
                "metadata": {"resourceVersion": self.storage.current_rv().to_string()}, "items": deleted}),
            warnings: Vec::new(),
        })
    }
}

impl ApiError {
    /// Puts a fresh `continue` token into the Status `metadata` (410 for expired tokens).
    pub fn with_metadata_continue(mut self, token: String) -> Self {
        self.status_metadata = Some(json!({"continue": token}));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_and_watch_options_follow_kube() {
        assert_eq!(list_option_causes(None, Some("Exact"), false, false).len(), 1);
        assert!(list_option_causes(Some("5"), Some("NotOlderThan"), false, false).is_empty());
        assert!(watch_option_causes(Some("NotOlderThan"), true, false).is_empty());
        let c = watch_option_causes(None, true, false);
        assert_eq!(
            c[0].message,
            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        );
        assert_eq!(
            list_option_causes(Some("1"), Some("Bogus"), false, false)[0].message,
            "Unsupported value: \"Bogus\": supported values: \"Exact\", \"NotOlderThan\", \"\""
        );
    }

    #[test]
    fn name_and_namespace_field_selectors_narrow_what_a_list_reads() {
        let registry = crate::registry::Registry::with_builtins();
        let csrs = registry
            .get("certificates.k8s.io", "v1", "certificatesigningrequests")
            .unwrap();
        let configmaps = registry.get("", "v1", "configmaps").unwrap();
        let field = |s: &str| crate::selector::FieldSelector::parse(s).unwrap();
        let csr_base = "/certificates.k8s.io/certificatesigningrequests/";
        assert_eq!(fetch_prefix(&csrs, None, &field("")), csr_base);
        assert_eq!(
            fetch_prefix(&csrs, None, &field("metadata.name=c1")),
            format!("{csr_base}c1")
        );
        // Only an equality narrows.
        assert_eq!(fetch_prefix(&csrs, None, &field("metadata.name!=c1")), csr_base);
        assert_eq!(
            fetch_prefix(&configmaps, Some("a"), &field("")),
            "/core/configmaps/a/"
        );
        assert_eq!(
            fetch_prefix(&configmaps, Some("a"), &field("metadata.name==x,data.k=v")),
            "/core/configmaps/a/x"
        );
        // Across namespaces a name alone cannot narrow the keys (`ns/name`); a namespace can.
        assert_eq!(
            fetch_prefix(&configmaps, None, &field("metadata.name=x")),
            "/core/configmaps/"
        );
        assert_eq!(
            fetch_prefix(&configmaps, None, &field("metadata.namespace=b,metadata.name=x")),
            "/core/configmaps/b/x"
        );
    }

    #[test]
    fn stored_bytes_are_selected_by_their_labels_and_fields() {
        let options = |label: &str, field: &str| ListOptions {
            label: LabelSelector::parse(label).unwrap(),
            field: FieldSelector::parse(field).unwrap(),
            limit: 0,
            cont: None,
            rv: None,
            rv_match: None,
        };
        let managed = br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a","labels":{"managed":"true"}},"status":{"phase":"Active"}}"#;
        let other =
            br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"b"},"status":{"phase":"Active"}}"#;
        let selected = |bytes: &[u8], label: &str, field: &str| match select(bytes, &options(label, field)) {
            Selection::In { parsed } => Some(parsed.is_some()),
            Selection::Out => None,
        };
        // Some(parsed?) when selected: only a field selector parses, and its tree is kept.
        assert_eq!(selected(managed, "", ""), Some(false));
        assert_eq!(selected(other, "", ""), Some(false));
        assert_eq!(selected(managed, "managed=true", ""), Some(false));
        assert_eq!(selected(other, "managed=true", ""), None);
        assert_eq!(selected(other, "!managed", ""), Some(false));
        assert_eq!(selected(managed, "managed", "metadata.name=a"), Some(true));
        assert_eq!(selected(managed, "managed", "metadata.name=b"), None);
        assert_eq!(selected(other, "", "metadata.name=a"), None);
        assert_eq!(selected(other, "", "metadata.name=b"), Some(true));
        // Not JSON: never selected by a selector, passed through without one.
        assert_eq!(selected(b"not json", "managed", ""), None);
        assert_eq!(selected(b"not json", "", "metadata.name=a"), None);
        assert_eq!(selected(b"not json", "", ""), Some(false));
    }

    #[test]
    fn continue_tokens_round_trip() {
        let token = encode_continue(42, "ns/name");
        assert!(!token.contains('='));
        assert_eq!(decode_continue(&token).unwrap(), (42, "ns/name".to_string()));
    }

    #[test]
    fn garbage_tokens_are_worded_as_kube_apiserver() {
        assert_eq!(
            decode_continue("garbage").unwrap_err().message,
            "invalid continue token: continue key is not valid: invalid character '\\x81' looking for beginning of value"
        );
        assert!(decode_continue("a=b").unwrap_err().message.starts_with(
            "invalid continue token: continue key is not valid: illegal base64 data at input byte "
        ));
    }
}
