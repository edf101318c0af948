//! Streaming reduction of qlog events to a [`Trace`]: memory grows with the run's duration
//! (one sample per millisecond, one byte counter per 10 ms), never with the file's size.

use hare_cc::ExitReason;

use crate::qlog_event::{Kind, RawEvent};
use crate::trace::{Chunk, Exit, ExitSource, Format, Reduction, Sample, Skipped, Trace, TraceRole};

/// Width of the delivered-bytes bins of qlog traces.
pub const BIN_S: f64 = 0.01;
/// Shortest spacing of kept congestion samples.
pub const SAMPLE_S: f64 = 0.001;
/// Bytes of a full-size 1-RTT packet that are not stream payload, used to turn the sender's
/// acknowledged packet bytes into payload goodput: short header flags (1) + packet number
/// (2) + AEAD tag (16) + STREAM frame header (type, stream id, offset, length: ~8), with the
/// zero-length connection ids of hare's runs. Calibrated on hare-sim runs, where payload per
/// full 1452-byte packet measured 1424.7 bytes (see the crate README); an estimate, marked
/// as such in the output.
pub const QUIC_OVERHEAD_BYTES: u64 = 27;
/// Bins beyond this (about 28 hours) are not kept, so a corrupt time cannot exhaust memory.
const MAX_BINS: usize = 10_000_000;

/// Accumulates the events of one qlog trace.
#[derive(Debug)]
pub(crate) struct Accumulator {
    name: String,
    format: Format,
    records: u64,
    origin_s: Option<f64>,
    first_s: Option<f64>,
    last_s: f64,
    sent_packets: u64,
    received_packets: u64,
    max_one_rtt_len: u64,
    sent_bytes: u64,
    lost_bytes: u64,
    acked_cum: u64,
    acked_bins: Vec<u64>,
    received_bins: Vec<u64>,
    cur: Sample,
    samples: Vec<Sample>,
    last_kept_s: f64,
    losses: Vec<f64>,
    reductions: Vec<Reduction>,
    exit_ssthresh: Option<Exit>,
    exit_loss: Option<Exit>,
    out_of_range: u64,
    first_sent_s: Option<f64>,
    first_received_s: Option<f64>,
    first_rtt_value: Option<f64>,
    max_cwnd_bytes: Option<u64>,
}

impl Accumulator {
    /// An empty accumulator for the trace called `name`.
    pub fn new(name: String, format: Format) -> Self {
        Accumulator {
            name,
            format,
            records: 0,
            origin_s: None,
            first_s: None,
            last_s: 0.0,
            sent_packets: 0,
            received_packets: 0,
            max_one_rtt_len: 0,
            sent_bytes: 0,
            lost_bytes: 0,
            acked_cum: 0,
            acked_bins: Vec::new(),
            received_bins: Vec::new(),
            cur: Sample::default(),
            samples: Vec::new(),
            last_kept_s: f64::NEG_INFINITY,
            losses: Vec::new(),
            reductions: Vec::new(),
            exit_ssthresh: None,
            exit_loss: None,
            out_of_range: 0,
            first_sent_s: None,
            first_received_s: None,
            first_rtt_value: None,
            max_cwnd_bytes: None,
        }
    }

