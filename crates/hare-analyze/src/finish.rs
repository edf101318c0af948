//! From an [`Accumulator`] to a [`Trace`]: the role, the payload (STREAM frames when logged,
//! else the packet-byte estimate), the RTT unit, the slow-start exit and the loss episodes.

use hare_report::ExitReason;

use crate::accumulate::{Accumulator, Signal, SignalKind, BIN_S};
use crate::trace::{
    Chunk, Exit, ExitSource, PayloadSource, Reduction, Sample, Skipped, Trace, TraceRole,
};

/// Bytes of a full-size 1-RTT packet that are not stream payload, used when only packet
/// bytes are logged (quinn): short header flags (1) + packet number (2) + AEAD tag (16) +
/// STREAM frame header (type, stream id, offset, length: ~8), plus the destination
/// connection id when its length is logged. Calibrated on hare-sim runs with zero-length
/// connection ids, where payload per full 1452-byte packet measured 1424.7 bytes (see the
/// crate README); an estimate, marked as such in the output.
pub const QUIC_OVERHEAD_BYTES: u64 = 27;

/// Signals closer than this to an episode's start belong to it when no RTT is known.
const EPISODE_FALLBACK_S: f64 = 0.1;

/// The candidate (milliseconds per logged RTT unit) that brings `v` closest to `seen_ms`.
fn closest(v: f64, seen_ms: f64, candidates: &[f64]) -> f64 {
    candidates
        .iter()
        .copied()
        .min_by(|x, y| {
            let dx = (v * x / seen_ms).ln().abs();
            let dy = (v * y / seen_ms).ln().abs();
            dx.total_cmp(&dy)
        })
        .unwrap_or(1.0)
}

/// Factor turning the logged RTTs into milliseconds. qlog says milliseconds, but
/// quinn-proto 0.11 writes seconds and picoquic microseconds (its `time_units`). When ACK
/// frames are logged, the smallest logged min_rtt is compared with the smallest round trip
/// the ACKs show (largest acknowledged packet's send time to the ACK); else the first RTT
/// sample with the first round trip seen in the event times (seconds or milliseconds).
fn rtt_scale(a: &Accumulator) -> f64 {
    if let (Some(seen_s), Some(v)) = (a.ack_rtt_min_s, a.min_rtt_logged) {
        if seen_s > 0.0 && v > 0.0 {
            return closest(v, seen_s * 1000.0, &[1000.0, 1.0, 0.001]);
        }
    }
    if let Some(u) = a.ms_per_unit.filter(|&u| u != 1.0) {
        return u;
    }
    match (a.first_sent_s, a.first_received_s, a.first_rtt_value) {
        (Some(s), Some(r), Some(v)) if r > s && v > 0.0 => {
            closest(v, (r - s) * 1000.0, &[1000.0, 1.0])
        }
        _ => 1.0,
    }
}

fn role(a: &Accumulator) -> Option<TraceRole> {
    let (sent, recv) = (a.stream_sent.unique, a.stream_received.unique);
    if sent != recv {
        return Some(if sent > recv {
            TraceRole::Sender
        } else {
            TraceRole::Receiver
        });
    }
    if a.sent_packets == 0 && a.received_packets == 0 {
        None
    } else if a.sent_packets >= a.received_packets {
        Some(TraceRole::Sender)
    } else {
        Some(TraceRole::Receiver)
    }
}

/// The earliest of the candidate exits; on a tie the ssthresh-based one (its window is
/// min(cwnd, ssthresh), see `accumulate::infer_exit`).
fn pick_exit(a: &Accumulator, signals: &[Signal]) -> Option<Exit> {
    let signal_exit = signals.first().and_then(|s| {
        Some(Exit {
            t_s: s.t,
            cwnd_bytes: s.cwnd_before?,
            cwnd_segments: None,
            reason: Some(ExitReason::Loss),
            source: ExitSource::CongestionSignal,
        })
    });
    let state_exit = a.state_exit.and_then(|s| {
        let cwnd = s.cwnd?;
        Some(Exit {
            t_s: s.t,
            cwnd_bytes: s.ssthresh.map_or(cwnd, |st| cwnd.min(st)),
            cwnd_segments: None,
            reason: None,
            source: ExitSource::StateChange,
        })
    });
    let mut best = a.ssthresh_exit;
    for c in [signal_exit, state_exit].into_iter().flatten() {
        if best.is_none_or(|b| c.t_s < b.t_s - 1e-9) {
            best = Some(c);
        }
    }
    best
}

