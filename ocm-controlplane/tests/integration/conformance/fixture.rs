//! The fixture format of `../shared/apiserver-conformance` (see its README): scenarios of request
//! steps and watch steps recorded from a real kube-apiserver, and where to find them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

/// One recorded scenario (one file).
#[derive(Debug, Clone, Deserialize)]
pub struct Scenario {
    /// File name without `.json`.
    pub name: String,
    /// Directory the file is in (`crud`, `watch`, ...).
    pub area: String,
    /// What the scenario shows.
    #[serde(default)]
    pub description: String,
    /// Requirement tags (`crds:ocm`, `kcm`, `namespaces:a,b`, ...).
    #[serde(default)]
    pub requires: Vec<String>,
    /// Things the recorder did between steps that are not steps themselves.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Paths (`steps[4].response.body.details.causes`) compared as multisets.
    #[serde(default)]
    pub unordered: Vec<String>,
    /// Paths whose value is not compared.
    #[serde(default)]
    pub volatile: Vec<String>,
    /// The steps, in chronological order of completion.
    pub steps: Vec<Step>,
    /// Fields this harness does not know (reported, not fatal).
    #[serde(flatten)]
    pub unknown: Map<String, Value>,
}

impl Scenario {
    /// `area/name`, the id used in expectations and reports.
    pub fn id(&self) -> String {
        format!("{}/{}", self.area, self.name)
    }

    /// The scenario's namespaces requirement (`namespaces:a,b`), if any.
    pub fn required_namespaces(&self) -> Vec<String> {
        self.requires
            .iter()
            .filter_map(|tag| tag.strip_prefix("namespaces:"))
            .flat_map(|list| list.split(','))
            .filter(|ns| !ns.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The highest number used by the fixture for each placeholder kind (`uid`, `rv`, ...).
    pub fn max_placeholder_numbers(&self) -> BTreeMap<String, u32> {
        let text = serde_json::to_string(&self.steps).unwrap_or_default();
        let mut max = BTreeMap::new();
        for (tag, number) in numbered_placeholders(&text) {
            let entry = max.entry(tag.to_string()).or_insert(0);
            *entry = (*entry).max(number);
        }
        max
    }
}

/// Every `<tag:N>` in `text`, in order.
pub fn numbered_placeholders(text: &str) -> Vec<(&str, u32)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        let candidate = &rest[start + 1..];
        if let Some(end) = candidate.find('>') {
            let inner = &candidate[..end];
            if let Some((tag, number)) = inner.split_once(':')
                && !tag.is_empty()
                && tag.chars().all(|c| c.is_ascii_lowercase())
                && let Ok(number) = number.parse::<u32>()
            {
                found.push((tag, number));
            }
        }
        rest = candidate;
    }
    found
}

/// A request step or a watch step.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum Step {
    /// One HTTP request and its response.
    Request(RequestStep),
    /// A watch opened before its `after_steps` and read until `until` held.
    Watch(WatchStep),
}

/// One HTTP request and its response.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct RequestStep {
    /// What was sent.
    pub request: Request,
    /// What came back.
    pub response: Response,
    /// Optional human note (`(recorded after polling until the condition held)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl RequestStep {
    /// Whether the recorder polled this step until its condition held.
    pub fn polled(&self) -> bool {
        self.note
            .as_deref()
            .is_some_and(|note| note.contains("recorded after polling"))
    }
}

/// A recorded request.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct Request {
    /// HTTP method.
    pub method: String,
    /// Path, possibly with placeholders (`.../gen-<gen:1>`).
    pub path: String,
    /// Decoded query parameters.
    #[serde(default)]
    pub query: Map<String, Value>,
    /// Request headers; `null` means not sent.
    #[serde(default)]
    pub headers: Map<String, Value>,
    /// Identity (`alice`, `anonymous`, ...); absent means `admin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
    /// JSON body (sent JSON-serialized), a string (sent verbatim) or null.
    #[serde(default)]
    pub body: Value,
    /// A YAML file (relative to the directory holding `shared/`) to send instead of `body`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_file: Option<String>,
}

impl Request {
    /// A query parameter as a string.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query.get(name).and_then(Value::as_str)
    }
}

