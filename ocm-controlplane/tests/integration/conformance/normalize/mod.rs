//! Placeholder normalization exactly as the fixtures' README defines it: uids, resourceVersions,
//! continue tokens, generated names, timestamps, certificates, tokens, CA data, server address,
//! /version build fields, Table ages and values embedded in longer strings.
//!
//! Responses are visited in document order with object keys in lexicographic order. Numbered
//! placeholders (`<uid:N>`, `<rv:N>`, `<continue:N>`, `<gen:N>`) map one value each; the map is
//! kept for the whole scenario so that later requests can be sent with this server's values.
//!
//! Numbering can be *guided* by the recorded value at the same position: a value seen for the first
//! time takes the recorded number when that number is still free, instead of the next number. With
//! a faithful server this gives exactly the numbering of a plain document-order pass; where the
//! server differs (or where the recorder removed OpenShift-only objects and left gaps in the
//! numbering) one difference stays one difference instead of shifting every later number. Equality
//! is still fully checked: a value already mapped to another number, or a number already taken by
//! another value, shows up as a different placeholder.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

use super::fixture::numbered_placeholders;
use super::scan::{
    Match, Replacement, find_embedded_rvs, find_fingerprints, find_generated_names, find_message_rvs,
    find_timestamps, find_uuids, is_generated_suffix, wildcard_eq,
};

/// Kinds of numbered placeholders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `<uid:N>`
    Uid,
    /// `<rv:N>`
    Rv,
    /// `<continue:N>`
    Continue,
    /// `<gen:N>` (the 5-character suffix of a generated name)
    Gen,
}

impl Kind {
    /// The tag inside the placeholder.
    pub fn tag(self) -> &'static str {
        match self {
            Kind::Uid => "uid",
            Kind::Rv => "rv",
            Kind::Continue => "continue",
            Kind::Gen => "gen",
        }
    }

    fn from_tag(tag: &str) -> Option<Self> {
        match tag {
            "uid" => Some(Kind::Uid),
            "rv" => Some(Kind::Rv),
            "continue" => Some(Kind::Continue),
            "gen" => Some(Kind::Gen),
            _ => None,
        }
    }
}

/// The alphabet of kube-apiserver's name generator (consonants and digits without look-alikes).
pub const NAME_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

/// `/version` fields replaced by `<fieldName>`.
const VERSION_FIELDS: &[&str] = &[
    "gitVersion",
    "gitCommit",
    "gitTreeState",
    "buildDate",
    "goVersion",
    "compiler",
    "platform",
];

#[derive(Debug, Clone, Default)]
struct Table {
    by_value: HashMap<String, u32>,
    by_number: BTreeMap<u32, String>,
    /// Recorded numbers first seen where this server gave a value already known under another
    /// number (a difference, reported): later requests using the recorded number get that value.
    aliases: BTreeMap<u32, String>,
    /// Fresh numbers start above this (the fixture's highest number when guided).
    floor: u32,
}

impl Table {
    fn fresh(&self) -> u32 {
        self.floor
            .max(self.by_number.keys().next_back().copied().unwrap_or(0))
            + 1
    }

    fn assign(&mut self, value: &str, hint: Option<u32>) -> u32 {
        if let Some(&number) = self.by_value.get(value) {
            if let Some(hint) = hint.filter(|hint| *hint != number && !self.by_number.contains_key(hint)) {
                self.aliases.entry(hint).or_insert_with(|| value.to_string());
            }
            return number;
        }
        let number = match hint {
            Some(hint) if !self.by_number.contains_key(&hint) => hint,
            _ => self.fresh(),
        };
        self.by_value.insert(value.to_string(), number);
        self.by_number.insert(number, value.to_string());
        number
    }
}

/// The placeholder state of one scenario.
#[derive(Debug, Clone, Default)]
pub struct Normalizer {
    tables: BTreeMap<Kind, Table>,
    /// `generateName` prefixes seen in requests and responses, longest first.
    prefixes: Vec<String>,
    /// The server's base URL (`https://127.0.0.1:PORT`), replaced by `<server>` in strings.
    server: Option<String>,
    /// CSR `spec.request` values this replay generated, with their `<csr:/CN=...>` placeholder.
    csrs: HashMap<String, String>,
    /// The latest token a TokenRequest returned.
    token: Option<String>,
    /// resourceVersions the current step's request sent literally (kept literal in messages).
    literal_rvs: Vec<String>,
}

