//! Metrics of one trace: computed from a [`Trace`].

use serde::Serialize;

use crate::trace::{Exit, Format, PayloadSource, Skipped, Trace, TraceRole};

/// The horizons of the "goodput over N s" figures (nuttcp-style runs of the thread were
/// judged at these lengths).
pub const HORIZONS_S: [u32; 4] = [1, 5, 10, 30];

/// Shortest window over which pre-loss and recovered rates are compared.
pub const RATE_WINDOW_S: f64 = 0.1;

/// What the caller knows about the path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Goodput bin width in seconds.
    pub bin_s: f64,
    /// Bottleneck capacity in bit/s (`--capacity`), `None` to take it from the report
    /// header or estimate it (peak bin).
    pub capacity_bps: Option<u64>,
    /// Base RTT in ms (`--rtt`), `None` to take it from the report header or the minimum RTT.
    pub rtt_ms: Option<f64>,
    /// Share of the capacity for "time to X%" (0.9 = 90 %).
    pub fraction: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            bin_s: 1.0,
            capacity_bps: None,
            rtt_ms: None,
            fraction: 0.9,
        }
    }
}

/// Where a figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provenance {
    /// Given on the command line.
    Given,
    /// Stated in the file (report header).
    File,
    /// Estimated from the run (peak goodput bin, minimum RTT sample).
    Estimated,
}

/// One loss episode: a window reduction and how long the sender took to get back.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Episode {
    /// Seconds since the origin.
    pub t_s: f64,
    /// cwnd before the reduction, bytes.
    pub from_cwnd_bytes: u64,
    /// cwnd after it, bytes.
    pub to_cwnd_bytes: u64,
    /// Seconds until cwnd was back at `from_cwnd_bytes`, `None` if never within the trace.
    pub cwnd_recovery_s: Option<f64>,
    /// Seconds until the goodput over a window was back at the pre-loss window's goodput.
    pub rate_recovery_s: Option<f64>,
}

/// Everything computed for one trace.
#[derive(Debug, Clone, Serialize)]
pub struct Metrics {
    /// Trace label.
    pub name: String,
    /// File format.
    pub format: Format,
    /// Sender or receiver.
    pub role: Option<TraceRole>,
    /// The trace's vantage point as logged.
    pub vantage: Option<String>,
    /// The origin on the file's own clock, seconds: every other time is relative to it
    /// (qlog: the first 1-RTT packet sent; reports: 0).
    pub origin_s: f64,
    /// Seconds from the origin to the end.
    pub duration_s: f64,
    /// Seconds over which `goodput_mbps` is averaged: from the first payload sent or
    /// received (qlog with frames; else the origin) to the last delivery, or the whole trace.
    pub goodput_span_s: f64,
    /// Where the payload figures come from.
    pub payload_source: PayloadSource,
    /// STREAM bytes sent again, when frames are logged.
    pub retransmitted_bytes: Option<u64>,
    /// Distinct STREAM bytes sent (retransmissions excluded), when frames are logged.
    pub stream_bytes_sent: Option<u64>,
    /// Payload bytes delivered from the origin to the end, `None` when the trace does not
    /// log the payload (a quinn receiver): absent, never 0.
    pub bytes: Option<u64>,
    /// Mbit/s over the goodput span, `None` when the payload is not logged.
    pub goodput_mbps: Option<f64>,
    /// Bin width of `bins_mbps`.
    pub bin_s: f64,
    /// Goodput per complete bin `[i*bin_s, (i+1)*bin_s)`, Mbit/s; empty when the payload
    /// is not logged. A last bin cut short by the trace's end is `partial_bin`, not here.
    pub bins_mbps: Vec<f64>,
    /// The last bin when the trace ends inside it: reported, never used as a sample (a
    /// 2 ms bin's rate says little and would pass for the capacity).
    pub partial_bin: Option<PartialBin>,
    /// Capacity in Mbit/s used for "time to X%" and the BDP (estimated: the peak complete
    /// bin).
    pub capacity_mbps: Option<f64>,
    /// Where the capacity came from.
    pub capacity_from: Option<Provenance>,
    /// Base RTT in ms used for the BDP.
    pub rtt_ms: Option<f64>,
    /// Where the RTT came from.
    pub rtt_from: Option<Provenance>,
    /// Bandwidth-delay product in bytes.
    pub bdp_bytes: Option<u64>,
    /// The slow-start exit.
    pub exit: Option<Exit>,
    /// cwnd at the exit over the BDP.
    pub overshoot: Option<f64>,
    /// The share of the capacity of `time_to_fraction_s`.
    pub fraction: f64,
    /// End of the first complete bin whose goodput reached `fraction` of the capacity.
    pub time_to_fraction_s: Option<f64>,
    /// Packets lost in the whole trace, `None` when the producer does not log them.
    pub losses: Option<u64>,
    /// Packets lost up to and including the exit instant (all of them if slow start never
    /// ended), `None` when losses are not logged.
    pub losses_in_slow_start: Option<u64>,
    /// Loss episodes.
    pub episodes: Vec<Episode>,
    /// Goodput over the first 1/5/10/30 s (`None` when the trace is shorter).
    pub goodput_over: Vec<(u32, Option<f64>)>,
    /// Largest cwnd seen, bytes.
    pub max_cwnd_bytes: Option<u64>,
    /// Smallest min-RTT seen, ms.
    pub min_rtt_ms: Option<f64>,
    /// Smoothed RTT at the end, ms.
    pub final_srtt_ms: Option<f64>,
    /// Records the reader skipped.
    pub skipped: Vec<Skipped>,
    /// Quantities the trace does not log (see [`NotLogged`]): absent from the figures above,
    /// never zeros.
    pub not_logged: Vec<NotLogged>,
    /// What the reader noticed and worked around.
    pub notes: Vec<String>,
}

