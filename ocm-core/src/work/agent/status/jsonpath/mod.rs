//! Kubernetes' JSONPath templates (`kubectl -o jsonpath`), as the work agent reads status
//! feedback with them: `{.status.conditions[?(@.type=="Ready")].status}`.
//!
//! This is kube's dialect, not RFC 9535: a template is text with `{…}` actions; an action is a
//! chain of fields (`.a`, `['a']`), wildcards (`.*`, `[*]`), indexes and slices (`[0]`, `[-1]`,
//! `[1:3:2]`), unions (`[0,2]`), recursive descent (`..a`), filters (`[?(@.a == "x")]`,
//! `[?(@.a)]`) and literals. Evaluation follows client-go's rules: a missing key yields nothing
//! (when missing keys are allowed) but an index out of range or indexing a non-list is an error;
//! filters compare one value with one value, integers with integers, floats with floats,
//! strings with strings (`<`/`>` only for numbers and strings). `range`/`end` (used for
//! printing loops) are not supported: they have no meaning for reading a value.

use std::borrow::Cow;

use serde_json::Value;

use self::parse::Parser;

mod parse;

/// Why a JSONPath template could not be parsed or evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonPathError {
    /// The template is not valid JSONPath.
    #[error("{0}")]
    Parse(String),
    /// The template does not fit the data (a list index out of range, a filter on a map, …).
    #[error("{0}")]
    Evaluate(String),
}

type Result<T> = std::result::Result<T, JsonPathError>;

/// The bounds of an index or slice `[start:end:step]`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Bound {
    known: bool,
    value: i64,
    /// `end` computed from `start` for a plain index (`[n]` means `[n:n+1]`).
    derived: bool,
}

/// The comparison of a filter.
#[derive(Debug, Clone, PartialEq)]
enum Operator {
    /// An operator client-go parses but cannot evaluate (`=~`, `===`, …).
    Unrecognized(String),
    Exists,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Field(String),
    Wildcard,
    Recursive,
    Slice([Bound; 3]),
    Union(Vec<Vec<Node>>),
    Filter {
        left: Vec<Node>,
        right: Vec<Node>,
        operator: Operator,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Identifier(String),
}

/// One piece of a template: literal text, or an action between braces.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Action(Vec<Node>),
}

/// A parsed JSONPath template.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    pieces: Vec<Piece>,
    allow_missing_keys: bool,
}

impl JsonPath {
    /// Parses a template such as `{.status.replicas}`.
    pub fn parse(template: &str) -> Result<Self> {
        Ok(Self {
            pieces: Parser::new(template).template()?,
            allow_missing_keys: false,
        })
    }

    /// Whether a missing map key yields no value instead of an error `"<key> is not found"`.
    #[must_use]
    pub fn allow_missing_keys(mut self, allow: bool) -> Self {
        self.allow_missing_keys = allow;
        self
    }

