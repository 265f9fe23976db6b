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

/// The text of a quantity as kube-apiserver prints it (`Quantity.String()`: canonical form, e.g.
/// `1.5` is `1500m`, `1024Mi` is `1Gi`); the text as sent when it cannot be represented exactly.
pub fn text(v: &Value) -> String {
    let raw = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    canonical(&raw).unwrap_or(raw)
}

/// How a quantity is written: with a binary suffix, a decimal one, or a decimal exponent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Binary,
    Decimal,
    Exponent,
}

/// The exact value in nano-units and the format of a quantity, if it is representable.
fn exact(text: &str) -> Option<(i128, Format)> {
    let text = text.trim();
    let negative = text.starts_with('-');
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    let split = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(split);
    let (int_part, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{int_part}{frac}");
    if digits.is_empty() || digits.len() > 30 {
        return None;
    }
    let mut mantissa: i128 = digits.parse().ok()?;
    let mut exp10 = -(frac.len() as i32);
    let format = match suffix {
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                .iter()
                .position(|s| *s == suffix)? as u32
                + 1;
            mantissa = mantissa.checked_mul(1024i128.checked_pow(power)?)?;
            Format::Binary
        }
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => {
            exp10 += match suffix {
                "n" => -9,
                "u" => -6,
                "m" => -3,
                "k" => 3,
                "M" => 6,
                "G" => 9,
                "T" => 12,
                "P" => 15,
                "E" => 18,
                _ => 0,
            };
            Format::Decimal
        }
        _ => {
            exp10 += suffix.strip_prefix(['e', 'E'])?.parse::<i32>().ok()?;
            Format::Exponent
        }
    };
    let shift = exp10 + 9;
    let nanos = if shift >= 0 {
        mantissa.checked_mul(10i128.checked_pow(shift as u32)?)?
    } else {
        let d = 10i128.checked_pow((-shift) as u32)?;
        if mantissa % d != 0 {
            return None;
        }
        mantissa / d
    };
    Some((if negative { -nanos } else { nanos }, format))
}

/// `Quantity.String()` of a quantity's text, when it can be computed exactly.
pub fn canonical(text: &str) -> Option<String> {
    let (nanos, format) = exact(text)?;
    if nanos == 0 {
        return Some("0".into());
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let abs = nanos.abs();
    const GIGA: i128 = 1_000_000_000;
    if format == Format::Binary && abs % GIGA == 0 {
        let mut bytes = abs / GIGA;
        let mut power = 0;
        while power < 6 && bytes % 1024 == 0 && bytes >= 1024 {
            bytes /= 1024;
            power += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
        return Some(format!("{sign}{bytes}{suffix}"));
    }
    // Decimal: the largest exponent (a multiple of 3) that keeps the mantissa whole.
    let mut exp = -9;
    let mut mantissa = abs;
    while exp < 18 && mantissa % 1000 == 0 {
        mantissa /= 1000;
        exp += 3;
    }
    let suffix = if format == Format::Exponent {
        if exp == 0 {
            String::new()
        } else {
            format!("e{exp}")
        }
    } else {
        match exp {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            18 => "E",
            _ => "",
        }
        .to_string()
    };
    Some(format!("{sign}{mantissa}{suffix}"))
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
        assert_eq!(canonical("1.5").as_deref(), Some("1500m"));
        assert_eq!(canonical("0.5").as_deref(), Some("500m"));
        assert_eq!(canonical("2000m").as_deref(), Some("2"));
        assert_eq!(canonical("1500").as_deref(), Some("1500"));
        assert_eq!(canonical("2000").as_deref(), Some("2k"));
        assert_eq!(canonical("1024Mi").as_deref(), Some("1Gi"));
        assert_eq!(canonical("512Mi").as_deref(), Some("512Mi"));
        assert_eq!(canonical("1Gi").as_deref(), Some("1Gi"));
        assert_eq!(canonical("-1").as_deref(), Some("-1"));
        assert_eq!(canonical("0").as_deref(), Some("0"));
    }
}
