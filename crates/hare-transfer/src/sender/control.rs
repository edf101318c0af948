//! The control channel after the handshake: one task reads the receiver's messages and
//! forwards what the run loop needs, one task is the only writer.

use std::collections::HashMap;

use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::gone::Words;
use crate::channels::{ControlRead, ControlWrite};
use crate::intervals::Remote;
use crate::protocol::{read_frame, write_frame, FailCode, ToReceiver, ToSender};

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

/// Read the receiver's messages until the channel ends: intervals and the final `done` go to
/// `to_loop`, file verdicts to their file's task; how the channel ended is said in `words`.
pub(super) fn spawn_reader(
    mut ctl_r: ControlRead,
    to_loop: mpsc::Sender<Ctl>,
    mut verdicts: HashMap<u32, oneshot::Sender<Verdict>>,
    (restarts, words): (super::restarts::Restarts, Words),
) {
    tokio::spawn(async move {
        loop {
            let msg = match read_frame::<_, ToSender>(&mut ctl_r).await {
                Ok(Some(m)) => m,
                Ok(None) => {
                    let reason = words.closed("the receiver closed the control channel");
                    let _ = to_loop.send(Ctl::Closed(reason)).await;
                    return;
                }
                Err(e) => {
                    let _ = to_loop.send(Ctl::Closed(words.error(&e, ""))).await;
                    return;
                }
            };
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
                // Only answers to requests this sender no longer makes.
                ToSender::Progress { .. } => continue,
                ToSender::FileRestart { index } if restarts.fire(index) => continue,
                ToSender::FileRestart { index } => Ctl::Closed(format!(
                    "the receiver restarted file {index}, which was not sent again"
                )),
                ToSender::FileResult {
                    index,
                    ok,
                    reason,
                    code,
                } => {
                    if let Some(tx) = verdicts.remove(&index) {
                        let _ = tx.send((ok, in_words(reason, code)));
                    }
                    continue;
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
            if to_loop.send(fwd).await.is_err() {
                return;
            }
        }
    });
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

/// The only writer of the control channel after the hello; when every sender of `from` is
/// gone it ends the stream cleanly. A write error reaches the run loop as [`Ctl::Closed`],
/// in `words`.
pub(super) fn spawn_writer(
    mut ctl_w: ControlWrite,
    mut from: mpsc::Receiver<ToReceiver>,
    errors: mpsc::Sender<Ctl>,
    words: Words,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(m) = from.recv().await {
            if let Err(e) = write_frame(&mut ctl_w, &m).await {
                let reason = words.error(&e, "control channel");
                let _ = errors.send(Ctl::Closed(reason)).await;
                return;
            }
        }
        let _ = ctl_w.shutdown().await;
    })
}
