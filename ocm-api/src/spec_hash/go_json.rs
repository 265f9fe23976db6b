//! JSON text exactly as Go's `encoding/json` writes an unstructured value
//! (`map[string]interface{}`): what OCM hashes and measures.
//!
//! The differences from `serde_json::to_string`:
//!
//! - object keys are sorted (by bytes) at every level, whatever order the value holds them in;
//! - `<`, `>` and `&` are written as `\u003c`, `\u003e` and `\u0026`, U+2028 and U+2029 as
//!   `\u2028` and `\u2029`; control characters other than `\b`, `\f`, `\n`, `\r` and `\t` as
//!   `\u00XX` (lower-case hex);
//! - numbers that are not 64-bit signed integers are written as Go writes a `float64`: the
//!   shortest digits that read back the same value, in plain notation, or in exponent notation
//!   (`1e+21`, `1e-7`) when the magnitude is at least 1e21 or below 1e-6.

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// The Go `encoding/json` text of `value`.
#[must_use]
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, n: &Number) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(f) = n.as_f64() {
        // Unsigned integers past i64::MAX become float64 in Go's unstructured decoding.
        write_float(out, f);
    }
}

/// Writes `f` as Go's `encoding/json` writes a finite `float64`.
fn write_float(out: &mut String, f: f64) {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust's `{:e}` gives the shortest digits as `d.ddde-7`; Go writes the same digits with a
        // signed exponent of at least two digits, then drops the padding zero of `e-0d`.
        let sci = format!("{f:e}");
        let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
        out.push_str(mantissa);
        out.push('e');
        match exponent.strip_prefix('-') {
            Some(digits) => {
                out.push('-');
                out.push_str(digits);
            }
            None => {
                out.push('+');
                if exponent.len() < 2 {
                    out.push('0');
                }
                out.push_str(exponent);
            }
        }
    } else {
        // Rust's `{}` for f64 is the shortest round-trip digits in plain notation, like Go's 'f', -1.
        let _ = write!(out, "{f}");
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_are_sorted_at_every_level() {
        let value = json!({"b": 1, "a": {"z": true, "y": null, "A": [3, {"d": 1, "c": 2}]}});
        assert_eq!(
            to_string(&value),
            r#"{"a":{"A":[3,{"c":2,"d":1}],"y":null,"z":true},"b":1}"#
        );
    }

    #[test]
    fn keys_sort_by_bytes() {
        let value = json!({"b": 1, "B": 2, "_": 3, "é": 4, "a": 5});
        assert_eq!(to_string(&value), r#"{"B":2,"_":3,"a":5,"b":1,"é":4}"#);
    }

    #[test]
    fn html_characters_are_escaped() {
        let value = json!({"k": "<a href=\"x\">&amp;</a>"});
        assert_eq!(
            to_string(&value),
            r#"{"k":"\u003ca href=\"x\"\u003e\u0026amp;\u003c/a\u003e"}"#
        );
    }

    #[test]
    fn control_and_separator_characters_are_escaped() {
        let value = json!("a\u{8}b\u{c}c\nd\re\tf\u{1}g\u{1f}h\u{7f}i\u{2028}j\u{2029}k\\l/m");
        assert_eq!(
            to_string(&value),
            "\"a\\bb\\fc\\nd\\re\\tf\\u0001g\\u001fh\u{7f}i\\u2028j\\u2029k\\\\l/m\""
        );
    }

    #[test]
    fn non_ascii_is_written_as_is() {
        assert_eq!(to_string(&json!("héllo 世界")), "\"héllo 世界\"");
    }

    #[test]
    fn integers_are_plain() {
        assert_eq!(
            to_string(&json!([0, -1, 42, i64::MAX, i64::MIN])),
            "[0,-1,42,9223372036854775807,-9223372036854775808]"
        );
    }

    #[test]
    fn floats_follow_go_formatting() {
        let cases: &[(f64, &str)] = &[
            (1.0, "1"),
            (-2.0, "-2"),
            (0.5, "0.5"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (100.25, "100.25"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (1e100, "1e+100"),
            (-1e21, "-1e+21"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (1e-10, "1e-10"),
            (5e-324, "5e-324"),
            (123456789.125, "123456789.125"),
            (0.0, "0"),
        ];
        for (f, want) in cases {
            let mut out = String::new();
            write_float(&mut out, *f);
            assert_eq!(out, *want, "formatting {f}");
        }
    }

    #[test]
    fn json_floats_and_big_unsigned_integers_use_float_formatting() {
        let value: Value = serde_json::from_str("[1.0, 2.50, 1e21, 18446744073709551615]").unwrap();
        assert_eq!(to_string(&value), "[1,2.5,1e+21,18446744073709552000]");
    }
}
