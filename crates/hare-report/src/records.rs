//! The record types.

use serde::{Deserialize, Serialize};

use crate::controller::{CcEvent, ExitReason, Phase};

/// What produced the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    /// The real-time sender binary.
    HareSend,
    /// The real-time receiver binary.
    HareRecv,
    /// The virtual-time simulator.
    HareSim,
    /// Kernel TCP measured by hare-send `--tcp`.
    KernelTcp,
}

/// Which end of the transfer wrote the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The data sender (its cwnd and losses are the interesting ones).
    Sender,
    /// The data receiver.
    Receiver,
}

/// Transport of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// QUIC over quinn / quinn-proto.
    Quic,
    /// Linux kernel TCP.
    Tcp,
}

/// The emulated or measured path, when known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PathInfo {
    /// Bottleneck rate in bit/s, counting IP bytes.
    pub rate_bps: Option<u64>,
    /// Base round-trip time in milliseconds (twice the one-way propagation delay).
    pub rtt_ms: Option<f64>,
    /// Drop-tail limit in bytes, if any.
    pub queue_bytes: Option<u64>,
    /// Drop-tail limit in packets, if any.
    pub queue_packets: Option<u64>,
    /// Human description of loss models and anything else about the path.
    pub description: Option<String>,
}

impl PathInfo {
    /// Bandwidth-delay product in bytes, when rate and RTT are known.
    pub fn bdp_bytes(&self) -> Option<u64> {
        match (self.rate_bps, self.rtt_ms) {
            (Some(r), Some(rtt)) => Some((r as f64 / 8.0 * rtt / 1000.0).round() as u64),
            _ => None,
        }
    }
}

/// Flow-control and socket-buffer sizes of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Windows {
    /// Per-stream receive window in bytes (QUIC) or receive buffer (TCP).
    pub stream_receive: Option<u64>,
    /// Connection receive window in bytes (QUIC).
    pub receive: Option<u64>,
    /// Send window / send buffer in bytes.
    pub send: Option<u64>,
}

/// First record of a run: everything needed to interpret the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// Always [`crate::SCHEMA`].
    pub schema: String,
    /// Producer.
    pub tool: Tool,
    /// Version of the producing hare crate.
    pub tool_version: String,
    /// Which side wrote this report.
    pub role: Role,
    /// QUIC or TCP.
    pub transport: Transport,
    /// Run identifier (a thread run id, a scenario run name, or a connection id).
    pub run_id: String,
    /// Scenario file or name, if any.
    pub scenario: Option<String>,
    /// Controller as given (hare-cc grammar, e.g. `cubic@linux-2.6.20`, or `kernel:cubic`).
    pub controller: String,
    /// Profile name when the controller is one of hare's.
    pub profile: Option<String>,
    /// Maximum datagram / segment size at the start, in bytes (UDP payload for QUIC, MSS for
    /// TCP).
    pub mtu: u32,
    /// Flow-control windows / buffers.
    pub windows: Windows,
    /// The path, when known.
    pub path: Option<PathInfo>,
    /// Seed of the run's randomness (simulator, loss models).
    pub seed: Option<u64>,
    /// Wall-clock start as RFC 3339, or `None` for virtual-time runs (kept out so reruns are
    /// byte-identical).
    pub started_at: Option<String>,
    /// Length of a reporting interval in seconds.
    pub interval_s: f64,
}

/// One reporting interval (nuttcp's `-i` line) with the sender's congestion state at its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Interval {
    /// Interval start, seconds since the run started.
    pub start_s: f64,
    /// Interval end, seconds since the run started.
    pub end_s: f64,
    /// Application payload bytes delivered (receiver) or acknowledged (sender) in the interval.
    pub bytes: u64,
    /// Packets declared lost (QUIC) or retransmitted (TCP) in the interval.
    pub lost_packets: u64,
    /// Packets sent in the interval, when known.
    pub sent_packets: Option<u64>,
    /// Congestion window in bytes at the end of the interval.
    pub cwnd_bytes: Option<u64>,
    /// Congestion window in segments at the end of the interval.
    pub cwnd_segments: Option<u32>,
    /// ssthresh in bytes, `None` while infinite or unknown.
    pub ssthresh_bytes: Option<u64>,
    /// ssthresh in segments, `None` while infinite or unknown.
    pub ssthresh_segments: Option<u32>,
    /// Bytes in flight at the end of the interval.
    pub in_flight_bytes: Option<u64>,
    /// Smoothed RTT in milliseconds.
    pub srtt_ms: Option<f64>,
    /// Minimum RTT in milliseconds.
    pub min_rtt_ms: Option<f64>,
    /// Controller phase at the end of the interval.
    pub phase: Option<Phase>,
    /// True when flow control (the peer's window), not cwnd, limited sending in the interval.
    pub flow_control_limited: bool,
    /// True when cwnd limited sending in the interval (in flight reached it); `None` when the
    /// tool did not measure it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_limited: Option<bool>,
}

