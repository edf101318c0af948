//! Per-run figures of the kernel-vs-hare comparison, from a hare report.
//!
//! Definitions (the same as hare-lab's `metrics`, so tables agree):
//! - time to 90%: end of the first interval whose rate reaches 90% of the path's payload rate;
//! - slow-start exit: the summary's first exit (cwnd in segments and reason), else the first
//!   controller or observed exit event;
//! - losses: the summary's lost (QUIC) / retransmitted (TCP) packets;
//! - goodput at t: payload bytes delivered by t over t (cumulative), from the intervals;
//! - recovery after a blackout: from its end to the end of the first interval back at 90%.

use hare_report::{CcEvent, ExitReason};
use hare_report::{EventKind, Run};
use serde::{Deserialize, Serialize};

/// What a full QUIC data packet of hare's (quinn-proto 0.11) spends besides stream payload,
/// over IPv4, each at its smallest in a transfer's steady state, so that the payload rate
/// stated from it is one no interval line can exceed:
/// - IPv4 20 + UDP 8;
/// - the short header (RFC 9000 17.3.1): 1 byte of flags, the destination connection id
///   (quinn's default generator issues 8 bytes), the packet number: quinn writes 1 byte
///   while fewer than 128 packets separate it from the largest acknowledged one, 2 below
///   32768 (more than 127 packets in flight, as on 100 Mbit/s x 20 ms);
/// - the AEAD tag, 16 (RFC 9001 5.3);
/// - one STREAM frame filling the packet (RFC 9000 19.8): type 1, stream id 1 (ids below
///   64), offset 4 (2^14 to 2^30 bytes into the stream; 8 after the first GiB); quinn omits
///   the length field of a frame that fills the packet (its send buffer's `poll_transmit`).
///
/// A line can therefore reach the stated rate only with 1-byte packet numbers; with more
/// than 127 packets in flight it stays one byte per packet (0.07% at MTU 1500) below it.
pub const QUIC_PACKET_OVERHEAD: QuicOverhead = QuicOverhead {
    ip_udp: 28,
    flags: 1,
    connection_id: 8,
    packet_number: 1,
    aead_tag: 16,
    stream_frame: 1 + 1 + 4,
};

/// The parts of [`QUIC_PACKET_OVERHEAD`], bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuicOverhead {
    /// IPv4 and UDP headers.
    pub ip_udp: u32,
    /// The short header's first byte.
    pub flags: u32,
    /// The destination connection id.
    pub connection_id: u32,
    /// The packet number's encoding.
    pub packet_number: u32,
    /// The AEAD tag.
    pub aead_tag: u32,
    /// The STREAM frame's type, stream id and offset.
    pub stream_frame: u32,
}

impl QuicOverhead {
    /// All of it.
    pub const fn total(&self) -> u32 {
        self.ip_udp
            + self.flags
            + self.connection_id
            + self.packet_number
            + self.aead_tag
            + self.stream_frame
    }
}

/// Bytes of kernel TCP's segments besides payload: IPv4 20, TCP 20 and its 12-byte timestamp
/// option (RFC 7323).
pub const TCP_PACKET_OVERHEAD: u32 = 20 + 20 + 12;

/// Payload bytes in a full packet of `ip_mtu` bytes: QUIC as quinn writes it
/// ([`QUIC_PACKET_OVERHEAD`]) or kernel TCP with timestamps ([`TCP_PACKET_OVERHEAD`]).
pub fn payload_per_packet(ip_mtu: u32, tcp: bool) -> u32 {
    let overhead = match tcp {
        true => TCP_PACKET_OVERHEAD,
        false => QUIC_PACKET_OVERHEAD.total(),
    };
    ip_mtu.saturating_sub(overhead)
}

/// The link's payload rate in Mbit/s.
pub fn payload_mbps(rate_bps: u64, ip_mtu: u32, tcp: bool) -> f64 {
    rate_bps as f64 / 1e6 * f64::from(payload_per_packet(ip_mtu, tcp)) / f64::from(ip_mtu)
}

/// Figures of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// Seconds to 90% of the payload rate.
    pub t90_s: Option<f64>,
    /// cwnd (segments) at the first slow-start exit.
    pub exit_cwnd: Option<u32>,
    /// Why slow start ended.
    pub exit_reason: Option<String>,
    /// When, seconds.
    pub exit_t_s: Option<f64>,
    /// Lost / retransmitted packets over the run.
    pub losses: u64,
    /// Cumulative goodput (Mbit/s) at 1, 5, 10 and 20 s (`None` past the run's end).
    pub goodput_mbps: [Option<f64>; 4],
    /// Largest cwnd, segments.
    pub max_cwnd: Option<u32>,
    /// Window reductions reported by the controller (hare runs).
    pub window_reductions: u32,
    /// The run's validity.
    pub valid: bool,
}

/// The times goodput is reported at.
pub const GOODPUT_AT_S: [f64; 4] = [1.0, 5.0, 10.0, 20.0];

