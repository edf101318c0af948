//! The run loop: interval ticks, the receiver's messages, data tasks ending, and a stop, until
//! the receiver's final verdict is in and every data task has reported.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hare_report::{Event, EventKind};
use tokio::sync::mpsc;

use crate::error::TransferError;
use crate::intervals::SenderLines;
use crate::quic_config::Liveness;
use crate::stop::{Stop, DEFAULT_STOP_REASON};

use super::control::{Ctl, Done};
use super::gone::Words;
use super::liveness::{describe_close, Silence};
use super::opener::Opener;
use super::recorder::Recorder;
use super::tasks::DataTasks;
use super::FileReport;

/// Time to wait for the receiver's final verdict after the data went out.
const DONE_TIMEOUT: Duration = Duration::from_secs(60);
/// Time to wait for the data tasks after the receiver's `done`.
const AFTER_DONE: Duration = Duration::from_secs(5);

/// What the loop waits on.
pub(super) struct Inputs {
    /// From the control reader (and writer errors).
    pub(super) ctl_rx: mpsc::Receiver<Ctl>,
    /// The data tasks.
    pub(super) tasks: DataTasks,
    /// The user's stop.
    pub(super) stop: Stop,
}

/// What the loop needs to know and never changes.
pub(super) struct Context<'a> {
    /// Start of the run (the welcome).
    pub(super) t0: Instant,
    /// `-i`.
    pub(super) interval: Duration,
    /// The connection, for its close reason.
    pub(super) opener: &'a Opener,
    /// Bulk job (a stop drains it) rather than files (a stop aborts them).
    pub(super) bulk: bool,
    /// Tells the bulk writers to stop.
    pub(super) stop_flag: &'a Arc<AtomicBool>,
    /// `--idle-timeout` and `--keep-alive`.
    pub(super) liveness: Liveness,
    /// How a data task's broken connection is said.
    pub(super) words: Words,
}

impl Context<'_> {
    /// The first connection's close reason, once it closed.
    fn opener_closed(&self) -> Option<quinn::ConnectionError> {
        match self.opener {
            Opener::Quic(c) => c.close_reason(),
            Opener::Tcp { .. } => None,
        }
    }
}

/// How the loop ended.
pub(super) struct State {
    /// The interval accounting.
    pub(super) lines: SenderLines,
    /// File reports as their tasks ended.
    pub(super) reports: Vec<FileReport>,
    /// The user stopped the run.
    pub(super) interrupted: bool,
    /// Why the run failed, if it did.
    pub(super) failure: Option<TransferError>,
    /// The receiver's final word.
    pub(super) done: Option<Done>,
    /// What the receiver had received when the user interrupted a file job (it keeps it
    /// for a rerun), as it answered.
    pub(super) kept: Option<u64>,
    /// A line for the log once the last interval lines are out (how the job spread over
    /// its connections).
    pub(super) closing_note: Option<String>,
    data_done: bool,
    ticks: u64,
    silence: Silence,
}

enum Flow {
    Go,
    Stop,
}

/// Run the job to its end (see the module's description).
pub(super) async fn run(
    rec: &mut Recorder,
    inp: &mut Inputs,
    cx: &Context<'_>,
    lines: SenderLines,
) -> State {
    let mut st = State {
        lines,
        reports: Vec::new(),
        closing_note: None,
        interrupted: false,
        failure: None,
        done: None,
        kept: None,
        data_done: false,
        ticks: 0,
        silence: Silence::new(cx.liveness, cx.t0),
    };
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::from_std(cx.t0 + cx.interval),
        cx.interval,
    );
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut deadline = Box::pin(tokio::time::sleep(Duration::from_secs(u64::from(u32::MAX))));
    let mut ctl_open = true;
    // File verdicts arrive before the receiver's Done, but their tasks may be joined after it.
    while st.done.is_none() || !st.data_done {
        let flow = tokio::select! {
            _ = ticker.tick() => {
                on_tick(rec, &mut st, cx);
                Flow::Go
            }
            m = inp.ctl_rx.recv(), if ctl_open => {
                if st.done.is_some() && !matches!(m, Some(Ctl::Interval(..)) | Some(Ctl::Done(_))) {
                    ctl_open = false;
                    Flow::Go
                } else {
                    on_control(rec, &mut st, cx, m, &mut deadline)
                }
            }
            r = inp.tasks.join_next(), if !st.data_done => {
                on_task(rec, &mut st, cx, r, &mut deadline)
            }
            _ = &mut deadline => {
                if st.done.is_none() {
                    st.failure = Some(TransferError::Connection(
                        "no final verdict from the receiver".into(),
                    ));
                }
                Flow::Stop
            }
            _ = inp.stop.stopped(), if !st.interrupted => {
                let why = inp.stop.reason().unwrap_or(DEFAULT_STOP_REASON);
                on_stop(rec, &mut st, cx, why)
            }
        };
        if let Flow::Stop = flow {
            break;
        }
    }
    st
}