/// Where a body came from, for the rules that depend on it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Origin<'a> {
    /// The request path (`/version` gets its build fields replaced).
    pub path: &'a str,
    /// Whether the body is a watch event of type BOOKMARK.
    pub bookmark: bool,
}

impl Normalizer {
    /// A normalizer for one scenario; with `floors`, fresh numbers start above the fixture's own.
    pub fn new(server: Option<String>, floors: &BTreeMap<String, u32>) -> Self {
        let mut tables = BTreeMap::new();
        for kind in [Kind::Uid, Kind::Rv, Kind::Continue, Kind::Gen] {
            let floor = floors.get(kind.tag()).copied().unwrap_or(0);
            tables.insert(
                kind,
                Table {
                    floor,
                    ..Table::default()
                },
            );
        }
        Self {
            tables,
            server: server.map(|s| s.trim_end_matches('/').to_string()),
            ..Self::default()
        }
    }

    fn table(&mut self, kind: Kind) -> &mut Table {
        self.tables.entry(kind).or_default()
    }

    /// The value this server gave for a numbered placeholder.
    pub fn value_of(&self, kind: Kind, number: u32) -> Option<&str> {
        let table = self.tables.get(&kind)?;
        table
            .by_number
            .get(&number)
            .or_else(|| table.aliases.get(&number))
            .map(String::as_str)
    }

    /// Remembers a `generateName` prefix (from a request or a response).
    pub fn add_generate_name(&mut self, prefix: &str) {
        if !prefix.is_empty() && !self.prefixes.iter().any(|known| known == prefix) {
            self.prefixes.push(prefix.to_string());
            self.prefixes.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        }
    }

