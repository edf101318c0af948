//! Human units for rates, sizes and durations, shared by scenario files, the simulator and the
//! command-line tools.
//!
//! - Rates are SI, in bit/s: `10g` = 10^10 bit/s, `8.5gbit`, `100m`, `1.6 Gbit/s`, `250 kbit/s`,
//!   `100mbps`, or a plain number of bit/s (`1e9` is allowed). The `m` of a rate is mega.
//! - Sizes follow nuttcp's `-w60m`: `k`, `m`, `g`, `t` are powers of two, and so are `KB`, `MB`,
//!   `GB` (as in nuttcp's `MB / sec` column) and `KiB`, `MiB`, `GiB`; a plain number is bytes.
//! - Durations need a unit: `ns`, `us` (or `µs`), `ms`, `s`: `40ms`, `80 ms`, `11.4ms`, `250us`.
//!
//! Parsing is exact decimal arithmetic (no floating point): `8.5g` is 8 500 000 000 bit/s,
//! `11.4ms` is 11 400 000 ns; a fraction finer than the base unit is rounded half up. The
//! `format_*` functions print the exact value in the largest readable unit, so that
//! `parse(format(x)) == x` for every value.

mod number;
mod types;

pub use types::{BitRate, ByteSize, TimeSpan};

use number::{format_decimal_exact, scan_decimal};

/// A rate, size or duration string that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The input is not a rate.
    #[error(
        "bad rate `{0}`: expected a number with an optional k/m/g/t suffix and optional bit/s, \
         e.g. 10g, 8.5gbit, 100 Mbit/s"
    )]
    Rate(String),
    /// The input is not a size.
    #[error(
        "bad size `{0}`: expected a number of bytes with an optional k/m/g/t suffix \
         (powers of 2, as nuttcp; also KB/KiB, MB/MiB, GB/GiB), e.g. 60m, 100 MiB, 9000"
    )]
    Size(String),
    /// The input is not a duration.
    #[error(
        "bad duration `{0}`: expected a number with a unit ns, us, ms or s, \
         e.g. 40ms, 11.4 ms, 250us, 20s"
    )]
    Duration(String),
    /// The input is well formed but does not fit in 64 bits of the base unit.
    #[error("{kind} `{input}` is too large: the largest is {max}")]
    TooLarge {
        /// "rate", "size" or "duration".
        kind: &'static str,
        /// The input as given.
        input: String,
        /// The largest value, formatted in its base unit.
        max: &'static str,
    },
}

const KILO: u64 = 1_000;
const MEGA: u64 = 1_000_000;
const GIGA: u64 = 1_000_000_000;
const TERA: u64 = 1_000_000_000_000;

/// Parses a rate in bit/s: `10g`, `8.5gbit`, `100m`, `1.6 Gbit/s`, `100mbps`, `1000000`.
///
/// Prefixes are SI and case-insensitive (`m` is mega). The optional tail is `bit`, `bits`,
/// `bit/s`, `bits/s` or `bps` (lower-case `b` only: `MBps` would be bytes, which rates never
/// use here).
pub fn parse_rate(input: &str) -> Result<BitRate, UnitError> {
    let bad = || UnitError::Rate(input.to_string());
    let (number, rest) = scan_decimal(input.trim()).ok_or_else(bad)?;
    let rest = rest.trim_start();
    let (unit, tail) = match rest.chars().next() {
        Some('k' | 'K') => (KILO, &rest[1..]),
        Some('m' | 'M') => (MEGA, &rest[1..]),
        Some('g' | 'G') => (GIGA, &rest[1..]),
        Some('t' | 'T') => (TERA, &rest[1..]),
        _ => (1, rest),
    };
    let tail_ok = tail.is_empty()
        || tail == "bps"
        || ["bit", "bits", "bit/s", "bits/s"]
            .iter()
            .any(|t| tail.eq_ignore_ascii_case(t));
    if !tail_ok {
        return Err(bad());
    }
    number
        .scale(unit)
        .map(BitRate)
        .ok_or_else(|| UnitError::TooLarge {
            kind: "rate",
            input: input.to_string(),
            max: "18446744073709551615 bit/s",
        })
}