/// Groups signals into episodes: one per RTT (a sender reacts to a window's losses once,
/// RFC 9002 section 7.3.2), starting at the first signal.
fn episodes(signals: &[Signal], samples: &[Sample], scale: f64) -> Vec<Reduction> {
    let mut out: Vec<Reduction> = Vec::new();
    let mut end = f64::NEG_INFINITY;
    for s in signals {
        if s.t <= end {
            continue;
        }
        let rtt_s = s
            .srtt_raw
            .map_or(EPISODE_FALLBACK_S, |r| r * scale / 1000.0);
        end = s.t + rtt_s.max(1e-3);
        let Some(from) = s.cwnd_before else { continue };
        let to = samples
            .iter()
            .filter(|x| x.t_s >= s.t - 1e-9 && x.t_s <= end)
            .filter_map(|x| x.cwnd_bytes)
            .min()
            .map_or(from, |m| m.min(from));
        out.push(Reduction {
            t_s: s.t,
            from_cwnd_bytes: from,
            to_cwnd_bytes: to,
        });
    }
    out
}

/// The trace, times shifted to the origin (first 1-RTT packet sent, else first event).
pub(crate) fn finish(mut a: Accumulator, mut skipped: Vec<Skipped>) -> Trace {
    let origin = a.origin_s.or(a.first_s).unwrap_or(0.0);
    // Keep the final state even when it fell between two kept samples.
    if a.samples.last().map(|s| s.t_s) != Some(a.cur.t_s) && a.cur.t_s > 0.0 {
        a.samples.push(a.cur);
    }
    let scale = rtt_scale(&a);
    let role = role(&a);
    let mss = (a.max_one_rtt_len > 0).then_some(a.max_one_rtt_len);
    let overhead = QUIC_OVERHEAD_BYTES + a.max_dcid_len.unwrap_or(0);
    let sender = role != Some(TraceRole::Receiver);
    let end = a.last_s - origin;
    let payload = payload(&mut a, sender, mss, overhead, origin, end);
    for s in &mut a.samples {
        s.t_s -= origin;
        s.srtt_ms = s.srtt_ms.map(|v| v * scale);
        s.min_rtt_ms = s.min_rtt_ms.map(|v| v * scale);
    }
    // Retransmissions stand for losses only where nothing better is logged.
    let mut signals = std::mem::take(&mut a.signals);
    if a.losses.is_empty() && !a.recovery_logged && signals.is_empty() {
        signals = std::mem::take(&mut a.retransmits);
    }
    for s in &mut signals {
        s.t -= origin;
    }
    let reductions = if sender {
        episodes(&signals, &a.samples, scale)
    } else {
        Vec::new()
    };
    let segs = |e: Exit| Exit {
        t_s: e.t_s - origin,
        cwnd_segments: mss.map(|m| (e.cwnd_bytes / m) as u32),
        ..e
    };
    let shifted: Vec<Signal> = signals
        .iter()
        .map(|s| Signal {
            t: s.t + origin,
            ..*s
        })
        .collect();
    let exit = if sender {
        pick_exit(&a, &shifted).map(segs)
    } else {
        None
    };
    let retransmitted = a
        .frames_logged
        .then(|| a.stream_sent.total - a.stream_sent.unique);
    let evidence = retransmitted.is_some_and(|r| r > 0)
        || a.recovery_logged
        || !signals.is_empty()
        || a.cuts > 0;
    // PTO-marked packet_lost events show that the stack logs packet_lost (neqo), so none
    // else means none lost.
    let losses_logged = !a.losses.is_empty() || a.pto_marked > 0 || (sender && !evidence);
    let notes = notes(
        &a,
        &signals,
        payload.source,
        overhead,
        sender && !losses_logged,
    );
    if a.out_of_range > 0 {
        skipped.push(Skipped {
            count: a.out_of_range,
            reason: "event time not finite or beyond 28 hours".into(),
        });
    }
    Trace {
        name: a.name,
        format: a.format,
        role,
        vantage: a.vantage,
        mss,
        origin_s: origin,
        end_s: end,
        samples: a.samples,
        delivered: payload.chunks,
        losses: a.losses.iter().map(|t| t - origin).collect(),
        losses_logged,
        retransmitted_bytes: retransmitted,
        stream_bytes_sent: a.frames_logged.then_some(a.stream_sent.unique),
        payload_source: payload.source,
        delivery_start_s: payload.first.map(|t| (t - origin).max(0.0)),
        delivery_end_s: payload.last.map(|t| t - origin),
        notes,
        reductions,
        exit,
        max_cwnd_bytes: a.max_cwnd_bytes,
        in_flight_at_end_bytes: a.cur.in_flight_bytes,
        path_rate_bps: None,
        path_rtt_ms: None,
        skipped,
        records: a.records,
    }
}

/// The payload a trace delivered, in report time, and where the figure comes from.
struct Payload {
    chunks: Vec<Chunk>,
    source: PayloadSource,
    /// First payload sent (sender) or received (receiver), when frames tell it (qlog time).
    first: Option<f64>,
    /// Last delivery (qlog time).
    last: Option<f64>,
}

