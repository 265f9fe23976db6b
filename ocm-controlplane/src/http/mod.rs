//! The HTTP layer: path parsing, content negotiation, query parameters, Status errors, discovery.
//!
//! One axum fallback handler serves every path: Kubernetes paths are irregular
//! (`/api/v1/namespaces/x` is a namespace, `/api/v1/namespaces/x/configmaps` a collection), so they
//! are parsed here rather than by a router.

pub mod access;
pub mod audit;
pub mod discovery;
pub mod openapi;
pub mod protobuf;
pub mod yaml;

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Method, Response, StatusCode, Uri, header};
use serde_json::{Value, json};

use crate::auth::Identity;
use crate::registry::ResourceInfo;
use crate::rest::list::ListOptions;
use crate::rest::{Api, FieldValidation, Reply, RequestContext};
use crate::status::ApiError;

/// Largest request body accepted (kube-apiserver's 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// Shared state of the HTTP handlers.
#[derive(Clone)]
pub struct AppState {
    /// The REST layer.
    pub api: Api,
    /// `host:port` clients reach the server at.
    pub address: String,
    /// Request, watch and storage metrics, served on `/metrics`.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Authentication and authorization.
    pub security: access::Security,
    /// The audit log, if enabled.
    pub audit: Option<Arc<audit::AuditLog>>,
    /// Signs (and verifies) ServiceAccount tokens.
    pub tokens: Arc<crate::rest::token_request::TokenIssuer>,
    /// Admits mutating requests ([`MAX_MUTATING_REQUESTS_IN_FLIGHT`] at a time); the others wait
    /// their turn, as kube-apiserver's priority and fairness queues them.
    pub mutating: Arc<tokio::sync::Semaphore>,
}

/// Mutating requests (create, update, patch, delete) served at once: kube-apiserver's
/// `--max-mutating-requests-inflight` default. Each holds its parsed object, patch and admission
/// state while it runs; a controller reconciling a thousand clusters sends a thousand patches at
/// once, which then all wait on the same durable commit. Requests beyond the limit wait, body
/// unread, for a place (kube-apiserver's priority and fairness queues them as well).
pub const MAX_MUTATING_REQUESTS_IN_FLIGHT: usize = 200;

/// Whether a request of `method` to `path` is mutating (and waits for a place among
/// [`MAX_MUTATING_REQUESTS_IN_FLIGHT`]). Reviews (`authorization.k8s.io`'s access reviews,
/// `authentication.k8s.io`'s token reviews) are created but never stored, and an admission or
/// conversion webhook asks them while the request it was called for holds its place: they do not
/// wait, or two hundred webhook-gated writes would wait on their own webhooks' reviews.
pub fn is_mutating(method: &Method, path: &str) -> bool {
    matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) && !path.starts_with("/apis/authorization.k8s.io/")
        && !path.starts_with("/apis/authentication.k8s.io/")
}

#[cfg(test)]
mod in_flight_tests {
    use super::*;

    #[test]
    fn writes_are_mutating_but_reads_and_reviews_are_not() {
        let cms = "/api/v1/namespaces/a/configmaps";
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert!(is_mutating(&method, cms), "{method}");
        }
        assert!(!is_mutating(&Method::GET, cms));
        assert!(!is_mutating(&Method::GET, "/api/v1/configmaps?watch=true"));
        for review in [
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            "/apis/authorization.k8s.io/v1/namespaces/a/localsubjectaccessreviews",
            "/apis/authentication.k8s.io/v1/tokenreviews",
        ] {
            assert!(!is_mutating(&Method::POST, review), "{review}");
        }
    }
}

