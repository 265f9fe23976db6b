//! The approximate value of a resource quantity (`8`, `500m`, `16Gi`, `1e3`), as
//! `Quantity.AsApproximateFloat64` gives it for the resource prioritizers.

/// The value of `text` as a float; `None` when it is not a quantity.
#[must_use]
pub fn approximate(text: &str) -> Option<f64> {
    let text = text.trim();
    let (sign, body) = match text.as_bytes().first()? {
        b'-' => (-1.0, &text[1..]),
        b'+' => (1.0, &text[1..]),
        _ => (1.0, text),
    };
    let end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(end);
    if number.is_empty() || number == "." {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let multiplier = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        other => {
            let exponent: i32 = other.strip_prefix(['e', 'E'])?.parse().ok()?;
            10f64.powi(exponent)
        }
    };
    Some(sign * value * multiplier)
}

#[cfg(test)]
mod tests {
    use super::approximate;

    #[test]
    fn suffixes() {
        assert_eq!(approximate("8"), Some(8.0));
        assert_eq!(approximate("500m"), Some(0.5));
        assert_eq!(approximate("16Gi"), Some(16.0 * 1024.0 * 1024.0 * 1024.0));
        assert_eq!(approximate("2k"), Some(2000.0));
        assert_eq!(approximate("1e3"), Some(1000.0));
        assert_eq!(approximate("1.5"), Some(1.5));
        assert_eq!(approximate("-2"), Some(-2.0));
        assert_eq!(approximate("abc"), None);
        assert_eq!(approximate("1X"), None);
    }
}
