//! Go duration strings (`90m`, `1h30m`, `1.5h`, `300ms`, `0`), as Go's `time.ParseDuration`
//! reads them: an optional sign, then one or more decimal numbers each followed by a unit
//! (`ns`, `us`/`µs`/`μs`, `ms`, `s`, `m`, `h`). A bare `0` is the only number without unit.

use k8s_openapi::jiff::SignedDuration;

/// Why a Go duration could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The text is not a duration (empty, no digits, a stray character, or beyond ±292 years).
    #[error("invalid duration {0:?}")]
    ParseDuration(String),
    /// A number has no unit after it.
    #[error("missing unit in duration {0:?}")]
    ParseUnit(String),
    /// A unit is none of `ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`.
    #[error("unknown unit {unit:?} in duration {duration:?}")]
    LookUpUnit {
        /// The unit found.
        unit: String,
        /// The whole duration.
        duration: String,
    },
}

const LIMIT: u64 = 1 << 63;

fn unit_nanos(unit: &str) -> Option<u64> {
    match unit {
        "ns" => Some(1),
        "us" | "\u{b5}s" | "\u{3bc}s" => Some(1_000),
        "ms" => Some(1_000_000),
        "s" => Some(1_000_000_000),
        "m" => Some(60 * 1_000_000_000),
        "h" => Some(3_600 * 1_000_000_000),
        _ => None,
    }
}

/// Leading decimal digits as an integer, or `None` when it overflows past 2^63.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let mut x: u64 = 0;
    for digit in s[..end].bytes() {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(digit - b'0');
        if x > LIMIT {
            return None;
        }
    }
    Some((x, &s[end..]))
}

/// Leading fraction digits as an integer and its scale (10^digits kept); digits past the
/// precision of an integer are skipped.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (mut x, mut scale, mut overflow) = (0_u64, 1.0_f64, false);
    for digit in s[..end].bytes() {
        if overflow {
            continue;
        }
        if x > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(digit - b'0');
        if y > LIMIT {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[end..])
}

/// Parses a Go duration.
///
/// # Errors
///
/// [`Error::ParseDuration`], [`Error::ParseUnit`] or [`Error::LookUpUnit`] when `text` is not a
/// Go duration.
#[expect(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "fractions are computed in float64 exactly as Go does"
)]
pub fn parse_go_duration(text: &str) -> Result<SignedDuration, Error> {
    let invalid = || Error::ParseDuration(text.to_owned());
    let (negative, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if s == "0" {
        return Ok(SignedDuration::ZERO);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s.starts_with('.') || s.as_bytes()[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let before = s.len();
        let (whole, rest) = leading_int(s).ok_or_else(invalid)?;
        s = rest;
        let had_whole = before != s.len();
        let (mut fraction, mut scale, mut had_fraction) = (0, 1.0, false);
        if let Some(rest) = s.strip_prefix('.') {
            let before = rest.len();
            (fraction, scale, s) = leading_fraction(rest);
            had_fraction = before != s.len();
        }
        if !had_whole && !had_fraction {
            return Err(invalid());
        }
        let unit_end = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_end == 0 {
            return Err(Error::ParseUnit(text.to_owned()));
        }
        let unit = &s[..unit_end];
        s = &s[unit_end..];
        let nanos = unit_nanos(unit).ok_or_else(|| Error::LookUpUnit {
            unit: unit.to_owned(),
            duration: text.to_owned(),
        })?;
        if whole > LIMIT / nanos {
            return Err(invalid());
        }
        let mut value = whole * nanos;
        if fraction > 0 {
            value += (fraction as f64 * (nanos as f64 / scale)) as u64;
            if value > LIMIT {
                return Err(invalid());
            }
        }
        total += value;
        if total > LIMIT {
            return Err(invalid());
        }
    }
    let nanos = if negative {
        i64::try_from(-i128::from(total)).map_err(|_| invalid())?
    } else {
        i64::try_from(total).map_err(|_| invalid())?
    };
    Ok(SignedDuration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nanos(text: &str) -> Result<i128, Error> {
        parse_go_duration(text).map(|d| d.as_nanos())
    }

    #[test]
    fn parses_go_durations() {
        let s: i128 = 1_000_000_000;
        let cases: &[(&str, i128)] = &[
            ("0", 0),
            ("-0", 0),
            ("+0", 0),
            ("0s", 0),
            ("90s", 90 * s),
            ("90m", 90 * 60 * s),
            ("2h", 2 * 3600 * s),
            ("1h30m", 5400 * s),
            ("1h30m10s", 5410 * s),
            ("1.5h", 5400 * s),
            (".5s", s / 2),
            ("1.s", s),
            ("300ms", 300_000_000),
            ("10us", 10_000),
            ("10\u{b5}s", 10_000),
            ("10\u{3bc}s", 10_000),
            ("7ns", 7),
            ("-5m", -300 * s),
            ("+5m", 300 * s),
            ("1h1h", 7200 * s),
            ("0.1ns", 0),
            ("1.0000000000000000000001s", s),
            ("9223372036854775807ns", i128::from(i64::MAX)),
            ("-9223372036854775808ns", i128::from(i64::MIN)),
            ("2562047h47m16.854775807s", i128::from(i64::MAX)),
        ];
        for (text, want) in cases {
            assert_eq!(nanos(text), Ok(*want), "{text}");
        }
    }

    #[test]
    fn rejects_what_go_rejects() {
        for text in [
            "", "-", "+", "s", ".", ".s", "1", "10", "1.5", "h1", "1h 30m", " 1h", "None",
        ] {
            assert!(nanos(text).is_err(), "{text:?} should fail");
        }
        assert_eq!(nanos("1"), Err(Error::ParseUnit("1".into())));
        assert_eq!(
            nanos("1d"),
            Err(Error::LookUpUnit {
                unit: "d".into(),
                duration: "1d".into()
            })
        );
        assert_eq!(
            nanos("2d0s"),
            Err(Error::LookUpUnit {
                unit: "d".into(),
                duration: "2d0s".into()
            })
        );
        assert_eq!(
            nanos("9223372036854775808ns"),
            Err(Error::ParseDuration("9223372036854775808ns".into()))
        );
        assert_eq!(nanos("2562048h"), Err(Error::ParseDuration("2562048h".into())));
        assert!(nanos("99999999999999999999s").is_err());
    }
}