/// The parsed target of a resource request.
#[derive(Debug, Clone)]
struct Target {
    info: Arc<ResourceInfo>,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

fn json_response(code: u16, body: &Value, warnings: &[String]) -> Response<Body> {
    // A `Value` always serializes (its keys are strings); `to_vec` skips `Display`'s formatter.
    let mut r = Response::new(Body::from(serde_json::to_vec(body).unwrap_or_default()));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for w in warnings {
        let text = format!("299 - {:?}", w);
        if let Ok(v) = HeaderValue::from_str(&text) {
            r.headers_mut().append("warning", v);
        }
    }
    r
}

fn error_response(e: &ApiError) -> Response<Body> {
    json_response(e.code, &e.to_status(), &[])
}

/// kube-apiserver's `401 Unauthorized` response.
pub fn unauthorized_response() -> Response<Body> {
    error_response(&access::unauthorized())
}

fn text_response(code: u16, text: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::NOT_FOUND);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

pub(crate) fn query_map(uri: &Uri) -> HashMap<String, String> {
    let mut out = HashMap::new();
    if let Some(q) = uri.query() {
        for (k, v) in form_pairs(q) {
            out.entry(k).or_insert(v);
        }
    }
    out
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn form_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

/// What the client accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Accept {
    Json,
    Yaml,
    /// `as=Table` of `meta.k8s.io/v1` or (`v=v1beta1`) `meta.k8s.io/v1beta1`.
    Table {
        v1beta1: bool,
    },
    /// `application/vnd.kubernetes.protobuf`, which this server does not encode.
    Protobuf,
    /// `as=PartialObjectMetadata` / `as=PartialObjectMetadataList` (kube-rs metadata watchers).
    PartialMetadata,
    AggregatedDiscovery,
}

fn negotiate(headers: &HeaderMap) -> Option<Accept> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.trim().is_empty() {
        return Some(Accept::Json);
    }
    // Protobuf is not encoded here: a client that also accepts JSON (client-go's typed clients
    // send `application/vnd.kubernetes.protobuf,application/json`) gets JSON.
    let mut protobuf = false;
    for part in accept.split(',') {
        let p = part.trim().to_ascii_lowercase();
        let media = p.split(';').next().unwrap_or("").trim();
        if p.contains("as=apigroupdiscoverylist") && media == "application/json" {
            return Some(Accept::AggregatedDiscovery);
        }
        if p.contains("as=table") && media == "application/json" {
            return Some(Accept::Table {
                v1beta1: p.contains("v=v1beta1"),
            });
        }
        if p.contains("as=partialobjectmetadata") && media == "application/json" {
            return Some(Accept::PartialMetadata);
        }
        if p.contains("as=") {
            continue;
        }
        match media {
            "application/json" | "*/*" | "application/*" => return Some(Accept::Json),
            "application/yaml" => return Some(Accept::Yaml),
            "application/vnd.kubernetes.protobuf" => protobuf = true,
            _ => {}
        }
    }
    protobuf.then_some(Accept::Protobuf)
}

fn not_acceptable() -> ApiError {
    ApiError::new(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, application/yaml",
    )
}

fn parse_target(api: &Api, segments: &[&str]) -> Result<Option<Target>, ApiError> {
    // segments: after /api/v1 or /apis/G/V, with (group, version) prepended.
    let (group, version, rest) = match segments {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Ok(None),
    };
    let (namespace, rest): (Option<String>, &[&str]) = match rest {
        ["namespaces", ns, r, tail @ ..] if !(tail.is_empty() && matches!(*r, "status" | "finalize")) => {
            (Some(ns.to_string()), &rest[2..])
        }
        _ => (None, rest),
    };
    let Some(resource) = rest.first() else {
        return Ok(None);
    };
    let Some(info) = api.registry.get(group, version, resource) else {
        return Err(ApiError::resource_not_found());
    };
    if namespace.is_some() && !info.namespaced {
        return Err(ApiError::resource_not_found());
    }
    let name = rest.get(1).map(|s| s.to_string());
    let subresource = rest.get(2).map(|s| s.to_string());
    if rest.len() > 3 {
        return Err(ApiError::resource_not_found());
    }
    Ok(Some(Target {
        info,
        namespace,
        name,
        subresource,
    }))
}

/// The single request handler.
pub async fn handle(
    state: Arc<AppState>,
    identity: Identity,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    match handle_inner(&state, identity, &method, &uri, &headers, body).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    }
}

