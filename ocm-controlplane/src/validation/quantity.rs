//! Resource quantities (`500m`, `1Gi`, `1e3`) as apimachinery's `resource.Quantity` reads them:
//! which strings are quantities at all (a decoding error otherwise), and their value for
//! comparisons (requests against limits, signs).

use serde_json::Value;

/// The message of apimachinery's `ErrFormatWrong`.
pub const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// The message of apimachinery's `ErrSuffix`.
pub const SUFFIX_WRONG: &str = "unable to parse quantity's suffix";

/// Why a quantity does not parse, as apimachinery words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantityError {
    /// The text does not look like a number with a suffix.
    Format,
    /// The suffix is not one of the known ones.
    Suffix,
}

impl QuantityError {
    /// apimachinery's message.
    pub fn message(self) -> &'static str {
        match self {
            Self::Format => FORMAT_WRONG,
            Self::Suffix => SUFFIX_WRONG,
        }
    }
}

fn multiplier(suffix: &str) -> Option<f64> {
    let m = match suffix {
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
        _ => {
            // Decimal exponent: e3, E-2.
            let exp = suffix.strip_prefix(['e', 'E'])?;
            let n: i32 = exp.parse().ok()?;
            return Some(10f64.powi(n));
        }
    };
    Some(m)
}

/// Parses a quantity's text into its value in base units.
pub fn parse(text: &str) -> Result<f64, QuantityError> {
    let text = text.trim();
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    let negative = text.starts_with('-');
    let split = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(split);
    let suffix_ok = suffix.bytes().enumerate().all(|(i, c)| {
        b"eEinumkKMGTP".contains(&c) || c.is_ascii_digit() || (matches!(c, b'+' | b'-') && i > 0)
    });
    if number.is_empty() || !suffix_ok {
        return Err(QuantityError::Format);
    }
    let n: f64 = number.parse().map_err(|_| QuantityError::Format)?;
    let m = multiplier(suffix).ok_or(QuantityError::Suffix)?;
    Ok(if negative { -n * m } else { n * m })
}

/// Parses a JSON quantity (a string or a number).
pub fn parse_value(v: &Value) -> Result<f64, QuantityError> {
    match v {
        Value::String(s) => parse(s),
        Value::Number(n) => parse(&n.to_string()),
        _ => Err(QuantityError::Format),
    }
}

/// The text of a quantity as the user wrote it (numbers as their JSON text).
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kube_quantities() {
        assert_eq!(parse("500m"), Ok(0.5));
        assert_eq!(parse("1Gi"), Ok(1024f64.powi(3)));
        assert_eq!(parse("1e3"), Ok(1000.0));
        assert_eq!(parse("-1"), Ok(-1.0));
        assert_eq!(parse("abc"), Err(QuantityError::Format));
        assert_eq!(parse("1Xi"), Err(QuantityError::Format));
        assert_eq!(parse("1Zi"), Err(QuantityError::Format));
        assert_eq!(parse("1mi"), Err(QuantityError::Suffix));
    }
}