/// A last goodput bin shorter than the bin width (the trace ended inside it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PartialBin {
    /// Start, seconds since the origin.
    pub start_s: f64,
    /// Its length in seconds (less than the bin width).
    pub len_s: f64,
    /// Goodput over its length, Mbit/s.
    pub mbps: f64,
}

/// A quantity a trace does not log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NotLogged {
    /// The payload (and so goodput): quinn logs neither lengths nor frames of received
    /// packets.
    Payload,
    /// STREAM frames (sent bytes and retransmissions).
    Frames,
    /// Lost packets.
    Losses,
    /// The congestion window.
    Cwnd,
    /// RTT samples.
    Rtt,
}

impl NotLogged {
    /// What a reader is told is missing.
    pub fn as_str(self) -> &'static str {
        match self {
            NotLogged::Payload => "payload and goodput",
            NotLogged::Frames => "STREAM frames (sent and retransmitted bytes)",
            NotLogged::Losses => "lost packets",
            NotLogged::Cwnd => "congestion window",
            NotLogged::Rtt => "RTT",
        }
    }
}

/// Goodput per bin: the complete bins and, when the trace ends inside one, the partial last
/// bin apart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Bins {
    /// Mbit/s of each complete bin.
    pub complete: Vec<f64>,
    /// The last bin, when shorter than the width.
    pub partial: Option<PartialBin>,
}

/// A bin whose end lies within this of the trace's end counts as complete: qlog times are
/// f32 milliseconds (0.25 us of resolution at 3 s).
const BIN_END_SLACK_S: f64 = 1e-6;

fn mbps(bytes: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes * 8.0 / seconds / 1e6
    } else {
        0.0
    }
}

/// Goodput per bin of `bin_s` from the origin to the trace's end: the complete bins, and the
/// last one apart when the trace ends inside it (averaged over its covered part).
pub fn goodput_bins(trace: &Trace, bin_s: f64) -> Bins {
    if bin_s <= 0.0 || trace.end_s <= 0.0 {
        return Bins::default();
    }
    let whole = ((trace.end_s + BIN_END_SLACK_S) / bin_s).floor() as usize;
    let complete = (0..whole)
        .map(|i| {
            let lo = i as f64 * bin_s;
            mbps(trace.delivered_between(lo, lo + bin_s), bin_s)
        })
        .collect();
    let lo = whole as f64 * bin_s;
    let partial = (trace.end_s - lo > BIN_END_SLACK_S).then(|| PartialBin {
        start_s: lo,
        len_s: trace.end_s - lo,
        mbps: mbps(trace.delivered_between(lo, trace.end_s), trace.end_s - lo),
    });
    Bins { complete, partial }
}