async fn handle_inner(
    state: &AppState,
    identity: Identity,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response<Body>, ApiError> {
    let path = uri.path();
    let q = query_map(uri);
    // Authorization comes before anything else (also before existence checks), as in kube.
    let authorizer = &state.security.authorizer;
    let attributes = access::attributes(method.as_str(), path, &q);
    let identity = access::impersonate(authorizer, identity, headers, &attributes)?;
    access::authorize(authorizer, &identity.user, &attributes)?;
    let user = identity.user.clone();
    let registry = &state.api.registry;
    match path {
        "/healthz" | "/livez" | "/readyz" => return Ok(text_response(200, "ok")),
        "/metrics" => {
            let mut r = Response::new(Body::from(state.metrics.render()));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
            );
            return Ok(r);
        }
        "/version" | "/version/" => return Ok(json_response(200, &discovery::version(), &[])),
        "/openapi/v3" | "/openapi/v3/" => {
            // kube-apiserver writes the index without a Content-Type; Go's sniffing names it text.
            let mut r = json_response(200, &openapi::index(registry), &[]);
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            return Ok(r);
        }
        _ => {}
    }
    if let Some(gv) = path.strip_prefix("/openapi/v3/") {
        let document = match gv.trim_end_matches('/').split('/').collect::<Vec<_>>().as_slice() {
            ["api", version] => openapi::document(registry, "", version),
            ["apis", group, version] => openapi::document(registry, group, version),
            _ => None,
        };
        return Ok(match document {
            Some(d) => json_response(200, &d, &[]),
            None => text_response(404, "404 page not found\n"),
        });
    }
    let segments: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let accept = negotiate(headers);
    match segments.as_slice() {
        ["api"] => {
            if accept == Some(Accept::AggregatedDiscovery) {
                return Ok(aggregated_response(&discovery::aggregated(registry, true)));
            }
            return Ok(json_response(200, &discovery::api(&state.address), &[]));
        }
        ["apis"] => {
            if accept == Some(Accept::AggregatedDiscovery) {
                return Ok(aggregated_response(&discovery::aggregated(registry, false)));
            }
            return Ok(json_response(200, &discovery::api_group_list(registry), &[]));
        }
        ["api", "v1"] => {
            return match discovery::resource_list(registry, "", "v1") {
                Some(d) => Ok(json_response(200, &d, &[])),
                None => Ok(text_response(404, "404 page not found\n")),
            };
        }
        ["apis", g] => {
            return match discovery::api_group(registry, g) {
                Some(d) => Ok(json_response(200, &d, &[])),
                None => Ok(text_response(404, "404 page not found\n")),
            };
        }
        ["apis", g, v] => {
            return match discovery::resource_list(registry, g, v) {
                Some(d) => Ok(json_response(200, &d, &[])),
                None => Ok(text_response(404, "404 page not found\n")),
            };
        }
        _ => {}
    }
    let known_gv = match segments.as_slice() {
        ["api", "v1", ..] => true,
        ["apis", g, v, ..] => !registry.resources_of(g, v).is_empty(),
        _ => false,
    };
    if !known_gv {
        return Ok(text_response(404, "404 page not found\n"));
    }
    let Some(target) = parse_target(&state.api, &segments)? else {
        return Ok(text_response(404, "404 page not found\n"));
    };
    let info = target.info.clone();
    if *method == Method::POST
        && target.name.is_none()
        && let Some(review) = crate::rest::reviews::Review::of(&info.group, &info.resource)
    {
        let manager = crate::fieldmanager::default_manager(
            headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()),
        );
        let manager = q.get("fieldManager").cloned().unwrap_or(manager);
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json");
        let body = if protobuf::is_protobuf(content_type) {
            Bytes::from(protobuf::object_body_to_json(&info, &body)?)
        } else {
            body
        };
        if review == crate::rest::reviews::Review::Token {
            let (token, audiences) = crate::rest::reviews::token_of(&body)?;
            let result = state
                .security
                .authenticator
                .authenticate_token(&token, &audiences)
                .await
                .ok();
            let answer = crate::rest::reviews::token_review(&body, &manager, result)?;
            return Ok(json_response(201, &answer, &[]));
        }
        let answer = crate::rest::reviews::answer(
            review,
            authorizer,
            &identity,
            target.namespace.as_deref(),
            &manager,
            &body,
        )?;
        return Ok(json_response(201, &answer, &[]));
    }
    if info.behavior.is_none() {
        return Err(ApiError::resource_not_found());
    }
    if let Some(sub) = &target.subresource
        && !info.has_subresource(sub)
    {
        return Err(ApiError::resource_not_found());
    }
    let field_validation = match q.get("fieldValidation").map(String::as_str) {
        Some("Ignore") => FieldValidation::Ignore,
        Some("Strict") => FieldValidation::Strict,
        _ => FieldValidation::Warn,
    };
    // The response's media type is negotiated before the request does anything, as
    // kube-apiserver's handlers negotiate it first: a reply this server does not encode
    // (protobuf) is refused 406 before a write is made or a list is read — a client told 406
    // must not find its object created. Watches keep their JSON stream.
    let is_watch = q.get("watch").is_some_and(|w| w == "true" || w == "1");
    if accept == Some(Accept::Protobuf) && !is_watch {
        return Ok(protobuf::not_acceptable(&not_acceptable()));
    }
    let dry_run = dry_run_of(method, uri, &body)?;
    let ctx = RequestContext {
        namespace: target.namespace.clone(),
        name: target.name.clone(),
        subresource: target.subresource.clone(),
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        field_manager: q.get("fieldManager").cloned(),
        dry_run,
        field_validation,
        user,
    };
    let api = &state.api;
    let force = q.get("force").is_some_and(|f| f == "true" || f == "1");
    if body.len() > MAX_BODY {
        return Err(ApiError::new(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        ));
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let protobuf_body = protobuf::is_protobuf(content_type);
    // Typed clients send built-in objects in protobuf; the REST layer reads their JSON form.
    let body = match *method {
        Method::POST | Method::PUT if protobuf_body => {
            Bytes::from(protobuf::object_body_to_json(&info, &body)?)
        }
        _ => body,
    };
    let body = access::admit(authorizer, &identity, &attributes, body)?;
    let scale = ctx.subresource.as_deref() == Some("scale");
    let reply: Reply = match (method.clone(), target.name.is_some()) {
        (Method::GET, true) if scale => api.get_scale(&info, &ctx).await?,
        (Method::PUT, true) if scale => api.update_scale(&info, &ctx, &body).await?,
        (Method::PATCH, true) if scale => api.patch_scale(&info, &ctx, content_type, &body, force).await?,
        (Method::GET, false) if is_watch => {
            let lines = api.watch(&info, &ctx, &q).await?;
            let lines = match accept {
                Some(Accept::Table { .. }) => table::transform_watch(
                    &info,
                    lines,
                    table::WatchAs::Table(q.get("includeObject").cloned()),
                ),
                Some(Accept::PartialMetadata) => {
                    table::transform_watch(&info, lines, table::WatchAs::Partial)
                }
                _ => lines,
            };
            let mut r = Response::new(Body::from_stream(futures::StreamExt::map(
                lines,
                Ok::<_, std::io::Error>,
            )));
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            return Ok(r);
        }
        (Method::GET, false) => {
            let opts = ListOptions::parse(&info, &q)?;
            if matches!(accept, Some(Accept::Json)) && crate::rest::list_stream::streams(&info) {
                let chunks = api.list_chunks(&info, &ctx, &opts).await?;
                let mut r = Response::new(Body::from_stream(futures::stream::iter(
                    chunks.map(Ok::<_, std::io::Error>),
                )));
                r.headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                return Ok(r);
            }
            api.list(&info, &ctx, &opts).await?
        }
        (Method::GET, true) => {
            let mut reply = api.get(&info, &ctx).await?;
            if ctx.subresource.as_deref() == Some("approval") || ctx.subresource.as_deref() == Some("status")
            {
                reply.code = 200;
            }
            reply
        }
        (Method::POST, false) => {
            if accept.is_none() {
                return Err(not_acceptable());
            }
            api.create(&info, &ctx, &body).await?
        }
        (Method::POST, true)
            if info.group.is_empty()
                && info.resource == "serviceaccounts"
                && ctx.subresource.as_deref() == Some("token") =>
        {
            if accept.is_none() {
                return Err(not_acceptable());
            }
            api.create_token(&state.tokens, &info, &ctx, &body).await?
        }
        (Method::PUT, true) => api.update(&info, &ctx, &body).await?,
        (Method::PATCH, true) => {
            if access::patch_needs_admission(&identity, &attributes) {
                // The admission checks see the patched object, as they do in kube.
                let preview_ctx = RequestContext {
                    dry_run: true,
                    ..ctx.clone()
                };
                let preview = api.patch(&info, &preview_ctx, content_type, &body, force).await?;
                access::admit_patched(authorizer, &identity, &attributes, &preview.body)?;
            }
            api.patch(&info, &ctx, content_type, &body, force).await?
        }
        (Method::DELETE, true) => {
            api.delete(&info, &ctx, &delete_options(&body, protobuf_body, &q)?)
                .await?
        }
        (Method::DELETE, false) => {
            let opts = ListOptions::parse(&info, &q)?;
            api.delete_collection(&info, &ctx, &opts, &delete_options(&body, protobuf_body, &q)?)
                .await?
        }
        _ => {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource".to_string(),
            ));
        }
    };
    access::after_write(authorizer, &attributes, reply.code, &reply.body);
    if scale && let Some(Accept::Table { v1beta1 }) = accept {
        let version = if v1beta1 {
            "meta.k8s.io/v1beta1"
        } else {
            "meta.k8s.io/v1"
        };
        let include = q.get("includeObject").map(String::as_str);
        let table = table::scale_table(&reply.body, include, version, info.is_custom());
        return Ok(json_response(reply.code, &table, &reply.warnings));
    }
    render(&info, accept, &q, reply)
}

