//! YAML output as kube-apiserver writes it (`Accept: application/yaml`).
//!
//! kube-apiserver converts its JSON to YAML with go-yaml v2, so `kubectl get -o yaml` users see that
//! library's layout: map keys in its natural order (non-letters first, digit runs compared as
//! numbers), sequences not indented under their key, `{}`/`[]` for empty collections, strings
//! quoted only where they would read as something else (`"1"`, `"true"`, timestamps), multi-line
//! strings as literal blocks, and long plain or quoted strings folded at spaces after column 80.
//! This module reproduces that layout for JSON values.

mod scalar;

use serde_json::Value;

pub use self::scalar::natural_cmp;
use self::scalar::{Style, escape, needs_escape, number, select_style};

/// go-yaml's preferred line width.
const BEST_WIDTH: usize = 80;

/// Renders a JSON value as a YAML document (ending with a newline).
pub fn to_string(value: &Value) -> String {
    let mut out = Emitter::default();
    match value {
        Value::Object(map) if !map.is_empty() => out.mapping(value, 0),
        Value::Array(items) if !items.is_empty() => out.sequence(value, 0),
        other => {
            out.inline_value(other, 0);
            out.newline();
        }
    }
    out.text
}

#[derive(Default)]
struct Emitter {
    text: String,
    column: usize,
}

impl Emitter {
    fn put(&mut self, s: &str) {
        self.text.push_str(s);
        self.column += s.chars().count();
    }

    fn newline(&mut self) {
        self.text.push('\n');
        self.column = 0;
    }

    fn indent_to(&mut self, indent: usize) {
        if self.column > 0 {
            self.newline();
        }
        self.put(&" ".repeat(indent));
    }

    /// A block mapping whose keys start at `indent` (the first key on the current line when the
    /// cursor is already there, as after `- `).
    fn mapping(&mut self, value: &Value, indent: usize) {
        let Value::Object(map) = value else { return };
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort_by(|a, b| natural_cmp(a, b));
        for (i, key) in keys.into_iter().enumerate() {
            if i > 0 || self.column != indent {
                self.indent_to(indent);
            }
            self.scalar_string(key, indent, false);
            self.put(":");
            let child = &map[key.as_str()];
            match child {
                Value::Object(m) if !m.is_empty() => {
                    self.newline();
                    self.mapping(child, indent + 2);
                }
                Value::Array(items) if !items.is_empty() => {
                    self.newline();
                    self.sequence(child, indent);
                }
                other => {
                    self.put(" ");
                    self.inline_value(other, indent + 2);
                    self.newline();
                }
            }
        }
    }

    /// A block sequence whose dashes are at `indent`.
    fn sequence(&mut self, value: &Value, indent: usize) {
        let Value::Array(items) = value else { return };
        for (i, item) in items.iter().enumerate() {
            if i > 0 || self.column != indent {
                self.indent_to(indent);
            }
            self.put("- ");
            match item {
                Value::Object(m) if !m.is_empty() => self.mapping(item, indent + 2),
                Value::Array(a) if !a.is_empty() => self.sequence(item, indent + 2),
                other => {
                    self.inline_value(other, indent + 2);
                    self.newline();
                }
            }
        }
    }

    /// A scalar or empty collection after `key: ` or `- `; folded lines continue at `indent`.
    fn inline_value(&mut self, value: &Value, indent: usize) {
        match value {
            Value::Null => self.put("null"),
            Value::Bool(b) => self.put(if *b { "true" } else { "false" }),
            Value::Number(n) => {
                let text = number(n);
                self.put(&text);
            }
            Value::String(s) => self.scalar_string(s, indent, true),
            Value::Object(_) => self.put("{}"),
            Value::Array(_) => self.put("[]"),
        }
    }

    fn scalar_string(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        let simple_key = !allow_breaks;
        match select_style(s, simple_key) {
            Style::Plain => self.write_plain(s, indent, allow_breaks),
            Style::Single => self.write_single(s, indent, allow_breaks),
            Style::Double => self.write_double(s, indent, allow_breaks),
            Style::Literal => self.write_literal(s, indent),
        }
    }

