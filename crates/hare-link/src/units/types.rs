//! Typed rate, size and duration values that read and write human strings in scenario files.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{
    format_duration, format_rate, format_size, parse_duration, parse_rate, parse_size, UnitError,
};
use crate::Nanos;

/// A rate in bit/s (SI). Reads `"10g"`, `"8.5gbit"`, `"1.6 Gbit/s"` or a number of bit/s;
/// writes the exact value in the largest unit (`"10 Gbit/s"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BitRate(pub u64);

/// A size in bytes. Reads `"60m"` (60 MiB, nuttcp style), `"100 MiB"`, `"64k"` or a number of
/// bytes; writes `"60 MiB"` or `"12345 B"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

/// A duration (or a time since the start of a run) in nanoseconds. Reads `"40ms"`,
/// `"11.4 ms"`, `"250us"`, `"20s"` (a unit is required); writes `"11.4 ms"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TimeSpan(pub Nanos);

impl BitRate {
    /// The rate in bit/s.
    pub fn bits_per_sec(self) -> u64 {
        self.0
    }
}

impl ByteSize {
    /// The size in bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }
}

impl TimeSpan {
    /// The span in nanoseconds.
    pub fn nanos(self) -> Nanos {
        self.0
    }
    /// Builds a span from milliseconds (saturating).
    pub fn from_millis(ms: u64) -> Self {
        TimeSpan(ms.saturating_mul(1_000_000))
    }
    /// Builds a span from whole seconds (saturating).
    pub fn from_secs(s: u64) -> Self {
        TimeSpan(s.saturating_mul(1_000_000_000))
    }
    /// Converts to a `std::time::Duration`.
    pub fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0)
    }
}

impl From<std::time::Duration> for TimeSpan {
    /// Saturates at `u64::MAX` ns (about 584 years).
    fn from(d: std::time::Duration) -> Self {
        TimeSpan(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl FromStr for BitRate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_rate(s)
    }
}

impl FromStr for ByteSize {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_size(s)
    }
}

impl FromStr for TimeSpan {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s)
    }
}

impl fmt::Display for BitRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_rate(*self))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(*self))
    }
}

impl fmt::Display for TimeSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(*self))
    }
}

macro_rules! string_serde {
    ($ty:ident) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }
    };
}
string_serde!(BitRate);
string_serde!(ByteSize);
string_serde!(TimeSpan);

/// Which quantity a visitor reads, and whether bare numbers are allowed for it.
#[derive(Clone, Copy)]
enum Kind {
    Rate,
    Size,
    Duration,
}

struct UnitVisitor(Kind);

impl UnitVisitor {
    fn number_value<E: de::Error>(&self, v: f64, shown: &dyn fmt::Display) -> Result<u64, E> {
        match self.0 {
            Kind::Duration => Err(E::custom(UnitError::Duration(shown.to_string()))),
            kind => {
                if (0.0..18_446_744_073_709_551_616.0).contains(&v) {
                    // Rounds half away from zero; plain TOML integers arrive exactly through
                    // visit_u64 instead.
                    Ok(v.round() as u64)
                } else if matches!(kind, Kind::Rate) {
                    Err(E::custom(UnitError::Rate(shown.to_string())))
                } else {
                    Err(E::custom(UnitError::Size(shown.to_string())))
                }
            }
        }
    }
}

impl Visitor<'_> for UnitVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Kind::Rate => f.write_str("a rate such as \"10g\", \"8.5gbit\" or a number of bit/s"),
            Kind::Size => f.write_str("a size such as \"60m\", \"100 MiB\" or a number of bytes"),
            Kind::Duration => f.write_str("a duration such as \"40ms\", \"11.4 ms\" or \"250us\""),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        match self.0 {
            Kind::Rate => parse_rate(v).map(|r| r.0),
            Kind::Size => parse_size(v).map(|s| s.0),
            Kind::Duration => parse_duration(v).map(|d| d.0),
        }
        .map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        match self.0 {
            Kind::Duration => Err(E::custom(UnitError::Duration(v.to_string()))),
            _ => Ok(v),
        }
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        match u64::try_from(v) {
            Ok(u) => self.visit_u64(u),
            Err(_) => self.number_value(v as f64, &v),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        self.number_value(v, &v)
    }
}

impl<'de> Deserialize<'de> for BitRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor(Kind::Rate)).map(BitRate)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor(Kind::Size)).map(ByteSize)
    }
}

impl<'de> Deserialize<'de> for TimeSpan {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor(Kind::Duration)).map(TimeSpan)
    }
}