/// What `trace` does not log.
pub fn not_logged(trace: &Trace) -> Vec<NotLogged> {
    let mut out = Vec::new();
    if trace.payload_source == PayloadSource::Unknown {
        out.push(NotLogged::Payload);
    }
    if trace.stream_bytes_sent.is_none() {
        out.push(NotLogged::Frames);
    }
    if !trace.losses_logged {
        out.push(NotLogged::Losses);
    }
    if trace.samples.iter().all(|s| s.cwnd_bytes.is_none()) && trace.max_cwnd_bytes.is_none() {
        out.push(NotLogged::Cwnd);
    }
    if trace
        .samples
        .iter()
        .all(|s| s.srtt_ms.is_none() && s.min_rtt_ms.is_none())
    {
        out.push(NotLogged::Rtt);
    }
    out
}

/// Computes the metrics of `trace`.
pub fn compute(trace: &Trace, p: &Params) -> Metrics {
    let duration = trace.end_s.max(0.0);
    let not_logged = not_logged(trace);
    let payload_logged = !not_logged.contains(&NotLogged::Payload);
    let bytes = trace.delivered_between(0.0, duration.max(f64::MIN_POSITIVE)) as u64;
    let bins = if payload_logged {
        goodput_bins(trace, p.bin_s)
    } else {
        Bins::default()
    };
    let start = trace.delivery_start_s.unwrap_or(0.0);
    let span = trace
        .delivery_end_s
        .filter(|&e| e > start && e <= duration)
        .map_or(duration, |e| e - start);
    let (capacity_mbps, capacity_from) = match (p.capacity_bps, trace.path_rate_bps) {
        (Some(c), _) => (Some(c as f64 / 1e6), Some(Provenance::Given)),
        (None, Some(c)) => (Some(c as f64 / 1e6), Some(Provenance::File)),
        (None, None) => {
            // Complete bins only: a partial last bin is no sample of the path's rate.
            let peak = bins.complete.iter().copied().fold(0.0, f64::max);
            if peak > 0.0 {
                (Some(peak), Some(Provenance::Estimated))
            } else {
                (None, None)
            }
        }
    };
    let min_rtt_ms = trace
        .samples
        .iter()
        .filter_map(|s| s.min_rtt_ms)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))));
    let (rtt_ms, rtt_from) = match (p.rtt_ms, trace.path_rtt_ms, min_rtt_ms) {
        (Some(r), _, _) => (Some(r), Some(Provenance::Given)),
        (None, Some(r), _) => (Some(r), Some(Provenance::File)),
        (None, None, Some(r)) => (Some(r), Some(Provenance::Estimated)),
        _ => (None, None),
    };
    let bdp_bytes = match (capacity_mbps, rtt_ms) {
        (Some(c), Some(r)) => Some((c * 1e6 / 8.0 * r / 1000.0).round() as u64),
        _ => None,
    };
    let overshoot = match (trace.exit, bdp_bytes) {
        (Some(e), Some(b)) if b > 0 => Some(e.cwnd_bytes as f64 / b as f64),
        _ => None,
    };
    let time_to_fraction_s = capacity_mbps.and_then(|c| {
        bins.complete
            .iter()
            .position(|&g| g >= p.fraction * c)
            .map(|i| (i + 1) as f64 * p.bin_s)
    });
    let exit_t = trace.exit.map(|e| e.t_s);
    let losses_in_slow_start = trace.losses_logged.then(|| {
        trace
            .losses
            .iter()
            .filter(|&&t| exit_t.is_none_or(|x| t <= x))
            .count() as u64
    });
    let episodes = trace
        .reductions
        .iter()
        .map(|r| episode(trace, r.t_s, r.from_cwnd_bytes, r.to_cwnd_bytes))
        .collect();
    let goodput_over = HORIZONS_S
        .iter()
        .map(|&h| {
            let h_s = f64::from(h);
            // A trace that ends within half a 10 ms bin of the horizon counts as covering it.
            let covered = payload_logged && duration + 0.005 >= h_s;
            (
                h,
                covered.then(|| mbps(trace.delivered_between(0.0, h_s), h_s)),
            )
        })
        .collect();
    Metrics {
        name: trace.name.clone(),
        format: trace.format,
        role: trace.role,
        vantage: trace.vantage.clone(),
        origin_s: trace.origin_s,
        duration_s: duration,
        goodput_span_s: span,
        payload_source: trace.payload_source,
        retransmitted_bytes: trace.retransmitted_bytes,
        stream_bytes_sent: trace.stream_bytes_sent,
        bytes: payload_logged.then_some(bytes),
        goodput_mbps: payload_logged.then(|| mbps(bytes as f64, span)),
        bin_s: p.bin_s,
        bins_mbps: bins.complete,
        partial_bin: bins.partial,
        capacity_mbps,
        capacity_from,
        rtt_ms,
        rtt_from,
        bdp_bytes,
        exit: trace.exit,
        overshoot,
        fraction: p.fraction,
        time_to_fraction_s,
        losses: trace.losses_logged.then_some(trace.losses.len() as u64),
        losses_in_slow_start,
        episodes,
        goodput_over,
        max_cwnd_bytes: trace
            .max_cwnd_bytes
            .max(trace.samples.iter().filter_map(|s| s.cwnd_bytes).max()),
        min_rtt_ms,
        final_srtt_ms: trace.samples.iter().rev().find_map(|s| s.srtt_ms),
        skipped: trace.skipped.clone(),
        not_logged,
        notes: trace.notes.clone(),
    }
}

