//! Sampling the sender's congestion state: quinn statistics and hare-cc snapshots (QUIC),
//! or `TCP_INFO` (kernel TCP).

use std::time::Instant;

use hare_cc::Observer;
use hare_report::{CcEvent, Event, EventKind, ExitReason};

use super::opener::{lock, DataSockets, Opener};
use crate::hystart_mib::{cubic_beta, HystartMib};
use crate::protocol::DataHeader;
use crate::sampler::{QuicSampler, Sample};
use crate::tcp;

/// Why and where kernel TCP left slow start, at the first sample whose ssthresh is finite.
///
/// In order of certainty: the namespace's HyStart counters moved (the kernel names the test
/// and the cwnd it fired at, exactly); a retransmission happened (a loss: the window at the
/// loss was `ssthresh * 1024 / beta` for CUBIC, `tcpi_snd_cwnd` having already been cut, and
/// `2 * ssthresh` for Reno's halving); neither (ssthresh was preset: tcp_cubic's
/// `initial_ssthresh` or a route metric), once cwnd has reached it (`None` before: slow start
/// is still on). Without counters (an old kernel, or no /proc), a finite ssthresh without a
/// retransmission is reported as a note.
///
/// `mibs`: the counters at the start and now; `beta`: tcp_cubic's module parameter.
fn tcp_exit(
    info: &tcp::TcpInfo,
    retrans: u64,
    mibs: Option<(HystartMib, HystartMib)>,
    cc: Option<&str>,
    beta: u32,
) -> Option<EventKind> {
    let ssthresh = info.ssthresh.unwrap_or(info.cwnd);
    let hystart = mibs.and_then(|(a, b)| a.exit_since(&b));
    if let Some(h) = hystart {
        return Some(EventKind::SlowStartExitObserved {
            cwnd_segments: h.cwnd_segments,
            reason: if h.ack_train {
                ExitReason::AckTrain
            } else {
                ExitReason::Delay
            },
        });
    }
    if retrans > 0 {
        let cwnd = match cc {
            Some("cubic") => (u64::from(ssthresh) * 1024).div_ceil(u64::from(beta.max(1))),
            Some("reno") => u64::from(ssthresh) * 2,
            _ => u64::from(info.cwnd.max(ssthresh)),
        };
        return Some(EventKind::SlowStartExitObserved {
            cwnd_segments: u32::try_from(cwnd).unwrap_or(u32::MAX),
            reason: ExitReason::Loss,
        });
    }
    if info.cwnd < ssthresh {
        return None;
    }
    if mibs.is_some() {
        return Some(EventKind::SlowStartExitObserved {
            cwnd_segments: ssthresh,
            reason: ExitReason::SsthreshReached,
        });
    }
    Some(EventKind::Note {
        message: format!(
            "slow start exit (observed) without retransmissions (HyStart?): cwnd {} seg, ssthresh {} seg",
            info.cwnd, ssthresh
        ),
    })
}

/// Samples the sender's congestion state.
pub(super) enum Probe {
    Quic(Box<QuicSampler>),
    Tcp {
        sockets: DataSockets,
        /// The last good `TCP_INFO` of each data connection, in opening order.
        infos: Vec<tcp::TcpInfo>,
        /// The namespace's HyStart counters when the run started (see `hystart_mib`).
        mib0: Option<HystartMib>,
        last_retrans: u64,
        last_segs: u64,
        exit_seen: bool,
        max_cwnd: u32,
        t0: Instant,
        srtt_ms: f64,
        min_rtt_ms: f64,
    },
}

impl Probe {
    /// The probe of the connection `opener` runs on: quinn's statistics and hare-cc's
    /// `observer` (whose controller was built at `cc_epoch`), or `TCP_INFO`. Run times count
    /// from `t0`; quinn's built-in controllers (`quinn-*`) publish no kernel-model state.
    pub(super) fn new(
        opener: &Opener,
        observer: &Observer,
        cc_epoch: Instant,
        t0: Instant,
        controller: &str,
    ) -> Self {
        match opener {
            Opener::Quic(c) => Probe::Quic(Box::new(QuicSampler::new(
                c.clone(),
                observer.clone(),
                cc_epoch,
                t0,
                !controller.starts_with("quinn-"),
            ))),
            Opener::Tcp { sockets, .. } => Probe::Tcp {
                sockets: sockets.clone(),
                infos: Vec::new(),
                mib0: HystartMib::read(),
                last_retrans: 0,
                last_segs: 0,
                exit_seen: false,
                max_cwnd: 0,
                t0,
                srtt_ms: 0.0,
                min_rtt_ms: 0.0,
            },
        }
    }

