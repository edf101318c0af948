//! Streaming reduction of qlog events to a [`Trace`]: memory grows with the run's duration
//! (one sample per millisecond, one byte counter per 10 ms) and the packets in flight, never
//! with the file's size. The exit, episodes and role are decided in [`crate::finish`].

use hare_report::ExitReason;

use crate::lenient::Num;
use crate::qlog_event::{classify_state, Kind, MetricsData, PacketData, StateClass, StateData};
use crate::streams::{StreamBytes, Unacked};
use crate::trace::{Exit, ExitSource, Format, Sample};

/// Width of the delivered-bytes bins of qlog traces.
pub const BIN_S: f64 = 0.01;
/// Shortest spacing of kept congestion samples.
pub const SAMPLE_S: f64 = 0.001;
/// Send times kept for ACK-based RTT samples (packets not yet acknowledged).
const MAX_SENT_TIMES: usize = 1 << 20;
/// Bins beyond this (about 28 hours) are not kept, so a corrupt time cannot exhaust memory.
const MAX_BINS: usize = 10_000_000;
/// ssthresh at or above this is a producer's "infinite" (u64::MAX from quiche, usize::MAX,
/// u32::MAX, i64::MAX): no real window reaches 4 GiB.
pub const SSTHRESH_INFINITE: u64 = u32::MAX as u64;

/// A congestion signal: something that tells the sender the path is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignalKind {
    /// `packet_lost`.
    Loss,
    /// The ECN-CE count of a received ACK frame grew.
    Ecn,
    /// `congestion_state_updated` to recovery.
    Recovery,
    /// STREAM data sent again (used only where the producer logs neither losses nor states).
    Retransmit,
}

/// One congestion signal with the state at that instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signal {
    pub t: f64,
    pub kind: SignalKind,
    /// The window before the cut the signal caused (the last value logged before it).
    pub cwnd_before: Option<u64>,
    /// Smoothed RTT as logged (unscaled) at the signal.
    pub srtt_raw: Option<f64>,
}

/// A logged state change that left slow start without a signal.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StateExit {
    pub t: f64,
    pub cwnd: Option<u64>,
    pub ssthresh: Option<u64>,
}

/// Accumulates the events of one qlog trace.
#[derive(Debug)]
pub(crate) struct Accumulator {
    pub name: String,
    pub format: Format,
    pub vantage: Option<String>,
    pub records: u64,
    pub origin_s: Option<f64>,
    pub first_s: Option<f64>,
    pub last_s: f64,
    pub sent_packets: u64,
    pub received_packets: u64,
    pub max_one_rtt_len: u64,
    pub max_dcid_len: Option<u64>,
    pub sent_bytes: u64,
    pub lost_bytes: u64,
    pub acked_cum: u64,
    /// Sender estimate: acknowledged packet bytes per bin.
    pub acked_bins: Vec<u64>,
    /// Receiver estimate: received 1-RTT packet bytes per bin.
    pub received_bins: Vec<u64>,
    /// Sender: acknowledged unique STREAM bytes per bin.
    pub acked_stream_bins: Vec<u64>,
    /// Receiver: new unique STREAM bytes received per bin.
    pub received_stream_bins: Vec<u64>,
    pub last_acked_stream_s: Option<f64>,
    pub first_stream_sent_s: Option<f64>,
    pub first_stream_received_s: Option<f64>,
    pub last_received_stream_s: Option<f64>,
    pub last_acked_estimate_s: Option<f64>,
    pub last_received_estimate_s: Option<f64>,
    pub stream_sent: StreamBytes,
    pub stream_received: StreamBytes,
    pub unacked: Unacked,
    pub frames_logged: bool,
    pub cur: Sample,
    pub samples: Vec<Sample>,
    last_kept_s: f64,
    pub losses: Vec<f64>,
    pub signals: Vec<Signal>,
    pub retransmits: Vec<Signal>,
    pub recovery_logged: bool,
    pub state_exit: Option<StateExit>,
    pub in_slow_start_state: bool,
    pub ssthresh_exit: Option<Exit>,
    pub out_of_range: u64,
    pub first_sent_s: Option<f64>,
    pub first_received_s: Option<f64>,
    pub first_rtt_value: Option<f64>,
    /// Smallest min_rtt logged (raw unit).
    pub min_rtt_logged: Option<f64>,
    /// Send times of recent 1-RTT packets, for RTT samples from ACK frames.
    sent_times: std::collections::BTreeMap<u64, f64>,
    /// Smallest ACK-measured round trip, seconds: largest acknowledged packet's send time
    /// to the ACK's arrival.
    pub ack_rtt_min_s: Option<f64>,
    /// Milliseconds per logged time unit (from the trace's metadata).
    pub ms_per_unit: Option<f64>,
    pub max_cwnd_bytes: Option<u64>,
    pub cuts: u64,
    /// The window before the last change, when that change was a cut, and its time.
    last_cut: Option<(f64, u64)>,
    max_ce: u64,
    first_srtt: Option<f64>,
    rtt_real: bool,
    pub ignored_min_rtt: u64,
    pub ignored_rtt: u64,
    /// packet_lost events triggered by a PTO (not losses).
    pub pto_marked: u64,
}

