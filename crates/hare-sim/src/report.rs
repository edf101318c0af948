//! Turning samples of the simulated connection into hare-report records.

use hare_link::{LinkConfig, LossModel};
use hare_report::{
    CcEvent, Event, EventKind, ExitReason, Interval, PathInfo, Phase, Role, Run, RunHeader,
    SlowStartExit, Summary, Tool, Transport, SCHEMA,
};

use crate::config::SimConfig;

/// Cumulative counters and instantaneous state of the connection at one instant.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sample {
    /// Virtual time, ns since the connection start.
    pub now_ns: u64,
    /// Payload bytes the receiving application has read.
    pub bytes: u64,
    /// Packets the sender declared lost.
    pub lost: u64,
    /// Packets the sender sent.
    pub sent: u64,
    /// ACK frames that found the sender window-limited (see `Engine::fc_limited`).
    pub fc_limited: u64,
    /// Sender cwnd, bytes.
    pub cwnd_bytes: u64,
    /// Segment size for conversions.
    pub mss: u64,
    /// Sender ssthresh, bytes (`None` while infinite).
    pub ssthresh_bytes: Option<u64>,
    /// Sender bytes in flight.
    pub in_flight: u64,
    /// Smoothed RTT, ms.
    pub srtt_ms: f64,
    /// Minimum RTT, ms.
    pub min_rtt_ms: f64,
    /// Controller phase.
    pub phase: Option<Phase>,
}

impl Sample {
    /// cwnd in segments.
    pub fn cwnd_segments(&self) -> u32 {
        segments(self.cwnd_bytes, self.mss)
    }
}

