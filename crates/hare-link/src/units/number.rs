//! Exact decimal number scanning shared by the rate, size and duration parsers.
//!
//! Human inputs such as `8.5gbit` or `11.4ms` are scanned as an integer mantissa and a power of
//! ten, then scaled by the unit in 128-bit integer arithmetic, so `8.5g` is exactly
//! 8 500 000 000 bit/s and `11.4ms` exactly 11 400 000 ns: no binary floating point is involved.

/// A decimal number `mantissa * 10^exp10` scanned from the start of a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decimal {
    pub(crate) mantissa: u128,
    pub(crate) exp10: i32,
}

/// The most significant digits kept in a mantissa: 10^36 < 2^128 leaves room for the unit
/// multiplier, and no human input needs more precision.
const MAX_DIGITS: usize = 36;

/// Scans `digits [. digits] [e|E [+|-] digits]` at the start of `s`.
///
/// Returns the number and the unparsed rest, or `None` when `s` does not start with a number.
/// An `e` not followed by an exponent is left in the rest (no suffix starts with `e`, so the
/// caller then reports the input as bad).
pub(crate) fn scan_decimal(s: &str) -> Option<(Decimal, &str)> {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut mantissa: u128 = 0;
    let mut digits = 0usize;
    let mut exp10: i32 = 0;
    let mut any_digit = false;

    while i < bytes.len() && bytes[i].is_ascii_digit() {
        push_digit(&mut mantissa, &mut digits, &mut exp10, bytes[i], false)?;
        any_digit = true;
        i += 1;
    }
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            push_digit(&mut mantissa, &mut digits, &mut exp10, bytes[i], true)?;
            any_digit = true;
            i += 1;
        }
    }
    if !any_digit {
        return None;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        let negative = match bytes.get(j) {
            Some(b'-') => {
                j += 1;
                true
            }
            Some(b'+') => {
                j += 1;
                false
            }
            _ => false,
        };
        let start = j;
        let mut exp: i32 = 0;
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            // Exponents beyond +-1000 are meaningless here; saturate and let scaling overflow.
            exp = (exp * 10 + i32::from(bytes[j] - b'0')).min(10_000);
            j += 1;
        }
        if j > start {
            exp10 += if negative { -exp } else { exp };
            i = j;
        }
    }
    Some((Decimal { mantissa, exp10 }, &s[i..]))
}

/// Appends one digit; digits past [`MAX_DIGITS`] are dropped (integer ones scale the exponent).
fn push_digit(
    mantissa: &mut u128,
    digits: &mut usize,
    exp10: &mut i32,
    digit: u8,
    fractional: bool,
) -> Option<()> {
    if *digits == 0 && digit == b'0' {
        // Leading zeros carry no precision.
        if fractional {
            *exp10 = exp10.checked_sub(1)?;
        }
        return Some(());
    }
    if *digits < MAX_DIGITS {
        *mantissa = *mantissa * 10 + u128::from(digit - b'0');
        *digits += 1;
        if fractional {
            *exp10 = exp10.checked_sub(1)?;
        }
    } else if !fractional {
        *exp10 = exp10.checked_add(1)?;
    }
    Some(())
}

impl Decimal {
    /// `self * unit`, rounded half up to an integer; `None` when the result exceeds `u64`.
    pub(crate) fn scale(self, unit: u64) -> Option<u64> {
        let mut value = self.mantissa.checked_mul(u128::from(unit))?;
        if value == 0 {
            return Some(0);
        }
        if self.exp10 >= 0 {
            for _ in 0..self.exp10 {
                value = value.checked_mul(10)?;
                if value > u128::from(u64::MAX) {
                    return None;
                }
            }
        } else {
            let shift = self.exp10.unsigned_abs();
            if shift > 38 {
                // Smaller than one unit of 10^-38: rounds to zero.
                return Some(0);
            }
            let div = 10u128.pow(shift);
            value = value / div + u128::from(value % div >= div.div_ceil(2) && div > 1);
        }
        u64::try_from(value).ok()
    }
}

/// Formats `value / unit` exactly in decimal, where `unit` is a power of ten.
pub(crate) fn format_decimal_exact(value: u64, unit: u64) -> String {
    let int = value / unit;
    let mut rem = value % unit;
    if rem == 0 {
        return int.to_string();
    }
    let mut frac = String::new();
    let mut scale = unit;
    while rem != 0 && scale > 1 {
        scale /= 10;
        let d = rem / scale;
        rem %= scale;
        frac.push(char::from(b'0' + d as u8));
    }
    format!("{int}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_and_scales_exactly() {
        let (d, rest) = scan_decimal("8.5gbit").expect("number");
        assert_eq!(rest, "gbit");
        assert_eq!(d.scale(1_000_000_000), Some(8_500_000_000));
        let (d, rest) = scan_decimal("11.4 ms").expect("number");
        assert_eq!(rest, " ms");
        assert_eq!(d.scale(1_000_000), Some(11_400_000));
        let (d, _) = scan_decimal("1e10").expect("number");
        assert_eq!(d.scale(1), Some(10_000_000_000));
        let (d, rest) = scan_decimal("2e").expect("number");
        assert_eq!((d.scale(1), rest), (Some(2), "e"));
        assert_eq!(scan_decimal(".5").and_then(|(d, _)| d.scale(10)), Some(5));
        assert_eq!(
            scan_decimal("0.0005").and_then(|(d, _)| d.scale(1000)),
            Some(1)
        );
        assert_eq!(
            scan_decimal("0.0004").and_then(|(d, _)| d.scale(1000)),
            Some(0)
        );
        assert!(scan_decimal("x1").is_none());
        assert!(scan_decimal(".").is_none());
        assert_eq!(
            scan_decimal("18446744073709551616").and_then(|(d, _)| d.scale(1)),
            None
        );
    }

    #[test]
    fn formats_exact_decimals() {
        assert_eq!(format_decimal_exact(8_500_000_000, 1_000_000_000), "8.5");
        assert_eq!(format_decimal_exact(11_400_000, 1_000_000), "11.4");
        assert_eq!(
            format_decimal_exact(1_000_000_001, 1_000_000_000),
            "1.000000001"
        );
        assert_eq!(format_decimal_exact(42, 1), "42");
    }
}
