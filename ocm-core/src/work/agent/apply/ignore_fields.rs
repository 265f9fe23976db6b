//! `ignoreFields` of the ServerSideApply strategy (ocm-core.md §3.4): removing fields from a
//! manifest before it is applied, so that the managed cluster keeps its own values there.
//!
//! - `jsonPaths`: a Kubernetes JSONPath; the last `.key` is deleted from every object the rest
//!   of the path selects. Supported: `.name`, `['name']`, `[n]`, `[*]`, `.*` and filters
//!   `[?(@.a.b=="v")]` (also `!=`, and numbers/booleans on the right) — what upstream's examples
//!   and tests use. As upstream, a path that selects nothing removes nothing.
//! - `jsonPointers`: RFC 6901; a missing path is ignored.
//! - `jqPathExpressions`: evaluated as `del(<expr>)` with the jaq crates (jaq-core, jaq-std,
//!   jaq-json: maintained, pure Rust, close to jq's semantics, as upstream's gojq is to jq), with
//!   a 1 s limit; it must yield exactly one object.

use std::time::Duration;

use ocm_api::work::v1::IgnoreField;
use serde_json::Value;

/// How long a jq expression may run (upstream's limit).
pub const JQ_TIMEOUT: Duration = Duration::from_secs(1);

/// Why ignoreFields could not be processed (the manifest's Applied condition gets reason
/// `AppliedManifestSSAIgnoreFieldError`).
#[derive(Debug, thiserror::Error)]
pub enum IgnoreFieldError {
    /// A JSON pointer could not be applied.
    #[error("JSON Pointer error in '{pointer}': {message}")]
    JsonPointer {
        /// The pointer.
        pointer: String,
        /// What went wrong.
        message: String,
    },
    /// A jq expression failed.
    #[error("JQ expression error in '{expression}': {message}")]
    Jq {
        /// The expression.
        expression: String,
        /// What went wrong.
        message: String,
    },
}

/// Removes the fields `field` names from `object`.
///
/// # Errors
/// A JSON pointer or jq expression could not be processed.
pub async fn remove(object: &mut Value, field: &IgnoreField) -> Result<(), IgnoreFieldError> {
    for path in field.json_paths.iter().flatten() {
        remove_json_path(object, path);
    }
    for pointer in field.json_pointers.iter().flatten() {
        remove_json_pointer(object, pointer).map_err(|message| IgnoreFieldError::JsonPointer {
            pointer: pointer.clone(),
            message,
        })?;
    }
    for expression in field.jq_path_expressions.iter().flatten() {
        let input = object.clone();
        let expr = expression.clone();
        let run = tokio::task::spawn_blocking(move || remove_jq(&input, &expr));
        let result = match tokio::time::timeout(JQ_TIMEOUT, run).await {
            Err(_) => Err(format!("jq expression execution timed out after {JQ_TIMEOUT:?}")),
            Ok(Err(join)) => Err(format!("jq expression execution failed: {join}")),
            Ok(Ok(result)) => result,
        };
        *object = result.map_err(|message| IgnoreFieldError::Jq {
            expression: expression.clone(),
            message,
        })?;
    }
    Ok(())
}

/// One step of a JSONPath.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(i64),
    All,
    Filter {
        path: Vec<String>,
        equal: bool,
        value: Value,
    },
}

fn parse_filter(body: &str) -> Option<Step> {
    let body = body.strip_prefix("?(")?.strip_suffix(')')?.trim();
    let (left, right, equal) = if let Some((l, r)) = body.split_once("==") {
        (l, r, true)
    } else {
        let (l, r) = body.split_once("!=")?;
        (l, r, false)
    };
    let path = left.trim().strip_prefix('@')?;
    let path: Vec<String> = path
        .split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let right = right.trim();
    let value = if let Some(s) = right
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| right.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
    {
        Value::String(s.to_string())
    } else {
        serde_json::from_str(right).ok()?
    };
    Some(Step::Filter { path, equal, value })
}

