//! Resource quantities summed and printed the way Kubernetes' `resource.Quantity` does, so that
//! the capacity and allocatable the agent reports read as upstream's agent reports them (`8Gi`,
//! not `8589934592`).
//!
//! A quantity keeps the format of its suffix: binary (`Ki` … `Ei`), decimal SI (none, `n`, `u`,
//! `m`, `k` … `E`) or a decimal exponent (`e3`). A sum keeps the format of its first operand
//! (of the second when the first is zero), and a quantity is printed in its canonical form:
//! binary as the largest power of 1024 that divides it (decimal SI when it is smaller than 1024
//! or not whole), decimal as the largest power of 1000 that divides it. Values are kept exactly
//! in billionths, and finer input is rounded up to a billionth, as Kubernetes does.

/// How a quantity is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Powers of 1024: `Ki`, `Mi`, ... `Ei`.
    BinarySI,
    /// Powers of 1000: `n`, `u`, `m`, none, `k`, `M`, ... `E`.
    DecimalSI,
    /// Powers of ten written as `e<exponent>`.
    DecimalExponent,
}

/// A parsed quantity: its value in billionths and its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

const NANOS_PER_UNIT: i128 = 1_000_000_000;
const DECIMAL_SUFFIXES: [(&str, i32); 10] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];
const BINARY_SUFFIXES: [(&str, u32); 6] = [
    ("Ki", 10),
    ("Mi", 20),
    ("Gi", 30),
    ("Ti", 40),
    ("Pi", 50),
    ("Ei", 60),
];

/// `10^exp` if it fits.
fn pow10(exp: u32) -> Option<i128> {
    10i128.checked_pow(exp)
}

impl Quantity {
    /// Parses `text` as Kubernetes does (`1.5Gi`, `250m`, `12e3`, `-1`); `None` when it is not a
    /// quantity or too large to hold.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let digits_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (whole, rest) = rest.split_at(digits_end);
        let (fraction, suffix) = match rest.strip_prefix('.') {
            Some(after) => {
                let end = after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len());
                after.split_at(end)
            }
            None => ("", rest),
        };
        if whole.is_empty() && fraction.is_empty() && !rest.starts_with('.') {
            return None;
        }
        // The digits as one integer, and the power of ten it is to be scaled by.
        let mut mantissa: i128 = 0;
        for digit in whole.bytes().chain(fraction.bytes()) {
            mantissa = mantissa.checked_mul(10)?.checked_add(i128::from(digit - b'0'))?;
        }
        let fraction_len = i32::try_from(fraction.len()).ok()?;
        let (mut nanos, format) = if let Some((_, bits)) = BINARY_SUFFIXES.iter().find(|(s, _)| *s == suffix)
        {
            let scaled = mantissa
                .checked_mul(1i128.checked_shl(*bits)?)?
                .checked_mul(NANOS_PER_UNIT)?;
            (
                divide_rounding_up(scaled, pow10(fraction.len().try_into().ok()?)?),
                Format::BinarySI,
            )
        } else {
            let (exponent, format) = match DECIMAL_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
                Some((_, exponent)) => (*exponent, Format::DecimalSI),
                None => {
                    let exponent = suffix.strip_prefix(['e', 'E'])?;
                    let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
                    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                        return None;
                    }
                    (exponent.parse::<i32>().ok()?, Format::DecimalExponent)
                }
            };
            // mantissa * 10^(exponent - fraction_len) in billionths.
            let shift = exponent.checked_sub(fraction_len)?.checked_add(9)?;
            let nanos = if shift >= 0 {
                mantissa.checked_mul(pow10(shift.unsigned_abs())?)?
            } else {
                match pow10(shift.unsigned_abs()) {
                    Some(divisor) => divide_rounding_up(mantissa, divisor),
                    None => i128::from(mantissa != 0),
                }
            };
            (nanos, format)
        };
        // A binary quantity below one is printed in decimal.
        let format = if format == Format::BinarySI && nanos > 0 && nanos < NANOS_PER_UNIT {
            Format::DecimalSI
        } else {
            format
        };
        if negative {
            nanos = -nanos;
        }
        Some(Self { nanos, format })
    }

    /// The format the quantity prints in.
    #[must_use]
    pub fn format(&self) -> Format {
        self.format
    }

    /// Adds `other`, keeping this quantity's format (`other`'s when this one is zero); `None` on
    /// overflow.
    #[must_use]
    pub fn checked_add(self, other: Self) -> Option<Self> {
        Some(Self {
            nanos: self.nanos.checked_add(other.nanos)?,
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        })
    }

    /// The canonical text, as Kubernetes serialises the quantity.
    #[must_use]
    pub fn canonical(&self) -> String {
        if self.nanos == 0 {
            return "0".to_string();
        }
        let whole = self.nanos % NANOS_PER_UNIT == 0;
        let units = self.nanos / NANOS_PER_UNIT;
        if self.format == Format::BinarySI && whole && !(-1023..=1023).contains(&units) {
            let (mut amount, mut power) = (units, 0usize);
            while power < BINARY_SUFFIXES.len() && amount % 1024 == 0 {
                amount /= 1024;
                power += 1;
            }
            let suffix = power.checked_sub(1).map_or("", |i| BINARY_SUFFIXES[i].0);
            return format!("{amount}{suffix}");
        }
        let (mut amount, mut exponent) = (self.nanos, -9i32);
        while amount % 10 == 0 {
            amount /= 10;
            exponent += 1;
        }
        // Down to a multiple of three.
        let extra = exponent.rem_euclid(3);
        amount *= pow10(extra.unsigned_abs()).unwrap_or(1);
        exponent -= extra;
        if self.format == Format::DecimalExponent {
            return if exponent == 0 {
                amount.to_string()
            } else {
                format!("{amount}e{exponent}")
            };
        }
        // Beyond exa there is no decimal suffix: print as a multiple of exa.
        while exponent > 18 {
            amount *= 1000;
            exponent -= 3;
        }
        let suffix = DECIMAL_SUFFIXES
            .iter()
            .find(|(_, e)| *e == exponent)
            .map_or("", |(s, _)| *s);
        format!("{amount}{suffix}")
    }
}