fn add_bin(bins: &mut Vec<u64>, t_s: f64, bytes: u64, out_of_range: &mut u64) {
    let idx = (t_s.max(0.0) / BIN_S) as usize;
    if idx >= MAX_BINS {
        *out_of_range += 1;
        return;
    }
    if bins.len() <= idx {
        bins.resize(idx + 1, 0);
    }
    bins[idx] += bytes;
}

impl Accumulator {
    /// An empty accumulator for the trace called `name`.
    pub fn new(name: String, format: Format) -> Self {
        Accumulator {
            name,
            format,
            vantage: None,
            records: 0,
            origin_s: None,
            first_s: None,
            last_s: 0.0,
            sent_packets: 0,
            received_packets: 0,
            max_one_rtt_len: 0,
            max_dcid_len: None,
            sent_bytes: 0,
            lost_bytes: 0,
            acked_cum: 0,
            acked_bins: Vec::new(),
            received_bins: Vec::new(),
            acked_stream_bins: Vec::new(),
            received_stream_bins: Vec::new(),
            last_acked_stream_s: None,
            first_stream_sent_s: None,
            first_stream_received_s: None,
            last_received_stream_s: None,
            last_acked_estimate_s: None,
            last_received_estimate_s: None,
            stream_sent: StreamBytes::default(),
            stream_received: StreamBytes::default(),
            unacked: Unacked::default(),
            frames_logged: false,
            cur: Sample::default(),
            samples: Vec::new(),
            last_kept_s: f64::NEG_INFINITY,
            losses: Vec::new(),
            signals: Vec::new(),
            retransmits: Vec::new(),
            recovery_logged: false,
            state_exit: None,
            in_slow_start_state: true,
            ssthresh_exit: None,
            out_of_range: 0,
            first_sent_s: None,
            first_received_s: None,
            first_rtt_value: None,
            min_rtt_logged: None,
            sent_times: std::collections::BTreeMap::new(),
            ack_rtt_min_s: None,
            ms_per_unit: None,
            max_cwnd_bytes: None,
            cuts: 0,
            last_cut: None,
            max_ce: 0,
            first_srtt: None,
            rtt_real: false,
            ignored_min_rtt: 0,
            ignored_rtt: 0,
            pto_marked: 0,
        }
    }

    /// Events fed so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Feed one event: its time in milliseconds on the trace's clock, its name and its raw
    /// `data` (parsed only for the kinds the analysis reads).
    pub fn feed(&mut self, time_ms: f64, name: &str, data: Option<&str>) {
        self.records += 1;
        let t = time_ms / 1000.0;
        if !t.is_finite() {
            self.out_of_range += 1;
            return;
        }
        self.first_s.get_or_insert(t);
        self.last_s = self.last_s.max(t);
        let kind = Kind::of(name);
        if kind == Kind::Other {
            return;
        }
        let data = data.unwrap_or("{}");
        match kind {
            Kind::PacketSent => {
                if let Ok(d) = serde_json::from_str::<PacketData>(data) {
                    self.packet_sent(&d, t);
                }
            }
            Kind::PacketReceived => {
                if let Ok(d) = serde_json::from_str::<PacketData>(data) {
                    self.packet_received(&d, t);
                }
            }
            Kind::PacketLost => {
                let d = serde_json::from_str::<PacketData>(data).unwrap_or_default();
                if d.is_pto_marked() {
                    // Queued again on a PTO, not lost (see `PacketData::is_pto_marked`).
                    self.pto_marked += 1;
                    return;
                }
                self.lost_bytes += d.length().unwrap_or(0);
                if let Some(pn) = d.packet_number() {
                    if d.is_one_rtt() || d.is_zero_rtt() || d.packet_type().is_none() {
                        self.unacked.lost(pn);
                    }
                }
                self.losses.push(t);
                self.signal(t, SignalKind::Loss);
            }
            Kind::MetricsUpdated => {
                if let Ok(d) = serde_json::from_str::<MetricsData>(data) {
                    self.metrics(&d, t);
                }
            }
            Kind::CongestionState => {
                if let Ok(d) = serde_json::from_str::<StateData>(data) {
                    self.state(&d, t);
                }
            }
            Kind::Other => {}
        }
    }

