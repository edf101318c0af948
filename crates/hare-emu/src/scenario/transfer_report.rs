//! What a namespace transfer adds to the reports: the path in the header (so that analysis
//! knows the capacity instead of guessing it from the fastest second), the receiver's own
//! report (read back from hare-recv's iperf3-shaped `--json`), and the kernel's TCP recovery
//! counters of the sender's namespace.

use std::path::Path;

use anyhow::{Context, Result};
use hare_link::{LinkConfig, LossModel, PathConfig};
use hare_report::{Interval, PathInfo, Run, RunHeader, Summary};
use serde::{Deserialize, Serialize};

/// The header's description of an emulated path.
pub fn path_info(path: &PathConfig) -> PathInfo {
    let f = &path.forward;
    PathInfo {
        rate_bps: Some(f.rate.0),
        rtt_ms: Some(f.delay.0.saturating_add(path.reverse.delay.0) as f64 / 1e6),
        queue_bytes: f.queue_bytes.map(|q| q.0),
        queue_packets: f.queue_packets,
        description: Some(format!(
            "hare-emu namespace mode: forward {}; reverse {} (loss times on the emulator's clock)",
            link_text(f),
            link_text(&path.reverse)
        )),
    }
}

fn link_text(l: &LinkConfig) -> String {
    let mut s = format!("{} delay {}", l.rate, l.delay);
    if let Some(q) = l.queue_bytes {
        s.push_str(&format!(" queue {q}"));
    }
    if let Some(p) = l.queue_packets {
        s.push_str(&format!(" queue {p} packets"));
    }
    if let Some(j) = &l.jitter {
        s.push_str(&format!(" jitter {}", j.amount));
    }
    for m in &l.loss {
        s.push_str(&match m {
            LossModel::Bernoulli { p } => format!(", loss p={p}"),
            LossModel::GilbertElliott { .. } => ", Gilbert-Elliott loss".to_string(),
            LossModel::Episode {
                from, to, one_in, ..
            } => format!(", loss 1 in {one_in} from {from} to {to}"),
            LossModel::Blackout { from, to } => format!(", blackout from {from} to {to}"),
        });
    }
    s
}

/// The receiver's report from hare-recv's `--json FILE` (one iperf3-shaped document per
/// connection; the last one is taken). hare's own records sit under the `hare` keys.
pub fn read_receiver_run(path: &Path) -> Result<Option<Run>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) else {
        return Ok(None);
    };
    #[derive(Deserialize)]
    struct Hare<T> {
        hare: T,
    }
    #[derive(Deserialize)]
    struct Doc {
        start: Hare<RunHeader>,
        intervals: Vec<Hare<Interval>>,
        end: Option<Hare<Summary>>,
    }
    let doc: Doc = serde_json::from_str(line)
        .with_context(|| format!("{}: not a hare-recv report", path.display()))?;
    Ok(Some(Run {
        header: doc.start.hare,
        intervals: doc.intervals.into_iter().map(|i| i.hare).collect(),
        events: Vec::new(),
        summary: doc.end.map(|e| e.hare),
    }))
}

/// Kernel TCP's window reductions, from the `TcpExt` counters of `/proc/net/netstat` (per
/// network namespace): every entry into fast recovery (`TCPSackRecovery`, `TCPRenoRecovery`,
/// counted in `tcp_enter_recovery()`) cuts cwnd to ssthresh, every retransmission timeout
/// (`TCPTimeouts`) to one segment (`tcp_enter_loss()`); undone (spurious) reductions are
/// `TCPFullUndo` + `TCPPartialUndo` + `TCPLossUndo` + `TCPDSACKUndo`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpReductions {
    /// Entries into fast recovery (SACK or Reno).
    pub fast_recovery: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Reductions the kernel undid as spurious.
    pub undone: u64,
}

impl TcpReductions {
    /// Parses the `TcpExt` lines of a `/proc/net/netstat` text; `None` without them.
    pub fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
        let (names, values) = (lines.next()?, lines.next()?);
        let mut r = Self::default();
        for (name, value) in names.split_whitespace().zip(values.split_whitespace()) {
            let Ok(v) = value.parse::<u64>() else {
                continue;
            };
            match name {
                "TCPSackRecovery" | "TCPRenoRecovery" => r.fast_recovery += v,
                "TCPTimeouts" => r.timeouts += v,
                "TCPFullUndo" | "TCPPartialUndo" | "TCPLossUndo" | "TCPDSACKUndo" => r.undone += v,
                _ => {}
            }
        }
        Some(r)
    }

    /// The counts between two reads.
    pub fn since(&self, before: &Self) -> Self {
        Self {
            fast_recovery: self.fast_recovery.saturating_sub(before.fast_recovery),
            timeouts: self.timeouts.saturating_sub(before.timeouts),
            undone: self.undone.saturating_sub(before.undone),
        }
    }

    /// Reductions in all: recoveries and timeouts.
    pub fn total(&self) -> u64 {
        self.fast_recovery + self.timeouts
    }
}

impl std::fmt::Display for TcpReductions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} fast recovery, {} RTO; {} undone as spurious; kernel counters)",
            self.total(),
            self.fast_recovery,
            self.timeouts,
            self.undone
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_counters_parse_and_subtract() {
        let text =
            "TcpExt: SyncookiesSent TCPRenoRecovery TCPSackRecovery TCPTimeouts TCPLossUndo\n\
                    TcpExt: 0 1 10 2 3\n\
                    IpExt: InNoRoutes\nIpExt: 0\n";
        let a = TcpReductions::parse(text).expect("TcpExt");
        assert_eq!(
            a,
            TcpReductions {
                fast_recovery: 11,
                timeouts: 2,
                undone: 3
            }
        );
        let b = TcpReductions {
            fast_recovery: 4,
            timeouts: 0,
            undone: 1,
        };
        assert_eq!(a.since(&b).total(), 9);
        assert_eq!(
            a.since(&b).to_string(),
            "9 (7 fast recovery, 2 RTO; 2 undone as spurious; kernel counters)"
        );
        assert_eq!(TcpReductions::parse("IpExt: a\nIpExt: 1\n"), None);
    }

    #[test]
    fn the_header_names_the_path() {
        let p = PathConfig::symmetric(
            hare_link::BitRate(100_000_000),
            hare_link::TimeSpan(80_000_000),
            Some(hare_link::ByteSize(1_000_000)),
        );
        let i = path_info(&p);
        assert_eq!(i.rate_bps, Some(100_000_000));
        assert_eq!(i.rtt_ms, Some(80.0));
        assert_eq!(i.bdp_bytes(), Some(1_000_000));
        assert_eq!(i.queue_bytes, Some(1_000_000));
    }
}