/// The `dryRun` values of a request: `true` for `All`. Writes refuse any other value as
/// kube-apiserver validates their options (`CreateOptions`, `UpdateOptions`, `PatchOptions`,
/// `DeleteOptions`); reads ignore the parameter. A delete with a JSON body takes its options
/// (and so `dryRun`) from the body instead of the query, as kube-apiserver does.
fn dry_run_of(method: &Method, uri: &Uri, body: &[u8]) -> Result<bool, ApiError> {
    let from_body = (*method == Method::DELETE && !body.iter().all(u8::is_ascii_whitespace))
        .then(|| serde_json::from_slice::<Value>(body).ok())
        .flatten()
        .filter(Value::is_object);
    let values: Vec<String> = match from_body {
        Some(options) => options
            .get("dryRun")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default(),
        None => uri
            .query()
            .map(form_pairs)
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k == "dryRun")
            .map(|(_, v)| v)
            .collect(),
    };
    let options = match *method {
        Method::POST => "CreateOptions",
        Method::PUT => "UpdateOptions",
        Method::PATCH => "PatchOptions",
        Method::DELETE => "DeleteOptions",
        _ => return Ok(false),
    };
    if values.iter().all(|v| v == "All") {
        return Ok(!values.is_empty());
    }
    let shown = crate::gojson::encode(&json!(values));
    let detail = format!("Unsupported value: {shown}: supported values: \"All\"");
    Err(ApiError::new(
        422,
        "Invalid",
        format!("{options}.meta.k8s.io \"\" is invalid: dryRun: {detail}"),
    )
    .with_details(json!({
        "group": "meta.k8s.io",
        "kind": options,
        "causes": [{"reason": "FieldValueNotSupported", "message": detail, "field": "dryRun"}],
    })))
}

