//! The reverse run's loop and its end: ticks, streams ending, the remote sender's words, a
//! stop, the connection closing; then `done`, the sender's report and the summary.

use super::super::finish::close_connection;
use super::summary::{header, summary_of};
use super::Ended;
use super::*;

/// Everything the loop reads and writes.
struct Loop<'a> {
    t: &'a Take<'a>,
    stop: Stop,
    log: RunLog,
    ctl_w: ControlWrite,
    heard: mpsc::Receiver<Heard>,
    counters: Vec<Arc<AtomicU64>>,
    arrivals: ArrivalIntervals,
    t0: Instant,
    /// Kernel TCP, timed job: from when an aborted data connection is a normal end.
    time_up: Option<Instant>,
}

/// The connection's end, or never (kernel TCP has no connection to watch: its control and
/// data connections report their own ends).
async fn closed(conn: Option<&quinn::Connection>) -> quinn::ConnectionError {
    match conn {
        Some(c) => c.closed().await,
        None => std::future::pending().await,
    }
}

impl Loop<'_> {
    fn counts(&self) -> Vec<u64> {
        self.counters
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }

    /// The connection's own close reason when it has one (an idle timeout, the peer's
    /// close code), else `fallback`.
    fn why_closed(&self, fallback: String) -> String {
        self.t
            .conn()
            .and_then(quinn::Connection::close_reason)
            .map(|r| describe_close(&r, &self.t.opts.liveness))
            .unwrap_or(fallback)
    }

    /// A control write's error: over kernel TCP, one that says the receiver is gone is said
    /// so ([`super::gone`]).
    fn lost(&self, e: TransferError) -> TransferError {
        match self.t.conn() {
            Some(_) => e,
            None => super::gone::mapped(e),
        }
    }

    async fn tick(&mut self, silence: &mut Silence) -> Result<()> {
        settle().await;
        let counts = self.counts();
        let bytes = counts.iter().sum();
        let stats = self.t.conn().map(quinn::Connection::stats);
        let srtt = stats.as_ref().map(|s| s.path.rtt.as_secs_f64() * 1e3);
        let iv = self.arrivals.close(bytes, &counts, srtt);
        let said = send(&mut self.ctl_w, &iv.message()).await;
        said.map_err(|e| self.lost(e))?;
        self.log.line(iv.line());
        let heard = stats.map(|s| s.udp_rx.datagrams);
        if let Some(message) = heard.and_then(|h| silence.check(h, Instant::now())) {
            self.note(message);
        }
        Ok(())
    }

    fn note(&mut self, message: String) {
        self.log.event(Event {
            t_s: self.t0.elapsed().as_secs_f64(),
            kind: EventKind::Note { message },
        });
    }

    /// Until every stream ended, or the run failed.
    async fn run(&mut self, tcp: Vec<Arc<TcpStream>>, overrun: Instant) -> Ended {
        let streams = self.counters.len();
        let (fin_tx, mut fin_rx) = mpsc::channel(streams.max(1));
        let limit = match self.t.job {
            Job::Bulk { bytes, .. } => *bytes,
            Job::Files { .. } => None,
        };
        let all = Arc::new(AtomicU64::new(0));
        match self.t.conn() {
            Some(c) => spawn_streams(c.clone(), self.counters.clone(), all, limit, fin_tx),
            None => {
                let time_up = self.time_up;
                spawn_tcp_streams(tcp, self.counters.clone(), all, (limit, time_up), fin_tx)
            }
        }
        let interval = self.t.opts.interval;
        let first = tokio::time::Instant::from_std(self.t0 + interval);
        let mut ticker = tokio::time::interval_at(first, interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut silence = Silence::new(self.t.opts.liveness, self.t0);
        let conn = self.t.conn().cloned();
        let mut end = Ended {
            failure: None,
            interrupted: false,
            report: None,
        };
        let mut finished = 0;
        while finished < streams && end.failure.is_none() {
            tokio::select! {
                _ = ticker.tick() => {
                    if let Err(e) = self.tick(&mut silence).await {
                        end.failure = Some(e);
                    }
                }
                f = fin_rx.recv() => match f {
                    Some(Ok(())) => finished += 1,
                    // A stream breaks when the connection does: its reason says more.
                    Some(Err(e)) => end.failure = Some(match self.t.conn().and_then(quinn::Connection::close_reason) {
                        Some(r) => TransferError::Connection(describe_close(
                            &r,
                            &self.t.opts.liveness,
                        )),
                        None => e,
                    }),
                    None => {
                        let why = self.why_closed("the connection closed".into());
                        end.failure = Some(TransferError::Connection(why));
                    }
                },
                h = self.heard.recv() => match h {
                    Some(Heard::Said(FromRemoteSender::Report { summary, written })) => {
                        end.report = Some((summary, written));
                    }
                    Some(Heard::Said(FromRemoteSender::Start { .. })) => {
                        end.failure = Some(TransferError::Protocol("a second start".into()));
                    }
                    Some(Heard::Closed(why)) => {
                        end.failure = Some(TransferError::Connection(self.why_closed(why)));
                    }
                    None => {}
                },
                e = closed(conn.as_ref()) => {
                    end.failure = Some(TransferError::Connection(describe_close(
                        &e,
                        &self.t.opts.liveness,
                    )));
                }
                _ = self.stop.stopped(), if !end.interrupted => {
                    end.interrupted = true;
                    let why = self.stop.reason().unwrap_or(DEFAULT_STOP_REASON);
                    self.note(format!("interrupted ({why}); asking the receiver to stop sending"));
                    let ask = ToSender::StopSending { reason: why.to_owned() };
                    if let Err(e) = send(&mut self.ctl_w, &ask).await {
                        end.failure = Some(self.lost(e));
                    }
                }
                _ = tokio::time::sleep_until(overrun.into()) => {
                    end.failure = Some(TransferError::Timeout(
                        "the receiver kept sending past the job's duration".into(),
                    ));
                }
            }
        }
        end
    }

    /// After the streams: `done`, then the sender's report (bounded).
    async fn conclude(&mut self, end: &mut Ended, done: ToSender) {
        if end.failure.is_some() {
            return;
        }
        if let Err(e) = send(&mut self.ctl_w, &done).await {
            end.failure = Some(self.lost(e));
            return;
        }
        let wait = tokio::time::sleep(REPORT_TIMEOUT);
        tokio::pin!(wait);
        while end.report.is_none() {
            tokio::select! {
                h = self.heard.recv() => match h {
                    Some(Heard::Said(FromRemoteSender::Report { summary, written })) => {
                        end.report = Some((summary, written));
                    }
                    Some(Heard::Said(_)) => {}
                    Some(Heard::Closed(why)) => {
                        let why = self.why_closed(why);
                        end.failure = Some(TransferError::Connection(why));
                        return;
                    }
                    None => return,
                },
                _ = &mut wait => {
                    self.note("the receiver sent no report of its own; its figures are missing".into());
                    return;
                }
            }
        }
    }
}

