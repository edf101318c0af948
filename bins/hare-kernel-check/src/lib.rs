//! hare-kernel-check: proves hare-cc's kernel model against the running kernel, ACK by ACK.
//!
//! It records a kernel TCP CUBIC flow (one it runs through hare-emu's namespace emulator, or
//! one the user runs, by port) with a BPF program on the `tcp_probe` tracepoint
//! ([`capture`]), writes the records to a versioned trace file ([`probe`]), and replays every
//! ACK through hare-cc's `linux-6` model at the kernel's HZ from the captured state
//! ([`replay`]), printing the agreement per field and state ([`tally`]).
#![warn(missing_docs)]

pub mod capture;
mod compare;
pub mod flow;
pub mod hz;
pub mod kstate;
pub mod probe;
pub mod replay;
mod report;
mod step;
pub mod tally;

use std::path::Path;

use anyhow::{Context, Result};

/// Read a trace file and replay it.
pub fn replay_file(path: &Path) -> Result<tally::Outcome> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let trace = probe::Trace::read(std::io::BufReader::new(f))
        .with_context(|| format!("reading {}", path.display()))?;
    replay::replay(&trace).with_context(|| format!("replaying {}", path.display()))
}
