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

/// A character cursor over a template, in client-go's parsing steps.
struct Parser<'t> {
    input: &'t str,
    pos: usize,
    start: usize,
}

fn is_terminator(c: Option<char>) -> bool {
    matches!(
        c,
        None | Some(' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}')
    )
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Parses the text of a nested action (a union member, a filter side, a quoted key).
fn action(text: &str) -> Result<Vec<Node>> {
    let pieces = Parser::new(&format!("{{{text}}}")).template()?;
    match pieces.into_iter().next() {
        Some(Piece::Action(nodes)) => Ok(nodes),
        _ => Err(JsonPathError::Parse(format!("invalid expression {text}"))),
    }
}

impl<'t> Parser<'t> {
    fn new(input: &'t str) -> Self {
        Self {
            input,
            pos: 0,
            start: 0,
        }
    }

    fn rest(&self) -> &'t str {
        &self.input[self.pos..]
    }

    fn next(&mut self) -> Option<char> {
        let c = self.rest().chars().next()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn consume(&mut self) -> &'t str {
        let text = &self.input[self.start..self.pos];
        self.start = self.pos;
        text
    }

    fn template(mut self) -> Result<Vec<Piece>> {
        let mut pieces = Vec::new();
        loop {
            if self.rest().starts_with('{') {
                if self.pos > self.start {
                    pieces.push(Piece::Text(self.consume().to_string()));
                }
                self.pos += 1;
                self.consume();
                let mut nodes = Vec::new();
                self.inside_action(&mut nodes)?;
                pieces.push(Piece::Action(nodes));
                continue;
            }
            if self.next().is_none() {
                break;
            }
        }
        if self.pos > self.start {
            pieces.push(Piece::Text(self.consume().to_string()));
        }
        Ok(pieces)
    }

    /// Parses nodes up to and including the closing brace of an action.
    fn inside_action(&mut self, nodes: &mut Vec<Node>) -> Result<()> {
        loop {
            let rest = self.rest();
            if rest.starts_with('}') {
                self.pos += 1;
                self.consume();
                return Ok(());
            }
            if rest.starts_with("[?(") {
                self.filter(nodes)?;
                continue;
            }
            if rest.starts_with("..") {
                if nodes.last() == Some(&Node::Recursive) {
                    return Err(JsonPathError::Parse("invalid multiple recursive descent".into()));
                }
                self.pos += 2;
                self.consume();
                nodes.push(Node::Recursive);
                if self.peek().is_some_and(is_alphanumeric) {
                    self.field(nodes);
                }
                continue;
            }
            match self.next() {
                None | Some('\r' | '\n') => {
                    return Err(JsonPathError::Parse("unclosed action".into()));
                }
                Some(' ' | '@' | '$') => {
                    self.consume();
                }
                Some('[') => self.array(nodes)?,
                Some(quote @ ('"' | '\'')) => self.quote(nodes, quote)?,
                Some('.') => self.field(nodes),
                Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                    self.pos -= c.len_utf8();
                    self.number(nodes)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.pos -= c.len_utf8();
                    self.identifier(nodes);
                }
                Some(c) => {
                    return Err(JsonPathError::Parse(format!(
                        "unrecognized character in action: U+{:04X} '{c}'",
                        u32::from(c)
                    )));
                }
            }
        }
    }

    fn identifier(&mut self, nodes: &mut Vec<Node>) {
        while !is_terminator(self.peek()) {
            self.next();
        }
        match self.consume() {
            "true" => nodes.push(Node::Bool(true)),
            "false" => nodes.push(Node::Bool(false)),
            name => nodes.push(Node::Identifier(name.to_string())),
        }
    }

    fn number(&mut self, nodes: &mut Vec<Node>) -> Result<()> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        while self.peek().is_some_and(|c| c == '.' || c.is_ascii_digit()) {
            self.next();
        }
        let text = self.consume();
        if let Ok(i) = text.parse::<i64>() {
            nodes.push(Node::Int(i));
        } else if let Ok(f) = text.parse::<f64>() {
            nodes.push(Node::Float(f));
        } else {
            return Err(JsonPathError::Parse(format!("cannot parse number {text}")));
        }
        Ok(())
    }

    fn field(&mut self, nodes: &mut Vec<Node>) {
        self.consume();
        loop {
            let c = self.peek();
            if c == Some('\\') {
                self.next();
                self.next();
            } else if is_terminator(c) {
                break;
            } else {
                self.next();
            }
        }
        match self.consume() {
            "*" => nodes.push(Node::Wildcard),
            name => nodes.push(Node::Field(name.replace('\\', ""))),
        }
    }

    fn quote(&mut self, nodes: &mut Vec<Node>, quote: char) -> Result<()> {
        loop {
            match self.next() {
                None | Some('\n') => {
                    return Err(JsonPathError::Parse("unterminated quoted string".into()));
                }
                Some(c) if c == quote && !self.input[..self.pos - 1].ends_with('\\') => break,
                Some(_) => {}
            }
        }
        let raw = self.consume();
        nodes.push(Node::Text(unquote(raw).ok_or_else(|| {
            JsonPathError::Parse(format!("unquote string {raw} error invalid syntax"))
        })?));
        Ok(())
    }

    fn array(&mut self, nodes: &mut Vec<Node>) -> Result<()> {
        loop {
            match self.next() {
                None | Some('\n') => return Err(JsonPathError::Parse("unterminated array".into())),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let raw = self.consume();
        let mut text = &raw[1..raw.len() - 1];
        if text == "*" {
            text = ":";
        }
        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() > 1 {
            let mut branches = Vec::with_capacity(parts.len());
            for part in parts {
                branches.push(action(&format!("[{}]", part.trim_matches(' ')))?);
            }
            nodes.push(Node::Union(branches));
            return Ok(());
        }
        if let Some(key) = text
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .filter(|k| !k.contains('\''))
        {
            nodes.extend(action(&format!(".{key}"))?);
            return Ok(());
        }
        nodes.push(Node::Slice(slice_bounds(text).ok_or_else(|| {
            JsonPathError::Parse(format!("invalid array index {text}"))
        })?));
        Ok(())
    }

    fn filter(&mut self, nodes: &mut Vec<Node>) -> Result<()> {
        self.pos += 3;
        self.consume();
        let (mut begin, mut end) = (false, false);
        let mut pair = '"';
        loop {
            match self.next() {
                None | Some('\n') => {
                    return Err(JsonPathError::Parse("unterminated filter".into()));
                }
                Some(c @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = c;
                    } else if c == pair && !self.input[..self.pos - 1].ends_with('\\') {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                Some(_) => {}
            }
        }
        if self.next() != Some(']') {
            return Err(JsonPathError::Parse("unclosed array expect ]".into()));
        }
        let raw = self.consume();
        let text = &raw[..raw.len() - 2];
        let operator_start = text.find(['!', '<', '>', '=']);
        let Some(op_start) = operator_start.filter(|&i| i > 0) else {
            nodes.push(Node::Filter {
                left: action(text)?,
                right: Vec::new(),
                operator: Operator::Exists,
            });
            return Ok(());
        };
        let op_len = text[op_start..]
            .find(|c: char| !matches!(c, '!' | '<' | '>' | '='))
            .unwrap_or(text.len() - op_start);
        let (left, operator, right) = (
            &text[..op_start],
            &text[op_start..op_start + op_len],
            &text[op_start + op_len..],
        );
        if right.is_empty() {
            nodes.push(Node::Filter {
                left: action(text)?,
                right: Vec::new(),
                operator: Operator::Exists,
            });
            return Ok(());
        }
        let left = action(left)?;
        let right = action(right)?;
        let operator = match operator {
            "==" => Operator::Eq,
            "!=" => Operator::Ne,
            "<" => Operator::Lt,
            ">" => Operator::Gt,
            "<=" => Operator::Le,
            ">=" => Operator::Ge,
            other => Operator::Unrecognized(other.to_string()),
        };
        nodes.push(Node::Filter {
            left,
            right,
            operator,
        });
        Ok(())
    }
}

/// `[start:end:step]` as client-go reads it; `None` when the text is not a slice.
fn slice_bounds(text: &str) -> Option<[Bound; 3]> {
    let mut parts = text.splitn(3, ':');
    let texts = [parts.next(), parts.next(), parts.next()];
    let number_ok = |s: &str| {
        let digits = s.strip_prefix('-').unwrap_or(s);
        digits.chars().all(|c| c.is_ascii_digit())
    };
    let mut bounds = [Bound::default(); 3];
    for (i, part) in texts.iter().enumerate() {
        match part {
            Some(s) if !number_ok(s) => return None,
            Some("") if i == 0 => {}
            Some("") => bounds[i].known = false,
            Some(s) => {
                bounds[i] = Bound {
                    known: true,
                    value: s.parse().ok()?,
                    derived: false,
                };
            }
            None if i == 1 => {
                bounds[1] = Bound {
                    known: true,
                    value: bounds[0].value + 1,
                    derived: true,
                };
            }
            None => {}
        }
    }
    Some(bounds)
}

/// The text of a quoted string with Go's escapes (`\"`, `\\`, `\n`, `\t`, `\u00e9` …) resolved.
fn unquote(raw: &str) -> Option<String> {
    let quote = raw.chars().next()?;
    let body = raw.strip_prefix(quote)?.strip_suffix(quote)?;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            if c == quote {
                return None;
            }
            out.push(c);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn find(path: &str, data: &Value) -> Result<Vec<Value>> {
        let parsed = JsonPath::parse(&format!("{{{path}}}"))?.allow_missing_keys(true);
        let results = parsed.find_results(data)?;
        Ok(results
            .into_iter()
            .next()
            .unwrap_or_default()
            .into_iter()
            .map(Cow::into_owned)
            .collect())
    }

    fn pod() -> Value {
        json!({
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app.kubernetes.io/name": "web"}},
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "Initialized", "status": "True"},
                    {"type": "Ready", "status": "False", "reason": "NotReady"},
                ],
                "containerStatuses": [
                    {"name": "a", "restartCount": 1, "ready": true},
                    {"name": "b", "restartCount": 3, "ready": false},
                ],
                "ratio": 0.5,
                "nothing": null,
            }
        })
    }

    #[test]
    fn fields_and_missing_keys() {
        assert_eq!(find(".status.phase", &pod()).unwrap(), vec![json!("Running")]);
        assert!(find(".status.missing.deeper", &pod()).unwrap().is_empty());
        assert_eq!(find(".status.nothing", &pod()).unwrap(), vec![Value::Null]);
        let strict = JsonPath::parse("{.status.missing}").unwrap();
        assert_eq!(
            strict.find_results(&pod()).unwrap_err().to_string(),
            "missing is not found"
        );
    }

    #[test]
    fn filters_select_list_members() {
        assert_eq!(
            find(r#".status.conditions[?(@.type=="Ready")].status"#, &pod()).unwrap(),
            vec![json!("False")]
        );
        assert_eq!(
            find(r#".status.conditions[?(@.type == 'Initialized')].status"#, &pod()).unwrap(),
            vec![json!("True")]
        );
        assert_eq!(
            find(".status.containerStatuses[?(@.restartCount > 1)].name", &pod()).unwrap(),
            vec![json!("b")]
        );
        assert_eq!(
            find(".status.containerStatuses[?(@.restartCount<=1)].name", &pod()).unwrap(),
            vec![json!("a")]
        );
        assert_eq!(
            find(".status.conditions[?(@.reason)].type", &pod()).unwrap(),
            vec![json!("Ready")]
        );
        assert_eq!(
            find(".status.containerStatuses[?(@.ready==true)].name", &pod()).unwrap(),
            vec![json!("a")]
        );
        assert_eq!(
            find(r#".status.conditions[?(@.type=="Gone")].status"#, &pod()).unwrap(),
            Vec::<Value>::new()
        );
    }

    #[test]
    fn filter_comparisons_follow_go_templates() {
        let err = find(
            r#".status.containerStatuses[?(@.restartCount=="1")].name"#,
            &pod(),
        );
        assert_eq!(err.unwrap_err().to_string(), "incompatible types for comparison");
        let err = find(".status.containerStatuses[?(@.ready<true)].name", &pod());
        assert_eq!(err.unwrap_err().to_string(), "invalid type for comparison");
        let err = find(r#".status[?(@.type=="x")]"#, &pod());
        assert!(
            err.unwrap_err()
                .to_string()
                .ends_with("is not array or slice and cannot be filtered")
        );
    }

    #[test]
    fn indexes_slices_and_unions() {
        let data = json!({"l": [0, 1, 2, 3, 4]});
        assert_eq!(find(".l[0]", &data).unwrap(), vec![json!(0)]);
        assert_eq!(find(".l[-1]", &data).unwrap(), vec![json!(4)]);
        assert_eq!(find(".l[1:3]", &data).unwrap(), vec![json!(1), json!(2)]);
        assert_eq!(
            find(".l[::2]", &data).unwrap(),
            vec![json!(0), json!(2), json!(4)]
        );
        assert_eq!(find(".l[*]", &data).unwrap().len(), 5);
        assert_eq!(find(".l[0,3]", &data).unwrap(), vec![json!(0), json!(3)]);
        assert_eq!(find(".l[2:2]", &data).unwrap(), Vec::<Value>::new());
        assert_eq!(
            find(".l[9]", &data).unwrap_err().to_string(),
            "array index out of bounds: index 9, length 5"
        );
        assert_eq!(
            find(".l[1:9]", &data).unwrap_err().to_string(),
            "array index out of bounds: index 8, length 5"
        );
        assert_eq!(
            find(".l[0:3:0]", &data).unwrap_err().to_string(),
            "step must be > 0"
        );
        assert_eq!(
            find(".l.x[0]", &json!({"l": {"x": "s"}}))
                .unwrap_err()
                .to_string(),
            "string is not array or slice"
        );
    }

    #[test]
    fn quoted_keys_wildcards_and_recursion() {
        assert_eq!(
            find(".metadata.labels['app\\.kubernetes\\.io/name']", &pod()).unwrap(),
            vec![json!("web")]
        );
        assert_eq!(
            find(".metadata.labels.app\\.kubernetes\\.io/name", &pod()).unwrap(),
            vec![json!("web")]
        );
        assert_eq!(find(".metadata['name']", &pod()).unwrap(), vec![json!("p")]);
        let names = find("..name", &pod()).unwrap();
        assert_eq!(names, vec![json!("p"), json!("a"), json!("b")]);
        assert_eq!(find(".metadata.*", &pod()).unwrap().len(), 2);
        assert_eq!(find("$.status.phase", &pod()).unwrap(), vec![json!("Running")]);
    }

    #[test]
    fn templates_mix_text_and_actions() {
        let parsed = JsonPath::parse("phase={.status.phase} ratio={.status.ratio}").unwrap();
        let data = pod();
        let results = parsed.find_results(&data).unwrap();
        let flat: Vec<Value> = results.into_iter().flatten().map(Cow::into_owned).collect();
        assert_eq!(
            flat,
            vec![json!("phase="), json!("Running"), json!(" ratio="), json!(0.5)]
        );
        assert_eq!(
            JsonPath::parse("{\"quoted\"}")
                .unwrap()
                .find_results(&pod())
                .unwrap()[0][0]
                .as_ref(),
            &json!("quoted")
        );
    }

    #[test]
    fn parse_errors() {
        for (path, message) in [
            ("{.a", "unclosed action"),
            ("{.a[0}", "unterminated array"),
            ("{.a[x]}", "invalid array index x"),
            ("{.a[?(@.b==1}", "unterminated filter"),
            ("{.a]}", "unrecognized character in action: U+005D ']'"),
            ("{.a[?(@.b=~1)]}", "unrecognized character in action: U+007E '~'"),
        ] {
            assert_eq!(
                JsonPath::parse(path).map(|_| ()).unwrap_err().to_string(),
                message,
                "{path}"
            );
        }
        assert!(JsonPath::parse("{range .items[*]}").is_ok());
        assert!(JsonPath::parse("{..}").is_ok());
        assert_eq!(
            find(".status.conditions[?(@.type===1)]", &pod())
                .unwrap_err()
                .to_string(),
            "unrecognized filter operator ==="
        );
        assert_eq!(
            find("range", &pod()).unwrap_err().to_string(),
            "range is not supported when reading values"
        );
    }
}
