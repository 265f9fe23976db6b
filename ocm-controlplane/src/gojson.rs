//! JSON as Go's `encoding/json` writes and reads it.
//!
//! kube-apiserver quotes syntax-error texts in its 400 answers ("invalid character 'n' looking for
//! beginning of object key string") and whole objects in some 422 messages; clients and the
//! conformance fixtures see them, so the server reproduces both: [`syntax_error`] for bodies that
//! are not valid JSON, [`encode`] for JSON text with Go's escaping (`<`, `>`, `&` as `\u003c`...),
//! and [`quote`] for Go's `%q`.

/// Go's rendering of a character in a syntax error (`'x'`, `'\''`, `'\x81'`).
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        0x20..=0x7e => format!("'{}'", c as char),
        b'\n' => "'\\n'".to_string(),
        b'\t' => "'\\t'".to_string(),
        b'\r' => "'\\r'".to_string(),
        _ => format!("'\\x{c:02x}'"),
    }
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

type R = Result<(), String>;

impl Scanner<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eof() -> String {
        "unexpected end of JSON input".to_string()
    }

    fn invalid(c: u8, context: &str) -> String {
        format!("invalid character {} {context}", quote_char(c))
    }

    fn value(&mut self) -> R {
        self.ws();
        let Some(c) = self.peek() else {
            return Err(Self::eof());
        };
        match c {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string(),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(Self::invalid(c, "looking for beginning of value")),
        }
    }

    fn literal(&mut self, word: &str) -> R {
        for (k, expected) in word.bytes().enumerate() {
            match self.peek() {
                None => return Err(Self::eof()),
                Some(c) if c == expected => self.i += 1,
                Some(c) if k == 0 => return Err(Self::invalid(c, "looking for beginning of value")),
                Some(c) => {
                    return Err(Self::invalid(
                        c,
                        &format!("in literal {word} (expecting {})", quote_char(expected)),
                    ));
                }
            }
        }
        Ok(())
    }

    fn number(&mut self) -> R {
        if self.peek() == Some(b'-') {
            self.i += 1;
            match self.peek() {
                None => return Err(Self::eof()),
                Some(b'0'..=b'9') => {}
                Some(c) => return Err(Self::invalid(c, "in numeric literal")),
            }
        }
        if self.peek() == Some(b'0') {
            self.i += 1;
        } else {
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            match self.peek() {
                None => return Err(Self::eof()),
                Some(b'0'..=b'9') => {}
                Some(c) => return Err(Self::invalid(c, "after decimal point in numeric literal")),
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            match self.peek() {
                None => return Err(Self::eof()),
                Some(b'0'..=b'9') => {}
                Some(c) => return Err(Self::invalid(c, "in exponent of numeric literal")),
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        Ok(())
    }

    fn string(&mut self) -> R {
        self.i += 1;
        loop {
            let Some(c) = self.peek() else {
                return Err(Self::eof());
            };
            self.i += 1;
            match c {
                b'"' => return Ok(()),
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return Err(Self::eof());
                    };
                    self.i += 1;
                    match e {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => {
                            for _ in 0..4 {
                                match self.peek() {
                                    None => return Err(Self::eof()),
                                    Some(h) if h.is_ascii_hexdigit() => self.i += 1,
                                    Some(h) => {
                                        return Err(Self::invalid(h, "in \\u hexadecimal character escape"));
                                    }
                                }
                            }
                        }
                        _ => return Err(Self::invalid(e, "in string escape code")),
                    }
                }
                0..=0x1f => return Err(Self::invalid(c, "in string literal")),
                _ => {}
            }
        }
    }

    fn object(&mut self) -> R {
        self.i += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            match self.peek() {
                None => return Err(Self::eof()),
                Some(b'"') => self.string()?,
                Some(c) => return Err(Self::invalid(c, "looking for beginning of object key string")),
            }
            self.ws();
            match self.peek() {
                None => return Err(Self::eof()),
                Some(b':') => self.i += 1,
                Some(c) => return Err(Self::invalid(c, "after object key")),
            }
            self.value()?;
            self.ws();
            match self.peek() {
                None => return Err(Self::eof()),
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(c) => return Err(Self::invalid(c, "after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> R {
        self.i += 1;
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.value()?;
            self.ws();
            match self.peek() {
                None => return Err(Self::eof()),
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(c) => return Err(Self::invalid(c, "after array element")),
            }
        }
    }
}

/// Go's syntax error for `bytes`, or `None` when it is valid JSON.
pub fn syntax_error(bytes: &[u8]) -> Option<String> {
    let mut s = Scanner { b: bytes, i: 0 };
    if let Err(e) = s.value() {
        return Some(e);
    }
    s.ws();
    s.peek().map(|c| Scanner::invalid(c, "after top-level value"))
}

/// Go's name of a JSON value's type in unmarshal errors (`string`, `number`, `object`, ...).
pub fn value_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

/// JSON text as Go's `json.Marshal` writes it: keys in the value's order, no spaces, and `<`, `>`,
/// `&`, U+2028 and U+2029 escaped.
pub fn encode(value: &serde_json::Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Go's `strconv.Quote` (`%q`): printable characters as they are, the usual escapes, `\x`, `\u`
/// and `\U` for the rest.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0B}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() || c == '\u{FEFF}' => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::syntax_error;

    #[test]
    fn go_messages() {
        assert_eq!(
            syntax_error(b"{not json").unwrap(),
            "invalid character 'n' looking for beginning of object key string"
        );
        assert_eq!(
            syntax_error(b"{\"a\": nonsense}").unwrap(),
            "invalid character 'o' in literal null (expecting 'u')"
        );
        assert_eq!(syntax_error(b"{\"a\":1").unwrap(), "unexpected end of JSON input");
        assert_eq!(
            syntax_error(b"\x81").unwrap(),
            "invalid character '\\x81' looking for beginning of value"
        );
        assert!(syntax_error(b" {\"a\": [1, 2.5e3, true, null, \"x\\n\"]} ").is_none());
    }
}