/// Milliseconds of a duration as one correctly rounded division of its nanoseconds, so the
/// value prints as its exact decimal and parses back to the same `f64` (serde_json's default
/// float parser is exact only for such short decimals, not for values carrying the error of
/// `as_secs_f64() * 1e3`).
pub(crate) fn ms(d: std::time::Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

/// Seconds from `origin_ns` to `ns` (negative before it), one division of an exact integer
/// (see [`ms`]).
pub(crate) fn since(ns: u64, origin_ns: u64) -> f64 {
    (i128::from(ns) - i128::from(origin_ns)) as f64 / 1e9
}

/// Bytes to whole segments (floor), saturating.
pub(crate) fn segments(bytes: u64, mss: u64) -> u32 {
    u32::try_from(bytes / mss.max(1)).unwrap_or(u32::MAX)
}

/// One report track: intervals of a fixed length from the run origin.
pub(crate) struct Track {
    interval_ns: u64,
    /// Virtual ns of the next boundary (`None` until the origin is known).
    pub next_tick: Option<u64>,
    start_ns: u64,
    origin_ns: u64,
    last: Sample,
    /// Closed intervals.
    pub intervals: Vec<Interval>,
}

impl Track {
    /// A track of `interval_ns`.
    pub fn new(interval_ns: u64) -> Self {
        Track {
            interval_ns,
            next_tick: None,
            start_ns: 0,
            origin_ns: 0,
            last: Sample::default(),
            intervals: Vec::new(),
        }
    }

    /// Length of an interval, ns.
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The run origin is known: the first interval starts with `at`.
    pub fn start(&mut self, at: &Sample) {
        self.origin_ns = at.now_ns;
        self.start_ns = at.now_ns;
        self.last = *at;
        self.next_tick = Some(at.now_ns + self.interval_ns);
    }

    /// Closes the current interval at `now.now_ns` (a boundary, or the run's end).
    pub fn close(&mut self, now: &Sample) {
        if now.now_ns <= self.start_ns || self.next_tick.is_none() {
            return;
        }
        let secs = |ns: u64| since(ns, self.origin_ns);
        self.intervals.push(Interval {
            start_s: secs(self.start_ns),
            end_s: secs(now.now_ns),
            bytes: now.bytes - self.last.bytes,
            lost_packets: now.lost - self.last.lost,
            sent_packets: Some(now.sent - self.last.sent),
            cwnd_bytes: Some(now.cwnd_bytes),
            cwnd_segments: Some(now.cwnd_segments()),
            ssthresh_bytes: now.ssthresh_bytes,
            ssthresh_segments: now.ssthresh_bytes.map(|s| segments(s, now.mss)),
            in_flight_bytes: Some(now.in_flight),
            srtt_ms: Some(now.srtt_ms),
            min_rtt_ms: Some(now.min_rtt_ms),
            phase: now.phase,
            flow_control_limited: now.fc_limited > self.last.fc_limited,
            cwnd_limited: None,
        });
        self.start_ns = now.now_ns;
        self.last = *now;
        self.next_tick = Some(now.now_ns + self.interval_ns);
    }
}

/// The header of a simulated run.
pub(crate) fn header(cfg: &SimConfig, profile: Option<String>, interval_s: f64) -> RunHeader {
    RunHeader {
        schema: SCHEMA.to_string(),
        tool: Tool::HareSim,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        // Interval bytes are what the receiving application read, as nuttcp reports them;
        // the congestion fields are the sender's.
        role: Role::Receiver,
        transport: Transport::Quic,
        run_id: cfg.run_id.clone(),
        scenario: cfg.scenario.clone(),
        controller: cfg.controller.clone(),
        profile,
        mtu: u32::from(cfg.mtu),
        windows: hare_report::Windows {
            stream_receive: Some(cfg.windows.stream_receive),
            receive: Some(cfg.windows.receive_limit()),
            send: Some(cfg.windows.send),
        },
        path: Some(path_info(cfg)),
        seed: Some(cfg.seed),
        started_at: None,
        interval_s,
    }
}

fn path_info(cfg: &SimConfig) -> PathInfo {
    let f = &cfg.forward;
    let rtt_ns = f.delay.0.saturating_add(cfg.reverse.delay.0);
    PathInfo {
        rate_bps: Some(f.rate.0),
        rtt_ms: Some(rtt_ns as f64 / 1e6),
        queue_bytes: f.queue_bytes.map(|q| q.0),
        queue_packets: f.queue_packets,
        description: Some(describe(cfg)),
    }
}

/// A one-line human description of both directions.
fn describe(cfg: &SimConfig) -> String {
    fn one(name: &str, l: &LinkConfig) -> String {
        let mut s = format!("{name} {} delay {}", l.rate, l.delay);
        if let Some(q) = l.queue_bytes {
            s.push_str(&format!(" queue {q}"));
        }
        if let Some(p) = l.queue_packets {
            s.push_str(&format!(" queue {p} pkts"));
        }
        if let Some(j) = &l.jitter {
            s.push_str(&format!(
                " jitter {:?} {}{}",
                j.distribution,
                j.amount,
                if j.reorder { " reorder" } else { "" }
            ));
        }
        for m in &l.loss {
            s.push_str(&format!(" loss {}", loss_text(m)));
        }
        s
    }
    format!(
        "hare-sim: {}; {}; IP overhead {} B/datagram",
        one("forward", &cfg.forward),
        one("reverse", &cfg.reverse),
        cfg.ip_overhead
    )
}

fn loss_text(m: &LossModel) -> String {
    match m {
        LossModel::Bernoulli { p } => format!("bernoulli p={p}"),
        LossModel::GilbertElliott {
            p_good_to_bad,
            p_bad_to_good,
            loss_good,
            loss_bad,
        } => format!(
            "gilbert-elliott g2b={p_good_to_bad} b2g={p_bad_to_good} good={loss_good} bad={loss_bad}"
        ),
        LossModel::Episode {
            from,
            to,
            one_in,
            random,
        } => format!(
            "1 in {one_in} from {from} to {to}{}",
            if *random { " (random)" } else { "" }
        ),
        LossModel::Blackout { from, to } => format!("blackout from {from} to {to}"),
    }
}

/// Path events for scheduled loss episodes and blackouts, at report times (`origin_ns` is the
/// run origin on the link clock), within `[.., end_s]`.
pub(crate) fn path_events(cfg: &SimConfig, origin_ns: u64, end_s: f64) -> Vec<Event> {
    let mut out = Vec::new();
    for (dir, l) in [("forward", &cfg.forward), ("reverse", &cfg.reverse)] {
        for m in &l.loss {
            let (from, to) = match m {
                LossModel::Episode { from, to, .. } | LossModel::Blackout { from, to } => {
                    (from.0, to.0)
                }
                _ => continue,
            };
            let t = |ns: u64| since(ns, origin_ns);
            let what = loss_text(m);
            if t(from) <= end_s {
                out.push(Event {
                    t_s: t(from),
                    kind: EventKind::Path {
                        what: format!("{dir}: {what} begins"),
                    },
                });
            }
            if t(to) <= end_s {
                out.push(Event {
                    t_s: t(to),
                    kind: EventKind::Path {
                        what: format!("{dir}: {what} ends"),
                    },
                });
            }
        }
    }
    out
}

/// Report time of a hare-cc event: its controller-relative microseconds plus the
/// controller's build time, minus the origin.
pub(crate) fn cc_event_time(ev: &CcEvent, built_ns: u64, origin_ns: u64) -> f64 {
    let abs_ns =
        u64::try_from(u128::from(built_ns) + u128::from(ev.t_us()) * 1000).unwrap_or(u64::MAX);
    since(abs_ns, origin_ns)
}

/// The first slow-start exit among report events.
pub(crate) fn first_exit(events: &[Event]) -> Option<SlowStartExit> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Cc {
            event: CcEvent::SlowStartExit { cwnd, reason, .. },
        } => Some(SlowStartExit {
            t_s: e.t_s,
            cwnd_segments: *cwnd,
            reason: *reason,
        }),
        EventKind::SlowStartExitObserved {
            cwnd_segments,
            reason,
        } => Some(SlowStartExit {
            t_s: e.t_s,
            cwnd_segments: *cwnd_segments,
            reason: *reason,
        }),
        _ => None,
    })
}