impl Interval {
    /// Seconds covered.
    pub fn seconds(&self) -> f64 {
        self.end_s - self.start_s
    }
    /// Mbit/s (10^6 bit/s) over the interval.
    pub fn mbps(&self) -> f64 {
        crate::mbps(self.bytes, self.seconds())
    }
}

/// Something that happened at a point in time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Seconds since the run started.
    pub t_s: f64,
    /// What happened.
    pub kind: EventKind,
}

/// Kinds of events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum EventKind {
    /// A decision of a hare-cc controller (times inside are controller-relative).
    Cc {
        /// The controller's event.
        event: CcEvent,
    },
    /// Slow start ended, as observed for a controller that is not hare's (quinn built-ins,
    /// kernel TCP): inferred from ssthresh becoming finite or the first loss.
    SlowStartExitObserved {
        /// cwnd in segments.
        cwnd_segments: u32,
        /// Why (inferred).
        reason: ExitReason,
    },
    /// The path (emulator or simulated link) changed state, e.g. a loss episode or blackout
    /// started or ended.
    Path {
        /// Human description.
        what: String,
    },
    /// The connection ended with an error.
    Error {
        /// The error.
        message: String,
    },
    /// Free-form note (e.g. a run marked invalid by the emulator's self-check).
    Note {
        /// Text.
        message: String,
    },
}

/// When, at what window and why slow start ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowStartExit {
    /// Seconds since the run started.
    pub t_s: f64,
    /// cwnd in segments.
    pub cwnd_segments: u32,
    /// Why.
    pub reason: ExitReason,
}

/// Last record of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Summary {
    /// Payload bytes transferred.
    pub bytes: u64,
    /// Duration in seconds.
    pub seconds: f64,
    /// Packets sent (QUIC) or segments sent (TCP), when known.
    pub sent_packets: Option<u64>,
    /// Packets declared lost (QUIC) or retransmitted (TCP).
    pub lost_packets: u64,
    /// Smoothed RTT at the end, milliseconds.
    pub srtt_ms: Option<f64>,
    /// Minimum RTT seen, milliseconds.
    pub min_rtt_ms: Option<f64>,
    /// CPU use of the sending process in percent of one core, when measured.
    pub cpu_sender_pct: Option<f64>,
    /// CPU use of the receiving process in percent of one core, when measured.
    pub cpu_receiver_pct: Option<f64>,
    /// The first slow-start exit, if any.
    pub slow_start_exit: Option<SlowStartExit>,
    /// Largest cwnd seen, in segments.
    pub max_cwnd_segments: Option<u32>,
    /// False when a self-check found the run unreliable (emulator was the bottleneck, ...).
    pub valid: bool,
    /// Why the run is invalid, when it is.
    pub invalid_reasons: Vec<String>,
    /// True when the transfer completed (all bytes delivered / verified).
    pub completed: bool,
}

impl Summary {
    /// Mbit/s (10^6 bit/s) over the run.
    pub fn mbps(&self) -> f64 {
        crate::mbps(self.bytes, self.seconds)
    }
}

/// One JSON-lines record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Record {
    /// The run header (first line).
    Header(RunHeader),
    /// An interval.
    Interval(Interval),
    /// An event.
    Event(Event),
    /// The summary (last line).
    Summary(Summary),
}

/// A whole run held in memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Header.
    pub header: RunHeader,
    /// Intervals in time order.
    pub intervals: Vec<Interval>,
    /// Events in time order.
    pub events: Vec<Event>,
    /// Summary, `None` when the run was cut short before writing it.
    pub summary: Option<Summary>,
}

impl Run {
    /// Records in the order they are written: header, then intervals and events merged by
    /// time (an event at an interval's end comes before that interval), then the summary.
    pub fn records(&self) -> Vec<Record> {
        let mut out = Vec::with_capacity(self.intervals.len() + self.events.len() + 2);
        out.push(Record::Header(self.header.clone()));
        let (mut i, mut e) = (0, 0);
        while i < self.intervals.len() || e < self.events.len() {
            let take_event = match (self.intervals.get(i), self.events.get(e)) {
                (Some(iv), Some(ev)) => ev.t_s <= iv.end_s,
                (None, Some(_)) => true,
                _ => false,
            };
            if take_event {
                out.push(Record::Event(self.events[e].clone()));
                e += 1;
            } else {
                out.push(Record::Interval(self.intervals[i].clone()));
                i += 1;
            }
        }
        if let Some(s) = &self.summary {
            out.push(Record::Summary(s.clone()));
        }
        out
    }
}
