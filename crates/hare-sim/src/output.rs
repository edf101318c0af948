//! What a run produces: [`SimOutput`], the per-ACK [`TracePoint`]s and [`Progress`] updates.

use hare_link::LinkStats;
use hare_report::Run;
use serde::{Deserialize, Serialize};

/// The sender's congestion state after one ACK frame (quinn's `on_end_acks`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TracePoint {
    /// Seconds since the run origin (negative during the handshake).
    pub t_s: f64,
    /// Congestion window in bytes after the frame.
    pub cwnd_bytes: u64,
    /// Congestion window in segments (`cwnd_bytes / mss`, the controller's own count for
    /// hare-cc controllers).
    pub cwnd_segments: u32,
    /// ssthresh in bytes, `None` while infinite.
    pub ssthresh_bytes: Option<u64>,
    /// Bytes in flight after the frame's newly acknowledged packets were removed (before loss
    /// detection of that frame), as quinn passes them to `on_end_acks`.
    pub in_flight_bytes: u64,
    /// Newly acknowledged ack-eliciting packets in the frame.
    pub acked_packets: u32,
    /// RTT sample in microseconds: `now - sent` of the largest newly acknowledged packet
    /// (includes the receiver's ACK delay), `None` when the frame acknowledged nothing new.
    pub rtt_sample_us: Option<u64>,
    /// Bytes in the forward (bottleneck) link's queue at that instant.
    pub queue_bytes: u64,
}

/// A progress report, sent once per report interval of virtual time and once at the end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Virtual seconds since the run origin.
    pub sim_s: f64,
    /// Wall-clock seconds since the simulation started.
    pub wall_s: f64,
    /// Fraction of the workload done in [0, 1] (bytes received over bytes to send, or time
    /// over duration).
    pub fraction: f64,
    /// Payload bytes received so far.
    pub bytes: u64,
    /// Mbit/s received in the last interval.
    pub interval_mbps: f64,
    /// Congestion window in segments at the moment.
    pub cwnd_segments: u32,
    /// Packets declared lost so far.
    pub lost_packets: u64,
    /// True for the last report of the run.
    pub done: bool,
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct SimOutput {
    /// The report with the configured interval (1 s by default): header, intervals, events
    /// (hare-cc decisions as `EventKind::Cc`, inferred exits of quinn's built-ins, path
    /// notes), summary. Times count from the run origin: the moment the client's handshake
    /// completed and it could start writing, the analogue of nuttcp's start after `connect()`.
    pub run: Run,
    /// The same run with the fine interval, when asked for.
    pub fine: Option<Run>,
    /// One point per ACK frame the sender processed, when `trace` was asked for.
    pub trace: Vec<TracePoint>,
    /// Forward (data) link counters.
    pub link_forward: LinkStats,
    /// Reverse (ACK) link counters.
    pub link_reverse: LinkStats,
    /// Virtual seconds from the connection start (the client's first Initial) to the end.
    pub sim_seconds: f64,
    /// Wall-clock seconds the simulation took.
    pub wall_seconds: f64,
    /// Virtual second (since the connection start) at which the run origin lies, i.e. the
    /// handshake time. Link loss schedules count from the connection start, report times
    /// from the origin.
    pub origin_s: f64,
    /// Datagrams the simulator moved across both links (offered to a link).
    pub datagrams: u64,
    /// Windows of virtual time the two endpoints ran through on two threads (0: one thread
    /// throughout; see [`crate::Threads`]).
    pub windows: u64,
    /// The largest connection receive window the receiver granted with autotuning
    /// ([`crate::Windows::autotune`]); `None` when the windows were fixed.
    pub max_receive_window: Option<u64>,
}

impl SimOutput {
    /// Virtual seconds per wall-clock second (the simulator's speed).
    pub fn speed(&self) -> f64 {
        if self.wall_seconds > 0.0 {
            self.sim_seconds / self.wall_seconds
        } else {
            f64::INFINITY
        }
    }
}
