//! Scanners for the placeholder-worthy parts of strings (timestamps, uids, fingerprints,
//! resourceVersions in messages and embedded objects, generated names) and the comparison of
//! strings up to placeholder numbers.

use super::normalize::{Kind, NAME_ALPHABET};

/// Equal once every numbered placeholder `<tag:N>` is read as `<tag:*>`.
pub fn wildcard_eq(a: &str, b: &str) -> bool {
    fn erase(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find('<') {
            out.push_str(&rest[..start]);
            let candidate = &rest[start..];
            let numbered = candidate.find('>').and_then(|end| {
                let (tag, number) = candidate[1..end].split_once(':')?;
                number.parse::<u32>().is_ok().then_some((tag, end))
            });
            match numbered {
                Some((tag, end)) => {
                    out.push_str(&format!("<{tag}:*>"));
                    rest = &candidate[end + 1..];
                }
                None => {
                    out.push('<');
                    rest = &candidate[1..];
                }
            }
        }
        out.push_str(rest);
        out
    }
    a == b || erase(a) == erase(b)
}

/// Whether `suffix` is 5 characters of the name generator's alphabet.
pub fn is_generated_suffix(suffix: &str) -> bool {
    suffix.len() == 5 && suffix.chars().all(|c| NAME_ALPHABET.contains(c))
}

/// How a match is replaced.
#[derive(Debug)]
pub enum Replacement {
    Fixed(&'static str),
    /// A numbered placeholder for `text[start + keep..end]`, keeping `text[start..start + keep]`.
    Numbered {
        kind: Kind,
        keep: usize,
    },
}

/// A placeholder-worthy part of a string.
#[derive(Debug)]
pub struct Match {
    /// Byte offset where the match starts.
    pub start: usize,
    /// Byte offset after the match.
    pub end: usize,
    /// What replaces it.
    pub replacement: Replacement,
}

impl Match {
    /// A match replaced by a fixed text.
    pub fn fixed(start: usize, end: usize, text: &'static str) -> Self {
        Self {
            start,
            end,
            replacement: Replacement::Fixed(text),
        }
    }

    /// A match replaced by a numbered placeholder.
    fn numbered(start: usize, end: usize, kind: Kind, keep: usize) -> Self {
        Self {
            start,
            end,
            replacement: Replacement::Numbered { kind, keep },
        }
    }
}

fn digits_at(bytes: &[u8], at: usize, count: usize) -> bool {
    at + count <= bytes.len() && bytes[at..at + count].iter().all(u8::is_ascii_digit)
}

/// Length of an RFC 3339 timestamp starting at `at`, if one does.
fn timestamp_len(bytes: &[u8], at: usize) -> Option<usize> {
    let fixed = [(0, 4), (5, 2), (8, 2), (11, 2), (14, 2), (17, 2)];
    if !fixed
        .iter()
        .all(|&(offset, count)| digits_at(bytes, at + offset, count))
    {
        return None;
    }
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if !separators
        .iter()
        .all(|&(offset, c)| bytes.get(at + offset) == Some(&c))
    {
        return None;
    }
    if !matches!(bytes.get(at + 10), Some(b'T' | b't')) {
        return None;
    }
    let mut end = at + 19;
    if bytes.get(end) == Some(&b'.') {
        let digits = bytes[end + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        end += 1 + digits;
    }
    match bytes.get(end) {
        Some(b'Z' | b'z') => Some(end + 1 - at),
        Some(b'+' | b'-')
            if digits_at(bytes, end + 1, 2)
                && bytes.get(end + 3) == Some(&b':')
                && digits_at(bytes, end + 4, 2) =>
        {
            Some(end + 6 - at)
        }
        _ => None,
    }
}

/// RFC 3339 timestamps (whole strings or embedded) -> `<time>`.
pub fn find_timestamps(text: &str, matches: &mut Vec<Match>) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let boundary = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        if boundary && let Some(len) = timestamp_len(bytes, at) {
            matches.push(Match::fixed(at, at + len, "<time>"));
            at += len;
        } else {
            at += 1;
        }
    }
}

/// UUID-shaped substrings -> `<uid:N>`.
pub fn find_uuids(text: &str, matches: &mut Vec<Match>) {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let bytes = text.as_bytes();
    let mut at = 0;
    'scan: while at + 36 <= bytes.len() {
        if at > 0 && bytes[at - 1].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        let mut position = at;
        for (index, &len) in GROUPS.iter().enumerate() {
            if index > 0 {
                if bytes[position] != b'-' {
                    at += 1;
                    continue 'scan;
                }
                position += 1;
            }
            if !bytes[position..position + len].iter().all(u8::is_ascii_hexdigit) {
                at += 1;
                continue 'scan;
            }
            position += len;
        }
        if bytes.get(position).is_some_and(u8::is_ascii_alphanumeric) {
            at += 1;
            continue;
        }
        matches.push(Match::numbered(at, position, Kind::Uid, 0));
        at = position;
    }
}