    /// Remembers every `metadata.generateName` of a request body.
    pub fn learn_generate_names(&mut self, body: &Value) {
        match body {
            Value::Object(map) => {
                for (key, value) in map {
                    if key == "generateName" {
                        if let Some(prefix) = value.as_str() {
                            self.add_generate_name(prefix);
                        }
                    } else {
                        self.learn_generate_names(value);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| self.learn_generate_names(item)),
            _ => {}
        }
    }

    /// Remembers a CSR this replay generated, so responses echoing it show the placeholder.
    pub fn register_csr(&mut self, value: &str, placeholder: &str) {
        self.csrs.insert(value.to_string(), placeholder.to_string());
    }

    /// The latest token returned by a TokenRequest.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Sets the resourceVersions the current request sent literally.
    pub fn set_literal_rvs(&mut self, literals: Vec<String>) {
        self.literal_rvs = literals;
    }

    /// Replaces the numbered placeholders (and `<token>`) of a request string by this server's
    /// values; returns the placeholders that have no value yet (left in place).
    pub fn substitute(&self, text: &str) -> (String, Vec<String>) {
        let mut out = String::with_capacity(text.len());
        let mut unbound = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find('<') {
            out.push_str(&rest[..start]);
            let candidate = &rest[start..];
            let Some(end) = candidate.find('>') else {
                out.push_str(candidate);
                rest = "";
                break;
            };
            let placeholder = &candidate[..=end];
            let inner = &placeholder[1..placeholder.len() - 1];
            let replacement = if inner == "token" {
                self.token.clone()
            } else if let Some((tag, number)) = inner.split_once(':')
                && let Some(kind) = Kind::from_tag(tag)
                && let Ok(number) = number.parse::<u32>()
            {
                self.value_of(kind, number).map(str::to_string)
            } else {
                // Not a placeholder this function handles (`<time>`, `<csr:...>`, or plain text).
                out.push('<');
                rest = &candidate[1..];
                continue;
            };
            match replacement {
                Some(value) => out.push_str(&value),
                None => {
                    unbound.push(placeholder.to_string());
                    out.push_str(placeholder);
                }
            }
            rest = &candidate[end + 1..];
        }
        out.push_str(rest);
        (out, unbound)
    }

    /// Substitutes placeholders in every string (and object key) of a request body.
    pub fn substitute_value(&self, value: &Value, unbound: &mut Vec<String>) -> Value {
        match value {
            Value::String(text) => {
                let (text, missing) = self.substitute(text);
                unbound.extend(missing);
                Value::String(text)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.substitute_value(item, unbound))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, value)| {
                        let (key, missing) = self.substitute(key);
                        unbound.extend(missing);
                        (key, self.substitute_value(value, unbound))
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Normalizes a response body (or a watch event object), guided by the recorded one.
    pub fn normalize(&mut self, body: &Value, guide: Option<&Value>, origin: Origin<'_>) -> Value {
        let table_ages = age_columns(body);
        let top_kind = body
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let newer_ok = origin.bookmark || top_kind.ends_with("List") || top_kind == "Table";
        let mut walk = Walk {
            normalizer: self,
            version_doc: origin.path.trim_end_matches('/') == "/version",
            newer_ok,
            table_ages,
        };
        walk.value(body, guide, &mut Vec::new(), None)
    }

    /// Normalizes a text (a non-JSON body, a warning, a message), guided by the recorded text.
    pub fn normalize_text(&mut self, text: &str, guide: Option<&str>) -> String {
        let mut matches = Vec::new();
        if let Some(server) = &self.server {
            for (start, _) in text.match_indices(server.as_str()) {
                matches.push(Match::fixed(start, start + server.len(), "<server>"));
            }
        }
        find_timestamps(text, &mut matches);
        find_uuids(text, &mut matches);
        find_fingerprints(text, &mut matches);
        find_message_rvs(text, &self.literal_rvs, &mut matches);
        find_embedded_rvs(text, &mut matches);
        find_generated_names(text, &self.prefixes, &mut matches);
        matches.sort_by_key(|m| (m.start, std::cmp::Reverse(m.end)));

        let mut hints: HashMap<Kind, Vec<u32>> = HashMap::new();
        if let Some(guide) = guide {
            for (tag, number) in numbered_placeholders(guide) {
                if let Some(kind) = Kind::from_tag(tag) {
                    hints.entry(kind).or_default().push(number);
                }
            }
        }
        let mut cursors: HashMap<Kind, usize> = HashMap::new();
        let mut out = String::with_capacity(text.len());
        let mut position = 0;
        for found in matches {
            if found.start < position {
                continue; // overlaps an earlier match
            }
            out.push_str(&text[position..found.start]);
            match found.replacement {
                Replacement::Fixed(fixed) => out.push_str(fixed),
                Replacement::Numbered { kind, keep } => {
                    let value = &text[found.start + keep..found.end];
                    let cursor = cursors.entry(kind).or_default();
                    let hint = hints.get(&kind).and_then(|list| list.get(*cursor)).copied();
                    *cursor += 1;
                    let number = self.table(kind).assign(value, hint);
                    out.push_str(&text[found.start..found.start + keep]);
                    out.push_str(&format!("<{}:{number}>", kind.tag()));
                }
            }
            position = found.end;
        }
        out.push_str(&text[position..]);
        out
    }

    fn numbered(&mut self, kind: Kind, value: &str, guide: Option<&Value>) -> String {
        let hint = guide
            .and_then(Value::as_str)
            .and_then(|g| single_placeholder(g, kind));
        let number = self.table(kind).assign(value, hint);
        format!("<{}:{number}>", kind.tag())
    }

    /// A list's or bookmark's resourceVersion is the current revision, which other writers move
    /// (README): a value newer than the recorded placeholder's is shown as that placeholder; where
    /// the recording shows a revision first seen there (moved by background writers such as
    /// kube-controller-manager), any value not older than every resourceVersion seen so far is.
    fn newer_rv(&mut self, value: &str, guide: Option<&Value>) -> String {
        let hint = guide
            .and_then(Value::as_str)
            .and_then(|g| single_placeholder(g, Kind::Rv));
        let actual = value.parse::<u64>().ok();
        if let (Some(hint), Some(actual)) = (hint, actual) {
            match self.value_of(Kind::Rv, hint).map(str::parse::<u64>) {
                Some(Ok(known)) if actual >= known => return format!("<rv:{hint}>"),
                None if actual >= self.max_rv() => {
                    let table = self.table(Kind::Rv);
                    if table.by_value.contains_key(value) {
                        table.aliases.entry(hint).or_insert_with(|| value.to_string());
                        return format!("<rv:{hint}>");
                    }
                }
                _ => {}
            }
        }
        self.numbered(Kind::Rv, value, guide)
    }

    /// The highest numeric resourceVersion seen so far.
    fn max_rv(&self) -> u64 {
        self.tables.get(&Kind::Rv).map_or(0, |table| {
            table
                .by_number
                .values()
                .chain(table.aliases.values())
                .filter_map(|v| v.parse().ok())
                .max()
                .unwrap_or(0)
        })
    }
}

/// `N` when `text` is exactly `<tag:N>` of `kind`.
fn single_placeholder(text: &str, kind: Kind) -> Option<u32> {
    text.strip_prefix('<')?
        .strip_suffix('>')?
        .strip_prefix(kind.tag())?
        .strip_prefix(':')?
        .parse()
        .ok()
}

struct Walk<'n> {
    normalizer: &'n mut Normalizer,
    version_doc: bool,
    newer_ok: bool,
    /// Indexes of Table cells that are ages (`type: date` or named `Age`).
    table_ages: Vec<usize>,
}

impl Walk<'_> {
    fn value(
        &mut self,
        value: &Value,
        guide: Option<&Value>,
        path: &mut Vec<String>,
        kind: Option<&str>,
    ) -> Value {
        match value {
            Value::Object(map) => self.object(map, guide, path, kind),
            Value::Array(items) => {
                let in_rows = path.len() == 1 && path[0] == "rows";
                let mut out = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    let guide = guide.and_then(|g| g.get(index));
                    path.push(index.to_string());
                    let item = if in_rows {
                        self.row(item, guide, path, kind)
                    } else {
                        self.value(item, guide, path, kind)
                    };
                    path.pop();
                    out.push(item);
                }
                Value::Array(out)
            }
            Value::String(text) => Value::String(
                self.normalizer
                    .normalize_text(text, guide.and_then(Value::as_str)),
            ),
            other => other.clone(),
        }
    }

    /// A Table row: age cells become `<age>`.
    fn row(
        &mut self,
        row: &Value,
        guide: Option<&Value>,
        path: &mut Vec<String>,
        kind: Option<&str>,
    ) -> Value {
        let mut row = row.clone();
        if let Some(cells) = row.get_mut("cells").and_then(Value::as_array_mut) {
            for &index in &self.table_ages {
                if let Some(cell) = cells.get_mut(index)
                    && !cell.is_null()
                {
                    *cell = Value::String("<age>".into());
                }
            }
        }
        self.value(&row, guide, path, kind)
    }

    fn object(
        &mut self,
        map: &Map<String, Value>,
        guide: Option<&Value>,
        path: &mut Vec<String>,
        inherited: Option<&str>,
    ) -> Value {
        let own_kind = map.get("kind").and_then(Value::as_str).or(inherited);
        let generate_name = map
            .get("generateName")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !generate_name.is_empty() {
            self.normalizer.add_generate_name(&generate_name);
        }
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        let mut out = Map::new();
        for key in keys {
            let value = &map[key];
            let normalized_key = self.key(key, guide);
            let child_guide = guide.and_then(|g| g.get(&normalized_key));
            let replaced = match value.as_str() {
                Some(text) if !text.is_empty() => {
                    self.special_string(key, text, child_guide, path, own_kind, &generate_name)
                }
                _ => None,
            };
            let normalized = match replaced {
                Some(text) => Value::String(text),
                None => {
                    let child_kind = match own_kind {
                        Some(kind) if key == "items" => Some(kind.strip_suffix("List").unwrap_or(kind)),
                        other => other,
                    };
                    path.push(key.clone());
                    let normalized = self.value(value, child_guide, path, child_kind);
                    path.pop();
                    normalized
                }
            };
            out.insert(normalized_key, normalized);
        }
        Value::Object(out)
    }

    /// An object key (managedFields keys such as `k:{"uid":"..."}` hold uids), guided by the
    /// recorded key that matches it up to placeholder numbers.
    fn key(&mut self, key: &str, guide: Option<&Value>) -> String {
        // Only long keys can hold a uid, a timestamp or an embedded value.
        if key.len() < 20 {
            return key.to_string();
        }
        let probe = self.normalizer.clone().normalize_text(key, None);
        let guide_key = guide
            .and_then(Value::as_object)
            .and_then(|g| g.keys().find(|k| wildcard_eq(k, &probe)));
        self.normalizer.normalize_text(key, guide_key.map(String::as_str))
    }

    /// The rules that depend on the key (and the enclosing kind) of a string value.
    fn special_string(
        &mut self,
        key: &str,
        text: &str,
        guide: Option<&Value>,
        path: &[String],
        kind: Option<&str>,
        generate_name: &str,
    ) -> Option<String> {
        let parent = path.last().map(String::as_str);
        let kind = kind.unwrap_or_default();
        let normalizer = &mut *self.normalizer;
        match key {
            "uid" => return Some(normalizer.numbered(Kind::Uid, text, guide)),
            "resourceVersion" => {
                let top_metadata = path.len() == 1 && path[0] == "metadata";
                return Some(if top_metadata && self.newer_ok {
                    normalizer.newer_rv(text, guide)
                } else {
                    normalizer.numbered(Kind::Rv, text, guide)
                });
            }
            "continue" => return Some(normalizer.numbered(Kind::Continue, text, guide)),
            "serverAddress" => return Some("<server-address>".into()),
            "name" if !generate_name.is_empty() => {
                if let Some(suffix) = text.strip_prefix(generate_name)
                    && is_generated_suffix(suffix)
                {
                    let guide_suffix = guide
                        .and_then(Value::as_str)
                        .and_then(|g| g.strip_prefix(generate_name));
                    let hint = guide_suffix.and_then(|g| single_placeholder(g, Kind::Gen));
                    let number = normalizer.table(Kind::Gen).assign(suffix, hint);
                    return Some(format!("{generate_name}<gen:{number}>"));
                }
            }
            _ => {}
        }
        if self.version_doc
            && path.is_empty()
            && (VERSION_FIELDS.contains(&key)
                || key.starts_with("emulation")
                || key.starts_with("minCompatibility"))
        {
            return Some(format!("<{key}>"));
        }
        match (kind, parent, key) {
            ("CertificateSigningRequest", Some("status"), "certificate") => Some("<cert>".into()),
            ("CertificateSigningRequest", Some("spec"), "request") => Some(
                normalizer
                    .csrs
                    .get(text)
                    .cloned()
                    .unwrap_or_else(|| "<csr:unknown>".into()),
            ),
            ("TokenRequest", Some("status"), "token") => {
                normalizer.token = Some(text.to_string());
                Some("<token>".into())
            }
            ("TokenReview", Some("spec"), "token") => Some("<token>".into()),
            ("ConfigMap", Some("data"), "ca.crt") => Some("<ca-cert>".into()),
            _ => None,
        }
    }
}

/// The cell indexes of a Table's date columns and of columns named `Age`.
fn age_columns(body: &Value) -> Vec<usize> {
    let is_table = body.get("kind").and_then(Value::as_str) == Some("Table")
        && body
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("meta.k8s.io/"));
    if !is_table {
        return Vec::new();
    }
    body.get("columnDefinitions")
        .and_then(Value::as_array)
        .map(|columns| {
            columns
                .iter()
                .enumerate()
                .filter(|(_, column)| {
                    column.get("type").and_then(Value::as_str) == Some("date")
                        || column.get("name").and_then(Value::as_str) == Some("Age")
                })
                .map(|(index, _)| index)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