    fn write_plain(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !next_space {
                    self.indent_to(indent);
                } else {
                    self.put(" ");
                }
                spaces = true;
            } else {
                self.put(c.encode_utf8(&mut [0; 4]));
                spaces = false;
            }
        }
    }

    fn write_single(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        self.put("'");
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                    && !next_space
                {
                    self.indent_to(indent);
                } else {
                    self.put(" ");
                }
                spaces = true;
            } else {
                if c == '\'' {
                    self.put("'");
                }
                self.put(c.encode_utf8(&mut [0; 4]));
                spaces = false;
            }
        }
        self.put("'");
    }

    fn write_double(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        self.put("\"");
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if needs_escape(c) {
                let escaped = escape(c);
                self.put(&escaped);
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i != 0 && i + 1 != chars.len() {
                    self.indent_to(indent);
                    if chars.get(i + 1) == Some(&' ') {
                        self.put("\\");
                    }
                } else {
                    self.put(" ");
                }
                spaces = true;
            } else {
                self.put(c.encode_utf8(&mut [0; 4]));
                spaces = false;
            }
        }
        self.put("\"");
    }

    fn write_literal(&mut self, s: &str, indent: usize) {
        self.put("|");
        if s.starts_with(' ') || s.starts_with('\n') {
            self.put("2");
        }
        let trailing = s.len() - s.trim_end_matches('\n').len();
        match trailing {
            0 => self.put("-"),
            1 if s.len() > 1 => {}
            _ => self.put("+"),
        }
        let body = s.strip_suffix('\n').unwrap_or(s);
        for line in body.split('\n') {
            self.newline();
            if !line.is_empty() {
                self.put(&" ".repeat(indent));
                self.put(line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn layout_matches_go_yaml() {
        let v = json!({"metadata": {"name": "x", "labels": {"table": "1"}, "uid": "8d2a1b7e-0c1f-4a57-9a63-5d0e4b3c2a10",
                "creationTimestamp": "2026-11-22T08:52:04Z", "resourceVersion": "12",
                "managedFields": [{"fieldsV1": {"f:spec": {".": {}, "k:{\"type\":\"A\"}": {}}}, "manager": "m"}]},
            "spec": {"b": true, "m": 60, "n": 1, "list": [{"url": "https://example.com:6443"}], "empty": [], "s": "True"}});
        let expected = "metadata:\n  creationTimestamp: \"2026-11-22T08:52:04Z\"\n  labels:\n    table: \"1\"\n  \
managedFields:\n  - fieldsV1:\n      f:spec:\n        .: {}\n        k:{\"type\":\"A\"}: {}\n    manager: m\n  \
name: x\n  resourceVersion: \"12\"\n  uid: 8d2a1b7e-0c1f-4a57-9a63-5d0e4b3c2a10\nspec:\n  b: true\n  empty: []\n  \
list:\n  - url: https://example.com:6443\n  m: 60\n  \"n\": 1\n  s: \"True\"\n";
        assert_eq!(to_string(&v), expected);
    }

    #[test]
    fn quoting_and_blocks() {
        assert_eq!(to_string(&json!({"a": ""})), "a: \"\"\n");
        assert_eq!(to_string(&json!({"a": "x: y"})), "a: 'x: y'\n");
        assert_eq!(to_string(&json!({"a": "- x"})), "a: '- x'\n");
        assert_eq!(to_string(&json!({"a": "it's"})), "a: it's\n");
        assert_eq!(to_string(&json!({"a": "l1\nl2"})), "a: |-\n  l1\n  l2\n");
        assert_eq!(to_string(&json!({"a": "l1\n"})), "a: |\n  l1\n");
        assert_eq!(to_string(&json!({"a": "tab\there"})), "a: \"tab\\there\"\n");
        assert_eq!(
            to_string(&json!({"a": 1.5, "b": 1500000.0, "c": 0.0001})),
            "a: 1.5\nb: 1.5e+06\nc: 0.0001\n"
        );
        assert_eq!(to_string(&json!(["a", {"b": 1}])), "- a\n- b: 1\n");
    }

    #[test]
    fn long_strings_fold_after_column_80() {
        let text = "word ".repeat(30);
        let text = text.trim_end();
        let out = to_string(&json!({"description": text}));
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1, "{out}");
        assert!(lines[1].starts_with("  word"), "{out}");
        assert!(lines[0].len() <= 86, "{out}");
    }

    #[test]
    fn natural_key_order() {
        let mut keys = vec!["f:b", ".", "a10", "a9", "k:x", "A"];
        keys.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(keys, vec![".", "A", "a9", "a10", "f:b", "k:x"]);
    }
}
