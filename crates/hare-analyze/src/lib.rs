//! hare-analyze: qlog- and report-driven analysis of bulk transfers.
//!
//! Readers turn hare report JSON lines, qlog JSON-SEQ (quinn's and quiche's `.sqlog`) and
//! qlog JSON (`.qlog` with a `traces` array) into [`Trace`]s, streaming and in bounded
//! memory; [`metrics`] computes what people judge slow start by (the exit, its window and
//! reason, overshoot over the BDP, time to a share of the capacity, loss episodes and their
//! recovery, goodput over 1/5/10/30 s); [`table`] prints them, [`plot`] draws them and
//! [`cli`] is the `hare-lab analyze | plot | compare | bench-analyze` front end.
#![warn(missing_docs)]

mod accumulate;
pub mod bench;
pub mod cli;
pub mod error;
mod finish;
mod lenient;
pub mod metrics;
pub mod plot;
mod qlog_event;
pub mod read;
mod report_read;
pub mod sidecar;
mod sink;
mod streams;
pub mod table;
pub mod trace;

pub use error::{AnalyzeError, Result};
pub use read::read_file;
pub use trace::{
    Chunk, Exit, ExitSource, Format, PayloadSource, Reduction, Sample, Skipped, Trace, TraceRole,
};
