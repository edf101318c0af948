//! Interval sampling of a QUIC connection: quinn's statistics plus the controller's own view
//! (hare-cc [`Observer`] snapshots and events).

use std::time::Instant;

use hare_cc::Observer;
use hare_report::{CcEvent, Event, EventKind, ExitReason, Interval, Phase};

use hare_cc_records::{cc_event_record, phase_record};

use crate::limits::{Binding, LimitSnapshot, Watched};

/// The congestion state at one sampling instant and the counts since the previous one.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Packets declared lost since the previous sample.
    pub lost: u64,
    /// Packets sent since the previous sample.
    pub sent: u64,
    /// cwnd in bytes.
    pub cwnd_bytes: u64,
    /// cwnd in segments (kernel units for hare's controllers, bytes / MTU otherwise).
    pub cwnd_segments: u32,
    /// ssthresh in bytes, `None` while infinite.
    pub ssthresh_bytes: Option<u64>,
    /// ssthresh in segments.
    pub ssthresh_segments: Option<u32>,
    /// Smoothed RTT, ms.
    pub srtt_ms: f64,
    /// Minimum RTT, ms.
    pub min_rtt_ms: f64,
    /// Controller phase (hare's controllers).
    pub phase: Option<Phase>,
    /// True when the peer's flow-control credit held the sender back since the previous
    /// sample: DATA_BLOCKED or STREAM_DATA_BLOCKED went out while quinn had room in cwnd and
    /// nothing to send (module `limits`).
    pub flow_limited: bool,
    /// True when cwnd held the sender back since the previous sample: a packet sent brought
    /// bytes in flight to within one datagram of cwnd. `None` when not measured (kernel TCP).
    pub cwnd_limited: Option<bool>,
    /// Kernel TCP: payload bytes the receiver has acknowledged so far, cumulatively or by
    /// SACK (over all data connections); `None` for QUIC, whose sender prints the receiver's
    /// own interval counts instead (quinn does not expose acknowledged stream offsets).
    pub delivered: Option<u64>,
    /// Kernel TCP: the same by data connection, in stream number order (bulk jobs; empty
    /// otherwise).
    pub delivered_streams: Vec<u64>,
}

impl Sample {
    /// The interval record for `[start_s, end_s]` with `bytes` delivered.
    pub fn interval(&self, start_s: f64, end_s: f64, bytes: u64) -> Interval {
        Interval {
            start_s,
            end_s,
            bytes,
            lost_packets: self.lost,
            sent_packets: Some(self.sent),
            cwnd_bytes: Some(self.cwnd_bytes),
            cwnd_segments: Some(self.cwnd_segments),
            ssthresh_bytes: self.ssthresh_bytes,
            ssthresh_segments: self.ssthresh_segments,
            in_flight_bytes: None,
            srtt_ms: Some(self.srtt_ms),
            min_rtt_ms: Some(self.min_rtt_ms),
            phase: self.phase,
            flow_control_limited: self.flow_limited,
            cwnd_limited: self.cwnd_limited,
        }
    }
}

/// Samples one connection.
#[derive(Debug)]
pub struct QuicSampler {
    conn: quinn::Connection,
    observer: Observer,
    /// When the controller was built (the connection start), for event times.
    cc_epoch: Instant,
    /// Run time zero.
    t0: Instant,
    hare: bool,
    last: quinn::ConnectionStats,
    exit_seen: bool,
    max_cwnd_segments: u32,
    /// The controller's limit counts at the previous sample.
    last_limits: LimitSnapshot,
}

impl QuicSampler {
    /// Sample `conn`, whose controller was built at `cc_epoch` and reports to `observer`;
    /// `hare` is false for quinn's built-in controllers. Run times count from `t0`.
    pub fn new(
        conn: quinn::Connection,
        observer: Observer,
        cc_epoch: Instant,
        t0: Instant,
        hare: bool,
    ) -> Self {
        let last = conn.stats();
        Self {
            conn,
            observer,
            cc_epoch,
            t0,
            hare,
            last,
            exit_seen: false,
            max_cwnd_segments: 0,
            last_limits: LimitSnapshot::default(),
        }
    }

    /// Largest cwnd seen in segments.
    pub fn max_cwnd_segments(&self) -> u32 {
        self.max_cwnd_segments
    }

