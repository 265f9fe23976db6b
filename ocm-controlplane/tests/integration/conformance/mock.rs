//! Self-test of the harness: a plain-HTTP server that answers each request with its recorded
//! response, placeholders turned into consistent made-up values (`<rv:3>` -> `1003`, ...). Replaying
//! a scenario against it must pass every step, and the harness must send what the recorder sent
//! (the mock checks paths, queries and bodies). This proves normalization, substitution, watch
//! handling and comparison before any real server is involved.

use std::collections::HashSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use base64::Engine;
use serde_json::{Map, Value};

use super::fixture::{Scenario, Step};
use super::normalize::NAME_ALPHABET;

/// Made-up concrete values for placeholders.
pub struct Fake {
    /// The mock's base URL (for `<server>`).
    pub server: String,
    /// `<csr:...>` values the harness sent, by placeholder.
    pub csrs: Vec<(String, String)>,
}

impl Fake {
    /// The concrete value of one placeholder (without the brackets' meaning kept), if known.
    fn placeholder(&self, inner: &str) -> Option<String> {
        if let Some((tag, number)) = inner.split_once(':')
            && let Ok(n) = number.parse::<u64>()
        {
            return match tag {
                "uid" => Some(format!("{n:08x}-1111-4222-8333-{n:012x}")),
                "rv" => Some((1000 + n).to_string()),
                "continue" => Some(format!("ZmFrZS1jb250aW51ZQ{n}")),
                "gen" => {
                    let alphabet: Vec<char> = NAME_ALPHABET.chars().collect();
                    let mut suffix = String::new();
                    let mut rest = n as usize;
                    for _ in 0..5 {
                        suffix.push(alphabet[rest % alphabet.len()]);
                        rest /= alphabet.len();
                    }
                    Some(suffix)
                }
                _ => None,
            };
        }
        if let Some(subject) = inner.strip_prefix("csr:") {
            let placeholder = format!("<{inner}>");
            return Some(self.csrs.iter().find(|(p, _)| *p == placeholder).map_or_else(
                || base64::engine::general_purpose::STANDARD.encode(format!("fake CSR for {subject}")),
                |(_, v)| v.clone(),
            ));
        }
        Some(
            match inner {
                "time" => "2026-11-22T10:00:00Z",
                "age" => "5s",
                "cert" => "ZmFrZS1jZXJ0aWZpY2F0ZQ==",
                "ca-cert" => "-----BEGIN CERTIFICATE-----\nZmFrZQ==\n-----END CERTIFICATE-----\n",
                "token" => "fake.token.value",
                "server-address" => "10.0.0.1:6443",
                "fingerprint" => "0123abcd",
                "server" => return Some(self.server.clone()),
                _ => return None,
            }
            .to_string(),
        )
    }