/// Computes the figures; `capacity_mbps` is the payload rate of the path.
pub fn run_metrics(run: &Run, capacity_mbps: f64) -> RunMetrics {
    let mut m = RunMetrics::default();
    let target = capacity_mbps * 0.9;
    m.t90_s = run
        .intervals
        .iter()
        .find(|iv| iv.seconds() > 0.0 && iv.mbps() >= target)
        .map(|iv| iv.end_s);
    if let Some(s) = &run.summary {
        m.losses = s.lost_packets;
        m.valid = s.valid;
        m.max_cwnd = s.max_cwnd_segments;
        if let Some(x) = &s.slow_start_exit {
            m.exit_cwnd = Some(x.cwnd_segments);
            m.exit_reason = Some(x.reason.as_str().to_string());
            m.exit_t_s = Some(x.t_s);
        }
    }
    for ev in &run.events {
        match &ev.kind {
            EventKind::Cc {
                event: CcEvent::SlowStartExit { cwnd, reason, .. },
            } if m.exit_cwnd.is_none() => {
                m.exit_cwnd = Some(*cwnd);
                m.exit_reason = Some(reason.as_str().to_string());
                m.exit_t_s = Some(ev.t_s);
            }
            EventKind::SlowStartExitObserved {
                cwnd_segments,
                reason,
            } if m.exit_cwnd.is_none() => {
                m.exit_cwnd = Some(*cwnd_segments);
                m.exit_reason = Some(reason.as_str().to_string());
                m.exit_t_s = Some(ev.t_s);
            }
            EventKind::Cc {
                event: CcEvent::WindowReduced { .. },
            } => m.window_reductions += 1,
            _ => {}
        }
    }
    if run.header.transport == hare_report::Transport::Tcp && m.exit_cwnd.is_none() {
        // Kernel TCP, a report without hare-send's own exit record (an older hare-send, or a
        // kernel without the HyStart SNMP counters): infer it from the sampled intervals.
        // TCP_INFO is sampled once per interval, and after a loss the sampled cwnd is already
        // reduced (PRR), but ssthresh is exact: the first finite tcpi_snd_ssthresh ends slow
        // start. Without a retransmission yet, HyStart set ssthresh = cwnd (tcp_cubic.c,
        // hystart_update); after a loss tcp_cubic set ssthresh = max(cwnd * beta / 1024, 2)
        // (cubictcp_recalc_ssthresh), so the window at the loss was ssthresh * 1024 / beta
        // (beta 717, the default none of the knobs change; exact to within one segment).
        // hare-send itself names the HyStart test and its cwnd from the kernel's counters
        // (hare_transfer::hystart_mib); that record, when present, is used above.
        let mut lost = 0u64;
        for iv in &run.intervals {
            lost += iv.lost_packets;
            if let Some(ss) = iv.ssthresh_segments {
                if lost == 0 {
                    m.exit_cwnd = Some(ss);
                    m.exit_reason = Some("hystart (from ssthresh)".into());
                } else {
                    m.exit_cwnd = Some((u64::from(ss) * 1024).div_ceil(717) as u32);
                    m.exit_reason = Some("loss (ssthresh / 0.7)".into());
                }
                m.exit_t_s = Some(iv.end_s);
                break;
            }
        }
    }
    if m.max_cwnd.is_none() {
        m.max_cwnd = run.intervals.iter().filter_map(|i| i.cwnd_segments).max();
    }
    let end = run.intervals.last().map_or(0.0, |i| i.end_s);
    for (k, &t) in GOODPUT_AT_S.iter().enumerate() {
        if end + 1e-6 < t {
            continue;
        }
        let bytes: f64 = run
            .intervals
            .iter()
            .map(|iv| {
                let len = iv.seconds();
                if len <= 0.0 || iv.start_s >= t {
                    0.0
                } else {
                    iv.bytes as f64 * ((t.min(iv.end_s) - iv.start_s) / len).clamp(0.0, 1.0)
                }
            })
            .sum();
        m.goodput_mbps[k] = Some(bytes * 8.0 / t / 1e6);
    }
    m
}

/// Seconds from `from_s` to the end of the first interval after it whose rate is back at 90%
/// of `capacity_mbps`.
pub fn recovery_time(run: &Run, from_s: f64, capacity_mbps: f64) -> Option<f64> {
    run.intervals
        .iter()
        .filter(|iv| iv.start_s >= from_s - 1e-9 && iv.seconds() > 0.0)
        .find(|iv| iv.mbps() >= 0.9 * capacity_mbps)
        .map(|iv| iv.end_s - from_s)
}