    /// Run seconds of a controller time.
    fn run_s(&self, t_us: u64) -> f64 {
        let offset = self
            .t0
            .saturating_duration_since(self.cc_epoch)
            .as_secs_f64();
        t_us as f64 / 1e6 - offset
    }

    /// Take a sample, and the events that happened since the previous one (with their raw
    /// controller events, for the qlog sidecar).
    pub fn sample(&mut self) -> (Sample, Vec<Event>, Vec<CcEvent>) {
        let st = self.conn.stats();
        let mtu = u64::from(st.path.current_mtu.max(1));
        let controller = self.conn.congestion_state();
        let metrics = controller.metrics();
        // Every controller hare builds is wrapped in `limits::Watched`.
        let limits = controller
            .into_any()
            .downcast::<Watched>()
            .ok()
            .map(|w| w.counts().snapshot());
        let ssthresh_bytes = metrics.ssthresh.filter(|s| *s != u64::MAX);
        let snap = if self.hare {
            self.observer.latest().map(|(_, s)| s)
        } else {
            None
        };
        let (cwnd_segments, ssthresh_segments, phase) = match &snap {
            Some(s) if s.mss > 0 => (s.cwnd, s.ssthresh, s.phase.and_then(phase_record)),
            _ => (
                (st.path.cwnd / mtu).min(u64::from(u32::MAX)) as u32,
                ssthresh_bytes.map(|b| (b / mtu).min(u64::from(u32::MAX)) as u32),
                None,
            ),
        };
        self.max_cwnd_segments = self.max_cwnd_segments.max(cwnd_segments);
        let blocked =
            |s: &quinn::ConnectionStats| s.frame_tx.data_blocked + s.frame_tx.stream_data_blocked;
        let blocked_frames = blocked(&st).saturating_sub(blocked(&self.last));
        let binding = limits.map(|now| {
            let b = Binding::between(self.last_limits, now, blocked_frames);
            self.last_limits = now;
            b
        });
        let sample = Sample {
            lost: st
                .path
                .lost_packets
                .saturating_sub(self.last.path.lost_packets),
            sent: st
                .path
                .sent_packets
                .saturating_sub(self.last.path.sent_packets),
            cwnd_bytes: st.path.cwnd,
            cwnd_segments,
            ssthresh_bytes,
            ssthresh_segments,
            srtt_ms: st.path.rtt.as_secs_f64() * 1e3,
            min_rtt_ms: st.path.min_rtt.as_secs_f64() * 1e3,
            phase,
            flow_limited: binding.map_or(blocked_frames > 0, |b| b.flow_control),
            cwnd_limited: binding.map(|b| b.cwnd),
            delivered: None,
            delivered_streams: Vec::new(),
        };
        let (mut events, raw) = self.cc_events();
        if !self.hare && !self.exit_seen && ssthresh_bytes.is_some() {
            // quinn's built-ins publish nothing: infer the exit from ssthresh turning finite
            // (only a congestion event sets it, so the reason is a loss).
            self.exit_seen = true;
            events.push(Event {
                t_s: self.t0.elapsed().as_secs_f64(),
                kind: EventKind::SlowStartExitObserved {
                    cwnd_segments,
                    reason: ExitReason::Loss,
                },
            });
        }
        self.last = st;
        (sample, events, raw)
    }

    /// The controller's events since they were last taken (as run-log events, and raw for
    /// the qlog sidecar), without taking a sample: a line said between two samples (an
    /// interrupt) comes after the events that happened before it.
    pub fn cc_events(&mut self) -> (Vec<Event>, Vec<CcEvent>) {
        if !self.hare {
            return (Vec::new(), Vec::new());
        }
        let raw: Vec<CcEvent> = self
            .observer
            .drain_all()
            .into_iter()
            .filter_map(|(_, e)| cc_event_record(e))
            .collect();
        let events = raw
            .iter()
            .map(|e| Event {
                t_s: self.run_s(e.t_us()),
                kind: EventKind::Cc { event: e.clone() },
            })
            .collect();
        (events, raw)
    }

    /// Totals for the summary: packets sent and lost since the connection started, srtt and
    /// min RTT in ms.
    pub fn totals(&self) -> (u64, u64, f64, f64) {
        let st = self.conn.stats();
        (
            st.path.sent_packets,
            st.path.lost_packets,
            st.path.rtt.as_secs_f64() * 1e3,
            st.path.min_rtt.as_secs_f64() * 1e3,
        )
    }
}
