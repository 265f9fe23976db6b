//! Label and field selectors in the query-string syntax (`env in (a,b),!tier`, `metadata.name=x`).
//!
//! A small parser local to the server with kube-apiserver's error texts; the workspace's shared
//! selector module in ocm-api may replace it later.

use std::collections::BTreeMap;

use serde_json::Value;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq)]
pub enum Requirement {
    /// `key`.
    Exists(String),
    /// `!key`.
    NotExists(String),
    /// `key=v`, `key==v`, `key in (..)`.
    In(String, Vec<String>),
    /// `key!=v`, `key notin (..)` (also matches objects without the key).
    NotIn(String, Vec<String>),
    /// `key gt n`.
    Gt(String, i64),
    /// `key lt n`.
    Lt(String, i64),
}

/// A parsed label selector (all requirements must hold).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(pub Vec<Requirement>);

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Not,
    Eq,
    DoubleEq,
    NotEq,
    In,
    NotInKw,
    Gt,
    Lt,
    Comma,
    Open,
    Close,
}

fn tok_text(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => s.clone(),
        Tok::Not => "!".into(),
        Tok::Eq => "=".into(),
        Tok::DoubleEq => "==".into(),
        Tok::NotEq => "!=".into(),
        Tok::In => "in".into(),
        Tok::NotInKw => "notin".into(),
        Tok::Gt => "gt".into(),
        Tok::Lt => "lt".into(),
        Tok::Comma => ",".into(),
        Tok::Open => "(".into(),
        Tok::Close => ")".into(),
    }
}

fn lex(s: &str) -> Vec<Tok> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' | '\r' => i += 1,
            ',' => {
                out.push(Tok::Comma);
                i += 1
            }
            '(' => {
                out.push(Tok::Open);
                i += 1
            }
            ')' => {
                out.push(Tok::Close);
                i += 1
            }
            '!' if chars.get(i + 1) == Some(&'=') => {
                out.push(Tok::NotEq);
                i += 2
            }
            '!' => {
                out.push(Tok::Not);
                i += 1
            }
            '=' if chars.get(i + 1) == Some(&'=') => {
                out.push(Tok::DoubleEq);
                i += 2
            }
            '=' => {
                out.push(Tok::Eq);
                i += 1
            }
            _ => {
                let start = i;
                while i < chars.len() && !" \t\n\r,()!=".contains(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                out.push(match word.as_str() {
                    "in" => Tok::In,
                    "notin" => Tok::NotInKw,
                    "gt" => Tok::Gt,
                    "lt" => Tok::Lt,
                    _ => Tok::Ident(word),
                });
            }
        }
    }
    out
}