    /// A string with its placeholders made concrete; `<key>` for the field named `key` (the
    /// /version build fields) becomes `fake-key`.
    pub fn string(&self, text: &str, key: Option<&str>) -> String {
        if let Some(key) = key
            && text == format!("<{key}>")
            && self.placeholder(key).is_none()
        {
            return format!("fake-{key}");
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find('<') {
            out.push_str(&rest[..start]);
            let candidate = &rest[start..];
            match candidate
                .find('>')
                .and_then(|end| Some((end, self.placeholder(&candidate[1..end])?)))
            {
                Some((end, value)) => {
                    out.push_str(&value);
                    rest = &candidate[end + 1..];
                }
                None => {
                    out.push('<');
                    rest = &candidate[1..];
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// A value with every placeholder made concrete (object keys too).
    pub fn value(&self, value: &Value, key: Option<&str>) -> Value {
        match value {
            Value::String(text) => Value::String(self.string(text, key)),
            Value::Array(items) => Value::Array(items.iter().map(|item| self.value(item, None)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (self.string(k, None), self.value(v, Some(k))))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

struct MockState {
    scenario: Scenario,
    fake: Fake,
    served: HashSet<usize>,
    /// Requests that did not match what the recorder sent.
    mismatches: Vec<String>,
}

type Shared = Arc<Mutex<MockState>>;

/// A running mock for one scenario.
pub struct Mock {
    /// Base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    state: Shared,
    server: tokio::task::JoinHandle<()>,
}

impl Mock {
    /// Starts a mock answering with `scenario`'s recordings.
    pub async fn start(scenario: &Scenario) -> Self {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(MockState {
            scenario: scenario.clone(),
            fake: Fake {
                server: url.clone(),
                csrs: Vec::new(),
            },
            served: HashSet::new(),
            mismatches: Vec::new(),
        }));
        let router = axum::Router::new().fallback(handle).with_state(state.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Self { url, state, server }
    }

    /// Requests that differed from the recording.
    pub fn mismatches(&self) -> Vec<String> {
        self.state.lock().unwrap().mismatches.clone()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Parses a query string into decoded pairs.
fn decode_query(query: &str) -> Map<String, Value> {
    fn decode(text: &str) -> String {
        let bytes = text.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'%' if i + 2 < bytes.len() => {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                        .ok()
                        .and_then(|h| u8::from_str_radix(h, 16).ok());
                    match hex {
                        Some(byte) => {
                            out.push(byte);
                            i += 3;
                        }
                        None => {
                            out.push(b'%');
                            i += 1;
                        }
                    }
                }
                b'+' => {
                    out.push(b' ');
                    i += 1;
                }
                other => {
                    out.push(other);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), Value::String(decode(value)))
        })
        .collect()
}

/// Whether an actual request value matches a recorded one made concrete; strings the replayer
/// fills itself (`<time>` without an earlier value, fresh CSRs) match anything.
fn matches(recorded: &Value, actual: &Value, fake: &Fake, path: &str, problems: &mut Vec<String>) {
    match (recorded, actual) {
        (Value::String(recorded), _) if recorded.contains("<time>") || recorded.contains("<csr:") => {}
        (Value::Object(recorded), Value::Object(actual)) => {
            for (key, value) in recorded {
                let key = fake.string(key, None);
                match actual.get(&key) {
                    Some(actual) => matches(value, actual, fake, &format!("{path}.{key}"), problems),
                    None => problems.push(format!("{path}.{key} missing")),
                }
            }
            for key in actual.keys() {
                if !recorded.keys().any(|k| fake.string(k, None) == *key) {
                    problems.push(format!("{path}.{key} unexpected"));
                }
            }
        }
        (Value::Array(recorded), Value::Array(actual)) if recorded.len() == actual.len() => {
            for (index, (r, a)) in recorded.iter().zip(actual).enumerate() {
                matches(r, a, fake, &format!("{path}[{index}]"), problems);
            }
        }
        (recorded, actual) => {
            let recorded = fake.value(recorded, path.rsplit('.').next());
            if &recorded != actual {
                problems.push(format!("{path}: recorded {recorded}, sent {actual}"));
            }
        }
    }
}

fn learn_csrs(recorded: &Value, actual: &Value, fake: &mut Fake) {
    match (recorded, actual) {
        (Value::String(recorded), Value::String(actual)) if recorded.starts_with("<csr:") => {
            fake.csrs.push((recorded.clone(), actual.clone()));
        }
        (Value::Object(recorded), Value::Object(actual)) => {
            for (key, value) in recorded {
                if let Some(actual) = actual.get(key) {
                    learn_csrs(value, actual, fake);
                }
            }
        }
        (Value::Array(recorded), Value::Array(actual)) => {
            recorded
                .iter()
                .zip(actual)
                .for_each(|(r, a)| learn_csrs(r, a, fake));
        }
        _ => {}
    }
}

async fn handle(State(state): State<Shared>, request: Request) -> Response {
    let method = request.method().to_string();
    let path = request.uri().path().to_string();
    let query = decode_query(request.uri().query().unwrap_or_default());
    let body = axum::body::to_bytes(request.into_body(), 16 << 20)
        .await
        .unwrap_or_default();
    let watching = query.get("watch").and_then(Value::as_str) == Some("true");

    let mut guard = state.lock().unwrap();
    let found = {
        let scenario = &guard.scenario;
        let fake = &guard.fake;
        let candidates = scenario.steps.iter().enumerate().filter(|(_, step)| match step {
            Step::Request(step) => {
                !watching
                    && step.request.method == method
                    && fake.string(&step.request.path, None) == path
                    && fake.value(&Value::Object(step.request.query.clone()), None)
                        == Value::Object(query.clone())
            }
            Step::Watch(step) => {
                watching
                    && fake.string(&step.watch.path, None) == path
                    && fake.value(&Value::Object(step.watch.query.clone()), None)
                        == Value::Object(query.clone())
            }
        });
        let candidates: Vec<usize> = candidates.map(|(index, _)| index).collect();
        candidates
            .iter()
            .copied()
            .find(|index| !guard.served.contains(index))
            .or(candidates.last().copied())
    };
    let Some(index) = found else {
        // Unrecorded requests (note actions) get a bland success.
        return Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Body::from("{}"))
            .unwrap();
    };
    guard.served.insert(index);
    let step = guard.scenario.steps[index].clone();
    match step {
        Step::Request(step) => {
            if step.request.body_file.is_none() && !step.request.body.is_null() {
                let sent = match &step.request.body {
                    Value::String(_) => Value::String(String::from_utf8_lossy(&body).into_owned()),
                    _ => serde_json::from_slice(&body).unwrap_or(Value::Null),
                };
                learn_csrs(&step.request.body, &sent, &mut guard.fake);
                let mut problems = Vec::new();
                matches(&step.request.body, &sent, &guard.fake, "body", &mut problems);
                let id = guard.scenario.id();
                for problem in problems {
                    guard.mismatches.push(format!("{id} step {index}: {problem}"));
                }
            }
            let response = &step.response;
            let mut builder = Response::builder().status(response.status);
            if let Some(content_type) = &response.content_type {
                builder = builder.header("content-type", content_type.as_str());
            }
            for warning in response.warnings.iter().flatten() {
                let escaped = guard
                    .fake
                    .string(warning, None)
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"");
                builder = builder.header("warning", format!("299 - \"{escaped}\""));
            }
            let body = match &response.body {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::String(text)) => guard.fake.string(text, None).into_bytes(),
                Some(value) => serde_json::to_vec(&guard.fake.value(value, None)).unwrap(),
            };
            builder.body(Body::from(body)).unwrap()
        }
        Step::Watch(step) => {
            let response = &step.response;
            let mut builder = Response::builder().status(response.status);
            if let Some(content_type) = &response.content_type {
                builder = builder.header("content-type", content_type.as_str());
            }
            if response.status != 200 {
                let body = match &response.body {
                    Some(value) if !value.is_null() => {
                        serde_json::to_vec(&guard.fake.value(value, None)).unwrap()
                    }
                    _ => Vec::new(),
                };
                return builder.body(Body::from(body)).unwrap();
            }
            drop(guard);
            let (sender, receiver) = tokio::sync::mpsc::unbounded_channel::<Result<Vec<u8>, Infallible>>();
            let stream = futures::stream::unfold(receiver, |mut receiver| async move {
                receiver.recv().await.map(|item| (item, receiver))
            });
            let closes = step.until.contains("close") || step.watch.query.contains_key("timeoutSeconds");
            tokio::spawn(async move {
                // Events are sent once the steps that caused them were served.
                loop {
                    let served = {
                        let guard = state.lock().unwrap();
                        step.after_steps.iter().all(|after| guard.served.contains(after))
                    };
                    if served {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                for event in &step.events {
                    let line = {
                        let guard = state.lock().unwrap();
                        let mut line = serde_json::to_vec(
                            &guard.fake.value(&serde_json::to_value(event).unwrap(), None),
                        )
                        .unwrap();
                        line.push(b'\n');
                        line
                    };
                    if sender.send(Ok(line)).is_err() {
                        return;
                    }
                }
                if !closes {
                    // Keep the stream open until the client goes away.
                    sender.closed().await;
                }
            });
            builder.body(Body::from_stream(stream)).unwrap()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::super::report::Outcome;
    use super::super::target::Target;
    use super::super::{Plan, is_listed_skip, replay};
    use super::*;

    #[test]
    fn query_decoding() {
        let query = decode_query("labelSelector=env%20in%20%28prod%2Cdev%29&watch=true");
        assert_eq!(query["labelSelector"], "env in (prod,dev)");
        assert_eq!(query["watch"], "true");
    }

    /// A plain document-order pass (no guidance) over the recordings made concrete gives back the
    /// recordings, except where the recorder's numbering has gaps (objects it removed afterwards).
    #[test]
    fn plain_normalization_reproduces_the_recordings() {
        use super::super::normalize::{Normalizer, Origin};
        let Some(shared) = fixture::shared_dir("plain_normalization_reproduces_the_recordings") else {
            return;
        };
        let fake = Fake {
            server: "https://127.0.0.1:6443".into(),
            csrs: Vec::new(),
        };
        let mut differing = Vec::new();
        let mut compared = 0;
        for scenario in fixture::load_all(&shared) {
            let mut normalizer = Normalizer::new(Some(fake.server.clone()), &Default::default());
            let mut same = true;
            for step in &scenario.steps {
                match step {
                    Step::Request(step) => {
                        normalizer.learn_generate_names(&step.request.body);
                        let literal = step
                            .request
                            .query_param("resourceVersion")
                            .filter(|rv| !rv.contains('<'));
                        normalizer.set_literal_rvs(literal.map(str::to_string).into_iter().collect());
                        register_csrs(&step.request.body, &fake, &mut normalizer);
                        if let Some(body) = &step.response.body {
                            let concrete = fake.value(body, None);
                            let origin = Origin {
                                path: &step.request.path,
                                bookmark: false,
                            };
                            let normalized = match &concrete {
                                Value::String(text) => Value::String(normalizer.normalize_text(text, None)),
                                other => normalizer.normalize(other, None, origin),
                            };
                            same &= &normalized == body;
                        }
                    }
                    Step::Watch(step) => {
                        for event in &step.events {
                            let origin = Origin {
                                path: &step.watch.path,
                                bookmark: event.kind == "BOOKMARK",
                            };
                            same &= normalizer.normalize(&fake.value(&event.object, None), None, origin)
                                == event.object;
                        }
                    }
                }
            }
            compared += 1;
            if !same {
                differing.push(scenario.id());
            }
        }
        // Gaps: OpenShift-only objects (openshift-service-ca.crt) were removed after normalization.
        let expected_gaps = ["watch/too-old-resourceversion", "watch/bookmarks-timeout"];
        differing.retain(|id| !expected_gaps.contains(&id.as_str()));
        assert!(
            differing.is_empty(),
            "{} of {compared} scenarios differ: {differing:?}",
            differing.len()
        );
    }

    /// Registers the made-up CSRs of a request body, as the replayer does with the ones it generates.
    fn register_csrs(value: &Value, fake: &Fake, normalizer: &mut super::super::normalize::Normalizer) {
        match value {
            Value::String(text) if text.starts_with("<csr:") => {
                normalizer.register_csr(&fake.string(text, None), text)
            }
            Value::Object(map) => map.values().for_each(|v| register_csrs(v, fake, normalizer)),
            Value::Array(items) => items.iter().for_each(|v| register_csrs(v, fake, normalizer)),
            _ => {}
        }
    }

    /// Every recorded scenario replayed against its own recording passes every step.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_harness_passes_against_the_recordings_themselves() {
        let Some(shared) = fixture::shared_dir("the_harness_passes_against_the_recordings_themselves") else {
            return;
        };
        let scenarios = fixture::load_all(&shared);
        let mut failures = Vec::new();
        let results = futures::future::join_all(scenarios.iter().map(|scenario| {
            let shared = shared.clone();
            async move {
                let mock = Mock::start(scenario).await;
                let mut target = Target::from_config(
                    kube::Config::new(mock.url.parse().unwrap()),
                    "the recording mock",
                    vec!["all".into()],
                )
                .unwrap();
                target.setup = false;
                target.single_identity = true;
                let result = replay::run(&target, scenario, &shared, &Plan).await;
                (result, mock.mismatches())
            }
        }))
        .await;
        for (result, mismatches) in results {
            for step in &result.steps {
                match &step.outcome {
                    Outcome::Passed => {}
                    Outcome::Failed(diffs) => failures.push(format!(
                        "{} step {} {}: {}",
                        result.id,
                        step.index,
                        step.label,
                        diffs
                            .iter()
                            .take(3)
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; ")
                    )),
                    // Steps listed in SKIPPED_STEPS are not judged on any server; any other skip
                    // (a missing capability) would mean the mock did not exercise the step.
                    Outcome::Skipped(reason) if !is_listed_skip(&result.id, step.index) => {
                        failures.push(format!("{} step {} skipped: {reason}", result.id, step.index))
                    }
                    Outcome::Skipped(_) => {}
                }
            }
            failures.extend(mismatches);
        }
        assert!(
            failures.is_empty(),
            "{} problems:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}
