//! Name, label, annotation and finalizer validation with kube-apiserver's messages, and (in the
//! submodules) the validation of built-in kinds at kube-apiserver's level.

pub mod apps;
pub mod batch;
pub mod builtin;
#[cfg(test)]
mod builtin_tests;
pub mod certificates;
pub mod common;
pub mod container;
pub mod coordination;
pub mod core;
pub mod field;
pub mod go_types;
pub mod pod;
pub mod probe;
pub mod quantity;
pub mod rbac;

use serde_json::{Value, json};

use crate::status::Cause;

const DNS1123_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const CONFIG_KEY: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

fn is_label_chars(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Errors of a DNS-1123 label (namespace names, ...).
pub fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !is_label_chars(s) {
        if s.len() <= 253 && !s.is_empty() && s.split('.').all(is_label_chars) {
            // A valid subdomain that is not a label: it has dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(DNS1123_LABEL.to_string());
        }
    }
    errs
}

/// Errors of a DNS-1123 subdomain (most object names).
pub fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if s.is_empty() || !s.split('.').all(is_label_chars) {
        errs.push(DNS1123_SUBDOMAIN.to_string());
    }
    errs
}

fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// Errors of a qualified name (`prefix/name`): label and annotation keys, finalizers.
pub fn qualified_name(s: &str) -> Vec<String> {
    let parts: Vec<&str> = s.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return vec!["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()];
        }
    };
    let mut errs = Vec::new();
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            errs.push("prefix part must be non-empty".to_string());
        } else {
            errs.extend(
                dns1123_subdomain(prefix)
                    .into_iter()
                    .map(|e| format!("prefix part {e}")),
            );
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else {
        if name.len() > 63 {
            errs.push("name part must be no more than 63 characters".to_string());
        }
        if !is_name_part(name) {
            errs.push(QUALIFIED_NAME_PART.to_string());
        }
    }
    errs
}

/// Errors of a label value.
pub fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !s.is_empty() && !is_name_part(s) {
        errs.push(LABEL_VALUE.to_string());
    }
    errs
}

/// Errors of a ConfigMap or Secret key.
pub fn config_key(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if s.is_empty()
        || !s
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        errs.push(CONFIG_KEY.to_string());
    }
    if s == "." || s == ".." {
        errs.push(format!("must not be '{s}'"));
    } else if s.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

fn str_map(v: Option<&Value>) -> Vec<(String, Value)> {
    v.and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// Label errors (`metadata.labels`), repeated `times` as kube-apiserver reports them for the type.
pub fn labels(meta: &Value, times: usize) -> Vec<Cause> {
    let mut one = Vec::new();
    for (k, v) in str_map(meta.get("labels")) {
        for e in qualified_name(&k) {
            one.push(Cause::invalid("metadata.labels", &json!(k), &e));
        }
        let value = v.as_str().unwrap_or_default();
        for e in label_value(value) {
            one.push(Cause::invalid("metadata.labels", &json!(value), &e));
        }
    }
    repeat(one, times)
}

/// Annotation errors (`metadata.annotations`), repeated `times`.
pub fn annotations(meta: &Value, times: usize) -> Vec<Cause> {
    let mut one = Vec::new();
    let mut total = 0;
    for (k, v) in str_map(meta.get("annotations")) {
        total += k.len() + v.as_str().map(str::len).unwrap_or(0);
        for e in qualified_name(&k.to_lowercase()) {
            one.push(Cause::invalid("metadata.annotations", &json!(k), &e));
        }
    }
    if total > 256 * 1024 {
        one.push(Cause {
            reason: "FieldValueTooLong".into(),
            message: format!("Too long: may not be more than {} bytes", 256 * 1024),
            field: "metadata.annotations".into(),
        });
    }
    repeat(one, times)
}

fn repeat(one: Vec<Cause>, times: usize) -> Vec<Cause> {
    let mut out = Vec::new();
    for _ in 0..times {
        out.extend(one.iter().cloned());
    }
    out
}

/// Finalizer errors of an object being created or updated; `built_in`: a built-in kind, whose
/// finalizer names must also be standard or contain a `/` (custom resources only get
/// [`finalizer_warnings`] for that).
pub fn finalizers(meta: &Value, built_in: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    let list: Vec<String> = meta
        .get("finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    for f in &list {
        for e in qualified_name(f) {
            out.push(Cause::invalid("metadata.finalizers", &json!(f), &e));
        }
    }
    for (i, f) in list.iter().enumerate() {
        if built_in && !is_standard_or_qualified_finalizer(f) {
            out.push(Cause::invalid(
                format!("metadata.finalizers[{i}]"),
                &json!(f),
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    out
}

fn is_standard_or_qualified_finalizer(f: &str) -> bool {
    matches!(f, "kubernetes" | "orphan" | "foregroundDeletion") || f.contains('/')
}

/// The warnings apiextensions-apiserver gives for the finalizers a write adds to a custom
/// resource (`old_meta`: the stored object's metadata on updates): qualified-name problems and
/// names that are not domain-qualified, each once, in sorted order.
pub fn finalizer_warnings(meta: &Value, old_meta: Option<&Value>) -> Vec<String> {
    let names = |m: Option<&Value>| -> std::collections::BTreeSet<String> {
        m.and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default()
    };
    let old = names(old_meta);
    let mut out = Vec::new();
    for f in names(Some(meta)).difference(&old) {
        let shown = serde_json::to_string(f).unwrap_or_default();
        for e in qualified_name(f) {
            out.push(format!("metadata.finalizers: {shown}: {e}"));
        }
        if !is_standard_or_qualified_finalizer(f) {
            let advice = if f.contains('.') {
                "prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
            } else {
                "prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
            };
            out.push(format!("metadata.finalizers: {shown}: {advice}"));
        }
    }
    out
}

/// Name errors of `metadata.name` / `metadata.generateName` for a type whose names are DNS
/// subdomains (`label = false`) or DNS labels (`label = true`).
pub fn name(meta: &Value, label: bool) -> Vec<Cause> {
    let check = |s: &str| {
        if label {
            dns1123_label(s)
        } else {
            dns1123_subdomain(s)
        }
    };
    let mut out = Vec::new();
    let name = meta.get("name").and_then(Value::as_str).unwrap_or_default();
    let generate = meta
        .get("generateName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !generate.is_empty() {
        // The prefix may end in '-' or '.'; validate it as if a suffix followed.
        let probe = format!("{generate}a");
        for e in check(&probe) {
            out.push(Cause::invalid("metadata.generateName", &json!(generate), &e));
        }
    }
    if name.is_empty() {
        out.push(Cause::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for e in check(name) {
            out.push(Cause::invalid("metadata.name", &json!(name), &e));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(dns1123_subdomain("a.b-c").is_empty());
        assert_eq!(dns1123_subdomain("bad key").len(), 1);
        assert!(dns1123_label("a.b").len() == 1);
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert!(qualified_name("example.com/hold").is_empty());
        assert_eq!(qualified_name("bad finalizer").len(), 1);
        assert!(label_value("").is_empty());
    }
}
