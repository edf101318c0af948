//! The thread's measured runs: `data/thread-runs.json` (every nuttcp run printed in the 2007
//! and 2011 netdev threads, transcribed from the mails) and `data/nussbaum-2011-runs.json`
//! (Lucas Nussbaum's two 1 GigE runs, transcribed from his 11 Mar 2011 mail in
//! the same shape). Both files are compiled into the binary so that `hare-lab replay` works
//! from any directory.

use crate::metrics::{self, Row};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The 2007 and 2011 threads' runs, as shipped in `testbed/data/thread-runs.json`.
pub const THREAD_RUNS_JSON: &str = include_str!("../data/thread-runs.json");
/// Lucas Nussbaum's runs (his 11 March 2011 mail), `testbed/data/nussbaum-2011-runs.json`.
pub const NUSSBAUM_RUNS_JSON: &str = include_str!("../data/nussbaum-2011-runs.json");

/// A reference data file that does not parse.
#[derive(Debug, Error)]
#[error("{file}: not a list of thread runs: {error}")]
pub struct DataError {
    /// Which file.
    pub file: String,
    /// The JSON error (with line and column).
    pub error: serde_json::Error,
}

/// The path a thread run took, as the mail describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadPath {
    /// Round-trip time in milliseconds (ping / nuttcp's msRTT).
    pub rtt_ms: f64,
    /// Line rate of the NICs in Gbit/s.
    pub link_gbps: f64,
    /// IP MTU in bytes.
    pub mtu: u32,
    /// How the delay was made (netem on a middle host, or a real network).
    pub emulator: String,
}

/// One nuttcp `-i1` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadInterval {
    /// MB (2^20 bytes) in the interval.
    pub mb: f64,
    /// Seconds covered (1.00 or 1.01).
    pub sec: f64,
    /// Mbit/s (10^6 bit/s) as nuttcp printed it.
    pub mbps: f64,
    /// Retransmissions in the interval (2011 nuttcp prints them; `None` in 2007).
    pub retrans: Option<u64>,
}

/// nuttcp's closing line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSummary {
    /// MB transferred.
    pub mb: f64,
    /// Duration in seconds.
    pub sec: f64,
    /// Average Mbit/s.
    pub mbps: f64,
    /// Sender CPU %.
    pub tx_pct: Option<f64>,
    /// Receiver CPU %.
    pub rx_pct: Option<f64>,
    /// Retransmissions over the run, when printed.
    pub retrans: Option<u64>,
    /// RTT in ms, when printed.
    pub rtt_ms: Option<f64>,
}

/// One run of the thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRun {
    /// Stable identifier, e.g. `2007-cubic20-iss100-w60m`.
    pub id: String,
    /// Seed file of the mail.
    pub seed: String,
    /// Sender kernel.
    pub kernel: String,
    /// Congestion control (`cubic`, `bic`, `reno`).
    pub cc: String,
    /// CUBIC version (2.0, 2.1) when stated.
    #[serde(default)]
    pub cubic_version: Option<String>,
    /// `initial_ssthresh` module parameter when stated.
    #[serde(default)]
    pub initial_ssthresh: Option<u32>,
    /// HyStart on or off when stated.
    #[serde(default)]
    pub hystart: Option<bool>,
    /// nuttcp `-w` or `autotuning`.
    pub socket_buffer: String,
    /// Kernel configuration notes (HZ, timestamps).
    #[serde(default)]
    pub config: Option<String>,
    /// The path.
    pub path: ThreadPath,
    /// `-n` transfer size, when the run was size-bound.
    #[serde(default)]
    pub transfer: Option<String>,
    /// A rate limit of the path below the line rate, when the mail states one.
    #[serde(default)]
    pub path_limit_gbps: Option<f64>,
    /// What the mail says about the run.
    #[serde(default)]
    pub note: String,
    /// The nuttcp command.
    pub command: String,
    /// Per-second rows.
    pub intervals: Vec<ThreadInterval>,
    /// The closing line.
    pub summary: ThreadSummary,
    /// Slow-start exit cwnd, when the mail prints it (Nussbaum's HyStart debug lines).
    #[serde(default)]
    pub exit_cwnd: Option<u32>,
    /// Slow-start exit reason, when the mail prints it (`delay`, `ack-train`).
    #[serde(default)]
    pub exit_reason: Option<String>,
}