/// The exit reason's name, for a reason not known to be in a report.
pub fn reason_name(r: ExitReason) -> &'static str {
    r.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hare_report::{
        Interval, Role, RunHeader, SlowStartExit, Summary, Tool, Transport, Windows,
    };

    fn run() -> Run {
        let iv = |s: f64, e: f64, mb: u64, cwnd: u32| Interval {
            start_s: s,
            end_s: e,
            bytes: mb * 1_000_000 / 8,
            cwnd_segments: Some(cwnd),
            ..Default::default()
        };
        Run {
            header: RunHeader {
                schema: hare_report::SCHEMA.into(),
                tool: Tool::HareSend,
                tool_version: "0".into(),
                role: Role::Sender,
                transport: Transport::Quic,
                run_id: "t".into(),
                scenario: None,
                controller: "cubic".into(),
                profile: None,
                mtu: 1472,
                windows: Windows::default(),
                path: None,
                seed: None,
                started_at: None,
                interval_s: 1.0,
            },
            // 10, 50, 95, 95, 95 Mbit over 1 s each.
            intervals: vec![
                iv(0.0, 1.0, 10, 50),
                iv(1.0, 2.0, 50, 400),
                iv(2.0, 3.0, 95, 900),
                iv(3.0, 4.0, 95, 800),
                iv(4.0, 5.0, 95, 820),
            ],
            events: vec![],
            summary: Some(Summary {
                lost_packets: 7,
                valid: true,
                slow_start_exit: Some(SlowStartExit {
                    t_s: 1.5,
                    cwnd_segments: 700,
                    reason: ExitReason::AckTrain,
                }),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn figures_from_intervals_and_summary() {
        let m = run_metrics(&run(), 100.0);
        assert_eq!(m.t90_s, Some(3.0));
        assert_eq!(m.exit_cwnd, Some(700));
        assert_eq!(m.exit_reason.as_deref(), Some("ack-train"));
        assert_eq!(m.losses, 7);
        assert_eq!(m.max_cwnd, Some(900));
        assert_eq!(m.goodput_mbps[0], Some(10.0));
        // (10 + 50 + 95 + 95 + 95) / 5 = 69.
        let g5 = m.goodput_mbps[1].unwrap_or(0.0);
        assert!((g5 - 69.0).abs() < 1e-9, "{g5}");
        assert_eq!(m.goodput_mbps[2], None);
        assert_eq!(recovery_time(&run(), 1.0, 100.0), Some(2.0));
    }

    #[test]
    fn kernel_exit_comes_from_the_first_finite_ssthresh() {
        let mut r = run();
        r.header.transport = hare_report::Transport::Tcp;
        r.intervals[2].ssthresh_segments = Some(880);
        // hare-send's own record (from the kernel's HyStart counters) wins.
        let m = run_metrics(&r, 100.0);
        assert_eq!(m.exit_cwnd, Some(700));
        assert_eq!(m.exit_reason.as_deref(), Some("ack-train"));
        // Without it, the first finite ssthresh.
        if let Some(s) = r.summary.as_mut() {
            s.slow_start_exit = None;
        }
        let m = run_metrics(&r, 100.0);
        assert_eq!(m.exit_cwnd, Some(880));
        assert_eq!(m.exit_reason.as_deref(), Some("hystart (from ssthresh)"));
        assert_eq!(m.exit_t_s, Some(3.0));
        r.intervals[1].lost_packets = 3;
        let m = run_metrics(&r, 100.0);
        // 880 * 1024 / 717 = 1256.8 -> 1257.
        assert_eq!(m.exit_cwnd, Some(1257));
        assert_eq!(m.exit_reason.as_deref(), Some("loss (ssthresh / 0.7)"));
    }

    #[test]
    fn payload_rates() {
        assert_eq!(payload_per_packet(1500, true), 1448);
        assert_eq!(QUIC_PACKET_OVERHEAD.total(), 60);
        assert_eq!(payload_per_packet(1500, false), 1440);
        assert!((payload_mbps(100_000_000, 1500, true) - 96.533_333).abs() < 1e-6);
        // 100 Mbit/s x 1440 / 1500.
        assert_eq!(payload_mbps(100_000_000, 1500, false), 96.0);
    }

    /// The stated QUIC payload rate is at or above what a VALID emulator run's interval lines
    /// showed on 100 Mbit/s at MTU 1500 (95.91 Mbit/s, 1438.7 bytes per packet; quinn's
    /// packets then carried 2-byte packet numbers), and no full packet carries more payload:
    /// the shortest header quinn writes on one is counted.
    #[test]
    fn no_line_can_exceed_the_stated_quic_payload_rate() {
        let stated = payload_mbps(100_000_000, 1500, false);
        assert!(95.91 <= stated, "{stated}");
        let two_byte_numbers = QuicOverhead {
            packet_number: 2,
            ..QUIC_PACKET_OVERHEAD
        };
        let steady = 100.0 * f64::from(1500 - two_byte_numbers.total()) / 1500.0;
        assert!((steady - 95.933_333).abs() < 1e-6, "{steady}");
        assert!(95.91 <= steady && steady < stated);
        // Under the old count (41 bytes of QUIC overhead) the stated rate was below the line.
        assert!(100.0 * f64::from(1500 - 28 - 41) / 1500.0 < 95.91);
    }
}