    fn signal(&mut self, t: f64, kind: SignalKind) {
        let s = Signal {
            t,
            kind,
            cwnd_before: self.cwnd_before_cut(t),
            srtt_raw: self.cur.srtt_ms,
        };
        if kind == SignalKind::Retransmit {
            self.retransmits.push(s);
        } else {
            self.signals.push(s);
        }
    }

    /// The window before the cut a signal at `t` caused: when the last change, logged at
    /// the same instant, was a cut, the value before it; else the current window.
    fn cwnd_before_cut(&self, t: f64) -> Option<u64> {
        match self.last_cut {
            Some((at, before)) if (at - t).abs() < 1e-9 => Some(before),
            _ => self.cur.cwnd_bytes,
        }
    }

    fn packet_sent(&mut self, d: &PacketData, t: f64) {
        self.sent_packets += 1;
        self.first_sent_s.get_or_insert(t);
        let len = d.length().unwrap_or(0);
        self.sent_bytes += len;
        let app = d.is_one_rtt() || d.is_zero_rtt();
        if d.is_one_rtt() {
            self.origin_s.get_or_insert(t);
            self.max_one_rtt_len = self.max_one_rtt_len.max(len);
            if let Some(l) = d.dcid_len() {
                self.max_dcid_len = Some(self.max_dcid_len.unwrap_or(0).max(l));
            }
        }
        let Some(frames) = &d.frames else { return };
        self.frames_logged = true;
        let mut streams = Vec::new();
        let mut retransmit = false;
        for f in frames.0.iter().filter_map(|f| f.0.as_ref()) {
            if let Some((s, o, l)) = f.stream() {
                if l > 0 && self.stream_sent.add(s, o, l) == 0 {
                    retransmit = true;
                }
                self.first_stream_sent_s.get_or_insert(t);
                streams.push((s, o, l));
            }
        }
        if retransmit {
            self.signal(t, SignalKind::Retransmit);
        }
        if app {
            if let Some(pn) = d.packet_number() {
                self.unacked.sent(pn, streams);
                if self.sent_times.len() < MAX_SENT_TIMES {
                    self.sent_times.insert(pn, t);
                }
            }
        }
    }

    fn packet_received(&mut self, d: &PacketData, t: f64) {
        self.received_packets += 1;
        // The first packet received after the first one sent closes the first round trip
        // (a client's Initial and the server's reply; a server's first flight and the
        // client's next packet).
        if self.first_sent_s.is_some() {
            self.first_received_s.get_or_insert(t);
        }
        let app = d.is_one_rtt() || d.is_zero_rtt();
        if let Some(len) = d.length() {
            if d.is_one_rtt() {
                add_bin(&mut self.received_bins, t, len, &mut self.out_of_range);
                self.last_received_estimate_s = Some(t);
            }
        }
        let Some(frames) = &d.frames else { return };
        self.frames_logged = true;
        for f in frames.0.iter().filter_map(|f| f.0.as_ref()) {
            if let Some((s, o, l)) = f.stream() {
                let new = self.stream_received.add(s, o, l);
                if new > 0 {
                    add_bin(
                        &mut self.received_stream_bins,
                        t,
                        new,
                        &mut self.out_of_range,
                    );
                    self.last_received_stream_s = Some(t);
                    self.first_stream_received_s.get_or_insert(t);
                }
            } else if f.is_ack() && app {
                if let Some(largest) = f.ranges().map(|r| r.1).max() {
                    if let Some(&sent) = self.sent_times.get(&largest) {
                        let rtt = t - sent;
                        if rtt > 0.0 && self.ack_rtt_min_s.is_none_or(|m| rtt < m) {
                            self.ack_rtt_min_s = Some(rtt);
                        }
                    }
                    // Older packets can no longer be the largest acknowledged.
                    self.sent_times = self.sent_times.split_off(&largest.saturating_add(1));
                }
                let mut new = 0;
                for (a, b) in f.ranges() {
                    new += self.unacked.acked(a, b);
                }
                if new > 0 {
                    add_bin(&mut self.acked_stream_bins, t, new, &mut self.out_of_range);
                    self.last_acked_stream_s = Some(t);
                }
                if let Some(ce) = f.ce.u64() {
                    if ce > self.max_ce {
                        self.max_ce = ce;
                        self.signal(t, SignalKind::Ecn);
                    }
                }
            }
        }
    }

    fn state(&mut self, d: &StateData, t: f64) {
        let Some(new) = d.new_state() else { return };
        match classify_state(&new) {
            StateClass::Recovery => {
                self.recovery_logged = true;
                self.in_slow_start_state = false;
                self.signal(t, SignalKind::Recovery);
            }
            StateClass::Avoidance => {
                if self.in_slow_start_state && self.state_exit.is_none() {
                    self.state_exit = Some(StateExit {
                        t,
                        cwnd: self.cur.cwnd_bytes,
                        ssthresh: self.cur.ssthresh_bytes,
                    });
                }
                self.in_slow_start_state = false;
            }
            StateClass::SlowStart | StateClass::Unknown => {}
        }
    }