/// Picks the best logged payload figure (acknowledged or received STREAM frames, else the
/// packet-byte estimate) and turns its bins into chunks clipped to `[0, end]`.
fn payload(
    a: &mut Accumulator,
    sender: bool,
    mss: Option<u64>,
    overhead: u64,
    origin: f64,
    end: f64,
) -> Payload {
    // The goodput span: from the first payload sent (sender) or received (receiver), when
    // frames tell it, else the origin, to the last delivery.
    let (bins, source, first, last, scaled) = if sender && a.unacked.acked_unique() > 0 {
        let b = std::mem::take(&mut a.acked_stream_bins);
        let (f, l) = (a.first_stream_sent_s, a.last_acked_stream_s);
        (b, PayloadSource::AckedStreamFrames, f, l, false)
    } else if !sender && a.stream_received.unique > 0 {
        let b = std::mem::take(&mut a.received_stream_bins);
        let (f, l) = (a.first_stream_received_s, a.last_received_stream_s);
        (b, PayloadSource::ReceivedStreamFrames, f, l, false)
    } else if sender && a.acked_cum > 0 {
        let b = std::mem::take(&mut a.acked_bins);
        let l = a.last_acked_estimate_s;
        (b, PayloadSource::PacketEstimate, None, l, true)
    } else if !sender && !a.received_bins.is_empty() {
        let b = std::mem::take(&mut a.received_bins);
        let l = a.last_received_estimate_s;
        (b, PayloadSource::PacketEstimate, None, l, true)
    } else {
        (Vec::new(), PayloadSource::Unknown, None, None, false)
    };
    let (num, den) = match mss {
        Some(m) if scaled && m > overhead => (m - overhead, m),
        _ => (1, 1),
    };
    let chunks = bins
        .iter()
        .enumerate()
        .map(|(i, &bytes)| {
            let (lo, hi) = (i as f64 * BIN_S - origin, (i + 1) as f64 * BIN_S - origin);
            // The bins that hold the origin and the end are clipped to them: nothing was
            // delivered outside, and a short run (65 ms on loopback) must not lose part of
            // a 10 ms bin to the proportional split of `delivered_between`.
            Chunk {
                start_s: if hi > 0.0 { lo.max(0.0) } else { lo },
                end_s: if lo < end { hi.min(end) } else { hi },
                bytes: (u128::from(bytes) * u128::from(num) / u128::from(den)) as u64,
            }
        })
        .collect();
    Payload {
        chunks,
        source,
        first,
        last,
    }
}

/// The notes a trace carries about how its figures were read.
fn notes(
    a: &Accumulator,
    signals: &[Signal],
    source: PayloadSource,
    overhead: u64,
    losses_unlogged: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    if a.ignored_min_rtt > 0 {
        notes.push(format!(
            "{} min_rtt value(s) of 0 or less ignored (not a measurement)",
            a.ignored_min_rtt
        ));
    }
    if a.pto_marked > 0 {
        notes.push(format!(
            "{} packet_lost event(s) triggered by a PTO not counted as losses (a PTO declares \
             nothing lost, RFC 9002 section 6.2)",
            a.pto_marked
        ));
    }
    let ecn = signals.iter().filter(|s| s.kind == SignalKind::Ecn).count();
    if ecn > 0 {
        notes.push(format!(
            "{ecn} ECN-CE increase(s) counted as congestion signals"
        ));
    }
    if signals.iter().any(|s| s.kind == SignalKind::Retransmit) {
        notes.push("no losses or states logged: retransmissions taken as loss signals".into());
    }
    if source == PayloadSource::PacketEstimate {
        notes.push(format!(
            "payload estimated from packet bytes less {overhead} bytes per packet (no STREAM \
             frames logged)"
        ));
    }
    if losses_unlogged {
        notes.push("lost packets not logged by this stack (no packet_lost events)".into());
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(t: f64, cwnd: u64) -> Signal {
        Signal {
            t,
            kind: SignalKind::Loss,
            cwnd_before: Some(cwnd),
            srtt_raw: Some(20.0),
        }
    }

    #[test]
    fn one_episode_per_rtt() {
        let samples: Vec<Sample> = [(1.0, 100_000), (1.005, 50_000), (1.5, 80_000)]
            .iter()
            .map(|&(t_s, c)| Sample {
                t_s,
                cwnd_bytes: Some(c),
                ..Sample::default()
            })
            .collect();
        let e = episodes(
            &[sig(1.0, 100_000), sig(1.01, 50_000), sig(1.5, 80_000)],
            &samples,
            1.0,
        );
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].from_cwnd_bytes, e[0].to_cwnd_bytes),
            (100_000, 50_000)
        );
        assert_eq!(e[1].t_s, 1.5);
    }
}