fn aggregated_response(body: &Value) -> Response<Body> {
    let mut r = json_response(200, body, &[]);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"),
    );
    r
}

fn delete_options(body: &[u8], protobuf_body: bool, q: &HashMap<String, String>) -> Result<Value, ApiError> {
    let mut opts = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else if protobuf_body {
        protobuf::delete_options(body)?
    } else {
        serde_json::from_slice::<Value>(body).map_err(|_| {
            let go = crate::gojson::syntax_error(body).unwrap_or_default();
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {go}"))
        })?
    };
    if let Some(m) = opts.as_object_mut() {
        if let Some(p) = q.get("propagationPolicy") {
            m.insert("propagationPolicy".into(), json!(p));
        }
        if let Some(g) = q.get("gracePeriodSeconds").and_then(|g| g.parse::<i64>().ok()) {
            m.insert("gracePeriodSeconds".into(), json!(g));
        }
    }
    Ok(opts)
}

fn render(
    info: &ResourceInfo,
    accept: Option<Accept>,
    q: &HashMap<String, String>,
    reply: Reply,
) -> Result<Response<Body>, ApiError> {
    match accept {
        Some(Accept::Json) | Some(Accept::AggregatedDiscovery) => {
            Ok(json_response(reply.code, &reply.body, &reply.warnings))
        }
        Some(Accept::Table { v1beta1 }) => {
            let table = crate::http::table::to_table_version(
                info,
                &reply.body,
                q.get("includeObject").map(String::as_str),
                if v1beta1 {
                    "meta.k8s.io/v1beta1"
                } else {
                    "meta.k8s.io/v1"
                },
            );
            Ok(json_response(reply.code, &table, &reply.warnings))
        }
        Some(Accept::Protobuf) => Ok(protobuf::not_acceptable(&not_acceptable())),
        Some(Accept::PartialMetadata) => Ok(json_response(
            reply.code,
            &table::to_partial(&reply.body),
            &reply.warnings,
        )),
        Some(Accept::Yaml) => {
            let mut r = Response::new(Body::from(yaml::to_string(&reply.body)));
            *r.status_mut() = StatusCode::from_u16(reply.code).unwrap_or(StatusCode::OK);
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/yaml"));
            Ok(r)
        }
        None => Err(not_acceptable()),
    }
}

pub mod table;
mod table_kinds;
