//! hare-link: the path model of hare, independent of the time source.
//!
//! Each direction of a path is a [`Link`]: seeded loss models at entry, a drop-tail FIFO
//! bottleneck whose rate counts IP bytes (the caller passes the IP packet length, that is the
//! UDP payload plus 28 bytes for IPv4 or plus 48 for IPv6), propagation delay and optional
//! jitter. Time is a plain [`Nanos`] count passed in by the caller, so the same model runs in
//! the simulator's virtual time and in a wall-clock emulator. No I/O, no clocks, no async.
//!
//! The serialiser keeps its clock as an exact rational number of nanoseconds
//! (`whole + frac / rate`), so back-to-back traffic leaves at exactly `rate` over any length
//! of run; only each reported departure is rounded (up) to a whole nanosecond.
//!
//! ```
//! use hare_link::{Link, LinkConfig, Verdict, units::{parse_rate, parse_duration}};
//! let cfg = LinkConfig::new(parse_rate("10g")?, parse_duration("40ms")?);
//! let mut link = Link::new(&cfg)?;
//! // 9000 IP bytes at 10 Gbit/s take 7200 ns to serialise, then 40 ms of propagation.
//! assert_eq!(link.offer(0, 9000), Verdict::Delivered { at: 7_200 + 40_000_000 });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

mod config;
mod error;
mod jitter;
mod link;
mod loss;
mod path;
mod queue_log;
mod serializer;
mod stats;
pub mod units;

/// Time in nanoseconds since an arbitrary origin shared by all calls on a link (virtual time in
/// the simulator, a monotonic clock's offset in an emulator).
pub type Nanos = u64;

pub use config::{JitterConfig, JitterDistribution, LinkConfig, LossModel};
pub use error::LinkError;
pub use link::{Link, Verdict};
pub use path::{Path, PathConfig};
pub use queue_log::{LogConfig, LogEntry, LogEvent};
pub use stats::{DropCounts, DropReason, LinkStats};
pub use units::{BitRate, ByteSize, TimeSpan, UnitError};