/// `value / divisor` rounded away from zero (`divisor` > 0).
fn divide_rounding_up(value: i128, divisor: i128) -> i128 {
    let quotient = value / divisor;
    if value % divisor == 0 {
        quotient
    } else {
        quotient + value.signum()
    }
}

/// Sums `values` as upstream's agent sums Node quantities: the first value's format (the next
/// non-zero one's while the sum is zero), printed canonically. `None` when a value does not
/// parse or the sum overflows.
#[must_use]
pub fn sum<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut total: Option<Quantity> = None;
    for value in values {
        let value = Quantity::parse(value)?;
        total = Some(match total {
            None => value,
            Some(total) => total.checked_add(value)?,
        });
    }
    total.map(|q| q.canonical())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        Quantity::parse(text).unwrap().canonical()
    }

    #[test]
    fn canonical_forms_match_kubernetes() {
        for (input, expected) in [
            ("8Gi", "8Gi"),
            ("8388608Ki", "8Gi"),
            ("8148324Ki", "8148324Ki"),
            ("1.5Gi", "1536Mi"),
            ("1024", "1024"),
            ("1000", "1k"),
            ("1200", "1200"),
            ("8589934592", "8589934592"),
            ("0.5", "500m"),
            ("2000m", "2"),
            ("2500m", "2500m"),
            ("100n", "100n"),
            ("0.1n", "1n"),
            ("1.5", "1500m"),
            ("12e3", "12e3"),
            ("12000e-3", "12"),
            ("1E", "1E"),
            ("0", "0"),
            ("0Gi", "0"),
            ("512Ki", "512Ki"),
            ("0.5Ki", "512"),
            ("-1Gi", "-1Gi"),
            ("110", "110"),
        ] {
            assert_eq!(canonical(input), expected, "{input}");
        }
        assert_eq!(
            Quantity::parse("1.5Gi").map(|q| q.format()),
            Some(Format::BinarySI)
        );
        assert_eq!(
            Quantity::parse("0.5Ki").map(|q| q.format()),
            Some(Format::BinarySI)
        );
        assert_eq!(
            Quantity::parse("0.1Ki").map(|q| q.format()),
            Some(Format::BinarySI)
        );
        assert_eq!(
            Quantity::parse("0.0000000001Ki").map(|q| q.format()),
            Some(Format::DecimalSI)
        );
    }

    #[test]
    fn invalid_quantities_do_not_parse() {
        for input in ["", "x", "1x", "1e", "1Gib", "--1", "1e3.5"] {
            assert_eq!(Quantity::parse(input), None, "{input}");
        }
    }

    #[test]
    fn sums_keep_the_first_operands_format() {
        assert_eq!(sum(["8Gi"]).as_deref(), Some("8Gi"));
        assert_eq!(sum(["4Gi", "4Gi"]).as_deref(), Some("8Gi"));
        assert_eq!(sum(["4Gi", "4294967296"]).as_deref(), Some("8Gi"));
        assert_eq!(sum(["4294967296", "4Gi"]).as_deref(), Some("8589934592"));
        assert_eq!(sum(["2", "500m"]).as_deref(), Some("2500m"));
        assert_eq!(sum(["0", "1Gi"]).as_deref(), Some("1Gi"));
        assert_eq!(sum(["1Gi", "512"]).as_deref(), Some("1073742336"));
        assert_eq!(sum(["1Gi", "0.5"]).as_deref(), Some("1073741824500m"));
        assert_eq!(sum(Vec::<&str>::new()), None);
        assert_eq!(sum(["1", "x"]), None);
    }
}