/// `X509SHA256=<hex>` -> `X509SHA256=<fingerprint>`.
pub fn find_fingerprints(text: &str, matches: &mut Vec<Match>) {
    const PREFIX: &str = "X509SHA256=";
    for (start, _) in text.match_indices(PREFIX) {
        let hex = text[start + PREFIX.len()..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        if hex > 0 {
            matches.push(Match::fixed(
                start,
                start + PREFIX.len() + hex,
                "X509SHA256=<fingerprint>",
            ));
        }
    }
}

/// Digits at `at` as a numbered rv match (unless the request sent that value literally).
fn rv_digits(text: &str, at: usize, literals: &[String], matches: &mut Vec<Match>) -> usize {
    let len = text[at..].bytes().take_while(u8::is_ascii_digit).count();
    if len > 0 && !literals.iter().any(|literal| literal == &text[at..at + len]) {
        matches.push(Match::numbered(at, at + len, Kind::Rv, 0));
    }
    len
}

/// resourceVersions inside the messages the README lists -> `<rv:N>`.
pub fn find_message_rvs(text: &str, literals: &[String], matches: &mut Vec<Match>) {
    // "too old resource version: A (B)"
    const TOO_OLD: &str = "too old resource version: ";
    for (start, _) in text.match_indices(TOO_OLD) {
        let at = start + TOO_OLD.len();
        let len = rv_digits(text, at, literals, matches);
        if len > 0 && text[at + len..].starts_with(" (") {
            rv_digits(text, at + len + 2, literals, matches);
        }
    }
    // "Too large resource version: A, current: B"
    const TOO_LARGE: &str = "Too large resource version: ";
    for (start, _) in text.match_indices(TOO_LARGE) {
        let at = start + TOO_LARGE.len();
        let len = rv_digits(text, at, literals, matches);
        if len > 0 && text[at + len..].starts_with(", current: ") {
            rv_digits(text, at + len + ", current: ".len(), literals, matches);
        }
    }
    // "the ResourceVersion in the precondition (A) does not match the ResourceVersion in record (B)"
    for anchor in [
        "ResourceVersion in the precondition (",
        "ResourceVersion in record (",
    ] {
        for (start, _) in text.match_indices(anchor) {
            rv_digits(text, start + anchor.len(), literals, matches);
        }
    }
}

/// `"resourceVersion":"N"` (also with escaped quotes) and `resourceVersion: "N"` inside strings.
pub fn find_embedded_rvs(text: &str, matches: &mut Vec<Match>) {
    const KEY: &str = "resourceVersion";
    let bytes = text.as_bytes();
    for (start, _) in text.match_indices(KEY) {
        let mut at = start + KEY.len();
        while matches!(bytes.get(at), Some(b'\\' | b'"')) {
            at += 1;
        }
        if bytes.get(at) != Some(&b':') {
            continue;
        }
        at += 1;
        while bytes.get(at) == Some(&b' ') {
            at += 1;
        }
        let mut quoted = false;
        while matches!(bytes.get(at), Some(b'\\' | b'"')) {
            quoted |= bytes[at] == b'"';
            at += 1;
        }
        let len = text[at..].bytes().take_while(u8::is_ascii_digit).count();
        let closed = matches!(bytes.get(at + len), Some(b'"' | b'\\'));
        if quoted && len > 0 && closed {
            matches.push(Match::numbered(at, at + len, Kind::Rv, 0));
        }
    }
}

/// A known `generateName` prefix and 5 generator characters -> `prefix<gen:N>`.
pub fn find_generated_names(text: &str, prefixes: &[String], matches: &mut Vec<Match>) {
    for prefix in prefixes {
        for (start, _) in text.match_indices(prefix.as_str()) {
            let at = start + prefix.len();
            let Some(suffix) = text.get(at..at + 5) else {
                continue;
            };
            let next = text.as_bytes().get(at + 5);
            if is_generated_suffix(suffix) && !next.is_some_and(u8::is_ascii_alphanumeric) {
                matches.push(Match::numbered(start, at + 5, Kind::Gen, prefix.len()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str, scan: impl Fn(&str, &mut Vec<Match>)) -> Vec<&str> {
        let mut matches = Vec::new();
        scan(text, &mut matches);
        matches.iter().map(|m| &text[m.start..m.end]).collect()
    }

    #[test]
    fn scanners() {
        assert_eq!(
            found(
                "at 2026-11-22T10:00:00Z and 2026-11-22T10:00:00.123456+01:00.",
                find_timestamps
            ),
            vec!["2026-11-22T10:00:00Z", "2026-11-22T10:00:00.123456+01:00"]
        );
        assert_eq!(
            found("x2026-11-22T10:00:00Z", find_timestamps),
            Vec::<&str>::new()
        );
        assert_eq!(
            found(
                "JTI=8d2a1b7e-0c1f-4a57-9a63-5d0e4b3c2a10, not 8d2a1b7e-0c1f-4a57-9a63-5d0e4b3c2a10x",
                find_uuids
            ),
            vec!["8d2a1b7e-0c1f-4a57-9a63-5d0e4b3c2a10"]
        );
        assert_eq!(
            found(r#"{\"resourceVersion\":\"12\"}"#, find_embedded_rvs),
            vec!["12"]
        );
        assert!(wildcard_eq("k:{\"uid\":\"<uid:2>\"}", "k:{\"uid\":\"<uid:7>\"}"));
        assert!(!wildcard_eq("<uid:2>", "<rv:2>"));
    }
}