impl ThreadRun {
    /// The rows as metric rows (end time accumulates nuttcp's `sec` column).
    pub fn rows(&self) -> Vec<Row> {
        let mut t = 0.0;
        self.intervals
            .iter()
            .map(|iv| {
                let start = t;
                t += iv.sec;
                Row {
                    start_s: start,
                    end_s: t,
                    mbps: iv.mbps,
                    lost: iv.retrans,
                }
            })
            .collect()
    }

    /// Bytes of one row (MB are 2^20 bytes), for re-printing it as a nuttcp line.
    pub fn row_bytes(iv: &ThreadInterval) -> u64 {
        (iv.mb * hare_report::MIB).round() as u64
    }

    /// Which path this run took: runs of one path group share a capacity. The key is the
    /// mail (seed), the RTT and any stated rate limit (the 2007 reduced-buffer runs).
    pub fn path_group(&self) -> String {
        match self.path_limit_gbps {
            Some(l) => format!("{}@{}ms/limit{}g", self.seed, self.path.rtt_ms, l),
            None => format!("{}@{}ms", self.seed, self.path.rtt_ms),
        }
    }

    /// Packets lost in the first 10 s as the thread reports them: the sum of the per-second
    /// `retrans` column when nuttcp printed it; otherwise what the mail's note says about a
    /// run of at most 10 s (`N fast retransmits` from `netstat -s` deltas, or `no loss`,
    /// `no congestion`, `no new retransmits` as 0); `None` when neither tells.
    pub fn lost_packets_10s(&self) -> Option<u64> {
        if let Some(n) = metrics::losses_within(&self.rows(), 10.0) {
            return Some(n);
        }
        if self.summary.sec > 10.0 + 0.7 {
            // The note's counts cover the whole run; only use them for runs of about 10 s.
            return note_says_no_loss(&self.note).then_some(0);
        }
        note_retransmits(&self.note).or_else(|| note_says_no_loss(&self.note).then_some(0))
    }
}

/// `N fast retransmits` in a note, if present.
fn note_retransmits(note: &str) -> Option<u64> {
    let idx = note.find(" fast retransmits")?;
    let digits: String = note[..idx]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

fn note_says_no_loss(note: &str) -> bool {
    let n = note.to_ascii_lowercase();
    n.starts_with("no loss")
        || n.contains("no congestion")
        || n.contains("no new retransmits")
        || n.contains(", no loss")
}

/// All reference runs, in file order (thread-runs.json first, then Nussbaum's).
#[derive(Debug, Clone)]
pub struct ThreadData {
    runs: Vec<ThreadRun>,
}

impl ThreadData {
    /// Parse reference data from JSON texts; `name` labels errors.
    pub fn parse(files: &[(&str, &str)]) -> Result<Self, DataError> {
        let mut runs = Vec::new();
        for (name, text) in files {
            let mut these: Vec<ThreadRun> =
                serde_json::from_str(text).map_err(|error| DataError {
                    file: name.to_string(),
                    error,
                })?;
            runs.append(&mut these);
        }
        Ok(ThreadData { runs })
    }

    /// The data compiled into the binary.
    pub fn embedded() -> Result<Self, DataError> {
        Self::parse(&[
            ("data/thread-runs.json", THREAD_RUNS_JSON),
            ("data/nussbaum-2011-runs.json", NUSSBAUM_RUNS_JSON),
        ])
    }

    /// Every run.
    pub fn runs(&self) -> &[ThreadRun] {
        &self.runs
    }

    /// The run with this id.
    pub fn get(&self, id: &str) -> Option<&ThreadRun> {
        self.runs.iter().find(|r| r.id == id)
    }

    /// The thread's capacity of a run's path in Mbit/s: over every run of the same
    /// [`ThreadRun::path_group`], the largest median of a run's last three rows (its
    /// plateau). Taking the best run of the group keeps a window- or autotuning-limited run
    /// from defining its own "full rate".
    pub fn capacity_mbps(&self, run: &ThreadRun) -> f64 {
        let group = run.path_group();
        self.runs
            .iter()
            .filter(|r| r.path_group() == group)
            .map(|r| metrics::plateau_mbps(&r.rows()))
            .fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_give_loss_counts() {
        assert_eq!(note_retransmits("629 fast retransmits"), Some(629));
        assert_eq!(
            note_retransmits(
                "100 MB window overstresses the emulator (about 8.5 Gbit/s): 464 fast retransmits"
            ),
            Some(464)
        );
        assert_eq!(note_retransmits("no loss"), None);
        assert!(note_says_no_loss("no loss; 25 s to reach full rate"));
        assert!(note_says_no_loss(
            "emulator buffering increased again: no congestion; 2.14 s"
        ));
        assert!(!note_says_no_loss("629 fast retransmits"));
    }
}