    /// The values each piece of the template selects from `data`, one list per piece (literal
    /// text yields itself).
    pub fn find_results<'a>(&self, data: &'a Value) -> Result<Vec<Vec<Cow<'a, Value>>>> {
        let mut results = Vec::with_capacity(self.pieces.len());
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => results.push(vec![Cow::Owned(Value::String(text.clone()))]),
                Piece::Action(nodes) => {
                    results.push(self.walk_list(vec![Cow::Borrowed(data)], nodes)?);
                }
            }
        }
        Ok(results)
    }

    fn walk_list<'a>(&self, mut values: Vec<Cow<'a, Value>>, nodes: &[Node]) -> Result<Vec<Cow<'a, Value>>> {
        for node in nodes {
            values = self.walk(values, node)?;
        }
        Ok(values)
    }

    fn walk<'a>(&self, input: Vec<Cow<'a, Value>>, node: &Node) -> Result<Vec<Cow<'a, Value>>> {
        match node {
            Node::Text(text) => Ok(vec![Cow::Owned(Value::String(text.clone()))]),
            Node::Int(i) => Ok(input.iter().map(|_| Cow::Owned(Value::from(*i))).collect()),
            Node::Float(f) => Ok(input.iter().map(|_| Cow::Owned(Value::from(*f))).collect()),
            Node::Bool(b) => Ok(input.iter().map(|_| Cow::Owned(Value::Bool(*b))).collect()),
            Node::Field(name) => self.field(input, name),
            Node::Wildcard => Ok(input.into_iter().flat_map(children).collect()),
            Node::Recursive => Ok(recursive(input)),
            Node::Slice(bounds) => slice(input, bounds),
            Node::Union(branches) => {
                let mut out = Vec::new();
                for branch in branches {
                    out.extend(self.walk_list(input.clone(), branch)?);
                }
                Ok(out)
            }
            Node::Filter {
                left,
                right,
                operator,
            } => self.filter(input, left, right, operator),
            Node::Identifier(name) => Err(JsonPathError::Evaluate(match name.as_str() {
                "range" | "end" => format!("{name} is not supported when reading values"),
                _ => format!("unrecognized identifier {name}"),
            })),
        }
    }

    fn field<'a>(&self, input: Vec<Cow<'a, Value>>, name: &str) -> Result<Vec<Cow<'a, Value>>> {
        let mut out = Vec::new();
        for value in input {
            match value {
                Cow::Borrowed(Value::Object(map)) => {
                    if let Some(v) = map.get(name) {
                        out.push(Cow::Borrowed(v));
                    }
                }
                Cow::Owned(Value::Object(mut map)) => {
                    if let Some(v) = map.remove(name) {
                        out.push(Cow::Owned(v));
                    }
                }
                _ => {}
            }
        }
        if out.is_empty() && !self.allow_missing_keys {
            return Err(JsonPathError::Evaluate(format!("{name} is not found")));
        }
        Ok(out)
    }

    fn filter<'a>(
        &self,
        input: Vec<Cow<'a, Value>>,
        left: &[Node],
        right: &[Node],
        operator: &Operator,
    ) -> Result<Vec<Cow<'a, Value>>> {
        let mut out = Vec::new();
        for value in input {
            let items: Vec<Cow<'a, Value>> = match value {
                Cow::Borrowed(Value::Array(items)) => items.iter().map(Cow::Borrowed).collect(),
                Cow::Owned(Value::Array(items)) => items.into_iter().map(Cow::Owned).collect(),
                other => {
                    return Err(JsonPathError::Evaluate(format!(
                        "{} is not array or slice and cannot be filtered",
                        go_value(&other)
                    )));
                }
            };
            for item in items {
                let lefts = self.walk_list(vec![item.clone()], left);
                if *operator == Operator::Exists {
                    if lefts.is_ok_and(|l| !l.is_empty()) {
                        out.push(item);
                    }
                    continue;
                }
                let Some(l) = single(lefts?)? else { continue };
                let Some(r) = single(self.walk_list(vec![item.clone()], right)?)? else {
                    continue;
                };
                if compare(&l, &r, operator)? {
                    out.push(item);
                }
            }
        }
        Ok(out)
    }
}

/// The one value a side of a filter comparison selects, `None` for none.
fn single(mut values: Vec<Cow<'_, Value>>) -> Result<Option<Cow<'_, Value>>> {
    match values.len() {
        0 => Ok(None),
        1 => Ok(values.pop()),
        _ => Err(JsonPathError::Evaluate(
            "can only compare one element at a time".into(),
        )),
    }
}

/// The members of a map or list (nothing for a scalar or null).
fn children(value: Cow<'_, Value>) -> Vec<Cow<'_, Value>> {
    match value {
        Cow::Borrowed(Value::Object(map)) => map.values().map(Cow::Borrowed).collect(),
        Cow::Borrowed(Value::Array(items)) => items.iter().map(Cow::Borrowed).collect(),
        Cow::Owned(Value::Object(map)) => map.into_iter().map(|(_, v)| Cow::Owned(v)).collect(),
        Cow::Owned(Value::Array(items)) => items.into_iter().map(Cow::Owned).collect(),
        _ => Vec::new(),
    }
}

/// Every map and list at or below the input values (what `..` selects before its field).
fn recursive(input: Vec<Cow<'_, Value>>) -> Vec<Cow<'_, Value>> {
    let mut out = Vec::new();
    for value in input {
        let members = children(value.clone());
        if !members.is_empty() {
            out.push(value);
            out.extend(recursive(members));
        }
    }
    out
}

fn slice<'a>(input: Vec<Cow<'a, Value>>, bounds: &[Bound; 3]) -> Result<Vec<Cow<'a, Value>>> {
    let mut out = Vec::new();
    for value in input {
        let items: Vec<Cow<'a, Value>> = match value {
            Cow::Borrowed(Value::Null) | Cow::Owned(Value::Null) => continue,
            Cow::Borrowed(Value::Array(items)) => items.iter().map(Cow::Borrowed).collect(),
            Cow::Owned(Value::Array(items)) => items.into_iter().map(Cow::Owned).collect(),
            other => {
                return Err(JsonPathError::Evaluate(format!(
                    "{} is not array or slice",
                    go_type(&other)
                )));
            }
        };
        let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
        let [first, last, step] = *bounds;
        let mut start = if first.known { first.value } else { 0 };
        if start < 0 {
            start += len;
        }
        let mut end = if last.known { last.value } else { len };
        if end < 0 || (end == 0 && last.derived) {
            end += len;
        }
        if start == end {
            return Ok(out);
        }
        if start >= len || start < 0 {
            return Err(JsonPathError::Evaluate(format!(
                "array index out of bounds: index {start}, length {len}"
            )));
        }
        if end > len || end < 0 {
            return Err(JsonPathError::Evaluate(format!(
                "array index out of bounds: index {}, length {len}",
                end - 1
            )));
        }
        if start > end {
            return Err(JsonPathError::Evaluate(format!(
                "starting index {start} is greater than ending index {end}"
            )));
        }
        let step = if step.known {
            if step.value <= 0 {
                return Err(JsonPathError::Evaluate("step must be > 0".into()));
            }
            step.value
        } else {
            1
        };
        let (start, end, step) = (
            usize::try_from(start).unwrap_or(0),
            usize::try_from(end).unwrap_or(0),
            usize::try_from(step).unwrap_or(1),
        );
        out.extend(items.into_iter().skip(start).take(end - start).step_by(step));
    }
    Ok(out)
}

