//! The control channel after the handshake: one task reads the receiver's messages and
//! forwards what the run loop needs, one task is the only writer (module `control_move`,
//! which also moves the channel when a job over several connections loses its first one).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

use super::gone::Words;
use crate::channels::ControlRead;
use crate::intervals::Remote;
use crate::protocol::{read_frame, FailCode, ToSender};

/// A file's verdict: verified and renamed, or why not.
pub(super) type Verdict = (bool, Option<String>);

/// Messages from the control reader to the run loop.
pub(super) enum Ctl {
    /// The receiver's interval: its index, and its times (receiver seconds) and bytes.
    Interval(u64, Remote),
    /// The receiver's final word.
    Done(Done),
    /// The channel ended or broke, with the reason.
    Closed(String),
    /// Reverse mode: the receiving side (hare-send) asks this side to stop sending.
    StopAsked(String),
    /// The receiver's answer to a `progress-request`: the request's number and the payload
    /// bytes it had received.
    Progress(u64, u64),
    /// A line a data task says while the job runs (a changed file is sent again), for the
    /// run's log.
    Note(String),
}

/// The receiver's `done`.
#[derive(Debug, Clone)]
pub(super) struct Done {
    /// Payload bytes it received.
    pub(super) bytes: u64,
    /// Its seconds from the welcome to the last byte.
    pub(super) seconds: f64,
    /// Its CPU use, percent of one core.
    pub(super) cpu_pct: Option<f64>,
    /// Its payload bytes by bulk stream (empty for files).
    pub(super) streams: Vec<u64>,
}

