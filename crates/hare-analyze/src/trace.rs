//! The reader-independent view of one connection or run that the metrics work on.

use hare_report::ExitReason;
use serde::Serialize;

/// Where a trace came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// hare report JSON lines (`hare-report/1`).
    Report,
    /// qlog JSON-SEQ (quinn's `.sqlog`, quiche's `.sqlog`).
    QlogSeq,
    /// qlog JSON with a `traces` array (`.qlog`).
    QlogJson,
}

/// Which end of the transfer the trace describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceRole {
    /// The data sender: its cwnd and losses are the interesting ones.
    Sender,
    /// The data receiver.
    Receiver,
}

/// The congestion state at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Sample {
    /// Seconds since the trace's origin.
    pub t_s: f64,
    /// Congestion window in bytes.
    pub cwnd_bytes: Option<u64>,
    /// ssthresh in bytes, `None` while infinite or unknown.
    pub ssthresh_bytes: Option<u64>,
    /// Bytes in flight.
    pub in_flight_bytes: Option<u64>,
    /// Smoothed RTT in milliseconds.
    pub srtt_ms: Option<f64>,
    /// Minimum RTT in milliseconds.
    pub min_rtt_ms: Option<f64>,
}

/// Payload bytes delivered within `[start_s, end_s)` (seconds since the origin).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Chunk {
    /// Start.
    pub start_s: f64,
    /// End.
    pub end_s: f64,
    /// Bytes.
    pub bytes: u64,
}

/// How the slow-start exit was found, in order of preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitSource {
    /// A hare-cc `SlowStartExit` decision (report event or `.cc.jsonl` sidecar).
    ControllerEvent,
    /// An exit recorded as observed by the producer (report `slow-start-exit-observed`).
    Observed,
    /// Inferred: ssthresh became finite.
    SsthreshFinite,
    /// Inferred: the first loss.
    FirstLoss,
    /// Inferred: the first congestion signal (a packet declared lost, an ECN-CE mark, a
    /// state change to recovery), with the window before the cut it caused.
    CongestionSignal,
    /// Inferred: the controller's logged state left slow start (congestion avoidance, BBR
    /// drain / probe_bw) without a congestion signal.
    StateChange,
}

/// Where a trace's delivered payload comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PayloadSource {
    /// Report intervals.
    Report,
    /// Sender: STREAM frame bytes of the packets the peer acknowledged, each byte once.
    AckedStreamFrames,
    /// Receiver: STREAM frame bytes received, each byte once.
    ReceivedStreamFrames,
    /// Estimated from packet bytes (acknowledged = sent - lost - in flight, or received
    /// packet lengths) less an estimated per-packet overhead.
    PacketEstimate,
    /// Nothing in the trace tells the payload.
    Unknown,
}

/// When and at which window slow start ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Exit {
    /// Seconds since the origin.
    pub t_s: f64,
    /// cwnd in bytes at the exit (before any reduction the exit caused).
    pub cwnd_bytes: u64,
    /// cwnd in segments, when the segment size is known.
    pub cwnd_segments: Option<u32>,
    /// The reason, when known (controller events give it; a reduction at the exit means loss).
    pub reason: Option<ExitReason>,
    /// How the exit was found.
    pub source: ExitSource,
}

/// A window reduction: the start of a loss episode.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Reduction {
    /// Seconds since the origin.
    pub t_s: f64,
    /// cwnd in bytes before the reduction.
    pub from_cwnd_bytes: u64,
    /// cwnd in bytes after it.
    pub to_cwnd_bytes: u64,
}

/// Records a reader had to skip, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// How many.
    pub count: u64,
    /// Why.
    pub reason: String,
}

/// One connection or run, ready for [`crate::metrics`].
#[derive(Debug, Clone, Serialize)]
pub struct Trace {
    /// Label (file name, plus the trace index for multi-trace files).
    pub name: String,
    /// The file format.
    pub format: Format,
    /// Sender or receiver, when it could be told.
    pub role: Option<TraceRole>,
    /// The trace's vantage point type as logged (`client`, `server`, ...).
    pub vantage: Option<String>,
    /// Segment size in bytes (report MTU, or the largest 1-RTT packet sent).
    pub mss: Option<u64>,
    /// Time of the origin on the file's own clock, seconds (qlog: the first 1-RTT packet
    /// sent, the moment data could flow; reports: 0).
    pub origin_s: f64,
    /// Seconds from the origin to the last record.
    pub end_s: f64,
    /// Congestion-state samples in time order (qlog: at most one per millisecond, plus
    /// every ssthresh change).
    pub samples: Vec<Sample>,
    /// Delivered payload in time order (qlog: 10 ms bins; reports: the intervals).
    pub delivered: Vec<Chunk>,
    /// Times of lost packets, seconds since the origin.
    pub losses: Vec<f64>,
    /// False when the producer does not log lost packets (no `packet_lost` although the
    /// trace shows retransmissions, recovery or window cuts, or a receiver's trace).
    pub losses_logged: bool,
    /// STREAM bytes sent again (retransmissions), when frames are logged.
    pub retransmitted_bytes: Option<u64>,
    /// Distinct STREAM bytes sent (each byte once), when frames are logged.
    pub stream_bytes_sent: Option<u64>,
    /// Where `delivered` comes from.
    pub payload_source: PayloadSource,
    /// Seconds from the origin to the first payload sent (sender) or received (receiver),
    /// when STREAM frames tell it: the start of the goodput span (else the origin).
    pub delivery_start_s: Option<f64>,
    /// Seconds from the origin to the last delivery (qlog), the end of the goodput span.
    pub delivery_end_s: Option<f64>,
    /// What the reader noticed and worked around (ignored implausible values ...).
    pub notes: Vec<String>,
    /// Starts of loss episodes (loss or ECN signals) in time order, with the window before
    /// and the lowest window within one RTT after.
    pub reductions: Vec<Reduction>,
    /// The slow-start exit, if slow start ended.
    pub exit: Option<Exit>,
    /// Bytes still in flight when the trace ends (qlog senders): a sender that closes before
    /// logging the last ACKs leaves delivered data here, outside `delivered`.
    pub in_flight_at_end_bytes: Option<u64>,
    /// Largest cwnd seen in bytes (every qlog update, not only the kept samples).
    pub max_cwnd_bytes: Option<u64>,
    /// Bottleneck rate in bit/s, when the file states it (report header).
    pub path_rate_bps: Option<u64>,
    /// Base RTT in ms, when the file states it (report header).
    pub path_rtt_ms: Option<f64>,
    /// Records skipped, with why.
    pub skipped: Vec<Skipped>,
    /// Records read.
    pub records: u64,
}

impl Trace {
    /// Total delivered bytes.
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered.iter().map(|c| c.bytes).sum()
    }

    /// Delivered bytes within `[from_s, to_s)`, chunks split in proportion to their overlap
    /// (bytes are assumed spread evenly over a chunk).
    pub fn delivered_between(&self, from_s: f64, to_s: f64) -> f64 {
        let mut sum = 0.0;
        for c in &self.delivered {
            let lo = c.start_s.max(from_s);
            let hi = c.end_s.min(to_s);
            let span = c.end_s - c.start_s;
            // An instant chunk counts when it lies in the half-open range.
            if span <= 0.0 {
                if c.start_s >= from_s && c.start_s < to_s {
                    sum += c.bytes as f64;
                }
                continue;
            }
            if hi <= lo {
                continue;
            }
            sum += c.bytes as f64 * (hi - lo) / span;
        }
        sum
    }
}