    /// A positive, finite RTT value; zero and negative ones are counted and ignored.
    fn rtt(v: Num, ignored: &mut u64) -> Option<f64> {
        let x = v.0?;
        if x.is_finite() && x > 0.0 {
            Some(x)
        } else {
            *ignored += 1;
            None
        }
    }

    fn metrics(&mut self, d: &MetricsData, t: f64) {
        let prev = self.cur;
        if let Some(v) = d.congestion_window.u64().or(d.cwnd.u64()) {
            if let Some(old) = prev.cwnd_bytes {
                if v < old {
                    self.last_cut = Some((t, old));
                    self.cuts += 1;
                } else if v != old {
                    self.last_cut = None;
                }
            }
            self.cur.cwnd_bytes = Some(v);
            self.max_cwnd_bytes = self.max_cwnd_bytes.max(Some(v));
        }
        if let Some(v) = d.ssthresh.u64() {
            self.cur.ssthresh_bytes = (v < SSTHRESH_INFINITE).then_some(v);
        }
        if let Some(v) = d.bytes_in_flight.u64() {
            self.cur.in_flight_bytes = Some(v);
            // Acknowledged = sent - lost - still in flight, consistent at this instant: quinn
            // logs each packet_sent before the metrics that count it in flight.
            let acked = self
                .sent_bytes
                .saturating_sub(self.lost_bytes)
                .saturating_sub(v);
            if acked > self.acked_cum {
                add_bin(
                    &mut self.acked_bins,
                    t,
                    acked - self.acked_cum,
                    &mut self.out_of_range,
                );
                self.acked_cum = acked;
                self.last_acked_estimate_s = Some(t);
            }
        }
        if Self::rtt(d.latest_rtt, &mut self.ignored_rtt).is_some() {
            self.rtt_real = true;
        }
        if let Some(v) = Self::rtt(d.smoothed_rtt, &mut self.ignored_rtt) {
            // The initial RTT (333 ms in RFC 9002) is logged before any sample: the series
            // starts with the first real sample, or the first change of the logged value.
            let first = *self.first_srtt.get_or_insert(v);
            if v != first {
                self.rtt_real = true;
            }
            if self.rtt_real {
                self.cur.srtt_ms = Some(v);
            }
        }
        if let Some(v) = Self::rtt(d.min_rtt, &mut self.ignored_min_rtt) {
            self.cur.min_rtt_ms = Some(v);
            self.min_rtt_logged = Some(self.min_rtt_logged.map_or(v, |m: f64| m.min(v)));
            if self.first_received_s.is_some() {
                self.first_rtt_value.get_or_insert(v);
            }
        }
        self.cur.t_s = t;
        let reduced = match (prev.cwnd_bytes, self.cur.cwnd_bytes) {
            (Some(a), Some(b)) if b < a => Some((a, b)),
            _ => None,
        };
        if self.ssthresh_exit.is_none() {
            self.ssthresh_exit = infer_exit(&prev, &self.cur, reduced, t);
        }
        let ssthresh_changed = prev.ssthresh_bytes != self.cur.ssthresh_bytes;
        if t - self.last_kept_s >= SAMPLE_S || ssthresh_changed || reduced.is_some() {
            self.samples.push(self.cur);
            self.last_kept_s = t;
        }
    }
}

/// Slow-start exit from one metrics update: ssthresh became finite (a reduction in the same
/// update means a loss ended slow start, and the exit window is the one before it), or a
/// preset ssthresh was reached (the kernel's `initial_ssthresh` clamp,
/// `tcp_in_slow_start()` turning false).
fn infer_exit(prev: &Sample, cur: &Sample, reduced: Option<(u64, u64)>, t: f64) -> Option<Exit> {
    let cwnd = cur.cwnd_bytes?;
    let ssthresh = cur.ssthresh_bytes?;
    let exit = |cwnd_bytes, reason| {
        Some(Exit {
            t_s: t,
            cwnd_bytes,
            cwnd_segments: None,
            reason,
            source: ExitSource::SsthreshFinite,
        })
    };
    if prev.ssthresh_bytes.is_none() && prev.cwnd_bytes.is_some() {
        match reduced {
            Some((from, _)) => exit(from, Some(ExitReason::Loss)),
            // Kernel HyStart (cubic, 2.6.29+ `hystart_update`) sets ssthresh to the cwnd of the
            // moment it fires; the same ACK frame may still grow cwnd after it, so the window at
            // the exit is ssthresh when it is the smaller.
            None => exit(cwnd.min(ssthresh), None),
        }
    } else if cwnd >= ssthresh {
        exit(cwnd, Some(ExitReason::SsthreshReached))
    } else {
        None
    }
}