/// Width of the rate windows around a loss: [`RATE_WINDOW_S`], or the trace's delivery
/// granularity when it is coarser (reports deliver per interval).
fn rate_window(trace: &Trace) -> f64 {
    let widest = trace
        .delivered
        .iter()
        .map(|c| c.end_s - c.start_s)
        .fold(0.0, f64::max);
    RATE_WINDOW_S.max(widest)
}

/// The episode starting with a reduction at `t` from `from` to `to` bytes.
pub fn episode(trace: &Trace, t: f64, from: u64, to: u64) -> Episode {
    let cwnd_recovery_s = trace
        .samples
        .iter()
        .find(|s| s.t_s > t && s.cwnd_bytes.is_some_and(|c| c >= from))
        .map(|s| s.t_s - t);
    let w = rate_window(trace);
    let before = trace.delivered_between(t - w, t);
    let mut rate_recovery_s = None;
    if before > 0.0 {
        let mut k = 0u64;
        // Bounded: windows up to the trace's end.
        while t + (k + 1) as f64 * w <= trace.end_s + 1e-9 {
            let lo = t + k as f64 * w;
            if trace.delivered_between(lo, lo + w) >= before {
                rate_recovery_s = Some((k + 1) as f64 * w);
                break;
            }
            k += 1;
        }
    }
    Episode {
        t_s: t,
        from_cwnd_bytes: from,
        to_cwnd_bytes: to,
        cwnd_recovery_s,
        rate_recovery_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Chunk, Exit, ExitSource, Reduction, Sample};

    /// 4 s of 1 s chunks at 10, 50, 95, 100 Mbit/s; cwnd samples every 0.5 s; an exit at
    /// 1.5 s with 250 000 bytes; one reduction at 2.5 s from 300 000 to 210 000 bytes, back
    /// to 300 000 at 3.5 s.
    fn trace() -> Trace {
        let rates = [10.0, 50.0, 95.0, 100.0];
        let delivered = rates
            .iter()
            .enumerate()
            .map(|(i, r)| Chunk {
                start_s: i as f64,
                end_s: i as f64 + 1.0,
                bytes: (r * 1e6 / 8.0) as u64,
            })
            .collect();
        let cwnds = [
            10_000, 50_000, 150_000, 250_000, 280_000, 210_000, 260_000, 300_000,
        ];
        let samples = cwnds
            .iter()
            .enumerate()
            .map(|(i, &c)| Sample {
                t_s: (i + 1) as f64 * 0.5,
                cwnd_bytes: Some(c),
                min_rtt_ms: Some(20.0 + i as f64),
                srtt_ms: Some(25.0),
                ..Sample::default()
            })
            .collect();
        Trace {
            name: "t".into(),
            format: Format::Report,
            role: Some(TraceRole::Sender),
            mss: Some(1000),
            origin_s: 0.0,
            end_s: 4.0,
            samples,
            delivered,
            losses: vec![1.2, 1.5, 2.5, 3.0],
            losses_logged: true,
            retransmitted_bytes: None,
            stream_bytes_sent: None,
            payload_source: crate::trace::PayloadSource::Report,
            delivery_start_s: None,
            delivery_end_s: None,
            notes: Vec::new(),
            vantage: None,
            reductions: vec![Reduction {
                t_s: 2.5,
                from_cwnd_bytes: 300_000,
                to_cwnd_bytes: 210_000,
            }],
            max_cwnd_bytes: None,
            in_flight_at_end_bytes: None,
            exit: Some(Exit {
                t_s: 1.5,
                cwnd_bytes: 250_000,
                cwnd_segments: Some(250),
                reason: None,
                source: ExitSource::SsthreshFinite,
            }),
            path_rate_bps: None,
            path_rtt_ms: None,
            skipped: Vec::new(),
            records: 0,
        }
    }

    #[test]
    fn given_capacity_and_rtt() {
        let p = Params {
            capacity_bps: Some(100_000_000),
            rtt_ms: Some(20.0),
            ..Params::default()
        };
        let m = compute(&trace(), &p);
        assert_eq!(m.bins_mbps, vec![10.0, 50.0, 95.0, 100.0]);
        assert_eq!(m.bytes, Some(31_875_000));
        assert_eq!(m.goodput_mbps, Some(63.75));
        assert_eq!(m.partial_bin, None);
        assert_eq!(m.capacity_from, Some(Provenance::Given));
        assert_eq!(m.bdp_bytes, Some(250_000));
        assert_eq!(m.overshoot, Some(1.0));
        // 95 >= 90: the end of the third bin.
        assert_eq!(m.time_to_fraction_s, Some(3.0));
        assert_eq!(m.losses, Some(4));
        assert_eq!(m.losses_in_slow_start, Some(2));
        assert_eq!(m.goodput_over[0], (1, Some(10.0)));
        assert_eq!(m.goodput_over[1], (5, None));
        assert_eq!(m.max_cwnd_bytes, Some(300_000));
        assert_eq!(m.min_rtt_ms, Some(20.0));
        assert_eq!(m.episodes.len(), 1);
        let e = m.episodes[0];
        // cwnd back at 300 000 at 4.0 s.
        assert_eq!(e.cwnd_recovery_s, Some(1.5));
        // Rate window is the 1 s chunk: [1.5, 2.5) carried 72.5 Mbit/s, [2.5, 3.5) 97.5.
        assert_eq!(e.rate_recovery_s, Some(1.0));
    }

    #[test]
    fn estimated_capacity_and_rtt() {
        let m = compute(&trace(), &Params::default());
        assert_eq!(m.capacity_mbps, Some(100.0));
        assert_eq!(m.capacity_from, Some(Provenance::Estimated));
        assert_eq!(m.rtt_ms, Some(20.0));
        assert_eq!(m.rtt_from, Some(Provenance::Estimated));
        assert_eq!(m.bdp_bytes, Some(250_000));
        // Half-second bins: 10, 10, 50, 50, 95, 95, 100, 100.
        let half = compute(
            &trace(),
            &Params {
                bin_s: 0.5,
                ..Params::default()
            },
        );
        assert_eq!(half.bins_mbps.len(), 8);
        assert_eq!(half.time_to_fraction_s, Some(2.5));
    }

    #[test]
    fn no_exit_counts_every_loss_in_slow_start() {
        let mut t = trace();
        t.exit = None;
        let m = compute(&t, &Params::default());
        assert_eq!(m.losses_in_slow_start, Some(4));
        assert_eq!(m.overshoot, None);
    }
}
