//! [`simulate`]: set up, drive the [`Engine`] to the end, and assemble the report.

use std::time::{Duration, Instant};

use hare_cc::CcEvent;
use hare_link::Link;
use hare_report::{Event, EventKind, Run, Summary};

use crate::config::{SimConfig, Workload};
use crate::controller::{resolve, Resolved};
use crate::engine::Engine;
use crate::error::SimError;
use crate::output::{Progress, SimOutput, TracePoint};
use crate::probe::Probe;
use crate::report::{self, Sample, Track};
use crate::setup;
use crate::tap::RawTrace;
use crate::virtual_clock::{Clock, Stop};
use crate::window::{window_ns, Threads, WindowSamples};
use crate::wire::Wire;
use hare_cc_records::cc_event_record;

/// Runs one simulated transfer, on both cores where the path allows
/// ([`Threads::Auto`]; the same run as on one thread).
///
/// `progress` is called once per report interval of virtual time and once at the end (for
/// progress bars); pass `&mut |_| {}` when not needed.
///
/// Errors: a bad configuration (controller spec, link, setting) before anything runs;
/// [`SimError::ConnectionLost`] or [`SimError::Stalled`] with the report up to that moment.
pub fn simulate(
    cfg: &SimConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<SimOutput, SimError> {
    simulate_with(cfg, Threads::Auto, progress)
}

/// [`simulate`] with a choice of engine: [`Threads::One`] is the one-thread event loop,
/// [`Threads::Auto`] runs the two endpoints on two threads between exchanges of datagrams.
/// Both give the same run. A run whose connection is lost (or whose time stops moving)
/// while two threads are in use is redone from the start on one thread, which needs the
/// exact instant on both sides; `progress` then starts over.
pub fn simulate_with(
    cfg: &SimConfig,
    threads: Threads,
    progress: &mut dyn FnMut(Progress),
) -> Result<SimOutput, SimError> {
    match attempt(cfg, threads, progress) {
        Err(Attempt::OneThread) => match attempt(cfg, Threads::One, progress) {
            Err(Attempt::Failed(e)) => Err(e),
            Err(Attempt::OneThread) => Err(SimError::Setup(
                "the one-thread engine asked for itself".to_string(),
            )),
            Ok(out) => Ok(out),
        },
        Err(Attempt::Failed(e)) => Err(e),
        Ok(out) => Ok(out),
    }
}

/// Why an attempt gave no output.
pub(crate) enum Attempt {
    /// The run failed (with its partial output where there is one).
    Failed(SimError),
    /// The two-thread engine met something only the one-thread engine can end exactly.
    OneThread,
}

impl From<SimError> for Attempt {
    fn from(e: SimError) -> Self {
        Attempt::Failed(e)
    }
}

fn attempt(
    cfg: &SimConfig,
    threads: Threads,
    progress: &mut dyn FnMut(Progress),
) -> Result<SimOutput, Attempt> {
    let link = Link::new(&cfg.forward).map_err(|e| SimError::Link {
        direction: "forward",
        message: e.to_string(),
    })?;
    let forward = Wire::new(link, cfg.ip_overhead);
    // The one real Instant of the run: virtual time is an offset from it.
    let base = Instant::now();
    let mut runner = Runner::new(cfg, threads, forward, 0, base)?;
    runner.run(progress)
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What a runner handles next, and the deadlines it was checked against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Due {
    /// The earliest of `event` and `tick`.
    pub next: u64,
    event: Option<u64>,
    tick: Option<u64>,
    stall_at: u64,
}

impl<'a> Runner<'a> {
    /// Builds the connection of `cfg` over `forward` (the data direction's wire), starting
    /// at virtual `start_ns` of a clock whose zero is `base`.
    pub(crate) fn new(
        cfg: &'a SimConfig,
        threads: Threads,
        mut forward: Wire,
        start_ns: u64,
        base: Instant,
    ) -> Result<Runner<'a>, SimError> {
        let wall_start = Instant::now();
        setup::validate(cfg)?;
        let resolved = resolve(&cfg.controller, cfg.trace, cfg.paced)?;
        if let Some(rate) = cfg.sender_line_rate {
            forward = forward.with_line_rate(rate);
        }
        let reverse_link = Link::new(&cfg.reverse).map_err(|e| SimError::Link {
            direction: "reverse",
            message: e.to_string(),
        })?;
        let reverse = Wire::new(reverse_link, cfg.ip_overhead);
        let mut client_t = setup::transport_config(cfg, resolved.client_factory.clone(), true)?;
        let mut server_t = setup::transport_config(cfg, resolved.server_factory.clone(), false)?;
        if let Some(dir) = &cfg.qlog_dir {
            setup::attach_qlog(cfg, dir, base, &mut client_t, &mut server_t)?;
        }
        let (client_cfg, server_cfg) = setup::tls_configs(cfg, client_t, server_t)?;
        let engine = Engine::new(
            cfg,
            start_ns,
            Clock::new(base),
            setup::endpoint_config(cfg, "client-endpoint")?,
            setup::endpoint_config(cfg, "server-endpoint")?,
            client_cfg,
            server_cfg,
            forward,
            reverse,
            resolved.tap.clone(),
        )?;
        let cap = cfg.limits.max_virtual_time.unwrap_or(match cfg.workload {
            Workload::Duration(d) => d + Duration::from_secs(300),
            Workload::Bytes(_) => Duration::from_secs(3600),
        });
        Ok(Runner {
            cfg,
            engine,
            probe: Probe {
                tap: resolved.tap.clone(),
                observer: resolved.observer.clone(),
                unpaced: resolved.unpaced,
            },
            window_ns: window_ns(cfg, threads),
            windows: 0,
            resolved,
            coarse: Track::new(nanos(cfg.interval)),
            fine: cfg.fine_interval.map(|f| Track::new(nanos(f))),
            cc_events: Vec::new(),
            wall_start,
            last_sample: Sample::default(),
            stall_ns: nanos(cfg.limits.stall_after),
            cap_ns: start_ns.saturating_add(nanos(cap)),
        })
    }
}

/// One connection's run: its engine and its report.
pub(crate) struct Runner<'a> {
    cfg: &'a SimConfig,
    engine: Engine,
    /// Reads the sender's state for samples.
    probe: Probe,
    /// Length of a two-thread window (`None`: one thread throughout).
    window_ns: Option<u64>,
    /// Windows run on two threads.
    windows: u64,
    resolved: Resolved,
    coarse: Track,
    fine: Option<Track>,
    /// hare-cc events drained so far (controller-relative times).
    cc_events: Vec<CcEvent>,
    wall_start: Instant,
    last_sample: Sample,
    /// Virtual time without progress after which the run is stalled, ns.
    stall_ns: u64,
    /// Virtual time (absolute ns) at which the run is cut.
    cap_ns: u64,
}

