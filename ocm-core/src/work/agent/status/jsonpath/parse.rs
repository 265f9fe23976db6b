//! Parsing JSONPath templates into pieces and nodes, following client-go's parser step by step
//! (including its quirks: `['a.b']` is read as the fields `a` and `b`, a filter's operator is the
//! first run of `!<>=` characters).

use super::{Bound, JsonPathError, Node, Operator, Piece, Result};

/// A character cursor over a template, in client-go's parsing steps.
pub(super) struct Parser<'t> {
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
    pub(super) fn new(input: &'t str) -> Self {
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

    pub(super) fn template(mut self) -> Result<Vec<Piece>> {
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