/// The `type` tag of a message, for error text (never its debug form).
pub(super) fn message_type<T: serde::Serialize>(m: &T) -> String {
    serde_json::to_value(m)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

/// One verdict channel per file index: the senders for the reader, the receivers for the
/// file tasks.
pub(super) fn verdict_channels(
    files: usize,
) -> (
    HashMap<u32, oneshot::Sender<Verdict>>,
    HashMap<u32, oneshot::Receiver<Verdict>>,
) {
    let mut txs = HashMap::new();
    let mut rxs = HashMap::new();
    for i in 0..files as u32 {
        let (tx, rx) = oneshot::channel();
        txs.insert(i, tx);
        rxs.insert(i, rx);
    }
    (txs, rxs)
}

/// The files still waiting for their verdict, each with the channel it goes to.
pub(super) type Waiting = Arc<Mutex<HashMap<u32, oneshot::Sender<Verdict>>>>;

/// What every reader of the control channel (the first, and one after each move) shares.
#[derive(Clone)]
pub(super) struct Reading {
    /// The run loop.
    pub(super) to_loop: mpsc::Sender<Ctl>,
    pub(super) verdicts: Waiting,
    pub(super) restarts: super::restarts::Restarts,
    pub(super) words: Words,
    /// The channel moved: the receiver says its verdicts and pending restarts again.
    pub(super) moved: Arc<AtomicBool>,
    /// The receiver's `done` came.
    pub(super) done: Arc<AtomicBool>,
    /// Where the receiver's `bulk-lost` goes: the task of each bulk stream (emptied at its
    /// `done`, which ends the tasks that wait).
    pub(super) bulk_lost: BulkLosts,
}

/// The tasks of a bulk job's streams, by stream number, each told where and as which
/// attempt to continue its stream (`bulk-lost`).
pub(super) type BulkLosts = Arc<Mutex<HashMap<u32, mpsc::UnboundedSender<(u64, u16)>>>>;

/// How a reader ended: which one (moves count them), the reason in words, and whether the
/// receiver ended the channel cleanly.
pub(super) struct ReadEnd {
    pub(super) generation: u32,
    pub(super) reason: String,
    pub(super) clean: bool,
}

/// Read the receiver's messages until the channel ends: intervals and the final `done` go to
/// the run loop, file verdicts to their file's task; how the channel ended goes to `ends`
/// (the writer, which may move the channel), or to the run loop once the writer is gone.
pub(super) fn spawn_reader(
    mut ctl_r: ControlRead,
    rd: Reading,
    (ends, generation): (mpsc::Sender<ReadEnd>, u32),
) {
    tokio::spawn(async move {
        let Reading {
            to_loop,
            verdicts,
            restarts,
            words,
            moved,
            done,
            bulk_lost,
        } = rd;
        loop {
            let (reason, clean) = match read_frame::<_, ToSender>(&mut ctl_r).await {
                Ok(Some(m)) => {
                    if let ToSender::BulkLost {
                        stream,
                        received,
                        attempt,
                    } = m
                    {
                        if let Some(tx) = lock(&bulk_lost).get(&stream) {
                            let _ = tx.send((received, attempt));
                        }
                        continue;
                    }
                    if let Some(fwd) = forward(m, &verdicts, &restarts, &moved) {
                        if matches!(fwd, Ctl::Done(_)) {
                            done.store(true, Ordering::Relaxed);
                            lock(&bulk_lost).clear();
                        }
                        if to_loop.send(fwd).await.is_err() {
                            return;
                        }
                    }
                    continue;
                }
                Ok(None) => (
                    words.closed("the receiver closed the control channel"),
                    true,
                ),
                Err(e) => (words.error(&e, ""), false),
            };
            let end = ReadEnd {
                generation,
                reason,
                clean,
            };
            if let Err(mpsc::error::SendError(end)) = ends.send(end).await {
                let _ = to_loop.send(Ctl::Closed(end.reason)).await;
            }
            return;
        }
    });
}

/// What the run loop gets of one message from the receiver (`None`: nothing, it was a
/// verdict for a file's task or needs no answer).
fn forward(
    msg: ToSender,
    verdicts: &Waiting,
    restarts: &super::restarts::Restarts,
    moved: &AtomicBool,
) -> Option<Ctl> {
    let fwd = match msg {
        ToSender::Interval {
            index,
            start_s,
            end_s,
            bytes,
            streams,
        } => Ctl::Interval(
            index,
            Remote {
                start_s,
                end_s,
                bytes,
                streams,
            },
        ),
        // Asked when the user interrupts a file job (module `kept`).
        ToSender::Progress { seq, bytes } => Ctl::Progress(seq, bytes),
        ToSender::FileRestart { index } if restarts.fire(index) => return None,
        // Said again after a move: the file was restarted already.
        ToSender::FileRestart { .. } if moved.load(Ordering::Relaxed) => return None,
        ToSender::FileRestart { index } => Ctl::Closed(format!(
            "the receiver restarted file {index}, which was not sent again"
        )),
        ToSender::FileResult {
            index,
            ok,
            reason,
            code,
        } => {
            let tx = lock(verdicts).remove(&index);
            if let Some(tx) = tx {
                let _ = tx.send((ok, in_words(reason, code)));
            }
            return None;
        }
        ToSender::Done {
            bytes,
            seconds,
            cpu_pct,
            streams,
        } => Ctl::Done(Done {
            bytes,
            seconds,
            cpu_pct,
            streams,
        }),
        ToSender::StopSending { reason } => Ctl::StopAsked(reason),
        other => Ctl::Closed(format!(
            "unexpected `{}` message from the receiver",
            message_type(&other)
        )),
    };
    Some(fwd)
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The receiver's reason, led by the kind of failure in words when it sent one (`disk full
/// on the receiver: ...`).
fn in_words(reason: Option<String>, code: Option<FailCode>) -> Option<String> {
    match (code, reason) {
        (Some(FailCode::Other) | None, r) => r,
        (Some(c), Some(r)) => Some(format!("{}: {r}", c.words())),
        (Some(c), None) => Some(c.words().to_owned()),
    }
}

/// A reader whose end goes straight to the run loop (no writer moves this channel).
pub(super) fn spawn_lone_reader(ctl_r: ControlRead, to_loop: mpsc::Sender<Ctl>, words: Words) {
    let rd = Reading {
        to_loop,
        verdicts: Arc::default(),
        restarts: super::restarts::Restarts::default(),
        words,
        moved: Arc::default(),
        done: Arc::default(),
        bulk_lost: Arc::default(),
    };
    // No one receives the end: the reader says it to the run loop.
    let (ends, _) = mpsc::channel(1);
    spawn_reader(ctl_r, rd, (ends, 0));
}
