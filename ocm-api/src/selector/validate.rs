//! Syntax checks of label keys and values, as Kubernetes applies them to selectors.

/// The longest name part of a label key, and the longest label value.
const MAX_NAME_LENGTH: usize = 63;
/// The longest prefix (DNS subdomain) of a label key.
const MAX_PREFIX_LENGTH: usize = 253;

/// Why `key` is no valid label key (an optional DNS-subdomain prefix and `/`, then a name), or
/// `None` if it is one.
pub(crate) fn key_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        None => (None, key),
        Some((prefix, name)) => (Some(prefix), name),
    };
    if name.contains('/') {
        return Some("a key holds at most one '/'".to_owned());
    }
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Some("the prefix before '/' is empty".to_owned());
        }
        if prefix.len() > MAX_PREFIX_LENGTH {
            return Some(format!(
                "the prefix is longer than {MAX_PREFIX_LENGTH} characters"
            ));
        }
        if !is_dns_subdomain(prefix) {
            return Some("the prefix is no lower-case DNS subdomain".to_owned());
        }
    }
    if name.is_empty() {
        return Some("the name part is empty".to_owned());
    }
    if name.len() > MAX_NAME_LENGTH {
        return Some(format!(
            "the name part is longer than {MAX_NAME_LENGTH} characters"
        ));
    }
    if !is_qualified_name(name) {
        return Some(
            "the name part must be alphanumeric characters, '-', '_' or '.', starting and ending \
             with an alphanumeric character"
                .to_owned(),
        );
    }
    None
}

/// Why `value` is no valid label value, or `None` if it is one (the empty value is valid).
pub(crate) fn value_problem(value: &str) -> Option<String> {
    if value.len() > MAX_NAME_LENGTH {
        return Some(format!("longer than {MAX_NAME_LENGTH} characters"));
    }
    if !value.is_empty() && !is_qualified_name(value) {
        return Some(
            "must be empty or alphanumeric characters, '-', '_' or '.', starting and ending with \
             an alphanumeric character"
                .to_owned(),
        );
    }
    None
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_qualified_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Dot-separated labels of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let bytes = label.as_bytes();
        let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
            return false;
        };
        let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        alnum(first) && alnum(last) && bytes.iter().all(|b| alnum(b) || *b == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        for good in [
            "a",
            "app",
            "A.b-c_d",
            "example.com/name",
            "cluster.open-cluster-management.io/clusterset",
            "9",
        ] {
            assert_eq!(key_problem(good), None, "{good}");
        }
        let long_name = "a".repeat(64);
        let long_prefix = format!("{}/a", "a".repeat(254));
        for bad in [
            "",
            "/a",
            "a/",
            "a/b/c",
            "-a",
            "a-",
            "Example.com/a",
            "a b",
            "ex_ample.com/a",
            "a..b/c",
            &long_name,
            &long_prefix,
        ] {
            assert!(key_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn values() {
        for good in ["", "a", "v1.2_3-x", &"a".repeat(63)] {
            assert_eq!(value_problem(good), None, "{good}");
        }
        for bad in ["-a", "a-", "a b", "a/b", &"a".repeat(64)] {
            assert!(value_problem(bad).is_some(), "{bad}");
        }
    }
}
