//! The report records: the spine of hare.
//!
//! Everything that runs a transfer (hare-send / hare-recv, the virtual-time simulator, the
//! kernel-TCP reference sender) produces these records, and everything that analyses or plots
//! reads them. One run is a [`RunHeader`], a sequence of [`Interval`]s and [`Event`]s in time
//! order, and a [`Summary`]. Two serialisations are provided:
//! - JSON lines ([`Record`], one object per line, tagged by `"type"`), written while the run
//!   goes on and readable after a crash ([`jsonl`]);
//! - an iperf3-shaped document (`start` / `intervals` / `end`, plus `events`) for scripts that
//!   already read iperf3's `--json` ([`iperf`]).
//!
//! Text output follows nuttcp's interval line ([`nuttcp`]): `MB / sec = Mbps`, MB = 2^20 bytes,
//! Mbit/s = 10^6 bit/s.
#![warn(missing_docs)]

pub mod compact;
mod controller;
pub mod fairness;
pub mod iperf;
pub mod jsonl;
pub mod nuttcp;
mod records;

pub use controller::{CcEvent, ExitReason, Phase};
pub use records::*;

/// The schema identifier written into every header; bump the number on incompatible changes.
pub const SCHEMA: &str = "hare-report/1";

/// Bytes in nuttcp's MB (2^20).
pub const MIB: f64 = 1_048_576.0;

/// Mbit/s from bytes over seconds, as nuttcp computes it (10^6 bit/s); 0 for an empty span.
pub fn mbps(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds / 1e6
    } else {
        0.0
    }
}