/// A recorded response (of a request step, or the HTTP answer of a watch).
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// The Content-Type header exactly as sent.
    #[serde(default)]
    pub content_type: Option<String>,
    /// Parsed JSON, text, or null. Absent on watch steps the server accepted.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub body: Option<Value>,
    /// Each `Warning: 299` text, unquoted, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    /// The recorder kept only a subset of the body.
    #[serde(default)]
    pub body_filtered: bool,
}

/// Deserializes a present field (even `null`) as `Some`.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// A recorded watch.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct WatchStep {
    /// The watch request.
    pub watch: WatchRequest,
    /// Request steps that ran while the watch was open; it was opened just before the first.
    #[serde(default)]
    pub after_steps: Vec<usize>,
    /// The HTTP answer (body only if the server refused the watch).
    pub response: Response,
    /// Every event the server streamed, in order.
    #[serde(default)]
    pub events: Vec<Event>,
    /// How the recorder decided to stop reading.
    #[serde(default)]
    pub until: String,
    /// Periodic bookmarks the recorder dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub periodic_bookmarks_dropped: Option<u32>,
    /// Optional human note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The request of a watch step.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct WatchRequest {
    /// Path.
    pub path: String,
    /// Query parameters (including `watch=true`).
    #[serde(default)]
    pub query: Map<String, Value>,
    /// Identity; absent means `admin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
}

/// One watch event.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
pub struct Event {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The object (a Status for `ERROR`).
    pub object: Value,
}

/// The shared directory (`../shared` from the workspace root, or `$OCM_SHARED_DIR`), or `None`
/// after saying why the test is skipped.
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    let candidate = std::env::var_os("OCM_SHARED_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
        PathBuf::from,
    );
    let fixtures = candidate.join("apiserver-conformance");
    if fixtures.is_dir() {
        Some(candidate)
    } else {
        eprintln!(
            "skipping {test}: {} not found (set OCM_SHARED_DIR to run it)",
            fixtures.display()
        );
        None
    }
}

/// Every scenario under `shared/apiserver-conformance`, sorted by area and name.
pub fn load_all(shared: &Path) -> Vec<Scenario> {
    let root = shared.join("apiserver-conformance");
    let mut files = Vec::new();
    for area in std::fs::read_dir(&root).unwrap_or_else(|e| panic!("reading {}: {e}", root.display())) {
        let area = area.unwrap().path();
        if !area.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&area).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|ext| ext == "json") {
                files.push(file);
            }
        }
    }
    files.sort();
    files.iter().map(|file| load(file)).collect()
}

/// Parses one scenario file.
pub fn load(file: &Path) -> Scenario {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    let scenario: Scenario =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", file.display()));
    if !scenario.unknown.is_empty() {
        eprintln!(
            "note: {} has fields this harness ignores: {:?}",
            file.display(),
            scenario.unknown.keys().collect::<Vec<_>>()
        );
    }
    scenario
}

/// Resolves a `body_file` (relative to the directory that holds `shared/`) and parses the YAML.
pub fn read_body_file(shared: &Path, body_file: &str) -> Result<Value, String> {
    let path = match body_file.strip_prefix("shared/") {
        Some(rest) => shared.join(rest),
        None => shared.parent().unwrap_or(shared).join(body_file),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    serde_saphyr::from_str::<Value>(&text).map_err(|e| format!("parsing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixture_parses_and_watch_steps_point_backwards() {
        let Some(shared) = shared_dir("every_fixture_parses_and_watch_steps_point_backwards") else {
            return;
        };
        let scenarios = load_all(&shared);
        assert!(!scenarios.is_empty());
        for scenario in &scenarios {
            for (index, step) in scenario.steps.iter().enumerate() {
                match step {
                    Step::Request(step) => {
                        if let Some(file) = &step.request.body_file {
                            read_body_file(&shared, file).unwrap();
                        }
                    }
                    Step::Watch(watch) => {
                        for &after in &watch.after_steps {
                            assert!(
                                after < index,
                                "{} step {index}: after_steps {after}",
                                scenario.id()
                            );
                            assert!(matches!(scenario.steps[after], Step::Request(_)));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn placeholders_are_found_in_order() {
        let found = numbered_placeholders(r#"{"a":"<rv:3>","b":"x-<gen:12> <uid:1>","c":"<time>"}"#);
        assert_eq!(found, vec![("rv", 3), ("gen", 12), ("uid", 1)]);
    }
}