/// The inferred exit of a controller without events: its first congestion event.
pub(crate) fn inferred_exit(t_s: f64, cwnd_segments: u32, persistent: bool) -> Event {
    Event {
        t_s,
        kind: EventKind::SlowStartExitObserved {
            cwnd_segments,
            reason: if persistent {
                ExitReason::Rto
            } else {
                ExitReason::Loss
            },
        },
    }
}

/// Assembles a run from its parts.
pub(crate) fn run(
    header: RunHeader,
    intervals: Vec<Interval>,
    events: Vec<Event>,
    summary: Summary,
) -> Run {
    Run {
        header,
        intervals,
        events,
        summary: Some(summary),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(now_ns: u64, bytes: u64, lost: u64) -> Sample {
        Sample {
            now_ns,
            bytes,
            lost,
            sent: bytes / 1000,
            cwnd_bytes: 14520,
            mss: 1452,
            ssthresh_bytes: Some(29040),
            ..Sample::default()
        }
    }

    #[test]
    fn track_closes_intervals_from_the_origin() {
        let mut t = Track::new(1_000_000_000);
        t.start(&sample(80_000_000, 0, 0));
        assert_eq!(t.next_tick, Some(1_080_000_000));
        t.close(&sample(1_080_000_000, 125_000_000, 3));
        t.close(&sample(2_080_000_000, 250_000_000, 3));
        // A partial last interval of 0.5 s.
        t.close(&sample(2_580_000_000, 300_000_000, 4));
        assert_eq!(t.intervals.len(), 3);
        let i0 = &t.intervals[0];
        assert_eq!(
            (i0.start_s, i0.end_s, i0.bytes, i0.lost_packets),
            (0.0, 1.0, 125_000_000, 3)
        );
        assert_eq!(i0.mbps(), 1000.0);
        assert_eq!(i0.cwnd_segments, Some(10));
        assert_eq!(i0.ssthresh_segments, Some(20));
        let i2 = &t.intervals[2];
        assert_eq!(
            (i2.start_s, i2.end_s, i2.bytes, i2.lost_packets),
            (2.0, 2.5, 50_000_000, 1)
        );
        // Closing again at the same instant adds nothing.
        t.close(&sample(2_580_000_000, 300_000_000, 4));
        assert_eq!(t.intervals.len(), 3);
    }

    #[test]
    fn cc_event_times_are_shifted_to_the_origin() {
        let ev = CcEvent::SlowStartExit {
            t_us: 1_500_000,
            cwnd: 100,
            ssthresh: 100,
            reason: ExitReason::SsthreshReached,
        };
        // Built at 0, origin at 80 ms: 1.5 s on the controller clock is 1.42 s of the report.
        let t = cc_event_time(&ev, 0, 80_000_000);
        assert!((t - 1.42).abs() < 1e-12);
        let events = vec![Event {
            t_s: t,
            kind: EventKind::Cc { event: ev },
        }];
        let exit = first_exit(&events).map(|e| (e.cwnd_segments, e.reason));
        assert_eq!(exit, Some((100, ExitReason::SsthreshReached)));
    }
}
