//! The reader benchmark: write a large synthetic quinn-style qlog (JSON-SEQ), analyse it and
//! report throughput (MB/s of file) and the process's peak RSS (`VmHWM`).
//!
//! Targets: at least 100 MB/s, and under 200 MB peak RSS for a 1 GB qlog.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::error::{AnalyzeError, Result};
use crate::metrics::{compute, Params};

/// Throughput target, MB/s (10^6 bytes per second).
pub const TARGET_MB_PER_S: f64 = 100.0;
/// Peak RSS target, bytes (for a 1 GB qlog).
pub const TARGET_RSS_BYTES: u64 = 200 << 20;

/// What one benchmark run measured.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// The generated file.
    pub file: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Events in it.
    pub events: u64,
    /// Seconds to write it.
    pub generate_s: f64,
    /// Seconds to read and analyse it.
    pub analyze_s: f64,
    /// File MB (10^6 bytes) per second of analysis.
    pub mb_per_s: f64,
    /// Peak resident set size of the process after the analysis, bytes (`None` off Linux).
    pub peak_rss_bytes: Option<u64>,
    /// Goodput the analysis found, Mbit/s (a check that the run was analysed, not skipped).
    pub goodput_mbps: f64,
}

impl BenchReport {
    /// True when the throughput target is met.
    pub fn fast_enough(&self) -> bool {
        self.mb_per_s >= TARGET_MB_PER_S
    }
    /// True when the RSS target is met (unknown RSS counts as met).
    pub fn small_enough(&self) -> bool {
        self.peak_rss_bytes.is_none_or(|r| r < TARGET_RSS_BYTES)
    }
}

/// Peak RSS of this process from `/proc/self/status` (`VmHWM`), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Writes a synthetic qlog of at least `size` bytes at `path` in quinn's shape: a header,
/// then per packet a 1-RTT `packet_sent` (1452 bytes), per two packets a `packet_received`
/// (the ACK) and a `metrics_updated` with cwnd, bytes in flight and RTTs; cwnd grows by one
/// segment per acknowledged packet until a loss every 20000 packets halves it (the loss
/// sets ssthresh). Time advances 0.116 ms per packet (100 Mbit/s). Returns the event count.
pub fn generate(path: &Path, size: u64) -> std::io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut written: u64 = 0;
    let header = "\u{1e}{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"title\":\"hare bench\",\"trace\":{\"vantage_point\":{\"type\":\"unknown\"},\"common_fields\":{\"time_format\":\"relative\",\"reference_time\":0.0}}}\n";
    w.write_all(header.as_bytes())?;
    written += header.len() as u64;
    let (mss, mut cwnd, mut in_flight) = (1452u64, 14_520u64, 0u64);
    let mut ssthresh: Option<u64> = None;
    let mut events = 0u64;
    let mut pn = 0u64;
    let mut line = String::with_capacity(512);
    while written < size {
        use std::fmt::Write as _;
        let t = pn as f64 * 0.116;
        line.clear();
        let _ = writeln!(
            line,
            "\u{1e}{{\"time\":{t:.3},\"name\":\"transport:packet_sent\",\"data\":{{\"header\":{{\"packet_type\":\"1RTT\",\"packet_number\":{pn},\"length\":{mss}}}}},\"group_id\":\"6b1a2c3d4e5f6071\"}}"
        );
        in_flight += mss;
        events += 1;
        if pn % 20_000 == 19_999 {
            let _ = writeln!(
                line,
                "\u{1e}{{\"time\":{t:.3},\"name\":\"recovery:packet_lost\",\"data\":{{\"header\":{{\"packet_type\":\"1RTT\",\"packet_number\":{pn},\"length\":{mss}}},\"trigger\":\"reordering_threshold\"}},\"group_id\":\"6b1a2c3d4e5f6071\"}}"
            );
            in_flight -= mss;
            cwnd = (cwnd / 2).max(2 * mss);
            ssthresh = Some(cwnd);
            events += 1;
        }
        if pn % 2 == 1 {
            let acked = (2 * mss).min(in_flight);
            in_flight -= acked;
            cwnd += if ssthresh.is_some_and(|s| cwnd >= s) {
                mss * mss / cwnd
            } else {
                acked
            };
            let ss = ssthresh
                .map(|s| format!(",\"ssthresh\":{s}"))
                .unwrap_or_default();
            let _ = write!(
                line,
                "\u{1e}{{\"time\":{t:.3},\"name\":\"transport:packet_received\",\"data\":{{\"header\":{{\"packet_type\":\"1RTT\",\"packet_number\":{}}}}},\"group_id\":\"6b1a2c3d4e5f6071\"}}\n\u{1e}{{\"time\":{t:.3},\"name\":\"recovery:metrics_updated\",\"data\":{{\"min_rtt\":20.0,\"smoothed_rtt\":21.5,\"latest_rtt\":21.2,\"rtt_variance\":0.8,\"congestion_window\":{cwnd}{ss},\"bytes_in_flight\":{in_flight},\"packets_in_flight\":{}}},\"group_id\":\"6b1a2c3d4e5f6071\"}}\n",
                pn / 2,
                in_flight / mss
            );
            events += 2;
        }
        w.write_all(line.as_bytes())?;
        written += line.len() as u64;
        pn += 1;
    }
    w.flush()?;
    Ok(events)
}

/// Generates a qlog of `size` bytes in `dir`, analyses it and measures. The file is removed
/// afterwards unless `keep`.
pub fn run(dir: &Path, size: u64, keep: bool) -> Result<BenchReport> {
    let file = dir.join(format!("hare-analyze-bench-{}.sqlog", std::process::id()));
    let io = |error| AnalyzeError::Io {
        path: file.clone(),
        error,
    };
    let t0 = Instant::now();
    let events = generate(&file, size).map_err(io)?;
    let generate_s = t0.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&file).map_err(io)?.len();
    let t1 = Instant::now();
    let traces = crate::read_file(&file);
    let goodput_mbps = traces
        .as_ref()
        .ok()
        .and_then(|t| t.first())
        .and_then(|t| compute(t, &Params::default()).goodput_mbps);
    let analyze_s = t1.elapsed().as_secs_f64();
    let peak = peak_rss_bytes();
    if !keep {
        let _ = std::fs::remove_file(&file);
    }
    traces?;
    let goodput_mbps = goodput_mbps.unwrap_or(0.0);
    Ok(BenchReport {
        file,
        bytes,
        events,
        generate_s,
        analyze_s,
        mb_per_s: bytes as f64 / 1e6 / analyze_s.max(1e-9),
        peak_rss_bytes: peak,
        goodput_mbps,
    })
}