struct Parser {
    toks: Vec<Tok>,
    i: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.i).cloned();
        self.i += 1;
        t
    }

    fn values(&mut self) -> Result<Vec<String>, String> {
        match self.next() {
            Some(Tok::Open) => {}
            Some(t) => return Err(format!("found '{}', expected: '('", tok_text(&t))),
            None => return Err("found '', expected: '('".into()),
        }
        let mut out = Vec::new();
        loop {
            match self.next() {
                Some(Tok::Close) => return Ok(out),
                Some(Tok::Ident(v)) => {
                    out.push(v);
                    match self.next() {
                        Some(Tok::Comma) => {}
                        Some(Tok::Close) => return Ok(out),
                        Some(t) => return Err(format!("found '{}', expected: ',' or ')'", tok_text(&t))),
                        None => return Err("found '', expected: ',' or ')'".into()),
                    }
                }
                Some(Tok::Comma) => out.push(String::new()),
                Some(t) => {
                    return Err(format!(
                        "found '{}', expected: ',', ')' or identifier",
                        tok_text(&t)
                    ));
                }
                None => return Err("found '', expected: ',', ')' or identifier".into()),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let negated = if self.peek() == Some(&Tok::Not) {
            self.i += 1;
            true
        } else {
            false
        };
        let key = match self.next() {
            Some(Tok::Ident(k)) => k,
            Some(t) => {
                return Err(format!(
                    "found '{}', expected: !, identifier, or 'end of string'",
                    tok_text(&t)
                ));
            }
            None => return Err("found '', expected: identifier".into()),
        };
        if negated {
            return Ok(Requirement::NotExists(key));
        }
        let op = match self.peek() {
            None | Some(Tok::Comma) => return Ok(Requirement::Exists(key)),
            Some(_) => self.next(),
        };
        let single = |p: &mut Parser| -> Result<String, String> {
            match p.peek() {
                Some(Tok::Ident(v)) => {
                    let v = v.clone();
                    p.i += 1;
                    Ok(v)
                }
                None | Some(Tok::Comma) => Ok(String::new()),
                Some(t) => Err(format!("found '{}', expected: identifier", tok_text(t))),
            }
        };
        match op {
            Some(Tok::Eq | Tok::DoubleEq) => Ok(Requirement::In(key, vec![single(self)?])),
            Some(Tok::NotEq) => Ok(Requirement::NotIn(key, vec![single(self)?])),
            Some(Tok::In) => Ok(Requirement::In(key, self.values()?)),
            Some(Tok::NotInKw) => Ok(Requirement::NotIn(key, self.values()?)),
            Some(op @ (Tok::Gt | Tok::Lt)) => {
                let v = single(self)?;
                let n: i64 = v
                    .parse()
                    .map_err(|_| "for 'Gt', 'Lt' operators, the value must be an integer".to_string())?;
                Ok(if op == Tok::Gt {
                    Requirement::Gt(key, n)
                } else {
                    Requirement::Lt(key, n)
                })
            }
            Some(t) => Err(format!(
                "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                tok_text(&t)
            )),
            None => Err("found '', expected: in, notin, =, ==, !=, gt, lt".into()),
        }
    }
}

impl LabelSelector {
    /// Parses the query syntax; the error is kube-apiserver's 400 message.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut p = Parser { toks: lex(s), i: 0 };
        let mut reqs = Vec::new();
        if p.toks.is_empty() {
            return Ok(Self(reqs));
        }
        loop {
            let r = p
                .requirement()
                .map_err(|e| format!("unable to parse requirement: {e}"))?;
            reqs.push(r);
            match p.next() {
                None => break,
                Some(Tok::Comma) => {}
                Some(t) => {
                    return Err(format!(
                        "found '{}', expected: ',' or 'end of string'",
                        tok_text(&t)
                    ));
                }
            }
        }
        Ok(Self(reqs))
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Gt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Requirement::Lt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        })
    }

    /// Whether an object's `metadata.labels` satisfy the selector.
    pub fn matches_object(&self, object: &Value) -> bool {
        if self.is_empty() {
            return true;
        }
        self.matches(&labels_of(object))
    }
}

/// `metadata.labels` of an object as a map.
pub fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// A field selector: `field=value`, `field==value`, `field!=value`, comma separated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(pub Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses a field selector; `supported` tells which fields the type allows.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, eq, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!("invalid selector: '{s}'; can't understand '{part}'"));
            };
            out.push((field.trim().to_string(), eq, value.trim().to_string()));
        }
        Ok(Self(out))
    }

    /// Whether every term holds for `object`; `value_of` resolves a field name to the object's value.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(field, eq, want)| {
            let actual = field_value(object, field);
            (actual.as_deref().unwrap_or("") == want) == *eq
        })
    }

    /// Fields named by the selector.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(f, _, _)| f.as_str())
    }
}

/// The value of a selectable field of an object (`metadata.name`, `spec.signerName`, ...).
pub fn field_value(object: &Value, field: &str) -> Option<String> {
    let pointer = format!("/{}", field.replace('.', "/"));
    match object.pointer(&pointer) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn operators() {
        let l = labels(&[("env", "prod"), ("tier", "fe")]);
        for (sel, want) in [
            ("env=prod", true),
            ("env==prod", true),
            ("env!=prod", false),
            ("env in (prod,dev)", true),
            ("env notin (prod)", false),
            ("tier", true),
            ("!tier", false),
            ("env=dev,tier", false),
            ("env in ()", false),
            ("env=", false),
            ("other!=x", true),
        ] {
            assert_eq!(LabelSelector::parse(sel).unwrap().matches(&l), want, "{sel}");
        }
        assert_eq!(
            LabelSelector::parse("bad key!=x").unwrap_err(),
            "unable to parse requirement: found 'key', expected: in, notin, =, ==, !=, gt, lt"
        );
    }

    #[test]
    fn fields() {
        let o = serde_json::json!({"metadata": {"name": "a", "namespace": "n"}});
        assert!(FieldSelector::parse("metadata.name=a").unwrap().matches(&o));
        assert!(!FieldSelector::parse("metadata.name!=a").unwrap().matches(&o));
    }
}
