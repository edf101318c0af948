//! The benchmark of several connections (`hare-send bench --connections 1,2,4,8`): the same
//! job sent with `-C N` for each N, the rounds interleaved across the N values (N = 1, 2, 4,
//! 8, then again) so that a drift in the machine's load hits every N alike, and per N the
//! median goodput and CPU seconds per 10^9 bytes on each side, with their ratios to one
//! connection.
//!
//! This module holds what every variant shares (the list's parsing, the arithmetic, the
//! table); [`loopback`] runs the cases between processes on loopback. The namespace emulator
//! variant lives in hare-send, which can depend on hare-emu.
//!
//! CPU time is each process's own user + system time, read by the parent when it reaps the
//! child (`getrusage(RUSAGE_CHILDREN)` before and after the wait): exact, and the whole
//! process (start, handshakes of every connection, the job, the close), not a percent
//! sampled over part of it.

pub mod loopback;

use crate::error::{Result, TransferError};
use crate::protocol::MAX_CONNECTIONS;

/// Parses `--connections 1,2,4,8`: each value 1 to [`MAX_CONNECTIONS`], none twice, in the
/// order given (the order the rounds run in).
pub fn parse_connections(text: &str) -> Result<Vec<u16>> {
    let bad = |why: String| TransferError::Usage(format!("--connections {text}: {why}"));
    if text.trim().is_empty() {
        return Err(bad("empty: give a list such as 1,2,4,8".into()));
    }
    let mut out: Vec<u16> = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(bad("an empty value in the list".into()));
        }
        let n: u32 = item
            .parse()
            .map_err(|_| bad(format!("{item:?} is not a number")))?;
        if n == 0 || n > u32::from(MAX_CONNECTIONS) {
            return Err(bad(format!("{n}: must be 1 to {MAX_CONNECTIONS}")));
        }
        let n = n as u16;
        if out.contains(&n) {
            return Err(bad(format!("{n} is given twice")));
        }
        out.push(n);
    }
    Ok(out)
}

/// One measured run.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnRun {
    /// `-C` of the run.
    pub connections: u16,
    /// Round (1, 2, ...).
    pub round: usize,
    /// Payload bytes the receiver counted.
    pub bytes: u64,
    /// The sender's time from the start of the data to the receiver's final answer.
    pub seconds: f64,
    /// hare-send's CPU seconds (user + system, whole process).
    pub sender_cpu_s: Option<f64>,
    /// hare-recv's CPU seconds (user + system, whole process).
    pub receiver_cpu_s: Option<f64>,
    /// Why the run does not count (the emulator's INVALID verdict); `None`: it counts.
    pub invalid: Option<String>,
}

impl ConnRun {
    /// Goodput, Mbit/s.
    pub fn mbps(&self) -> f64 {
        hare_report::mbps(self.bytes, self.seconds)
    }

    /// The sender's CPU seconds per 10^9 payload bytes.
    pub fn sender_cpu_per_gb(&self) -> Option<f64> {
        cpu_per_gb(self.sender_cpu_s?, self.bytes)
    }

    /// The receiver's CPU seconds per 10^9 payload bytes.
    pub fn receiver_cpu_per_gb(&self) -> Option<f64> {
        cpu_per_gb(self.receiver_cpu_s?, self.bytes)
    }

    /// The progress line of a finished run.
    pub fn line(&self) -> String {
        let opt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
        let verdict = match &self.invalid {
            None => String::new(),
            Some(why) => format!(", INVALID (left out): {why}"),
        };
        format!(
            "round {} -C {}: {:.1} Mbit/s ({} bytes in {:.3} s), CPU s/GB sender {} receiver {}{verdict}",
            self.round,
            self.connections,
            self.mbps(),
            self.bytes,
            self.seconds,
            opt(self.sender_cpu_per_gb()),
            opt(self.receiver_cpu_per_gb()),
        )
    }
}

/// CPU seconds per 10^9 bytes; `None` when nothing moved.
pub fn cpu_per_gb(cpu_s: f64, bytes: u64) -> Option<f64> {
    (bytes > 0 && cpu_s.is_finite()).then(|| cpu_s / (bytes as f64 / 1e9))
}

/// One N's figures: medians over the runs that count.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnRow {
    /// `-C`.
    pub connections: u16,
    /// Runs that count.
    pub counted: usize,
    /// Runs made.
    pub runs: usize,
    /// Median goodput, Mbit/s.
    pub mbps: Option<f64>,
    /// Median sender CPU seconds per 10^9 bytes.
    pub sender_cpu_gb: Option<f64>,
    /// Median receiver CPU seconds per 10^9 bytes.
    pub receiver_cpu_gb: Option<f64>,
}

/// The rows of `list` (in its order) from `runs`; INVALID runs are left out of the medians.
pub fn summarise(list: &[u16], runs: &[ConnRun]) -> Vec<ConnRow> {
    list.iter()
        .map(|&n| {
            let mine: Vec<&ConnRun> = runs.iter().filter(|r| r.connections == n).collect();
            let ok: Vec<&ConnRun> = mine
                .iter()
                .copied()
                .filter(|r| r.invalid.is_none())
                .collect();
            let med = |f: &dyn Fn(&ConnRun) -> Option<f64>| {
                crate::bench::median(&ok.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
            };
            ConnRow {
                connections: n,
                counted: ok.len(),
                runs: mine.len(),
                mbps: med(&|r| Some(r.mbps())),
                sender_cpu_gb: med(&ConnRun::sender_cpu_per_gb),
                receiver_cpu_gb: med(&ConnRun::receiver_cpu_per_gb),
            }
        })
        .collect()
}

/// `a / b` when both are known and `b` is positive.
pub fn ratio_to(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The table: per N the medians and their ratios to the row of one connection (to the
/// first row when 1 is not in the list).
pub fn table(rows: &[ConnRow]) -> String {
    let Some(base) = rows
        .iter()
        .find(|r| r.connections == 1)
        .or_else(|| rows.first())
    else {
        return "(no runs)\n".into();
    };
    let x = format!("x(-C {})", base.connections);
    let mut s = format!(
        "{:>4} {:>5} {:>10} {:>8} {:>14} {:>8} {:>14} {:>8}\n",
        "-C", "runs", "Mbit/s", x, "sender s/GB", x, "receiver s/GB", x
    );
    let cell =
        |v: Option<f64>, prec: usize| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.prec$}"));
    for r in rows {
        s.push_str(&format!(
            "{:>4} {:>5} {:>10} {:>8} {:>14} {:>8} {:>14} {:>8}\n",
            r.connections,
            format!("{}/{}", r.counted, r.runs),
            cell(r.mbps, 1),
            cell(ratio_to(r.mbps, base.mbps), 3),
            cell(r.sender_cpu_gb, 3),
            cell(ratio_to(r.sender_cpu_gb, base.sender_cpu_gb), 3),
            cell(r.receiver_cpu_gb, 3),
            cell(ratio_to(r.receiver_cpu_gb, base.receiver_cpu_gb), 3),
        ));
    }
    s.push_str(
        "(medians of the runs that count; s/GB: CPU seconds, user + system of the whole process, \
         per 10^9 payload bytes)\n",
    );
    s
}

#[cfg(test)]
mod tests;