    pub(super) fn sample(&mut self) -> (Sample, Vec<Event>, Vec<CcEvent>) {
        match self {
            Probe::Quic(s) => s.sample(),
            Probe::Tcp {
                sockets,
                infos,
                mib0,
                last_retrans,
                last_segs,
                exit_seen,
                max_cwnd,
                t0,
                srtt_ms,
                min_rtt_ms,
            } => {
                // The last good TCP_INFO of each data connection: an aborted one (a timed
                // job's end, `tcp_disconnect()`) gives the reading taken just before its RST,
                // and its counts must not go backwards.
                let mut bulk = Vec::new();
                for (i, (index, s)) in lock(sockets).iter().enumerate() {
                    bulk.push(*index);
                    if let Ok(info) = s.info() {
                        if infos.len() <= i {
                            infos.resize(i + 1, tcp::TcpInfo::default());
                        }
                        if info.bytes_acked >= infos[i].bytes_acked {
                            infos[i] = info;
                        }
                    }
                }
                let retrans: u64 = infos.iter().map(|i| u64::from(i.total_retrans)).sum();
                let segs: u64 = infos.iter().map(|i| u64::from(i.segs_out)).sum();
                let delivered: u64 = infos
                    .iter()
                    .map(|i| i.delivered_payload(DataHeader::LEN as u64))
                    .sum();
                let delivered_streams = by_stream(&bulk, infos);
                let first = infos.first().copied().unwrap_or_default();
                let mss = u64::from(first.snd_mss.max(1));
                *srtt_ms = f64::from(first.rtt_us) / 1e3;
                *min_rtt_ms = f64::from(first.min_rtt_us) / 1e3;
                *max_cwnd = (*max_cwnd).max(first.cwnd);
                let sample = Sample {
                    lost: retrans.saturating_sub(*last_retrans),
                    sent: segs.saturating_sub(*last_segs),
                    cwnd_bytes: u64::from(first.cwnd) * mss,
                    cwnd_segments: first.cwnd,
                    ssthresh_bytes: first.ssthresh.map(|s| u64::from(s) * mss),
                    ssthresh_segments: first.ssthresh,
                    srtt_ms: *srtt_ms,
                    min_rtt_ms: *min_rtt_ms,
                    phase: None,
                    flow_limited: false,
                    cwnd_limited: None,
                    delivered: Some(delivered),
                    delivered_streams,
                };
                *last_retrans = retrans;
                *last_segs = segs;
                let mut events = Vec::new();
                if !*exit_seen && first.ssthresh.is_some() {
                    let cc = lock(sockets)
                        .first()
                        .and_then(|(_, s)| tcp::congestion_control(&s.stream));
                    let mibs = mib0.zip(HystartMib::read());
                    let beta = cubic_beta();
                    if let Some(kind) = tcp_exit(&first, retrans, mibs, cc.as_deref(), beta) {
                        *exit_seen = true;
                        events.push(Event {
                            t_s: t0.elapsed().as_secs_f64(),
                            kind,
                        });
                    }
                }
                (sample, events, Vec::new())
            }
        }
    }

    /// The controller's events since the last sample, without sampling (kernel TCP's
    /// controller publishes none).
    pub(super) fn cc_events(&mut self) -> (Vec<Event>, Vec<CcEvent>) {
        match self {
            Probe::Quic(s) => s.cc_events(),
            Probe::Tcp { .. } => (Vec::new(), Vec::new()),
        }
    }

    pub(super) fn max_cwnd(&self) -> u32 {
        match self {
            Probe::Quic(s) => s.max_cwnd_segments(),
            Probe::Tcp { max_cwnd, .. } => *max_cwnd,
        }
    }

