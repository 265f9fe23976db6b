//! Whether a client-config URL is an https URL, as upstream decides it with Go's `url.Parse`: the
//! scheme (compared case-insensitively) must be `https`, and the URL must parse.

/// Whether `url` parses (by Go's rules, as far as they refuse anything) with scheme `https`.
pub fn is_https(url: &str) -> bool {
    if url.is_empty() || url.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    let Some((scheme, rest)) = split_scheme(url) else {
        return false;
    };
    scheme.eq_ignore_ascii_case("https") && valid_escapes(rest) && valid_authority(rest)
}

/// Go's `getScheme`: letters, then letters, digits, `+`, `-`, `.`, up to the first `:`.
fn split_scheme(url: &str) -> Option<(&str, &str)> {
    for (i, c) in url.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i > 0 => return Some((&url[..i], &url[i + 1..])),
            _ => return None,
        }
    }
    None
}

/// Every `%` starts a two-digit hex escape.
fn valid_escapes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |j: usize| b.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !hex(i + 1) || !hex(i + 2) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

/// The port after the host, if any, is all digits (Go refuses `https://host:port`).
fn valid_authority(rest: &str) -> bool {
    let Some(after) = rest.strip_prefix("//") else {
        return true;
    };
    let authority = after.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = if let Some(bracketed) = host_port.strip_prefix('[') {
        match bracketed.split_once(']') {
            Some((_, tail)) => match tail.strip_prefix(':') {
                Some(port) => port,
                None if tail.is_empty() => "",
                None => return false,
            },
            None => return false,
        }
    } else {
        host_port.rsplit_once(':').map_or("", |(_, p)| p)
    };
    port.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_urls_by_gos_rules() {
        for good in [
            "https://a",
            "https://10.0.0.1:6443",
            "HTTPS://Example.com/x?y#z",
            "https://[::1]:6443/",
            "https:opaque",
            "https://u:p@h:1",
        ] {
            assert!(is_https(good), "{good}");
        }
        for bad in [
            "",
            "http://a",
            "a.example.com:6443",
            "://a",
            "https://a:b",
            "https://a/%zz",
            "https://a\n",
            "ftp://a",
            "https://[::1",
        ] {
            assert!(!is_https(bad), "{bad}");
        }
    }
}