fn on_tick(rec: &mut Recorder, st: &mut State, cx: &Context<'_>) {
    // The line ends when the counters are read, which is the first thing the sample does;
    // what the sample does after (a slow-start exit check may read /proc) must not move the
    // boundary, or the next line would count more data than its length allows.
    let now_s = cx.t0.elapsed().as_secs_f64();
    let sample = rec.sample();
    st.ticks += 1;
    for line in st.lines.tick(st.ticks, now_s, sample) {
        rec.log.line(line);
    }
    // A first connection lost in a job over several is said once, by the control channel's
    // move, not again as silence.
    if let (Opener::Quic(c), None) = (cx.opener, cx.opener_closed()) {
        let heard = c.stats().udp_rx.datagrams;
        if let Some(message) = st.silence.check(heard, Instant::now()) {
            rec.log.event(Event {
                t_s: now_s,
                kind: EventKind::Note { message },
            });
        }
    }
}

fn on_control(
    rec: &mut Recorder,
    st: &mut State,
    cx: &Context<'_>,
    m: Option<Ctl>,
    deadline: &mut std::pin::Pin<Box<tokio::time::Sleep>>,
) -> Flow {
    match m {
        Some(Ctl::Interval(index, remote)) => {
            for line in st.lines.received(index, remote) {
                rec.log.line(line);
            }
            Flow::Go
        }
        Some(Ctl::Done(d)) => {
            st.done = Some(d);
            deadline.set(tokio::time::sleep(AFTER_DONE));
            Flow::Go
        }
        Some(Ctl::StopAsked(why)) => {
            if st.interrupted {
                return Flow::Go;
            }
            // The peer's words, kept short and printable: they end up in this side's log.
            let why: String = why.chars().filter(|c| !c.is_control()).take(100).collect();
            on_stop(rec, st, cx, &format!("the receiving side asked: {why}"))
        }
        // Only the interrupted file job's last word asks (module `kept`).
        Some(Ctl::Progress(..)) => Flow::Go,
        Some(Ctl::Note(message)) => {
            rec.log.event(Event {
                t_s: cx.t0.elapsed().as_secs_f64(),
                kind: EventKind::Note { message },
            });
            Flow::Go
        }
        Some(Ctl::Closed(reason)) => {
            st.failure = Some(TransferError::Connection(close_reason(cx, reason)));
            Flow::Stop
        }
        None => {
            let reason = "the control reader stopped".to_owned();
            st.failure = Some(TransferError::Connection(close_reason(cx, reason)));
            Flow::Stop
        }
    }
}

/// The connection's own close reason (timeout, the peer's close code) when it has one.
fn close_reason(cx: &Context<'_>, fallback: String) -> String {
    match cx.opener {
        Opener::Quic(c) => c
            .close_reason()
            .map(|r| describe_close(&r, &cx.liveness))
            .unwrap_or(fallback),
        Opener::Tcp { .. } => fallback,
    }
}

fn on_task(
    rec: &mut Recorder,
    st: &mut State,
    cx: &Context<'_>,
    r: Option<Result<crate::error::Result<Option<FileReport>>, tokio::task::JoinError>>,
    deadline: &mut std::pin::Pin<Box<tokio::time::Sleep>>,
) -> Flow {
    match r {
        None => {
            st.data_done = true;
            deadline.set(tokio::time::sleep(DONE_TIMEOUT));
            Flow::Go
        }
        Some(Ok(Ok(Some(rep)))) => {
            if !rep.ok {
                let message = format!("{}: {}", rep.name, rep.reason.as_deref().unwrap_or(""));
                rec.log.event(Event {
                    t_s: cx.t0.elapsed().as_secs_f64(),
                    kind: EventKind::Error { message },
                });
            }
            st.reports.push(rep);
            Flow::Go
        }
        Some(Ok(Ok(None))) => Flow::Go,
        Some(Ok(Err(e))) => {
            if st.interrupted {
                return Flow::Go;
            }
            // A data stream that broke because the connection ended says only "connection
            // lost": the connection's own reason (a silent receiver, its close code) is the
            // cause, whichever of the two noticed first.
            let ended = matches!(cx.opener, Opener::Quic(c) if c.close_reason().is_some());
            st.failure = Some(match ended {
                true => TransferError::Connection(close_reason(cx, e.to_string())),
                false => cx.words.mapped(e),
            });
            Flow::Stop
        }
        Some(Err(e)) => {
            st.failure = Some(TransferError::Protocol(format!("a data task failed: {e}")));
            Flow::Stop
        }
    }
}

fn on_stop(rec: &mut Recorder, st: &mut State, cx: &Context<'_>, why: &str) -> Flow {
    st.interrupted = true;
    rec.events_so_far();
    rec.log.event(Event {
        t_s: cx.t0.elapsed().as_secs_f64(),
        kind: EventKind::Note {
            message: format!("interrupted ({why})"),
        },
    });
    if cx.bulk {
        // Like nuttcp: stop sending, let the receiver count what arrived, summarise.
        cx.stop_flag.store(true, Ordering::Relaxed);
        Flow::Go
    } else {
        // Files cannot complete: abort; the receiver keeps the partial data.
        Flow::Stop
    }
}
