//! Replaying one scenario against a server: requests are sent with the placeholders of earlier
//! responses replaced by this server's values, responses are normalized in document order and
//! compared with the recording; watches run beside their `after_steps`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::compare::{self, Diff, Rules, clip, show};
use super::fixture::{Event, RequestStep, Scenario, Step, WatchStep};
use super::judge::judge;
use super::normalize::{Normalizer, Origin};
use super::report::{Outcome, ScenarioResult, StepResult};
use super::target::{self, Answer, Outgoing, Target, USER_AGENT, encode_component, generate_csr};
use super::watch::{OpenWatch, StopRule, WatchOutcome};
use super::{Plan, StepPlan};

/// How long a request answered 401/403/404/503 (where the recording has another status) is retried.
const RETRY_FOR: Duration = Duration::from_secs(5);
/// How long a step recorded "after polling until the condition held" is polled.
const POLL_FOR: Duration = Duration::from_secs(10);

/// Runs a scenario against `target` (which the caller made fresh for it).
pub async fn run(target: &Target, scenario: &Scenario, shared: &Path, plan: &Plan) -> ScenarioResult {
    let started = Instant::now();
    let mut result = ScenarioResult::new(scenario);
    if let Some(tag) = scenario.requires.iter().find(|tag| !target.supports(tag)) {
        result.skip_all(
            scenario,
            &format!("requires {tag}, which {} does not provide", target.label),
        );
        return result;
    }
    if !scenario.notes.is_empty() && !plan.handles_notes(&scenario.id()) {
        eprintln!(
            "note: {} has notes the harness does not act on: {:?}",
            scenario.id(),
            scenario.notes
        );
    }
    let namespaces = scenario.required_namespaces();
    if let Err(error) = target.prepare(&scenario.requires, &namespaces, shared).await {
        result.fail_setup(scenario, &error);
        return result;
    }
    let mut replay = Replay {
        target,
        scenario,
        shared,
        plan,
        normalizer: Normalizer::new(Some(target.base_url.clone()), &scenario.max_placeholder_numbers()),
        objects: HashMap::new(),
        generated_csrs: Vec::new(),
        bookmark_scenario: about_bookmarks(scenario),
    };
    let mut opens_before: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut last_after: HashMap<usize, Vec<usize>> = HashMap::new();
    for (index, step) in scenario.steps.iter().enumerate() {
        if let Step::Watch(watch) = step
            && let (Some(first), Some(last)) =
                (watch.after_steps.iter().min(), watch.after_steps.iter().max())
        {
            opens_before.entry(*first).or_default().push(index);
            last_after.entry(*last).or_default().push(index);
        }
    }
    let mut open: HashMap<usize, OpenWatch> = HashMap::new();
    for (index, step) in scenario.steps.iter().enumerate() {
        for &watch_index in opens_before.get(&index).into_iter().flatten() {
            if let Step::Watch(watch) = &scenario.steps[watch_index] {
                open.insert(watch_index, replay.open_watch(watch).await);
            }
        }
        if let Err(error) = plan.before_step(&replay, index).await {
            result.steps.push(StepResult::new(
                index,
                label(step),
                Outcome::Failed(vec![Diff::new("setup", "", error)]),
            ));
            continue;
        }
        let outcome = match step {
            Step::Request(request) => replay.request_step(index, request).await,
            Step::Watch(watch) => {
                let handle = match open.remove(&index) {
                    Some(handle) => handle,
                    None => replay.open_watch(watch).await,
                };
                replay.watch_step(index, watch, handle.finish().await)
            }
        };
        for watch_index in last_after.get(&index).into_iter().flatten() {
            if let Some(handle) = open.get(watch_index) {
                handle.steps_done();
            }
        }
        let outcome = match plan.step(&scenario.id(), index) {
            StepPlan::Skip(reason) => Outcome::Skipped(format!("{reason} (deliberately skipped)")),
            StepPlan::Judge => outcome,
        };
        result.steps.push(StepResult::new(index, label(step), outcome));
    }
    result.duration = started.elapsed();
    result
}