/// Run a welcomed reverse job: the controller's name, the loop, `done`, the report, the
/// summary.
pub(in crate::sender) async fn take(
    t: Take<'_>,
    stop: Stop,
    mut ctl_r: ControlRead,
    ctl_w: ControlWrite,
) -> Result<SendOutcome> {
    let Job::Bulk {
        bytes: _,
        seconds,
        streams,
    } = *t.job
    else {
        return Err(TransferError::Usage(
            "reverse mode moves bulk data only".into(),
        ));
    };
    // Kernel TCP: the timed job's time counts from before the data connections are opened,
    // so that the sender's abort at its end always comes after it.
    let opened = Instant::now();
    let tcp = match t.conn() {
        Some(c) => {
            let n = u32::from(streams.min(MAX_STREAMS));
            c.set_max_concurrent_uni_streams(VarInt::from_u32(n));
            Vec::new()
        }
        None => open_tcp_streams(&t.opener, streams).await?,
    };
    let on_tcp = t.conn().is_none();
    let started = start(&mut ctl_r).await;
    let (controller, profile) = started.map_err(|e| if on_tcp { gone::mapped(e) } else { e })?;
    let t0 = Instant::now();
    let cpu = CpuClock::start();
    let mut log = RunLog::new(
        header(&t, &controller, profile),
        Printer::new(&t.opts.output),
        &t.opts.output,
    )?;
    log.set_reverse();
    log.note(&format!(
        "hare-send <- {}: reverse mode, remote host {} is sending: {}, controller {controller} \
         (the receiver's --cc)",
        t.addr,
        t.addr.ip(),
        describe(t.job)
    ));
    log.note(crate::report::RECEIVER_UNITS);
    let overrun = t0
        + seconds.map_or(Duration::from_secs(u64::from(u32::MAX)), |s| {
            Duration::from_secs_f64(s) + DURATION_GRACE
        });
    let counters = (0..streams).map(|_| Arc::default()).collect();
    let mut lp = Loop {
        t: &t,
        stop,
        log,
        ctl_w,
        heard: spawn_reader(ctl_r, on_tcp),
        counters,
        arrivals: ArrivalIntervals::new(t0),
        t0,
        time_up: seconds.map(|s| opened + Duration::from_secs_f64(s)),
    };
    let mut end = lp.run(tcp, overrun).await;
    let end_s = t0.elapsed().as_secs_f64();
    let counts = lp.counts();
    let total: u64 = counts.iter().sum();
    let cpu_pct = cpu.percent();
    let done = ToSender::Done {
        bytes: total,
        seconds: end_s,
        cpu_pct,
        streams: counts.clone(),
    };
    lp.conclude(&mut end, done).await;
    let Loop {
        mut log, arrivals, ..
    } = lp;
    let mut arrivals = arrivals;
    if let Some(line) = arrivals.finish(end_s, total, &counts) {
        log.line(line);
    }
    log.stream_totals(counts);
    let summary = summary_of(&mut log, &end, total, end_s, cpu_pct, &controller, seconds);
    let cx = iperf_context(&t.opener, t.endpoint.as_ref(), t.addr, t.job, streams, &cpu);
    log.set_iperf(cx);
    let run = log.finish(summary)?;
    close_connection(&t.opener, false);
    if let Some(e) = &t.endpoint {
        let _ = tokio::time::timeout(crate::quic_config::CLOSE_FLUSH, e.wait_idle()).await;
    }
    match end.failure {
        Some(e) if !end.interrupted => Err(e),
        _ => Ok(SendOutcome {
            run,
            files: Vec::new(),
            interrupted: end.interrupted,
        }),
    }
}