/// Parses the supported JSONPath subset; `None` for anything else.
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let path = path.strip_prefix('$').unwrap_or(path);
    let mut steps = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let key = &after[..end];
            if key == "*" {
                steps.push(Step::All);
            } else if !key.is_empty() {
                steps.push(Step::Key(key.to_string()));
            }
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            // A filter may contain ']' inside quotes only; find the closing bracket after ')'.
            let end = if after.starts_with('?') {
                after.find(")]").map(|i| i + 1)?
            } else {
                after.find(']')?
            };
            let body = after[..end].trim();
            let step = if body == "*" {
                Step::All
            } else if body.starts_with('?') {
                parse_filter(body)?
            } else if let Some(key) = body
                .strip_prefix('\'')
                .and_then(|b| b.strip_suffix('\''))
                .or_else(|| body.strip_prefix('"').and_then(|b| b.strip_suffix('"')))
            {
                Step::Key(key.to_string())
            } else {
                Step::Index(body.parse().ok()?)
            };
            steps.push(step);
            rest = &after[end + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            steps.push(Step::Key(rest[..end].to_string()));
            rest = &rest[end..];
        }
    }
    Some(steps)
}

fn lookup<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// Applies `f` to every value `steps` select in `value`.
fn select_mut(value: &mut Value, steps: &[Step], f: &mut dyn FnMut(&mut Value)) {
    let Some((step, rest)) = steps.split_first() else {
        f(value);
        return;
    };
    match (step, value) {
        (Step::Key(key), Value::Object(map)) => {
            if let Some(child) = map.get_mut(key) {
                select_mut(child, rest, f);
            }
        }
        (Step::Index(index), Value::Array(items)) => {
            let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
            let at = if *index < 0 { len + index } else { *index };
            if let Some(child) = usize::try_from(at).ok().and_then(|i| items.get_mut(i)) {
                select_mut(child, rest, f);
            }
        }
        (Step::All, Value::Array(items)) => items.iter_mut().for_each(|c| select_mut(c, rest, f)),
        (Step::All, Value::Object(map)) => map.values_mut().for_each(|c| select_mut(c, rest, f)),
        (
            Step::Filter {
                path,
                equal,
                value: expected,
            },
            Value::Array(items),
        ) => {
            for child in items.iter_mut() {
                let matched = lookup(child, path).is_some_and(|v| v == expected);
                if matched == *equal {
                    select_mut(child, rest, f);
                }
            }
        }
        _ => {}
    }
}

/// Deletes the last key of `path` from every object the rest of it selects (upstream splits
/// the path at its last `.`).
pub(crate) fn remove_json_path(object: &mut Value, path: &str) {
    let trimmed = path.trim();
    let trimmed = trimmed
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(trimmed);
    let Some((parent, last)) = trimmed.rsplit_once('.') else {
        return;
    };
    let Some(steps) = parse_path(parent) else {
        tracing::debug!(path, "ignoreFields: unsupported JSONPath");
        return;
    };
    select_mut(object, &steps, &mut |selected| {
        if let Value::Object(map) = selected {
            map.remove(last);
        }
    });
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Removes the value at an RFC 6901 pointer; a missing path is not an error.
pub(crate) fn remove_json_pointer(object: &mut Value, pointer: &str) -> Result<(), String> {
    if pointer.is_empty() {
        return Err("cannot remove the whole document".to_string());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(format!(
            "invalid JSON pointer {pointer:?}: it must start with '/'"
        ));
    };
    let tokens: Vec<String> = rest.split('/').map(unescape).collect();
    let Some((last, parents)) = tokens.split_last() else {
        return Ok(());
    };
    let mut current = object;
    for token in parents {
        let next = match current {
            Value::Object(map) => map.get_mut(token),
            Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
            _ => None,
        };
        match next {
            Some(next) => current = next,
            None => return Ok(()),
        }
    }
    match current {
        Value::Object(map) => {
            map.remove(last);
        }
        Value::Array(items) => {
            if let Some(index) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                items.remove(index);
            }
        }
        _ => {}
    }
    Ok(())
}