/// The comparison class of a value, as Go's template package sees decoded JSON.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Bool,
    Int,
    Uint,
    Float,
    String,
}

fn kind(value: &Value) -> Result<Kind> {
    match value {
        Value::Bool(_) => Ok(Kind::Bool),
        Value::String(_) => Ok(Kind::String),
        Value::Number(n) if n.is_i64() => Ok(Kind::Int),
        Value::Number(n) if n.is_u64() => Ok(Kind::Uint),
        Value::Number(_) => Ok(Kind::Float),
        _ => Err(JsonPathError::Evaluate("invalid type for comparison".into())),
    }
}

fn equal(l: &Value, r: &Value) -> Result<bool> {
    let (kl, kr) = (kind(l)?, kind(r)?);
    match (kl, kr) {
        (Kind::Int | Kind::Uint, Kind::Int | Kind::Uint) => Ok(as_i128(l) == as_i128(r)),
        (a, b) if a != b => Err(JsonPathError::Evaluate(
            "incompatible types for comparison".into(),
        )),
        (Kind::Float, _) => Ok(l.as_f64() == r.as_f64()),
        _ => Ok(l == r),
    }
}

fn less(l: &Value, r: &Value) -> Result<bool> {
    let (kl, kr) = (kind(l)?, kind(r)?);
    match (kl, kr) {
        (Kind::Int | Kind::Uint, Kind::Int | Kind::Uint) => Ok(as_i128(l) < as_i128(r)),
        (a, b) if a != b => Err(JsonPathError::Evaluate(
            "incompatible types for comparison".into(),
        )),
        (Kind::Bool, _) => Err(JsonPathError::Evaluate("invalid type for comparison".into())),
        (Kind::Float, _) => Ok(l.as_f64() < r.as_f64()),
        (Kind::String, _) => Ok(l.as_str() < r.as_str()),
        _ => Ok(false),
    }
}

fn as_i128(value: &Value) -> Option<i128> {
    value
        .as_i64()
        .map(i128::from)
        .or_else(|| value.as_u64().map(i128::from))
}

fn compare(l: &Value, r: &Value, operator: &Operator) -> Result<bool> {
    match operator {
        Operator::Unrecognized(op) => Err(JsonPathError::Evaluate(format!(
            "unrecognized filter operator {op}"
        ))),
        Operator::Exists => Ok(true),
        Operator::Eq => equal(l, r),
        Operator::Ne => equal(l, r).map(|e| !e),
        Operator::Lt => less(l, r),
        Operator::Le => Ok(less(l, r)? || equal(l, r)?),
        Operator::Gt => Ok(!(less(l, r)? || equal(l, r)?)),
        Operator::Ge => less(l, r).map(|lt| !lt),
    }
}

/// The Go type name of a decoded JSON value, as client-go's messages print it.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// A value as Go's `%v` prints decoded JSON (close enough for messages).
fn go_value(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(go_value).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => {
            let mut entries: Vec<String> = map.iter().map(|(k, v)| format!("{k}:{}", go_value(v))).collect();
            entries.sort();
            format!("map[{}]", entries.join(" "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