/// Parses a size in bytes: `60m` (= 60 MiB), `100 MiB`, `64k`, `1.5g`, `9000`, `9000 B`.
///
/// `k`/`m`/`g`/`t` with an optional `b`, `ib`, `byte` or `bytes` are powers of two; case is
/// ignored.
pub fn parse_size(input: &str) -> Result<ByteSize, UnitError> {
    let bad = || UnitError::Size(input.to_string());
    let (number, rest) = scan_decimal(input.trim()).ok_or_else(bad)?;
    let rest = rest.trim_start();
    let (unit, tail) = match rest.chars().next() {
        Some('k' | 'K') => (1u64 << 10, &rest[1..]),
        Some('m' | 'M') => (1u64 << 20, &rest[1..]),
        Some('g' | 'G') => (1u64 << 30, &rest[1..]),
        Some('t' | 'T') => (1u64 << 40, &rest[1..]),
        _ => (1, rest),
    };
    let with_prefix = unit > 1;
    let tail_ok = tail.is_empty()
        || ["b", "byte", "bytes"]
            .iter()
            .any(|t| tail.eq_ignore_ascii_case(t))
        || (with_prefix && tail.eq_ignore_ascii_case("ib"));
    if !tail_ok {
        return Err(bad());
    }
    number
        .scale(unit)
        .map(ByteSize)
        .ok_or_else(|| UnitError::TooLarge {
            kind: "size",
            input: input.to_string(),
            max: "18446744073709551615 bytes",
        })
}

/// Parses a duration in nanoseconds: `40ms`, `80 ms`, `11.4ms`, `250us`, `250µs`, `20s`, `100ns`.
pub fn parse_duration(input: &str) -> Result<TimeSpan, UnitError> {
    let bad = || UnitError::Duration(input.to_string());
    let (number, rest) = scan_decimal(input.trim()).ok_or_else(bad)?;
    let unit = match rest.trim_start() {
        "ns" => 1,
        "us" | "µs" | "μs" => KILO,
        "ms" => MEGA,
        "s" => GIGA,
        _ => return Err(bad()),
    };
    number
        .scale(unit)
        .map(TimeSpan)
        .ok_or_else(|| UnitError::TooLarge {
            kind: "duration",
            input: input.to_string(),
            max: "18446744073709551615 ns",
        })
}

/// Formats a rate exactly in the largest SI unit it reaches: `10 Gbit/s`, `8.5 Gbit/s`,
/// `1.234567 Mbit/s`, `999 bit/s`.
pub fn format_rate(rate: BitRate) -> String {
    let bps = rate.0;
    let (unit, name) = [
        (GIGA, "Gbit/s"),
        (MEGA, "Mbit/s"),
        (KILO, "kbit/s"),
        (1, "bit/s"),
    ]
    .into_iter()
    .find(|&(u, _)| bps >= u)
    .unwrap_or((1, "bit/s"));
    format!("{} {name}", format_decimal_exact(bps, unit))
}

/// Formats a size exactly: in GiB, MiB or KiB when that takes at most three decimals
/// (`60 MiB`, `1.5 KiB`), else in bytes (`12345 B`).
pub fn format_size(size: ByteSize) -> String {
    let bytes = size.0;
    for (unit, name) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
        if bytes >= unit && u128::from(bytes) * 1000 % u128::from(unit) == 0 {
            let int = bytes / unit;
            // Exact: unit divides bytes * 1000.
            let milli = (u128::from(bytes % unit) * 1000 / u128::from(unit)) as u64;
            let text = format_decimal_exact(int * 1000 + milli, 1000);
            return format!("{text} {name}");
        }
    }
    format!("{bytes} B")
}

/// Formats a duration exactly in the largest unit it reaches: `40 ms`, `11.4 ms`, `250 us`,
/// `1.000000001 s`, `0 s`.
pub fn format_duration(span: TimeSpan) -> String {
    let ns = span.0;
    if ns == 0 {
        return "0 s".to_string();
    }
    let (unit, name) = [(GIGA, "s"), (MEGA, "ms"), (KILO, "us"), (1, "ns")]
        .into_iter()
        .find(|&(u, _)| ns >= u)
        .unwrap_or((1, "ns"));
    format!("{} {name}", format_decimal_exact(ns, unit))
}