/// `del(<expression>)` over `input` with jaq; exactly one object must come out.
fn remove_jq(input: &Value, expression: &str) -> Result<Value, String> {
    use jaq_core::load::{Arena, File, Loader};
    use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
    use jaq_json::Val;

    let code = format!("del({expression})");
    let program = File {
        code: code.as_str(),
        path: (),
    };
    let defs = jaq_core::defs().chain(jaq_std::defs()).chain(jaq_json::defs());
    let funs = jaq_core::funs().chain(jaq_std::funs()).chain(jaq_json::funs());
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let modules = loader.load(&arena, program).map_err(|errors| {
        format!(
            "failed to parse jq expression: {:?}",
            errors.iter().map(|(_, e)| e).collect::<Vec<_>>()
        )
    })?;
    let filter = Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errors| {
            format!(
                "failed to compile jq expression: {:?}",
                errors.iter().map(|(_, e)| e).collect::<Vec<_>>()
            )
        })?;
    let input: Val = serde_json::from_value(input.clone()).map_err(|e| e.to_string())?;
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let mut out = filter.id.run((ctx, input)).map(unwrap_valr);
    let first = match out.next() {
        None => return Err("jq expression did not return any data".to_string()),
        Some(Err(error)) => return Err(format!("jq expression returned error: {error}")),
        Some(Ok(value)) => value,
    };
    if out.next().is_some() {
        return Err("jq expression returned multiple objects".to_string());
    }
    let result: Value = serde_json::from_str(&first.to_string()).map_err(|e| e.to_string())?;
    if !result.is_object() {
        return Err("jq expression result is not a valid object".to_string());
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment() -> Value {
        json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "b:1"}
        ]}}}})
    }

    #[test]
    fn json_path_removes_the_last_key() {
        let mut d = deployment();
        remove_json_path(&mut d, ".spec.replicas");
        assert!(d["spec"].get("replicas").is_none());
        remove_json_path(&mut d, ".spec.template.spec.containers[0].env");
        assert!(
            d["spec"]["template"]["spec"]["containers"][0]
                .get("env")
                .is_none()
        );
        remove_json_path(&mut d, ".spec.template.spec.containers[*].image");
        assert!(
            d["spec"]["template"]["spec"]["containers"][1]
                .get("image")
                .is_none()
        );
        remove_json_path(&mut d, ".does.not.exist");
    }

    #[test]
    fn json_path_filters() {
        let mut d = deployment();
        remove_json_path(
            &mut d,
            r#"{.spec.template.spec.containers[?(@.name=="b")].image}"#,
        );
        assert!(
            d["spec"]["template"]["spec"]["containers"][1]
                .get("image")
                .is_none()
        );
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "a:1");
    }

    #[test]
    fn json_pointers() {
        let mut d = deployment();
        remove_json_pointer(&mut d, "/spec/replicas").unwrap();
        assert!(d["spec"].get("replicas").is_none());
        remove_json_pointer(&mut d, "/spec/template/spec/containers/0/env").unwrap();
        assert!(
            d["spec"]["template"]["spec"]["containers"][0]
                .get("env")
                .is_none()
        );
        remove_json_pointer(&mut d, "/spec/missing/deeper").unwrap();
        assert!(remove_json_pointer(&mut d, "spec").is_err());
    }

    #[test]
    fn jq_deletes_and_reports_errors() {
        let out = remove_jq(&deployment(), ".spec.template.spec.containers[].env").unwrap();
        assert!(
            out["spec"]["template"]["spec"]["containers"][0]
                .get("env")
                .is_none()
        );
        assert_eq!(out["spec"]["replicas"], 3);
        let out = remove_jq(
            &deployment(),
            r#".spec.template.spec.containers[] | select(.name == "b") | .image"#,
        )
        .unwrap();
        assert!(
            out["spec"]["template"]["spec"]["containers"][1]
                .get("image")
                .is_none()
        );
        assert!(
            remove_jq(&deployment(), ".spec[[[")
                .unwrap_err()
                .starts_with("failed to parse")
        );
    }

    #[tokio::test]
    async fn remove_wraps_errors_with_the_expression() {
        let mut d = deployment();
        let field = IgnoreField {
            jq_path_expressions: Some(vec!["...invalid(".into()]),
            ..IgnoreField::default()
        };
        let error = remove(&mut d, &field).await.unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("JQ expression error in '...invalid(':"),
            "{error}"
        );
    }
}
