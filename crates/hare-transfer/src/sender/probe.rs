//! Sampling the sender's congestion state: quinn statistics and hare-cc snapshots (QUIC),
//! or `TCP_INFO` (kernel TCP).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use hare_cc::{CcEvent, ExitReason};
use hare_report::{Event, EventKind};
use tokio::net::TcpStream;

use super::opener::lock;
use crate::sampler::{QuicSampler, Sample};
use crate::tcp;

/// Samples the sender's congestion state.
pub(super) enum Probe {
    Quic(Box<QuicSampler>),
    Tcp {
        sockets: Arc<Mutex<Vec<Arc<TcpStream>>>>,
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
    pub(super) fn sample(&mut self) -> (Sample, Vec<Event>, Vec<CcEvent>) {
        match self {
            Probe::Quic(s) => s.sample(),
            Probe::Tcp {
                sockets,
                last_retrans,
                last_segs,
                exit_seen,
                max_cwnd,
                t0,
                srtt_ms,
                min_rtt_ms,
            } => {
                let infos: Vec<tcp::TcpInfo> = lock(sockets)
                    .iter()
                    .filter_map(|s| tcp::tcp_info(&**s).ok())
                    .collect();
                let retrans: u64 = infos.iter().map(|i| u64::from(i.total_retrans)).sum();
                let segs: u64 = infos.iter().map(|i| u64::from(i.segs_out)).sum();
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
                };
                *last_retrans = retrans;
                *last_segs = segs;
                let mut events = Vec::new();
                if !*exit_seen && first.ssthresh.is_some() {
                    *exit_seen = true;
                    let t_s = t0.elapsed().as_secs_f64();
                    if retrans > 0 {
                        events.push(Event {
                            t_s,
                            kind: EventKind::SlowStartExitObserved {
                                cwnd_segments: first.cwnd,
                                reason: ExitReason::Loss,
                            },
                        });
                    } else {
                        events.push(Event {
                            t_s,
                            kind: EventKind::Note {
                                message: format!(
                                    "slow start exit (observed) without retransmissions (HyStart): cwnd {} seg, ssthresh {} seg",
                                    first.cwnd,
                                    first.ssthresh.unwrap_or(0)
                                ),
                            },
                        });
                    }
                }
                (sample, events, Vec::new())
            }
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