    /// Events fed so far.
    pub fn records(&self) -> u64 {
        self.records
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

    /// Feed one event.
    pub fn feed(&mut self, ev: &RawEvent<'_>) {
        self.records += 1;
        let t = ev.time / 1000.0;
        if !t.is_finite() {
            self.out_of_range += 1;
            return;
        }
        self.first_s.get_or_insert(t);
        self.last_s = self.last_s.max(t);
        match ev.kind() {
            Kind::PacketSent => {
                self.sent_packets += 1;
                self.first_sent_s.get_or_insert(t);
                let len = ev.length().unwrap_or(0);
                self.sent_bytes += len;
                if ev.is_one_rtt() {
                    self.origin_s.get_or_insert(t);
                    self.max_one_rtt_len = self.max_one_rtt_len.max(len);
                }
            }
            Kind::PacketReceived => {
                self.received_packets += 1;
                self.first_received_s.get_or_insert(t);
                if let Some(len) = ev.length() {
                    if ev.is_one_rtt() {
                        Self::add_bin(&mut self.received_bins, t, len, &mut self.out_of_range);
                    }
                }
            }
            Kind::PacketLost => {
                self.lost_bytes += ev.length().unwrap_or(0);
                self.losses.push(t);
                if self.exit_loss.is_none() {
                    self.exit_loss = self.cur.cwnd_bytes.map(|cwnd_bytes| Exit {
                        t_s: t,
                        cwnd_bytes,
                        cwnd_segments: None,
                        reason: Some(ExitReason::Loss),
                        source: ExitSource::FirstLoss,
                    });
                }
            }
            Kind::MetricsUpdated => self.metrics(ev, t),
            Kind::Other => {}
        }
    }

    fn metrics(&mut self, ev: &RawEvent<'_>, t: f64) {
        let d = &ev.data;
        let prev = self.cur;
        if let Some(v) = d.congestion_window {
            self.cur.cwnd_bytes = Some(v);
            self.max_cwnd_bytes = self.max_cwnd_bytes.max(Some(v));
        }
        if let Some(v) = d.ssthresh {
            self.cur.ssthresh_bytes = Some(v);
        }
        if let Some(v) = d.bytes_in_flight {
            self.cur.in_flight_bytes = Some(v);
            // Acknowledged = sent - lost - still in flight, consistent at this instant: quinn
            // logs each packet_sent before the metrics that count it in flight.
            let acked = self
                .sent_bytes
                .saturating_sub(self.lost_bytes)
                .saturating_sub(v);
            if acked > self.acked_cum {
                Self::add_bin(
                    &mut self.acked_bins,
                    t,
                    acked - self.acked_cum,
                    &mut self.out_of_range,
                );
                self.acked_cum = acked;
            }
        }
        if let Some(v) = d.smoothed_rtt {
            self.cur.srtt_ms = Some(v);
        }
        if let Some(v) = d.min_rtt {
            self.cur.min_rtt_ms = Some(v);
            if self.first_received_s.is_some() {
                self.first_rtt_value.get_or_insert(v);
            }
        }
        self.cur.t_s = t;
        let reduced = match (prev.cwnd_bytes, self.cur.cwnd_bytes) {
            (Some(a), Some(b)) if b < a => Some((a, b)),
            _ => None,
        };
        if let Some((from, to)) = reduced {
            self.reductions.push(Reduction {
                t_s: t,
                from_cwnd_bytes: from,
                to_cwnd_bytes: to,
            });
        }
        if self.exit_ssthresh.is_none() {
            self.exit_ssthresh = infer_exit(&prev, &self.cur, reduced, t);
        }
        let ssthresh_changed = prev.ssthresh_bytes != self.cur.ssthresh_bytes;
        if t - self.last_kept_s >= SAMPLE_S || ssthresh_changed || reduced.is_some() {
            self.samples.push(self.cur);
            self.last_kept_s = t;
        }
    }

    /// Factor turning the logged RTTs into milliseconds. qlog says milliseconds, but
    /// quinn-proto 0.11 writes `Duration::as_secs_f32()` (seconds): the first RTT sample
    /// after the first packet came back is compared with that first round trip as seen in
    /// the event times, and whichever unit matches it wins.
    fn rtt_scale(&self) -> f64 {
        match (
            self.first_sent_s,
            self.first_received_s,
            self.first_rtt_value,
        ) {
            (Some(a), Some(b), Some(v)) if b > a => {
                let seen_ms = (b - a) * 1000.0;
                if (v * 1000.0 - seen_ms).abs() < (v - seen_ms).abs() {
                    1000.0
                } else {
                    1.0
                }
            }
            _ => 1.0,
        }
    }

    /// The trace, times shifted to the origin (first 1-RTT packet sent, else first event).
    pub fn finish(mut self, mut skipped: Vec<Skipped>) -> Trace {
        let origin = self.origin_s.or(self.first_s).unwrap_or(0.0);
        // Keep the final state even when it fell between two kept samples.
        if self.samples.last().map(|s| s.t_s) != Some(self.cur.t_s) && self.cur.t_s > 0.0 {
            self.samples.push(self.cur);
        }
        let rtt_scale = self.rtt_scale();
        for s in &mut self.samples {
            s.t_s -= origin;
            s.srtt_ms = s.srtt_ms.map(|v| v * rtt_scale);
            s.min_rtt_ms = s.min_rtt_ms.map(|v| v * rtt_scale);
        }
        let role = if self.sent_packets == 0 && self.received_packets == 0 {
            None
        } else if self.sent_packets >= self.received_packets {
            Some(TraceRole::Sender)
        } else {
            Some(TraceRole::Receiver)
        };
        // A receiver's goodput needs packet lengths (quiche logs them, quinn does not).
        let bins = match role {
            Some(TraceRole::Receiver) => &self.received_bins,
            _ => &self.acked_bins,
        };
        let mss = (self.max_one_rtt_len > 0).then_some(self.max_one_rtt_len);
        // Sender side: acknowledged packet bytes scaled to payload (see QUIC_OVERHEAD_BYTES).
        let (num, den) = match (role, mss) {
            (Some(TraceRole::Sender), Some(m)) if m > QUIC_OVERHEAD_BYTES => {
                (m - QUIC_OVERHEAD_BYTES, m)
            }
            _ => (1, 1),
        };
        let delivered = bins
            .iter()
            .enumerate()
            .map(|(i, &bytes)| {
                let (lo, hi) = (i as f64 * BIN_S - origin, (i + 1) as f64 * BIN_S - origin);
                // The bins that hold the origin and the end are clipped to them: nothing was
                // acknowledged outside, and a short run (65 ms on loopback) must not lose part
                // of a 10 ms bin to the proportional split of `delivered_between`.
                let end = self.last_s - origin;
                Chunk {
                    start_s: if hi > 0.0 { lo.max(0.0) } else { lo },
                    end_s: if lo < end { hi.min(end) } else { hi },
                    bytes: (u128::from(bytes) * u128::from(num) / u128::from(den)) as u64,
                }
            })
            .collect();
        let segs = |e: Exit| Exit {
            t_s: e.t_s - origin,
            cwnd_segments: mss.map(|m| (e.cwnd_bytes / m) as u32),
            ..e
        };
        let exit = self.exit_ssthresh.or(self.exit_loss).map(segs);
        if self.out_of_range > 0 {
            skipped.push(Skipped {
                count: self.out_of_range,
                reason: "event time not finite or beyond 28 hours".into(),
            });
        }
        Trace {
            name: self.name,
            format: self.format,
            role,
            mss,
            origin_s: origin,
            end_s: self.last_s - origin,
            samples: self.samples,
            delivered,
            losses: self.losses.iter().map(|t| t - origin).collect(),
            reductions: self
                .reductions
                .iter()
                .map(|r| Reduction {
                    t_s: r.t_s - origin,
                    ..*r
                })
                .collect(),
            exit,
            max_cwnd_bytes: self.max_cwnd_bytes,
            in_flight_at_end_bytes: self.cur.in_flight_bytes,
            path_rate_bps: None,
            path_rtt_ms: None,
            skipped,
            records: self.records,
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