/// A short description of a step for reports.
pub fn label(step: &Step) -> String {
    match step {
        Step::Request(step) => {
            let query = query_string(&step.request.query, |v| v.to_string());
            format!("{} {}{query}", step.request.method, step.request.path)
        }
        Step::Watch(step) => format!(
            "WATCH {}{}",
            step.watch.path,
            query_string(&step.watch.query, |v| v.to_string())
        ),
    }
}

fn query_string(query: &Map<String, Value>, encode: impl Fn(&str) -> String) -> String {
    let parts: Vec<String> = query
        .iter()
        .map(|(key, value)| {
            let value = match value {
                Value::String(text) => text.clone(),
                other => show(other),
            };
            format!("{}={}", encode(key), encode(&value))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

/// Whether the scenario is about bookmarks (then periodic bookmarks are compared, not dropped).
fn about_bookmarks(scenario: &Scenario) -> bool {
    scenario.name.contains("bookmark")
        || scenario.steps.iter().any(|step| match step {
            Step::Watch(watch) => watch
                .events
                .iter()
                .any(|event| event.kind == "BOOKMARK" && !initial_events_end(&event.object)),
            Step::Request(_) => false,
        })
}

fn initial_events_end(object: &Value) -> bool {
    object
        .pointer("/metadata/annotations/k8s.io~1initial-events-end")
        .and_then(Value::as_str)
        == Some("true")
}

/// The state of one scenario's replay.
pub struct Replay<'a> {
    /// The server.
    pub target: &'a Target,
    /// The scenario.
    pub scenario: &'a Scenario,
    shared: &'a Path,
    plan: &'a Plan,
    /// Placeholders seen so far, and this server's values for them.
    pub normalizer: Normalizer,
    /// The latest raw response object per (kind, namespace, name).
    objects: HashMap<(String, String, String), Value>,
    /// CSRs generated for `<csr:...>` placeholders: (subject, spec.request, key PEM).
    generated_csrs: Vec<(String, String, String)>,
    bookmark_scenario: bool,
}

impl Replay<'_> {
    /// This server's value of a placeholder such as `<rv:2>`.
    pub fn resolve(&self, text: &str) -> String {
        self.normalizer.substitute(text).0
    }

    /// Sends an unrecorded request as admin (for scenario notes).
    pub async fn send_admin(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &Value,
    ) -> Result<Answer, String> {
        let mut request = Outgoing::json(method, &self.resolve(path), Some(body));
        for header in &mut request.headers {
            if header.0 == "Content-Type" {
                header.1 = content_type.to_string();
            }
        }
        self.target.send_admin(&request).await
    }

    /// The client and extra headers of an identity.
    async fn identity(&self, auth: Option<&str>) -> Result<(kube::Client, Vec<(String, String)>), String> {
        if self.target.single_identity {
            return Ok((self.target.admin().clone(), Vec::new()));
        }
        let bearer = |token: &str| {
            Ok((
                self.target.anonymous().clone(),
                vec![("Authorization".into(), format!("Bearer {token}"))],
            ))
        };
        match auth.unwrap_or("admin") {
            "admin" => Ok((self.target.admin().clone(), Vec::new())),
            "anonymous" => Ok((self.target.anonymous().clone(), Vec::new())),
            "bootstrap" => bearer("abcdef.0123456789abcdef"),
            "bootstrap-wrong" => bearer("abcdef.0000000000000000"),
            "bootstrap-expired" => bearer("expire.0123456789abcdef"),
            "bootstrap-nousage" => bearer("nousag.0123456789abcdef"),
            "bootstrap-reg" => bearer("ocmreg.0123456789abcdef"),
            "sa-agent" => match self.normalizer.token() {
                Some(token) => bearer(token),
                None => Err("no TokenRequest token seen yet for sa-agent".into()),
            },
            "alice" => Ok((self.target.x509_client("alice", &["devs"]).await?, Vec::new())),
            "bob" => Ok((self.target.x509_client("bob", &["devs"]).await?, Vec::new())),
            "bob-impersonating" => {
                let client = self.target.x509_client("bob", &["devs"]).await?;
                Ok((client, vec![("Impersonate-User".into(), "admin".into())]))
            }
            "admin-impersonating-bob" => Ok((
                self.target.admin().clone(),
                vec![
                    ("Impersonate-User".into(), "bob".into()),
                    ("Impersonate-Group".into(), "devs".into()),
                ],
            )),
            "agent-cert" => {
                let (certificate, key) = self
                    .signed_csr_certificate()
                    .ok_or("no signed CSR of this replay seen yet")?;
                Ok((
                    self.target.client_with_certificate(&certificate, &key)?,
                    Vec::new(),
                ))
            }
            other => Err(format!("identity {other:?} is not known to the harness")),
        }
    }

    /// The certificate (PEM) a server signed for one of this replay's CSRs, with its key.
    fn signed_csr_certificate(&self) -> Option<(String, String)> {
        use base64::Engine;
        self.objects.values().find_map(|object| {
            let request = object.pointer("/spec/request")?.as_str()?;
            let certificate = object.pointer("/status/certificate")?.as_str()?;
            let (_, _, key) = self.generated_csrs.iter().find(|(_, sent, _)| sent == request)?;
            let pem = base64::engine::general_purpose::STANDARD
                .decode(certificate)
                .ok()?;
            Some((String::from_utf8_lossy(&pem).into_owned(), key.clone()))
        })
    }

    /// Fills the placeholders of a request body: numbered ones from the map, `<csr:...>` with a
    /// fresh CSR, `<time>` and other value placeholders from the latest response about the same
    /// object (or, for `<time>` without one, the current time).
    fn request_body(&mut self, body: &Value, path: &str, unbound: &mut Vec<String>) -> Result<Value, String> {
        self.normalizer.learn_generate_names(body);
        let key = object_key(body, path);
        let remembered = key.and_then(|key| self.objects.get(&key)).cloned();
        let mut filled = body.clone();
        self.fill(&mut filled, remembered.as_ref(), &mut Vec::new())?;
        Ok(self.normalizer.substitute_value(&filled, unbound))
    }

    fn fill(
        &mut self,
        value: &mut Value,
        remembered: Option<&Value>,
        path: &mut Vec<String>,
    ) -> Result<(), String> {
        match value {
            Value::Object(map) => {
                for (key, child) in map.iter_mut() {
                    path.push(key.clone());
                    self.fill(child, remembered, path)?;
                    path.pop();
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter_mut().enumerate() {
                    path.push(index.to_string());
                    self.fill(child, remembered, path)?;
                    path.pop();
                }
            }
            Value::String(text) => {
                if let Some(subject) = text.strip_prefix("<csr:").and_then(|rest| rest.strip_suffix('>')) {
                    let generated = generate_csr(subject)?;
                    self.normalizer.register_csr(&generated.request_base64, text);
                    self.generated_csrs.push((
                        subject.to_string(),
                        generated.request_base64.clone(),
                        generated.key_pem,
                    ));
                    *text = generated.request_base64;
                } else if has_value_placeholder(text) {
                    let pointer: String = path
                        .iter()
                        .map(|segment| format!("/{}", segment.replace('~', "~0").replace('/', "~1")))
                        .collect();
                    match remembered
                        .and_then(|object| object.pointer(&pointer))
                        .and_then(Value::as_str)
                    {
                        Some(actual) => *text = actual.to_string(),
                        None if text.contains("<time>") => {
                            let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
                            *text = text.replace("<time>", &now);
                        }
                        None => {}
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Remembers the objects of a response (for `<time>` in later requests).
    fn remember(&mut self, body: &Value, path: &str) {
        if let Some(items) = body.get("items").and_then(Value::as_array) {
            let kind = body
                .get("kind")
                .and_then(Value::as_str)
                .and_then(|k| k.strip_suffix("List"))
                .unwrap_or_default();
            for item in items {
                let mut item = item.clone();
                if item.get("kind").is_none() {
                    item["kind"] = Value::String(kind.to_string());
                }
                self.remember(&item, path);
            }
            return;
        }
        if body.get("kind").and_then(Value::as_str) == Some("Status") {
            return;
        }
        if let Some(key) = object_key(body, path) {
            self.objects.insert(key, body.clone());
        }
    }

    async fn open_watch(&self, watch: &WatchStep) -> OpenWatch {
        let path = self.resolve(&watch.watch.path);
        let query = self.substituted_query(&watch.watch.query);
        let timeout = watch
            .watch
            .query
            .get("timeoutSeconds")
            .and_then(Value::as_str)
            .and_then(|t| t.parse().ok());
        let rule = StopRule::for_recorded(self.expected_events(watch).len(), &watch.until, timeout);
        let request = Outgoing {
            method: "GET".into(),
            uri: format!("{path}{query}"),
            headers: vec![
                ("Accept".into(), "application/json".into()),
                ("User-Agent".into(), USER_AGENT.into()),
            ],
            body: Vec::new(),
        };
        let (client, extra) = match self.identity(watch.watch.auth.as_deref()).await {
            Ok(identity) => identity,
            Err(_) => (self.target.anonymous().clone(), Vec::new()),
        };
        let mut request = request;
        request.headers.extend(extra);
        let handle = OpenWatch::open(&client, &request, rule).await;
        if watch.after_steps.is_empty() {
            handle.steps_done();
        }
        handle
    }

    fn substituted_query(&self, query: &Map<String, Value>) -> String {
        let substituted: Map<String, Value> = query
            .iter()
            .map(|(key, value)| {
                let text = value.as_str().map_or_else(|| show(value), str::to_string);
                (key.clone(), Value::String(self.resolve(&text)))
            })
            .collect();
        query_string(&substituted, encode_component)
    }

    /// The recorded events as they are compared (identical consecutive bookmarks count as one).
    fn expected_events<'w>(&self, watch: &'w WatchStep) -> Vec<&'w Event> {
        let mut events: Vec<&Event> = Vec::new();
        for event in &watch.events {
            if event.kind == "BOOKMARK" && events.last().is_some_and(|last| *last == event) {
                continue;
            }
            events.push(event);
        }
        events
    }

    async fn request_step(&mut self, index: usize, step: &RequestStep) -> Outcome {
        let request = &step.request;
        let mut unbound = Vec::new();
        let body = if let Some(file) = &request.body_file {
            match super::fixture::read_body_file(self.shared, file) {
                Ok(value) => serde_json::to_vec(&value).unwrap_or_default(),
                Err(error) => {
                    return Outcome::Failed(vec![Diff::new("request.body_file", file.as_str(), error)]);
                }
            }
        } else {
            match &request.body {
                Value::Null => Vec::new(),
                Value::String(text) => {
                    let (text, missing) = self.normalizer.substitute(text);
                    unbound.extend(missing);
                    text.into_bytes()
                }
                body => match self.request_body(body, &request.path, &mut unbound) {
                    Ok(body) => serde_json::to_vec(&body).unwrap_or_default(),
                    Err(error) => return Outcome::Failed(vec![Diff::new("request.body", "", error)]),
                },
            }
        };
        let (path, missing) = self.normalizer.substitute(&request.path);
        unbound.extend(missing);
        let mut headers = Vec::new();
        for (name, value) in &request.headers {
            if let Some(value) = value.as_str() {
                headers.push((name.clone(), value.to_string()));
            }
        }
        let (client, extra) = match self.identity(request.auth.as_deref()).await {
            Ok(identity) => identity,
            Err(error) => {
                return Outcome::Failed(vec![Diff::new(
                    "request.auth",
                    request.auth.clone().unwrap_or_default(),
                    error,
                )]);
            }
        };
        headers.extend(extra);
        let outgoing = Outgoing {
            method: request.method.clone(),
            uri: format!("{path}{}", self.substituted_query(&request.query)),
            headers,
            body,
        };
        self.normalizer
            .set_literal_rvs(literal_rvs(request.query_param("resourceVersion"), &request.body));

        let base = format!("steps[{index}].response");
        let rules = Rules::new(&self.scenario.unordered, &self.scenario.volatile);
        let started = Instant::now();
        let (answer, normalizer, diffs) = loop {
            let answer = match target::send(&client, &outgoing).await {
                Ok(answer) => answer,
                Err(error) => return Outcome::Failed(vec![Diff::new(&base, "an answer", error)]),
            };
            let mut normalizer = self.normalizer.clone();
            let diffs = judge(
                &mut normalizer,
                &step.response,
                &answer,
                &request.path,
                &base,
                &rules,
            );
            let retriable =
                matches!(answer.status, 401 | 403 | 404 | 503) && answer.status != step.response.status;
            let again = (retriable && started.elapsed() < RETRY_FOR)
                || (step.polled() && !diffs.is_empty() && started.elapsed() < POLL_FOR);
            if !again {
                break (answer, normalizer, diffs);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        self.normalizer = normalizer;
        if let Some(body) = answer.json() {
            self.remember(&body, &path);
        }
        let mut diffs = diffs;
        if !unbound.is_empty() && !diffs.is_empty() {
            diffs.insert(
                0,
                Diff::new(
                    "request",
                    "values for every placeholder",
                    format!("no value yet for {}", unbound.join(", ")),
                ),
            );
        }
        if diffs.is_empty() {
            Outcome::Passed
        } else {
            Outcome::Failed(diffs)
        }
    }

    fn watch_step(&mut self, index: usize, watch: &WatchStep, outcome: WatchOutcome) -> Outcome {
        let base = format!("steps[{index}]");
        let rules = Rules::new(&self.scenario.unordered, &self.scenario.volatile);
        let mut diffs = Vec::new();
        if outcome.answer.status == 0 {
            return Outcome::Failed(vec![Diff::new(&base, "a watch stream", outcome.ended)]);
        }
        self.normalizer.set_literal_rvs(literal_rvs(
            watch.watch.query.get("resourceVersion").and_then(Value::as_str),
            &Value::Null,
        ));
        let mut normalizer = self.normalizer.clone();
        diffs.extend(judge(
            &mut normalizer,
            &watch.response,
            &outcome.answer,
            &watch.watch.path,
            &format!("{base}.response"),
            &rules,
        ));
        if watch.response.status != 200 || outcome.answer.status != 200 {
            self.normalizer = normalizer;
            return if diffs.is_empty() {
                Outcome::Passed
            } else {
                Outcome::Failed(diffs)
            };
        }
        let mut events: Vec<Value> = Vec::new();
        for streamed in &outcome.events {
            match &streamed.value {
                Ok(value) => events.push(value.clone()),
                Err(text) => diffs.push(Diff::new(
                    &format!("{base}.events"),
                    "JSON lines",
                    format!("unparsable line {}", clip(text, 200)),
                )),
            }
        }
        // Periodic bookmarks are dropped unless the scenario is about bookmarks; identical
        // consecutive bookmarks count as one.
        let mut kept: Vec<Value> = Vec::new();
        for event in events {
            let bookmark = event.get("type").and_then(Value::as_str) == Some("BOOKMARK");
            if bookmark && !self.bookmark_scenario && !initial_events_end(&event["object"]) {
                continue;
            }
            if bookmark && kept.last() == Some(&event) {
                continue;
            }
            kept.push(event);
        }
        if let Some(accept) = self.plan.alternative(&self.scenario.id(), index)
            && accept(&kept)
        {
            return Outcome::Passed;
        }
        let expected = self.expected_events(watch);
        for (position, event) in kept.iter().enumerate() {
            let path = format!("{base}.events[{position}]");
            let recorded = expected.get(position);
            let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
            let origin = Origin {
                path: &watch.watch.path,
                bookmark: kind == "BOOKMARK",
            };
            let object = event.get("object").cloned().unwrap_or(Value::Null);
            let normalized = normalizer.normalize(&object, recorded.map(|r| &r.object), origin);
            match recorded {
                Some(recorded) => {
                    if recorded.kind != kind {
                        diffs.push(Diff::new(&format!("{path}.type"), recorded.kind.as_str(), kind));
                    }
                    compare::compare(
                        &recorded.object,
                        &normalized,
                        &format!("{path}.object"),
                        &rules,
                        &mut diffs,
                    );
                }
                None => diffs.push(Diff::new(
                    &path,
                    "(no further event)",
                    format!("{kind} {}", show(&normalized)),
                )),
            }
        }
        for (position, missing) in expected.iter().enumerate().skip(kept.len()) {
            diffs.push(Diff::new(
                &format!("{base}.events[{position}]"),
                format!("{} {}", missing.kind, show(&missing.object)),
                format!("(no event; {})", outcome.ended),
            ));
        }
        self.normalizer = normalizer;
        if diffs.is_empty() {
            Outcome::Passed
        } else {
            Outcome::Failed(diffs)
        }
    }
}

/// Whether a string holds a placeholder that stands for a value of an earlier response.
fn has_value_placeholder(text: &str) -> bool {
    [
        "<time>",
        "<fingerprint>",
        "<cert>",
        "<ca-cert>",
        "<server-address>",
    ]
    .iter()
    .any(|p| text.contains(p))
}

/// (kind, namespace, name) of an object body, with the namespace taken from the path if absent.
fn object_key(body: &Value, path: &str) -> Option<(String, String, String)> {
    let kind = body.get("kind")?.as_str()?;
    let name = body.pointer("/metadata/name")?.as_str()?;
    let from_path = || {
        // `/api/v1/namespaces/NS/...` or `/apis/G/V/namespaces/NS/...` (not a Namespace itself).
        let mut segments = path
            .split('/')
            .skip_while(|segment| *segment != "namespaces")
            .skip(1);
        match (segments.next(), segments.next()) {
            (Some(namespace), Some(_)) if kind != "Namespace" => namespace.to_string(),
            _ => String::new(),
        }
    };
    let namespace = body
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map_or_else(from_path, str::to_string);
    Some((kind.to_string(), namespace, name.to_string()))
}

/// resourceVersions a request sends literally (not placeholders): kept literal in messages.
fn literal_rvs(query: Option<&str>, body: &Value) -> Vec<String> {
    let mut literals = Vec::new();
    if let Some(rv) = query.filter(|rv| !rv.contains('<')) {
        literals.push(rv.to_string());
    }
    let mut stack = vec![body];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    if key == "resourceVersion"
                        && let Some(rv) = child.as_str().filter(|rv| !rv.contains('<'))
                    {
                        literals.push(rv.to_string());
                    }
                    stack.push(child);
                }
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    literals
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_and_literal_rvs() {
        let key = object_key(
            &json!({"kind": "ConfigMap", "metadata": {"name": "c"}}),
            "/api/v1/namespaces/ns/configmaps/c",
        );
        assert_eq!(key, Some(("ConfigMap".into(), "ns".into(), "c".into())));
        let key = object_key(
            &json!({"kind": "Namespace", "metadata": {"name": "ns"}}),
            "/api/v1/namespaces/ns",
        );
        assert_eq!(key, Some(("Namespace".into(), String::new(), "ns".into())));
        let literals = literal_rvs(
            Some("999"),
            &json!({"preconditions": {"resourceVersion": "<rv:2>"}, "x": {"resourceVersion": "5"}}),
        );
        assert_eq!(literals, vec!["999".to_string(), "5".to_string()]);
    }
}