    /// (packets sent, lost, srtt ms, min RTT ms) over the whole run.
    pub(super) fn totals(&mut self) -> (Option<u64>, u64, f64, f64) {
        match self {
            Probe::Quic(s) => {
                let (sent, lost, srtt, min) = s.totals();
                (Some(sent), lost, srtt, min)
            }
            Probe::Tcp {
                last_retrans,
                last_segs,
                srtt_ms,
                min_rtt_ms,
                ..
            } => (Some(*last_segs), *last_retrans, *srtt_ms, *min_rtt_ms),
        }
    }
}

/// Acknowledged payload by bulk stream number (connections of files count nowhere; a stream
/// whose connection is not open yet counts 0).
fn by_stream(bulk: &[Option<u32>], infos: &[tcp::TcpInfo]) -> Vec<u64> {
    let n = bulk
        .iter()
        .flatten()
        .map(|i| *i as usize + 1)
        .max()
        .unwrap_or(0);
    let mut out = vec![0u64; n];
    for (index, info) in bulk.iter().zip(infos) {
        if let Some(i) = index {
            out[*i as usize] += info.delivered_payload(DataHeader::LEN as u64);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(cwnd: u32, ssthresh: Option<u32>) -> tcp::TcpInfo {
        tcp::TcpInfo {
            cwnd,
            ssthresh,
            ..Default::default()
        }
    }

    fn exit(k: Option<EventKind>) -> Option<(u32, ExitReason)> {
        match k {
            Some(EventKind::SlowStartExitObserved {
                cwnd_segments,
                reason,
            }) => Some((cwnd_segments, reason)),
            _ => None,
        }
    }

    #[test]
    fn kernel_counters_name_the_hystart_test_and_its_cwnd() {
        let a = HystartMib {
            train_detect: 5,
            train_cwnd: 4000,
            delay_detect: 2,
            delay_cwnd: 3000,
        };
        let train = HystartMib {
            train_detect: 6,
            train_cwnd: 4906,
            ..a
        };
        // A loss right after HyStart within the same interval: the counters still tell.
        let got = tcp_exit(
            &info(640, Some(634)),
            12,
            Some((a, train)),
            Some("cubic"),
            717,
        );
        assert_eq!(exit(got), Some((906, ExitReason::AckTrain)));
        let delay = HystartMib {
            delay_detect: 3,
            delay_cwnd: 4735,
            ..a
        };
        let got = tcp_exit(
            &info(1735, Some(1735)),
            0,
            Some((a, delay)),
            Some("cubic"),
            717,
        );
        assert_eq!(exit(got), Some((1735, ExitReason::Delay)));
    }

    #[test]
    fn a_loss_exit_is_the_window_before_the_reduction() {
        let a = HystartMib::default();
        // ssthresh 880 after tcp_cubic's beta 717: 880 * 1024 / 717 = 1256.8 -> 1257.
        let got = tcp_exit(&info(700, Some(880)), 3, Some((a, a)), Some("cubic"), 717);
        assert_eq!(exit(got), Some((1257, ExitReason::Loss)));
        // beta = 512 (halving): 2 x ssthresh.
        let got = tcp_exit(&info(700, Some(880)), 3, Some((a, a)), Some("cubic"), 512);
        assert_eq!(exit(got), Some((1760, ExitReason::Loss)));
        let got = tcp_exit(&info(400, Some(500)), 3, None, Some("reno"), 717);
        assert_eq!(exit(got), Some((1000, ExitReason::Loss)));
    }

    #[test]
    fn a_preset_ssthresh_ends_slow_start_only_once_reached() {
        let a = HystartMib::default();
        // tcp_cubic initial_ssthresh=100: finite from the first ACK, reached later.
        assert_eq!(
            tcp_exit(&info(40, Some(100)), 0, Some((a, a)), Some("cubic"), 717),
            None
        );
        let got = tcp_exit(&info(101, Some(100)), 0, Some((a, a)), Some("cubic"), 717);
        assert_eq!(exit(got), Some((100, ExitReason::SsthreshReached)));
        // No counters to ask: a note, not a guess.
        assert!(matches!(
            tcp_exit(&info(900, Some(880)), 0, None, Some("cubic"), 717),
            Some(EventKind::Note { .. })
        ));
    }
}