/// How a run ended.
pub(crate) enum End {
    Done,
    Lost {
        side: crate::error::Endpoint,
        reason: String,
    },
    Stalled {
        what: String,
    },
}

impl Runner<'_> {
    fn run(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<SimOutput, Attempt> {
        let end = loop {
            let due = match self.poll() {
                Ok(due) => due,
                Err(end) => break end,
            };
            if let Some(end) = self.step(&due, progress)? {
                break end;
            }
        };
        self.finish(end, progress).map_err(Attempt::Failed)
    }

    /// Runs the application logic of what happened at the engine's `now`, then says what is
    /// due next, or how the run ended.
    pub(crate) fn poll(&mut self) -> Result<Due, End> {
        if let Err(Stop::Lost { side, reason }) = self.engine.settle() {
            return Err(End::Lost { side, reason });
        }
        if self.engine.origin().is_some() && self.coarse.next_tick.is_none() {
            let s = self.sample();
            self.coarse.start(&s);
            if let Some(f) = self.fine.as_mut() {
                f.start(&s);
            }
        }
        if self.engine.done_at().is_some() {
            return Err(End::Done);
        }
        let event = self.engine.next_event();
        let tick = [
            self.coarse.next_tick,
            self.fine.as_ref().and_then(|f| f.next_tick),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next) = [event, tick].into_iter().flatten().min() else {
            return Err(End::Stalled {
                what: "no event pending (no timer, no datagram in flight)".into(),
            });
        };
        let stall_at = self.engine.last_progress().saturating_add(self.stall_ns);
        if next > stall_at {
            self.engine.now = self.engine.now.max(stall_at);
            return Err(End::Stalled {
                what: format!(
                    "no payload delivered for {:?} of virtual time",
                    self.cfg.limits.stall_after
                ),
            });
        }
        if next > self.cap_ns {
            self.engine.now = self.engine.now.max(self.cap_ns);
            return Err(End::Stalled {
                what: format!(
                    "virtual time limit of {:?} reached",
                    Duration::from_nanos(self.cap_ns)
                ),
            });
        }
        Ok(Due {
            next,
            event,
            tick,
            stall_at,
        })
    }

    /// Handles what `due` (from [`Runner::poll`]) says is next: a two-thread window, or the
    /// report boundaries and events of one instant.
    pub(crate) fn step(
        &mut self,
        due: &Due,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Option<End>, Attempt> {
        let Due {
            next,
            event,
            tick,
            stall_at,
        } = *due;
        if let Some(window) = self.window_ns.filter(|_| self.windows_allowed()) {
            // Everything up to both deadlines, and not one lookahead past `next`.
            let end = next
                .saturating_add(window)
                .min(stall_at.saturating_add(1))
                .min(self.cap_ns.saturating_add(1));
            self.window(end, progress)?;
            return Ok(None);
        }
        if tick == Some(next) {
            self.engine.now = self.engine.now.max(next);
            self.tick(next, progress);
            if event != Some(next) {
                return Ok(None);
            }
        }
        if let Some(t) = event {
            if let Err(what) = self.engine.advance(t) {
                return Ok(Some(End::Stalled { what }));
            }
        }
        Ok(None)
    }

    /// Two threads may take the next window: the connection is up, the report has started,
    /// and the sender has not finished its stream (so the receiver cannot finish within
    /// the window, see `window.rs`).
    fn windows_allowed(&self) -> bool {
        self.coarse.next_tick.is_some()
            && !self.engine.client.finished()
            && self.engine.done_at().is_none()
    }

    /// Both sides through every event before `end` on two threads, then the report
    /// boundaries of that stretch.
    fn window(&mut self, end: u64, progress: &mut dyn FnMut(Progress)) -> Result<(), Attempt> {
        let mut ticks = Vec::new();
        for track in std::iter::once(&self.coarse).chain(self.fine.as_ref()) {
            let mut t = track.next_tick;
            while let Some(at) = t.filter(|&at| at < end) {
                ticks.push(at);
                t = Some(at + track.interval_ns());
            }
        }
        ticks.sort_unstable();
        ticks.dedup();
        let WindowSamples { sender, bytes } = self
            .engine
            .run_window(end, &ticks, &self.probe)
            .map_err(|_| Attempt::OneThread)?;
        self.windows += 1;
        if self.engine.done_at().is_some() {
            // Cannot happen (see `windows_allowed`); the one-thread engine ends it exactly.
            return Err(Attempt::OneThread);
        }
        for ((t, mut s), bytes) in ticks.into_iter().zip(sender).zip(bytes) {
            s.bytes = bytes;
            self.last_sample = s;
            self.tick_with(t, s, progress);
        }
        Ok(())
    }

    /// Report boundaries due at `t`.
    fn tick(&mut self, t: u64, progress: &mut dyn FnMut(Progress)) {
        let s = self.sample();
        self.tick_with(t, s, progress);
    }

    /// Report boundaries due at `t`, with the sample `s` taken then.
    fn tick_with(&mut self, t: u64, s: Sample, progress: &mut dyn FnMut(Progress)) {
        let coarse_due = self.coarse.next_tick == Some(t);
        if coarse_due {
            self.coarse.close(&s);
            self.drain_cc_events();
        }
        if let Some(f) = self.fine.as_mut() {
            if f.next_tick == Some(t) {
                f.close(&s);
            }
        }
        if coarse_due {
            let mbps = self.coarse.intervals.last().map_or(0.0, |i| i.mbps());
            progress(self.progress(&s, mbps, false));
        }
    }

    fn progress(&self, s: &Sample, interval_mbps: f64, done: bool) -> Progress {
        let origin = self.engine.origin().unwrap_or(0);
        let sim_s = (s.now_ns.saturating_sub(origin)) as f64 / 1e9;
        let fraction = if done {
            1.0
        } else {
            match self.cfg.workload {
                Workload::Bytes(n) => s.bytes as f64 / n as f64,
                Workload::Duration(d) => (sim_s / d.as_secs_f64()).min(1.0),
            }
        };
        Progress {
            sim_s,
            wall_s: self.wall_start.elapsed().as_secs_f64(),
            fraction,
            bytes: s.bytes,
            interval_mbps,
            cwnd_segments: s.cwnd_segments(),
            lost_packets: s.lost,
            done,
        }
    }

    /// The connection's state now.
    fn sample(&mut self) -> Sample {
        let Some(conn) = self.engine.client_conn() else {
            return self.last_sample;
        };
        let mut s = self
            .probe
            .sender(conn, self.engine.client.fc_limited, self.engine.now);
        s.bytes = self.engine.bytes_read();
        self.last_sample = s;
        s
    }

    fn drain_cc_events(&mut self) {
        if let Some(obs) = &self.resolved.observer {
            self.cc_events
                .extend(obs.drain_all().into_iter().map(|(_, e)| e));
        }
    }

    /// Closes the run and assembles the output (or the error carrying it).
    pub(crate) fn finish(
        &mut self,
        end: End,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<SimOutput, SimError> {
        let end_ns = match end {
            End::Done => self.engine.done_at().unwrap_or(self.engine.now),
            _ => self.engine.now,
        };
        let closing = self.close(end_ns);
        let origin_ns = self.engine.origin().unwrap_or(end_ns);
        let end_s = report::since(end_ns, origin_ns);
        let mut tap = self.take_tap();
        let error = match &end {
            End::Done => None,
            End::Lost { side, reason } => Some(format!("{side} connection lost: {reason}")),
            End::Stalled { what } => Some(format!("stalled: {what}")),
        };
        let events = self.events(&tap, origin_ns, end_s, error.as_deref());
        let summary = summary(&closing, &tap, &events, end_s, error);
        let (run, fine) = self.runs(events, summary);
        let trace = self.trace_points(std::mem::take(&mut tap.raw_trace), tap.mss, origin_ns);
        let last_mbps = run.intervals.last().map_or(0.0, |i| i.mbps());
        progress(self.progress(&closing.last, last_mbps, true));
        let output = SimOutput {
            run,
            fine,
            trace,
            link_forward: self.engine.client.out.stats(),
            link_reverse: self.engine.server.out.stats(),
            sim_seconds: end_ns as f64 / 1e9,
            wall_seconds: self.wall_start.elapsed().as_secs_f64(),
            origin_s: origin_ns as f64 / 1e9,
            datagrams: self.engine.client.out.offered + self.engine.server.out.offered,
            windows: self.windows,
            max_receive_window: self.engine.server.max_receive_window,
        };
        match end {
            End::Done => Ok(output),
            End::Lost { side, reason } => Err(SimError::ConnectionLost {
                side,
                reason,
                t_s: end_s,
                partial: Box::new(output),
            }),
            End::Stalled { what } => Err(SimError::Stalled {
                t_s: end_s,
                what,
                partial: Box::new(output),
            }),
        }
    }

    /// Takes the last sample at `end_ns`, closes the intervals, reads the sender's final
    /// statistics, then tears the connections down and drains what the controllers still
    /// held (dropping a connection makes a hare-cc controller publish it).
    fn close(&mut self, end_ns: u64) -> Closing {
        self.engine.now = self.engine.now.max(end_ns);
        let last = self.sample();
        self.coarse.close(&last);
        if let Some(f) = self.fine.as_mut() {
            f.close(&last);
        }
        let stats = self.engine.client_conn().map(|c| c.stats());
        let srtt_ms = self.engine.client_conn().map(|c| report::ms(c.rtt()));
        self.engine.teardown();
        self.drain_cc_events();
        Closing {
            last,
            stats,
            srtt_ms,
        }
    }

    /// What the controller tap gathered over the run, with times as engine nanoseconds.
    fn take_tap(&self) -> TapTotals {
        let mut t = self.resolved.tap.lock();
        TapTotals {
            built_ns: t.built_at.map_or(0, |b| self.engine.clock.ns(b)),
            mss: t.mss.max(1),
            max_cwnd: t.max_cwnd,
            first_congestion: t
                .first_congestion
                .map(|fc| (self.engine.clock.ns(fc.at), fc.cwnd_before, fc.persistent)),
            raw_trace: std::mem::take(&mut t.trace),
        }
    }

    /// The run's events in time order: the controller's decisions, the inferred exit of a
    /// controller without events, the path's changes, and the error that ended the run.
    fn events(
        &mut self,
        tap: &TapTotals,
        origin_ns: u64,
        end_s: f64,
        error: Option<&str>,
    ) -> Vec<Event> {
        let mut events: Vec<Event> = self
            .cc_events
            .drain(..)
            .filter_map(cc_event_record)
            .map(|ev| Event {
                t_s: report::cc_event_time(&ev, tap.built_ns, origin_ns),
                kind: EventKind::Cc { event: ev },
            })
            .collect();
        if self.resolved.observer.is_none() {
            if let Some((at_ns, cwnd_before, persistent)) = tap.first_congestion {
                events.push(report::inferred_exit(
                    report::since(at_ns, origin_ns),
                    report::segments(cwnd_before, tap.mss),
                    persistent,
                ));
            }
        }
        events.extend(report::path_events(self.cfg, origin_ns, end_s));
        if let Some(message) = error {
            events.push(Event {
                t_s: end_s,
                kind: EventKind::Error {
                    message: message.to_string(),
                },
            });
        }
        events.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        events
    }

    /// The coarse run and, when asked for, the fine one: the same events and summary.
    fn runs(&mut self, events: Vec<Event>, summary: Summary) -> (Run, Option<Run>) {
        let profile = self.resolved.spec.profile_name().map(str::to_string);
        let coarse_header = report::header(
            self.cfg,
            profile.clone(),
            report::since(nanos(self.cfg.interval), 0),
        );
        let fine = match (self.fine.as_mut(), self.cfg.fine_interval) {
            (Some(track), Some(iv)) => Some(report::run(
                report::header(self.cfg, profile, report::since(nanos(iv), 0)),
                std::mem::take(&mut track.intervals),
                events.clone(),
                summary.clone(),
            )),
            _ => None,
        };
        let run = report::run(
            coarse_header,
            std::mem::take(&mut self.coarse.intervals),
            events,
            summary,
        );
        (run, fine)
    }

    /// The per-ACK trace in report time.
    fn trace_points(&self, raw: Vec<RawTrace>, mss: u64, origin_ns: u64) -> Vec<TracePoint> {
        raw.into_iter()
            .map(|p| TracePoint {
                t_s: report::since(self.engine.clock.ns(p.at), origin_ns),
                cwnd_bytes: p.cwnd,
                cwnd_segments: report::segments(p.cwnd, mss),
                ssthresh_bytes: p.ssthresh,
                in_flight_bytes: p.in_flight,
                acked_packets: p.acked,
                rtt_sample_us: p.rtt_us,
                queue_bytes: p.queue_bytes,
            })
            .collect()
    }
}

/// The connection's state when the run closed.
struct Closing {
    last: Sample,
    stats: Option<quinn_proto::ConnectionStats>,
    srtt_ms: Option<f64>,
}

/// What the controller tap gathered: build time and first congestion as engine ns.
struct TapTotals {
    built_ns: u64,
    mss: u64,
    max_cwnd: u64,
    /// (engine ns, cwnd before in bytes, persistent congestion) of the first congestion event.
    first_congestion: Option<(u64, u64, bool)>,
    raw_trace: Vec<RawTrace>,
}

/// The run's summary; an error that ended the run marks it invalid.
fn summary(
    closing: &Closing,
    tap: &TapTotals,
    events: &[Event],
    end_s: f64,
    error: Option<String>,
) -> Summary {
    let stats = closing.stats.as_ref();
    let last = &closing.last;
    Summary {
        bytes: last.bytes,
        seconds: end_s.max(0.0),
        sent_packets: stats.map(|s| s.path.sent_packets),
        lost_packets: stats.map_or(0, |s| s.path.lost_packets),
        srtt_ms: closing.srtt_ms,
        min_rtt_ms: stats.map(|s| report::ms(s.path.min_rtt)),
        cpu_sender_pct: None,
        cpu_receiver_pct: None,
        slow_start_exit: report::first_exit(events),
        max_cwnd_segments: Some(report::segments(tap.max_cwnd.max(last.cwnd_bytes), tap.mss)),
        valid: error.is_none(),
        completed: error.is_none(),
        invalid_reasons: error.into_iter().collect(),
    }
}
